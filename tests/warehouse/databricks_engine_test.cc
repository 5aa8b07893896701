// The databricks engine against a local HTTP server that stands in for the
// real Databricks service (which cannot be reached from here). The stand-in
// speaks the documented SQL Statement Execution API 2.0: POST
// /api/2.0/sql/statements, GET /api/2.0/sql/statements/{id}, POST
// .../{id}/cancel and GET .../{id}/result/chunks/{n}, with bearer tokens,
// PENDING/RUNNING/SUCCEEDED/FAILED/CANCELED states and INLINE JSON_ARRAY
// chunks linked by next_chunk_index / next_chunk_internal_link.
#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <mutex>
#include <thread>

#include "connectors/types/config_validation.h"
#include "warehouse/databricks_engine.h"
#include "warehouse/runner.h"
#include "warehouse/warehouse_fixture.h"

namespace sluice::warehouse {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class FakeDatabricks {
 public:
  static constexpr const char* kToken = "dapi-test-token";
  static constexpr const char* kWarehouse = "abc123def";
  static constexpr int kChunkRows = 300;

  FakeDatabricks() {
    server_.Post("/api/2.0/sql/statements",
                 [this](const auto& req, auto& res) { Submit(req, res); });
    server_.Get(R"(/api/2.0/sql/statements/([^/]+))",
                [this](const auto& req, auto& res) { Status(req, res); });
    server_.Post(R"(/api/2.0/sql/statements/([^/]+)/cancel)",
                 [this](const auto& req, auto& res) { Cancel(req, res); });
    server_.Get(R"(/api/2.0/sql/statements/([^/]+)/result/chunks/(\d+))",
                [this](const auto& req, auto& res) { Chunk(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeDatabricks() {
    server_.stop();
    thread_.join();
  }

  json Config(const std::string& token = kToken) const {
    return {{"host", "http://127.0.0.1:" + std::to_string(port_)},
            {"http_path", std::string("/sql/1.0/warehouses/") + kWarehouse},
            {"token", token},
            {"catalog", "main"}};
  }
  json LastSubmit() {
    std::lock_guard l(mu_);
    return last_submit_;
  }
  int cancels() {
    std::lock_guard l(mu_);
    return cancels_;
  }

 private:
  struct Statement {
    std::string sql;
    std::string state = "PENDING";
    int polls = 0;
  };

  bool Authorized(const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("Authorization") == std::string("Bearer ") + kToken) return true;
    res.status = 401;
    res.set_content(
        json{{"error_code", "UNAUTHENTICATED"}, {"message", "Invalid access token."}}.dump(),
        "application/json");
    return false;
  }

  // Rows of `select * from big`: 750 rows in chunks of kChunkRows.
  static json BigChunk(const std::string& id, int index) {
    json rows = json::array();
    for (int r = index * kChunkRows; r < std::min(750, (index + 1) * kChunkRows); ++r)
      rows.push_back(json::array({std::to_string(r), r % 2 ? json(nullptr) : json("even")}));
    json chunk = {{"chunk_index", index},
                  {"row_offset", index * kChunkRows},
                  {"row_count", rows.size()},
                  {"data_array", rows}};
    if ((index + 1) * kChunkRows < 750) {
      chunk["next_chunk_index"] = index + 1;
      chunk["next_chunk_internal_link"] =
          "/api/2.0/sql/statements/" + id + "/result/chunks/" + std::to_string(index + 1);
    }
    return chunk;
  }

  json Describe(const std::string& id, Statement& s) {
    json out = {{"statement_id", id}, {"status", {{"state", s.state}}}};
    if (s.state == "FAILED") {
      out["status"]["error"] = {{"error_code", "BAD_REQUEST"},
                                {"message", "[UNRESOLVED_COLUMN.WITHOUT_SUGGESTION] boom"}};
    }
    if (s.state == "SUCCEEDED") {
      json columns = json::array();
      columns.push_back({{"name", s.sql == "select * from big" ? "n" : "1"}, {"type_name", "INT"}});
      json manifest = {{"format", "JSON_ARRAY"}};
      if (s.sql == "select * from big") {
        columns.push_back({{"name", "parity"}, {"type_name", "STRING"}});
        manifest["total_chunk_count"] = 3;
        manifest["total_row_count"] = 750;
        manifest["truncated"] = false;
        out["result"] = BigChunk(id, 0);
      } else {
        manifest["total_chunk_count"] = 1;
        manifest["total_row_count"] = 1;
        out["result"] = {{"chunk_index", 0},
                         {"row_offset", 0},
                         {"row_count", 1},
                         {"data_array", json::array({json::array({"1"})})}};
      }
      manifest["schema"] = {{"column_count", columns.size()}, {"columns", columns}};
      out["manifest"] = manifest;
    }
    return out;
  }

  void Submit(const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res)) return;
    json body = json::parse(req.body, nullptr, false);
    std::lock_guard l(mu_);
    last_submit_ = body;
    if (!body.is_object() || body.value("warehouse_id", "") != kWarehouse) {
      res.status = 404;
      res.set_content(json{{"error_code", "NOT_FOUND"}, {"message", "warehouse not found"}}.dump(),
                      "application/json");
      return;
    }
    std::string id = "01ef-" + std::to_string(++next_id_);
    statements_[id] = {body.value("statement", "")};
    res.set_content(Describe(id, statements_[id]).dump(), "application/json");
  }

  void Status(const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res)) return;
    std::lock_guard l(mu_);
    auto it = statements_.find(req.matches[1]);
    if (it == statements_.end()) {
      res.status = 404;
      return;
    }
    Statement& s = it->second;
    // PENDING, then RUNNING, then the outcome; `select sleep` runs until cancelled.
    if (s.state == "PENDING") {
      s.state = "RUNNING";
    } else if (s.state == "RUNNING" && s.sql != "select sleep") {
      s.state = s.sql == "select boom" ? "FAILED" : "SUCCEEDED";
    }
    res.set_content(Describe(it->first, s).dump(), "application/json");
  }

