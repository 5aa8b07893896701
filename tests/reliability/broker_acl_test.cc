// The embedded broker's ACLs, with an unmodified client (confluent_kafka):
// a worker principal may produce to, consume from and commit for only what
// its grant names, sees only those topics, and never creates or deletes one;
// the back end's admin principal may. The ACL file is re-read while the
// broker runs, so a worker launched later gets in without a restart.
// `sluice serve --broker-acl-file` manages such a broker's file and keeps its
// principals across a restart.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "broker/broker_harness.h"
#include "reliability/record.h"
#include "support/test_database.h"

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

// `sluice serve --broker-acl-file F --broker-bootstrap B` with the broker run
// apart (`sluice broker --acl-file F`). Returns serve's exit status when it
// ends by itself within `limit`, else -1 and `*pid` runs on.
int StartServe(const std::string& database_url, const std::string& data_dir,
               const std::vector<std::string>& broker_flags, pid_t* pid,
               std::chrono::seconds limit = std::chrono::seconds(20)) {
  int out_pipe[2];
  if (pipe(out_pipe) != 0) return -2;
  *pid = fork();
  if (*pid == 0) {
    dup2(out_pipe[1], 1);
    close(out_pipe[0]);
    setenv("SLUICE_DATABASE_URL", database_url.c_str(), 1);
    std::vector<std::string> args = {
        std::getenv("SLUICE_BIN"), "serve",       "--listen",   "127.0.0.1:0",
        "--registry-listen",       "127.0.0.1:0", "--data-dir", data_dir};
    args.insert(args.end(), broker_flags.begin(), broker_flags.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  FILE* out = fdopen(out_pipe[0], "r");
  char line[512] = {0};
  bool listening = false;
  while (!listening && fgets(line, sizeof line, out) != nullptr)
    listening = std::string(line).rfind("api listening on", 0) == 0;
  fclose(out);
  if (listening) return -1;
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(*pid, &status, WNOHANG) == *pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    ::usleep(50 * 1000);
  }
  return -1;
}

void StopServe(pid_t pid) {
  ::kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
}

TEST_F(BrokerAcl, ServeManagesTheFileAndARestartKeepsEveryPrincipal) {
  TestDatabase plane;
  broker_->Start();
  std::string data_dir = (dir_ / "serve").string();
  std::vector<std::string> flags = {"--broker-acl-file", acl_.string(), "--broker-bootstrap",
                                    broker_->bootstrap()};
  pid_t serve = -1;
  ASSERT_EQ(StartServe(plane.url(), data_dir, flags, &serve), -1) << "serve did not start";
  // serve added its own admin principal and kept the workers already there.
  auto read = [&] {
    std::ifstream in(acl_);
    return json::parse(in)["principals"];
  };
  auto first = read();
  ASSERT_TRUE(first.contains("sluice-backend")) << first.dump();
  EXPECT_EQ(first["worker-a"]["password"], "a-pw");
  EXPECT_EQ(std::filesystem::status(acl_).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  principals_["sluice-backend"] = first["sluice-backend"];
  EXPECT_EQ(Probe("sluice-backend", "create", "a.raw"), "ok");
  EXPECT_EQ(Probe("worker-a", "produce", "a.raw"), "ok");

  // A restarted serve keeps the back end's password and every worker's
  // principal: workers that outlived it go on producing.
  StopServe(serve);
  ASSERT_EQ(StartServe(plane.url(), data_dir, flags, &serve), -1) << "serve did not restart";
  auto second = read();
  EXPECT_EQ(second["sluice-backend"], first["sluice-backend"]);
  EXPECT_EQ(second["worker-a"], first["worker-a"]);
  EXPECT_EQ(second["worker-b"], first["worker-b"]);
  EXPECT_EQ(Probe("worker-a", "produce", "a.raw"), "ok");
  ExpectRefused("a produces to b's topic after serve's restart",
                Probe("worker-a", "produce", "b.raw"), "TOPIC_AUTHORIZATION_FAILED");
  StopServe(serve);

  // A file that does not parse is an error naming it, never silently reset
  // (that would revoke every worker's credentials).
  std::ofstream(acl_, std::ios::trunc) << "{not json";
  EXPECT_EQ(StartServe(plane.url(), data_dir, flags, &serve), 1);
  // The flags go together.
  EXPECT_EQ(StartServe(plane.url(), data_dir, {"--broker-acl-file", acl_.string()}, &serve), 2);
  Record();
}

}  // namespace
}  // namespace sluice::testing
