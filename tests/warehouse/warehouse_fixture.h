// An API harness (real server, real PostgreSQL) with a `postgresql`
// warehouse on a database of the test cluster other than the control one
// (the connect policy refuses that), and helpers to wait for a
// run to end by polling it over HTTP like a client would.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "api/api_harness.h"

namespace sluice::testing {

// host/port/database/user of the test database `dbname` as a warehouse config.
Json ClusterWarehouseConfig(const std::string& dbname);

class WarehouseApiTest : public ApiTest {
 protected:
  void SetUp() override;

  // Creates a postgresql warehouse on the test database; returns its id.
  std::string NewPgWarehouse(const std::string& team, const std::string& name);
  // POST a script; returns the 202 body (or fails the test).
  Json StartRun(const std::string& warehouse, const std::string& sql);
  // Polls GET /script-runs/{id} until its status is not running.
  Json WaitRun(const std::string& run_id, std::chrono::seconds limit = std::chrono::seconds(60));
  // Polls until statement `index` reads `status`.
  Json WaitStatement(const std::string& run_id, int index, const std::string& status);

  std::string warehouse_id_;
  // The warehouse's database: same cluster, not the control database.
  std::unique_ptr<TestDatabase> work_db_;
};

}  // namespace sluice::testing
