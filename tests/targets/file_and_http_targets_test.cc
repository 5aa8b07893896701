// The JSONL and HTTP webhook targets. The webhook receiver is a real HTTP
// server on loopback (cpp-httplib), standing in for the user's endpoint.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/uuid.h"
#include "connectors/targets/http_target.h"
#include "connectors/targets/jsonl_target.h"
#include "connectors/targets/target.h"

namespace sluice::connectors::targets {
namespace {

using nlohmann::json;

TargetChange Change(int id) {
  return {'c', {{"id", id}}, {{"id", id}, {"name", "n"}}, {}, "t/0/" + std::to_string(id)};
}

TEST(JsonlTarget, AppendsOneLinePerChangeWithItsPosition) {
  auto dir = std::filesystem::temp_directory_path() / ("jsonl-" + common::Uuid::V4().ToString());
  auto target = MakeTarget("jsonl", {{"directory", dir.string()}}, "public", "orders");
  ASSERT_TRUE(target.ok());
  ASSERT_TRUE((*target)->Apply({Change(1), Change(2)}).ok());
  ASSERT_TRUE((*target)->Apply({Change(3)}).ok());
  std::ifstream in(dir / "orders.jsonl");
  std::vector<json> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2]["key"]["id"], 3);
  EXPECT_EQ(lines[0]["position"], "t/0/1");
  std::filesystem::remove_all(dir);
}

TEST(JsonlTarget, AKeyChangeIsADeleteOfTheOldKeyThenTheUpsert) {
  auto dir = std::filesystem::temp_directory_path() / ("jsonl-" + common::Uuid::V4().ToString());
  auto target = MakeTarget("jsonl", {{"directory", dir.string()}}, "public", "orders");
  ASSERT_TRUE(target.ok());
  TargetChange moved{'u', {{"id", 30}}, {{"id", 30}, {"name", "n"}}, {}, "t/0/9"};
  moved.old_key = {{"id", 3}};
  moved.as_text = {"name"};
  ASSERT_TRUE((*target)->Apply({Change(3), moved}).ok());
  std::ifstream in(dir / "orders.jsonl");
  std::vector<json> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1]["op"], "d");
  EXPECT_EQ(lines[1]["key"], (json{{"id", 3}}));
  EXPECT_EQ(lines[2]["op"], "u");
  EXPECT_EQ(lines[2]["key"], (json{{"id", 30}}));
  EXPECT_EQ(lines[2]["as_text"], json::array({"name"}));
  std::filesystem::remove_all(dir);
}

TEST(JsonlTarget, RotatesPastTheSizeLimit) {
  auto dir = std::filesystem::temp_directory_path() / ("jsonl-" + common::Uuid::V4().ToString());
  JsonlTarget target({dir.string(), "orders", 10});
  ASSERT_TRUE(target.Apply({Change(1)}).ok());
  ASSERT_TRUE(target.Apply({Change(2)}).ok());
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 2);
  std::filesystem::remove_all(dir);
}

class Webhook : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      ++calls_;
      if (calls_ <= fail_first_) {
        res.status = 503;
        return;
      }
      last_ = json::parse(req.body);
      auth_ = req.get_header_value("Authorization");
      res.status = status_;
      res.set_content(status_ >= 400 ? "bad payload: name must be upper case" : "{}", "text/plain");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
  }
  HttpTargetOptions Options() {
    HttpTargetOptions o;
    o.url = "http://127.0.0.1:" + std::to_string(port_) + "/hook";
    o.table = "orders";
    o.headers = {{"Authorization", "Bearer s3cret"}};
    o.initial_backoff = std::chrono::milliseconds(10);
    return o;
  }
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> calls_{0};
  int fail_first_ = 0;
  int status_ = 200;
  json last_;
  std::string auth_;
};

TEST_F(Webhook, BatchIsOnePostWithHeaders) {
  HttpTarget target(Options());
  auto r = target.Apply({Change(1), Change(2)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->empty());
  EXPECT_EQ(calls_.load(), 1);
  EXPECT_EQ(last_["changes"].size(), 2u);
  EXPECT_EQ(last_["table"], "orders");
  EXPECT_EQ(auth_, "Bearer s3cret");
}

TEST_F(Webhook, ServerErrorsAreRetriedWithBackoff) {
  fail_first_ = 2;
  HttpTarget target(Options());
  auto r = target.Apply({Change(1)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(calls_.load(), 3);
}

TEST_F(Webhook, PersistentServerErrorIsAnErrorSoNothingIsCommitted) {
  fail_first_ = 100;
  HttpTarget target(Options());
  EXPECT_EQ(target.Apply({Change(1)}).status().code(), common::Code::kUnavailable);
}

TEST_F(Webhook, ClientErrorRejectsTheBatchWithTheServersWords) {
  status_ = 422;
  HttpTarget target(Options());
  auto r = target.Apply({Change(1), Change(2)});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_NE((*r)[0].error.find("name must be upper case"), std::string::npos);
}

}  // namespace
}  // namespace sluice::connectors::targets
