#include "warehouse/warehouse_fixture.h"

#include <thread>

namespace sluice::testing {

Json ClusterWarehouseConfig(const std::string& dbname) {
  return {{"host", "127.0.0.1"}, {"port", ClusterPort()},         {"database", dbname},
          {"user", "postgres"},  {"password", ClusterPassword()}, {"sslmode", "disable"}};
}

void WarehouseApiTest::SetUp() {
  ApiTest::SetUp();
  if (HasFatalFailure()) return;
  work_db_ = std::make_unique<TestDatabase>();
  warehouse_id_ = NewPgWarehouse(team_id_, "local-pg");
}

std::string WarehouseApiTest::NewPgWarehouse(const std::string& team, const std::string& name) {
  auto w = Post("/api/v1/teams/" + team + "/warehouses",
                {{"name", name},
                 {"warehouse_type", "postgresql"},
                 {"configuration", ClusterWarehouseConfig(work_db_->name())}});
  EXPECT_EQ(w.status, 201) << w.body.dump();
  return w.body.value("id", "");
}

Json WarehouseApiTest::StartRun(const std::string& warehouse, const std::string& sql) {
  auto r = Post("/api/v1/warehouses/" + warehouse + "/runs", {{"sql", sql}});
  EXPECT_EQ(r.status, 202) << r.body.dump();
  return r.body;
}

Json WarehouseApiTest::WaitRun(const std::string& run_id, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    auto r = Get("/api/v1/script-runs/" + run_id);
    EXPECT_EQ(r.status, 200) << r.body.dump();
    if (r.status != 200 || r.body["status"] != "running") return r.body;
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "run still going: " << r.body.dump();
      return r.body;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Json WarehouseApiTest::WaitStatement(const std::string& run_id, int index,
                                     const std::string& status) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (true) {
    auto r = Get("/api/v1/script-runs/" + run_id);
    if (r.status == 200 && r.body["statements"][index]["status"] == status) return r.body;
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "statement " << index << " never reached " << status << ": "
                    << r.body.dump();
      return r.body;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace sluice::testing