  void Cancel(const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res)) return;
    std::lock_guard l(mu_);
    auto it = statements_.find(req.matches[1]);
    if (it == statements_.end()) {
      res.status = 404;
      return;
    }
    ++cancels_;
    if (it->second.state == "PENDING" || it->second.state == "RUNNING")
      it->second.state = "CANCELED";
    res.set_content("{}", "application/json");
  }

  void Chunk(const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res)) return;
    std::lock_guard l(mu_);
    std::string id = req.matches[1];
    int index = std::stoi(req.matches[2]);
    auto it = statements_.find(id);
    if (it == statements_.end() || it->second.state != "SUCCEEDED" || index > 2) {
      res.status = 404;
      return;
    }
    res.set_content(BigChunk(id, index).dump(), "application/json");
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::map<std::string, Statement> statements_;
  int next_id_ = 0;
  int cancels_ = 0;
  json last_submit_;
};

StatementState Wait(Engine& e, const std::string& handle) {
  for (int i = 0; i < 1000; ++i) {
    auto st = e.Poll(handle);
    EXPECT_TRUE(st.ok()) << st.status().message();
    if (!st.ok() || !st->running()) return st.ok() ? *st : StatementState{};
    std::this_thread::sleep_for(5ms);
  }
  ADD_FAILURE() << "statement never ended";
  return {};
}

TEST(DatabricksEngine, SubmitsAsynchronouslyToTheConfiguredWarehouse) {
  FakeDatabricks fake;
  auto e = ConnectDatabricks(fake.Config());
  ASSERT_TRUE(e.ok()) << e.status().message();
  auto h = (*e)->Submit("SELECT 1");
  ASSERT_TRUE(h.ok()) << h.status().message();
  json sent = fake.LastSubmit();
  EXPECT_EQ(sent["warehouse_id"], FakeDatabricks::kWarehouse);
  EXPECT_EQ(sent["wait_timeout"], "0s");
  EXPECT_EQ(sent["on_wait_timeout"], "CONTINUE");
  EXPECT_EQ(sent["disposition"], "INLINE");
  EXPECT_EQ(sent["format"], "JSON_ARRAY");
  EXPECT_EQ(sent["catalog"], "main");
  EXPECT_EQ(sent["statement"], "SELECT 1");
  EXPECT_EQ((*e)->Poll(*h)->phase, StatementPhase::kRunning);
  ASSERT_EQ(Wait(**e, *h).phase, StatementPhase::kSucceeded);
  auto rs = (*e)->FetchResult(*h, kMaxResultRows);
  ASSERT_TRUE(rs.ok()) << rs.status().message();
  ASSERT_EQ(rs->columns.size(), 1u);
  EXPECT_EQ(rs->columns[0].type, "INT");
  ASSERT_EQ(rs->rows.size(), 1u);
  ASSERT_EQ(rs->rows[0].size(), 1u);
  EXPECT_EQ(rs->rows[0][0], "1");
}

