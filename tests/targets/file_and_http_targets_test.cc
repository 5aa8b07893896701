// The JSONL and HTTP webhook targets. The webhook receiver is a real HTTP
// server on loopback (cpp-httplib), standing in for the user's endpoint.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/uuid.h"
#include "connectors/targets/http_target.h"
#include "connectors/targets/jsonl_target.h"
#include "connectors/targets/target.h"
#include "guard/connect_policy.h"

namespace sluice::connectors::targets {
namespace {

using nlohmann::json;

TargetChange Change(int id) {
  return {'c', {{"id", id}}, {{"id", id}, {"name", "n"}}, {}, "t/0/" + std::to_string(id)};
}

TEST(JsonlTarget, AppendsOneLinePerChangeWithItsPosition) {
  auto dir = std::filesystem::temp_directory_path() / ("jsonl-" + common::Uuid::V4().ToString());
  auto target =
      MakeTarget("jsonl", {{"root", dir.string()}, {"directory", "out"}}, "public", "orders");
  ASSERT_TRUE(target.ok());
  ASSERT_TRUE((*target)->Apply({Change(1), Change(2)}).ok());
  ASSERT_TRUE((*target)->Apply({Change(3)}).ok());
  std::ifstream in(dir / "out" / "orders.jsonl");
  std::vector<json> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2]["key"]["id"], 3);
  EXPECT_EQ(lines[0]["position"], "t/0/1");
  std::filesystem::remove_all(dir);
}

TEST(JsonlTarget, AKeyChangeIsADeleteOfTheOldKeyThenTheUpsert) {
  auto dir = std::filesystem::temp_directory_path() / ("jsonl-" + common::Uuid::V4().ToString());
  auto target =
      MakeTarget("jsonl", {{"root", dir.string()}, {"directory", "out"}}, "public", "orders");
  ASSERT_TRUE(target.ok());
  TargetChange moved{'u', {{"id", 30}}, {{"id", 30}, {"name", "n"}}, {}, "t/0/9"};
  moved.old_key = {{"id", 3}};
  moved.as_text = {"name"};
  ASSERT_TRUE((*target)->Apply({Change(3), moved}).ok());
  std::ifstream in(dir / "out" / "orders.jsonl");
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
  JsonlTarget target({dir.string(), "out", "orders", 10});
  ASSERT_TRUE(target.Apply({Change(1)}).ok());
  ASSERT_TRUE(target.Apply({Change(2)}).ok());
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "out"))
    files += e.is_regular_file();
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

// The HTTP target speaks http and https only; anything else is refused at
// connect time too (a configuration saved before the rule, or written by
// hand), without a byte sent.
TEST(WebhookPolicy, OtherSchemesAreRefused) {
  for (const char* url : {"file:///etc/passwd", "gopher://127.0.0.1:70/_GET", "ftp://127.0.0.1/x",
                          "dict://127.0.0.1:11211/stat"}) {
    HttpTargetOptions o;
    o.url = url;
    o.table = "orders";
    auto r = HttpTarget(o).Apply({Change(1)});
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_EQ(r.status().code(), common::Code::kInvalidArgument) << url;
    EXPECT_NE(r.status().message().find("(http-only)"), std::string::npos) << r.status().message();
  }
}

// A redirect is never followed: the batch counts as not delivered, with a
// reason saying so, and where it points (here a denied address, and a
// second server that would have taken it) receives nothing.
TEST(WebhookPolicy, ARedirectIsNotFollowed) {
  httplib::Server hop, elsewhere;
  std::atomic<int> reached{0};
  elsewhere.Post("/steal", [&](const httplib::Request&, httplib::Response& res) {
    ++reached;
    res.status = 200;
  });
  int elsewhere_port = elsewhere.bind_to_any_port("127.0.0.1");
  hop.Post("/hook", [&](const httplib::Request& req, httplib::Response& res) {
    res.status = 307;
    res.set_header("Location",
                   req.has_param("meta")
                       ? "http://169.254.169.254/latest/meta-data"
                       : "http://127.0.0.1:" + std::to_string(elsewhere_port) + "/steal");
  });
  int hop_port = hop.bind_to_any_port("127.0.0.1");
  std::thread a([&] { hop.listen_after_bind(); }), b([&] { elsewhere.listen_after_bind(); });
  while (!hop.is_running() || !elsewhere.is_running())
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  for (const char* query : {"", "?meta=1"}) {
    HttpTargetOptions o;
    o.url = "http://127.0.0.1:" + std::to_string(hop_port) + "/hook" + query;
    o.table = "orders";
    o.attempts = 1;
    auto r = HttpTarget(o).Apply({Change(1)});
    ASSERT_FALSE(r.ok()) << query;
    EXPECT_EQ(r.status().code(), common::Code::kUnavailable);
    EXPECT_NE(r.status().message().find("does not follow redirects"), std::string::npos)
        << r.status().message();
  }
  EXPECT_EQ(reached.load(), 0);
  hop.stop();
  elsewhere.stop();
  a.join();
  b.join();
}

