// The JSONL and HTTP webhook targets. The webhook receiver is a real HTTP
// server on loopback (cpp-httplib), standing in for the user's endpoint.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <atomic>
#include <ctime>
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
  return {common::ChangeOp::kCreate,
          {{"id", id}},
          {{"id", id}, {"name", "n"}},
          {},
          "t/0/" + std::to_string(id)};
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
  TargetChange moved{
      common::ChangeOp::kUpdate, {{"id", 30}}, {{"id", 30}, {"name", "n"}}, {}, "t/0/9"};
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

// A full disk: the file is /dev/full, where every write fails with ENOSPC.
TEST(JsonlTarget, AFullDiskIsAnOutageAndNothingIsHalfWritten) {
  auto dir = std::filesystem::temp_directory_path() / ("jsonl-" + common::Uuid::V4().ToString());
  std::filesystem::create_directories(dir / "out");
  // A device node like /dev/full (the target opens no symlink).
  if (mknod((dir / "out" / "orders.jsonl").c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0)
    GTEST_SKIP() << "mknod needs CAP_MKNOD: " << strerror(errno);
  JsonlTarget target({dir.string(), "out", "orders", 10});
  auto r = target.Apply({Change(1)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), common::Code::kUnavailable);
  EXPECT_NE(r.status().message().find("No space left on device"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(std::filesystem::is_character_file(dir / "out" / "orders.jsonl"))
      << "a device never rotates";
  // Space again: the same batch lands whole.
  std::filesystem::remove(dir / "out" / "orders.jsonl");
  ASSERT_TRUE(target.Apply({Change(1)}).ok());
  std::ifstream in(dir / "out" / "orders.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(json::parse(line)["key"]["id"], 1);
  std::filesystem::remove_all(dir);
}

// A file that cannot be opened for writing (EACCES for a user, EISDIR here
// as root can write anywhere) is an outage too, never a refusal.
TEST(JsonlTarget, AFileThatCannotBeWrittenIsAnOutage) {
  auto dir = std::filesystem::temp_directory_path() / ("jsonl-" + common::Uuid::V4().ToString());
  std::filesystem::create_directories(dir / "out" / "orders.jsonl");
  JsonlTarget target({dir.string(), "out", "orders", 1 << 20});
  auto r = target.Apply({Change(1)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), common::Code::kUnavailable);
  EXPECT_NE(r.status().message().find("cannot open"), std::string::npos) << r.status().message();
  std::filesystem::remove_all(dir);
}

class Webhook : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      ++calls_;
      keys_.push_back(req.get_header_value("Idempotency-Key"));
      if (calls_ <= fail_first_) {
        res.status = 503;
        if (!retry_after_.empty()) res.set_header("Retry-After", retry_after_);
        return;
      }
      last_ = json::parse(req.body);
      auth_ = req.get_header_value("Authorization");
      if (max_changes_ > 0 && last_["changes"].size() > max_changes_) {
        res.status = 413;
        res.set_content("request entity too large", "text/plain");
        return;
      }
      if (max_changes_ > 0)
        for (const auto& c : last_["changes"]) landed_.push_back(c["key"]["id"].get<int>());
      if (refuse_id_ >= 0) {
        for (const auto& c : last_["changes"])
          if (c["key"]["id"] == refuse_id_) {
            res.status = 422;
            res.set_content("id " + std::to_string(refuse_id_) + " is not acceptable",
                            "text/plain");
            return;
          }
        for (const auto& c : last_["changes"]) landed_.push_back(c["key"]["id"].get<int>());
      }
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
  int refuse_id_ = -1;           // 422 for any body holding this id
  std::size_t max_changes_ = 0;  // 413 for a body holding more changes
  std::string retry_after_;
  std::vector<std::string> keys_;
  std::vector<int> landed_;
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

TEST_F(Webhook, ARefusalOfEveryChangeRefusesEachWithTheServersWords) {
  status_ = 422;
  HttpTarget target(Options());
  auto r = target.Apply({Change(1), Change(2)});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_NE((*r)[0].error.find("name must be upper case"), std::string::npos);
}

TEST(HttpVerdicts, OnlyTheRecordsOwnFaultsAreRefusalsEverythingElseIsAnOutage) {
  for (long s : {200L, 201L, 202L, 204L})
    EXPECT_EQ(ClassifyHttpStatus(s), HttpVerdict::kDelivered) << s;
  for (long s : {400L, 413L, 422L}) EXPECT_EQ(ClassifyHttpStatus(s), HttpVerdict::kRefused) << s;
  for (long s : {301L, 401L, 403L, 404L, 405L, 408L, 409L, 429L, 500L, 502L, 503L, 504L})
    EXPECT_EQ(ClassifyHttpStatus(s), HttpVerdict::kOutage) << s;
}

TEST(HttpVerdicts, RetryAfterReadsSecondsAndDates) {
  EXPECT_EQ(ParseRetryAfter("2"), std::chrono::milliseconds(2000));
  EXPECT_EQ(ParseRetryAfter(""), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("soon"), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"), std::chrono::milliseconds(0));
  auto later = std::time(nullptr) + 30;
  char text[64];
  std::tm tm{};
  gmtime_r(&later, &tm);
  std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  auto wait = ParseRetryAfter(text);
  ASSERT_TRUE(wait.has_value()) << text;
  EXPECT_GE(*wait, std::chrono::milliseconds(28000));
  EXPECT_LE(*wait, std::chrono::milliseconds(30000));
}

TEST_F(Webhook, ExpiredCredentialsAreAnOutageNotARefusal) {
  status_ = 401;
  HttpTarget target(Options());
  auto r = target.Apply({Change(1), Change(2)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), common::Code::kUnavailable);
  EXPECT_NE(r.status().message().find("401"), std::string::npos) << r.status().message();
  EXPECT_EQ(calls_.load(), 1) << "a 401 is not retried in place";
}

TEST_F(Webhook, NotFoundAndTooManyRequestsAreOutages) {
  for (int status : {403, 404, 408, 429}) {
    status_ = status;
    HttpTarget target(Options());
    EXPECT_EQ(target.Apply({Change(1)}).status().code(), common::Code::kUnavailable) << status;
  }
}

TEST_F(Webhook, RetryAfterIsHandedToTheCallerInsteadOfRetryingAtOnce) {
  fail_first_ = 1;
  retry_after_ = "3";
  HttpTarget target(Options());
  auto r = target.Apply({Change(1)});
  EXPECT_EQ(r.status().code(), common::Code::kUnavailable);
  EXPECT_EQ(calls_.load(), 1);
  EXPECT_EQ(target.RetryAfter(), std::chrono::milliseconds(3000));
  r = target.Apply({Change(1)});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(target.RetryAfter(), std::nullopt);
}

TEST_F(Webhook, ARefusedRecordIsFoundByBisectionAndTheOthersLand) {
  refuse_id_ = 17;
  std::vector<TargetChange> batch;
  for (int id = 1; id <= 50; ++id) batch.push_back(Change(id));
  HttpTarget target(Options());
  auto r = target.Apply(batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].index, 16u);
  EXPECT_NE((*r)[0].error.find("422"), std::string::npos);
  EXPECT_NE((*r)[0].error.find("id 17 is not acceptable"), std::string::npos);
  std::vector<int> want;
  for (int id = 1; id <= 50; ++id)
    if (id != 17) want.push_back(id);
  EXPECT_EQ(landed_, want) << "49 land, in order";
  EXPECT_LE(calls_.load(), 2 * 6 + 1) << "bisection, not one request per record";
}

TEST_F(Webhook, A413IsBisectedDownToBodiesThatFitAndNothingIsRefused) {
  max_changes_ = 10;
  std::vector<TargetChange> batch;
  for (int id = 1; id <= 50; ++id) batch.push_back(Change(id));
  HttpTarget target(Options());
  auto r = target.Apply(batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->empty());
  std::vector<int> want;
  for (int id = 1; id <= 50; ++id) want.push_back(id);
  EXPECT_EQ(landed_, want);
}

TEST_F(Webhook, TheIdempotencyKeyNamesTheRecordsAndRepeatsOnAReplay) {
  HttpTarget target(Options());
  ASSERT_TRUE(target.Apply({Change(5), Change(6), Change(7)}).ok());
  ASSERT_TRUE(target.Apply({Change(5), Change(6), Change(7)}).ok());
  ASSERT_TRUE(target.Apply({Change(5), Change(6)}).ok());
  ASSERT_EQ(keys_.size(), 3u);
  EXPECT_EQ(keys_[0], "orders@t/0/5-7");
  EXPECT_EQ(keys_[1], keys_[0]);
  EXPECT_NE(keys_[2], keys_[0]) << "other records, another key";
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
