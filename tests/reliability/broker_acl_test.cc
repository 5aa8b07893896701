// The embedded broker's ACLs, with an unmodified client (confluent_kafka):
// a worker principal may produce to, consume from and commit for only what
// its grant names, sees only those topics, and never creates or deletes one;
// the back end's admin principal may. The ACL file is re-read while the
// broker runs, so a worker launched later gets in without a restart.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "broker/broker_harness.h"
#include "reliability/record.h"

namespace sluice::testing {
namespace {

using nlohmann::json;

class BrokerAcl : public ::testing::Test {
 protected:
  BrokerAcl() {
    char tmpl[] = "/tmp/sluice-acl-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    acl_ = dir_ / "acl.json";
    principals_ = {
        {"backend", {{"password", "backend-pw"}, {"admin", true}}},
        {"worker-a",
         {{"password", "a-pw"},
          {"produce", {"a.raw"}},
          {"consume", {"a.raw"}},
          {"groups", {"group-a"}}}},
        {"worker-b",
         {{"password", "b-pw"},
          {"produce", {"b.raw"}},
          {"consume", {"b.raw"}},
          {"groups", {"group-b"}}}},
    };
    Write();
    broker_ =
        std::make_unique<BrokerProcess>(std::vector<std::string>{"--acl-file", acl_.string()});
  }
  ~BrokerAcl() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void Write() {
    auto tmp = acl_;
    tmp += ".tmp";
    std::ofstream(tmp) << json{{"principals", principals_}}.dump();
    std::filesystem::rename(tmp, acl_);
  }

  // The probe's answer: "ok", a Kafka error name, or (list) the topics.
  json Probe(const std::string& user, const std::string& op, const std::string& topic,
             const std::string& group = "probe") {
    std::string password = principals_.contains(user) ? principals_[user]["password"] : "wrong";
    auto r = RunPython("acl_probe.py", broker_->bootstrap() + " " + user + " " + password + " " +
                                           op + " " + topic + " " + group);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    try {
      return json::parse(r.out)["result"];
    } catch (const std::exception&) {
      ADD_FAILURE() << "probe printed no JSON: " << r.out;
      return nullptr;
    }
  }

  // One refusal the broker owes: counted for the reliability summary.
  void ExpectRefused(const std::string& what, const json& got, const std::string& error) {
    ++tried_;
    if (got == error) {
      ++refused_;
    } else {
      if (got == "ok") ++leaks_;
      ADD_FAILURE() << what << ": expected " << error << ", got " << got;
    }
  }

  void Record() {
    RecordReliability("access", {{"broker_acl_cases_tried", static_cast<double>(tried_)},
                                 {"broker_acl_cases_refused", static_cast<double>(refused_)},
                                 {"broker_acl_leaks", static_cast<double>(leaks_)}});
  }

  std::filesystem::path dir_, acl_;
  json principals_;
  std::unique_ptr<BrokerProcess> broker_;
  long tried_ = 0, refused_ = 0, leaks_ = 0;
};

TEST_F(BrokerAcl, WorkerUsesOnlyItsOwnTopicsAndGroups) {
  broker_->Start();
  ASSERT_EQ(Probe("backend", "create", "a.raw"), "ok");
  ASSERT_EQ(Probe("backend", "create", "b.raw"), "ok");
  EXPECT_EQ(Probe("worker-a", "produce", "a.raw"), "ok");
  EXPECT_EQ(Probe("worker-b", "produce", "b.raw"), "ok");
  EXPECT_EQ(Probe("worker-a", "consume", "a.raw", "group-a"), "ok");

  ExpectRefused("a produces to b's topic", Probe("worker-a", "produce", "b.raw"),
                "TOPIC_AUTHORIZATION_FAILED");
  ExpectRefused("a consumes b's topic", Probe("worker-a", "consume", "b.raw", "group-a"),
                "TOPIC_AUTHORIZATION_FAILED");
  ExpectRefused("a consumes with b's group", Probe("worker-a", "consume", "a.raw", "group-b"),
                "GROUP_AUTHORIZATION_FAILED");
  ExpectRefused("a reads b's group offsets", Probe("worker-a", "committed", "b.raw", "group-b"),
                "GROUP_AUTHORIZATION_FAILED");
  ExpectRefused("a creates a topic", Probe("worker-a", "create", "a.new"),
                "TOPIC_AUTHORIZATION_FAILED");
  ExpectRefused("a deletes its own topic", Probe("worker-a", "delete", "a.raw"),
                "TOPIC_AUTHORIZATION_FAILED");
  ExpectRefused("a deletes b's topic", Probe("worker-a", "delete", "b.raw"),
                "TOPIC_AUTHORIZATION_FAILED");
  // Metadata for every topic shows a only its own.
  EXPECT_EQ(Probe("worker-a", "list", "-"), json::array({"a.raw"}));
  // b's group was never touched: it still reads b.raw from the start.
  EXPECT_EQ(Probe("worker-b", "consume", "b.raw", "group-b"), "ok");
  // A wrong password gets nowhere.
  auto stranger = Probe("intruder", "produce", "a.raw");
  ++tried_;
  if (stranger != "ok") ++refused_;
  EXPECT_NE(stranger, "ok");
  EXPECT_EQ(Probe("backend", "delete", "b.raw"), "ok");
  Record();
}

TEST_F(BrokerAcl, PrincipalAddedToTheFileGetsInWithoutRestart) {
  broker_->Start();
  EXPECT_NE(Probe("worker-c", "produce", "c.raw"), "ok");
  principals_["worker-c"] = {{"password", "c-pw"}, {"produce", {"c.raw"}}};
  Write();
  // Produce auto-creates a topic the grant names (the back end chose it).
  EXPECT_EQ(Probe("worker-c", "produce", "c.raw"), "ok");
  // Taken away again: refused on the next connection.
  principals_.erase("worker-c");
  Write();
  ::usleep(300 * 1000);  // the broker looks at the file at most every 200 ms
  EXPECT_NE(Probe("worker-c", "produce", "c.raw"), "ok");
}

TEST_F(BrokerAcl, ClientWithoutSaslIsNotServed) {
  broker_->Start();
  auto r = RunShell("echo x | timeout 20 kcat -P -b " + broker_->bootstrap() +
                    " -t a.raw -X message.timeout.ms=5000 2>&1");
  ++tried_;
  if (r.exit_code != 0) ++refused_;
  EXPECT_NE(r.exit_code, 0) << r.out;
  Record();
}

}  // namespace
}  // namespace sluice::testing