TEST(DatabricksEngine, ConnectionTestRunsSelectOne) {
  FakeDatabricks fake;
  auto e = ConnectDatabricks(fake.Config());
  auto answer = (*e)->Test();
  ASSERT_TRUE(answer.ok()) << answer.status().message();
  EXPECT_NE(answer->find(FakeDatabricks::kWarehouse), std::string::npos);
}

TEST(DatabricksEngine, BadTokenIsRefusedWithTheServicesWords) {
  FakeDatabricks fake;
  auto e = ConnectDatabricks(fake.Config("wrong"));
  auto answer = (*e)->Test();
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.status().code(), common::Code::kPermissionDenied);
  EXPECT_NE(answer.status().message().find("Invalid access token"), std::string::npos)
      << answer.status().message();
}

TEST(DatabricksEngine, ResultChunksAreFollowedUpToTheRowBound) {
  FakeDatabricks fake;
  auto e = ConnectDatabricks(fake.Config());
  auto h = (*e)->Submit("select * from big");
  ASSERT_EQ(Wait(**e, *h).phase, StatementPhase::kSucceeded);
  auto all = (*e)->FetchResult(*h, 1000);
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(all->rows.size(), 750u);  // three chunks
  EXPECT_FALSE(all->truncated);
  EXPECT_EQ(all->rows[749][0], "749");
  EXPECT_TRUE(all->rows[749][1].is_null());
  auto bounded = (*e)->FetchResult(*h, 500);
  EXPECT_EQ(bounded->rows.size(), 500u);
  EXPECT_TRUE(bounded->truncated);
  EXPECT_EQ(bounded->columns[1].name, "parity");
}

TEST(DatabricksEngine, FailedStatementCarriesTheErrorMessage) {
  FakeDatabricks fake;
  auto e = ConnectDatabricks(fake.Config());
  auto h = (*e)->Submit("select boom");
  auto st = Wait(**e, *h);
  EXPECT_EQ(st.phase, StatementPhase::kFailed);
  EXPECT_NE(st.error.find("UNRESOLVED_COLUMN"), std::string::npos) << st.error;
}

TEST(DatabricksEngine, CancelEndsTheStatement) {
  FakeDatabricks fake;
  auto e = ConnectDatabricks(fake.Config());
  auto h = (*e)->Submit("select sleep");
  for (int i = 0; i < 3; ++i) EXPECT_TRUE((*e)->Poll(*h)->running());
  ASSERT_TRUE((*e)->Cancel(*h).ok());
  EXPECT_EQ(fake.cancels(), 1);
  EXPECT_EQ(Wait(**e, *h).phase, StatementPhase::kCancelled);
}

TEST(DatabricksEngine, HttpPathMustNameAWarehouse) {
  auto e = ConnectDatabricks({{"host", "h"}, {"http_path", "/"}, {"token", "t"}});
  EXPECT_FALSE(e.ok());
}

// The whole path over real HTTP: a databricks warehouse's connection test
// and a Workspace run go through the runner to the stand-in service.
class DatabricksWorkspace : public testing::WarehouseApiTest {};

TEST_F(DatabricksWorkspace, ConnectionTestAndScriptRunGoThroughTheStatementApi) {
  FakeDatabricks fake;
  auto w =
      Post("/api/v1/teams/" + team_id_ + "/warehouses",
           {{"name", "dbx"}, {"warehouse_type", "databricks"}, {"configuration", fake.Config()}});
  ASSERT_EQ(w.status, 201) << w.body.dump();
  EXPECT_EQ(w.body["configuration"]["token"], connectors::types::kRedacted) << w.body.dump();
  std::string id = w.body["id"];
  auto tested = Post("/api/v1/warehouses/" + id + "/test", nullptr);
  ASSERT_EQ(tested.status, 200);
  EXPECT_EQ(tested.body["state"], "live") << tested.body.dump();

  auto run = WaitRun(StartRun(id, "select * from big; select boom; select 1")["id"]);
  ASSERT_EQ(run["status"], "failed") << run.dump().substr(0, 800);
  const auto& s = run["statements"];
  EXPECT_EQ(s[0]["status"], "succeeded");
  EXPECT_EQ(s[0]["result"]["rows"].size(), kMaxResultRows);
  EXPECT_EQ(s[0]["result"]["truncated"], true);
  EXPECT_EQ(s[0]["result"]["columns"][1]["name"], "parity");
  EXPECT_EQ(s[1]["status"], "failed");
  EXPECT_NE(s[1]["error"].get<std::string>().find("UNRESOLVED_COLUMN"), std::string::npos);
  EXPECT_EQ(s[2]["status"], "skipped");
}

}  // namespace
}  // namespace sluice::warehouse