// The operator's deny list, at connect time: a host name resolving to a
// denied address is refused before any request.
TEST_F(Webhook, AHostResolvingToADeniedAddressIsRefusedAtConnectTime) {
  auto before = *guard::ProcessPolicy();
  guard::SetProcessPolicy(*guard::ConnectPolicy::FromLists({}, {"127.0.0.0/8", "::1/128"}));
  HttpTargetOptions o = Options();
  o.url = "http://localhost:" + std::to_string(port_) + "/hook";
  auto r = HttpTarget(o).Apply({Change(1)});
  guard::SetProcessPolicy(before);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("(connect-deny)"), std::string::npos) << r.status().message();
  EXPECT_EQ(calls_.load(), 0);
  // Allowed again, the same target delivers.
  ASSERT_TRUE(HttpTarget(o).Apply({Change(1)}).ok());
  EXPECT_EQ(calls_.load(), 1);
}

// JSONL: only under the root. A table name with a separator or "..", an
// absolute directory or one climbing out are refused in the worker too.
TEST(JsonlTarget, WritesOnlyUnderItsRoot) {
  auto root = std::filesystem::temp_directory_path() / ("jsonl-" + common::Uuid::V4().ToString());
  auto outside =
      std::filesystem::temp_directory_path() / ("escape-" + common::Uuid::V4().ToString());
  struct Case {
    std::string directory, table;
  };
  for (const auto& c : std::vector<Case>{{"out", "../../" + outside.filename().string()},
                                         {"out", "a/b"},
                                         {"out", ".."},
                                         {outside.string(), "orders"},
                                         {"../" + outside.filename().string(), "orders"},
                                         {"out/../..", "orders"}}) {
    auto t = MakeTarget("jsonl", {{"root", root.string()}, {"directory", c.directory}}, "public",
                        c.table);
    EXPECT_FALSE(t.ok()) << c.directory << " " << c.table;
    EXPECT_EQ(t.status().code(), common::Code::kInvalidArgument);
    // Built by hand past the factory, Apply refuses the same.
    JsonlTarget direct({root.string(), c.directory, c.table});
    EXPECT_FALSE(direct.Apply({Change(1)}).ok()) << c.directory << " " << c.table;
  }
  EXPECT_FALSE(std::filesystem::exists(outside));
  EXPECT_FALSE(MakeTarget("jsonl", {{"directory", "out"}}, "public", "orders").ok())
      << "no root, no target";
  std::filesystem::remove_all(root);
}

TEST(JsonlTarget, FilesAre0640) {
  auto root = std::filesystem::temp_directory_path() / ("jsonl-" + common::Uuid::V4().ToString());
  mode_t old = umask(0);  // whatever the umask, the file is 0640
  auto target = MakeTarget("jsonl", {{"root", root.string()}, {"directory", "out"}}, "public", "t");
  ASSERT_TRUE(target.ok());
  ASSERT_TRUE((*target)->Apply({Change(1)}).ok());
  umask(old);
  auto perms = std::filesystem::status(root / "out" / "t.jsonl").permissions();
  EXPECT_EQ(perms & std::filesystem::perms::all, std::filesystem::perms::owner_read |
                                                     std::filesystem::perms::owner_write |
                                                     std::filesystem::perms::group_read);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace sluice::connectors::targets
