#include "backfill_harness.h"
#include "backfill/repository.h"
#include "support/pipeline_checks.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>
#include <thread>

namespace sluice::backfill::testing {

BackfillHarness::BackfillHarness() {
  db_ = std::make_unique<store::Database>(plane_.url(), 8);
  dir_ = std::filesystem::temp_directory_path() / ("sluice-bf-" + common::Uuid::V4().ToString());
  std::filesystem::create_directories(dir_);
  source_id_ = common::Uuid::V4();
  target_id_ = common::Uuid::V4();
  team_id_ = common::Uuid::V4();
  env_id_ = common::Uuid::V4();
  db_->Transact([&](pqxx::work& tx) {
    tx.exec_params("INSERT INTO env (id, name, retention_configuration) VALUES ($1, 'e', '{}')",
                   env_id_.ToString());
    tx.exec_params("INSERT INTO team (id, name, env_id) VALUES ($1, 't', $2)", team_id_.ToString(),
                   env_id_.ToString());
    auto connector = [&](const common::Uuid& id, const char* name, const char* way,
                         const std::string& url) {
      tx.exec_params(
          "INSERT INTO connector (id, name, connector_type, json_configuration, way, team_id, "
          "env_id) VALUES ($1, $2, 'postgresql', $3, $4, $5, $6)",
          id.ToString(), name, nlohmann::json{{"url", url}}.dump(), way, team_id_.ToString(),
          env_id_.ToString());
    };
    connector(source_id_, "src", "source", source_.url());
    connector(target_id_, "dst", "target", target_.url());
  });
}

BackfillHarness::~BackfillHarness() { std::filesystem::remove_all(dir_); }

void BackfillHarness::Source(const std::string& sql) {
  pqxx::connection c(source_.url());
  pqxx::nontransaction(c).exec(sql);
}
void BackfillHarness::Target(const std::string& sql) {
  pqxx::connection c(target_.url());
  pqxx::nontransaction(c).exec(sql);
}

void BackfillHarness::CreateSourceTable(const std::string& table, int rows) {
  Source("CREATE TABLE " + table +
         " (id bigint PRIMARY KEY, label text NOT NULL, amount numeric(12,2), at timestamptz); "
         "INSERT INTO " +
         table +
         " SELECT g, 'row ' || g, g * 1.25, timestamptz '2024-01-01' + g * interval '1 second' "
         "FROM generate_series(1, " +
         std::to_string(rows) + ") g");
}

common::Uuid BackfillHarness::AddPair(const std::string& table, const std::string& target_table) {
  auto sub = common::Uuid::V4();
  db_->Transact([&](pqxx::work& tx) {
    auto dm = common::Uuid::V4().ToString();
    tx.exec_params(
        "INSERT INTO datamodel (id, name, config, source_connector_id, source_topic, "
        "source_schema, source_table) VALUES ($1, $2, '{}', $3, $4, 'public', $2)",
        dm, table, source_id_.ToString(), "sluice.public." + table);
    tx.exec_params(
        "INSERT INTO subscription (id, name, config, transform_config, datamodel_id, "
        "target_connector_id, error_table_enabled, target_table_name, "
        "requires_unique_destination) VALUES ($1, $2, '{}', '{}', $3, $4, false, $5, true)",
        sub.ToString(), table + "-sub", dm, target_id_.ToString(), target_table);
  });
  return sub;
}

std::vector<CreatedRun> BackfillHarness::Trigger(const std::vector<common::Uuid>& subscriptions,
                                                 bool truncate_history) {
  return db_->Transact([&](pqxx::work& tx) {
    TriggerRequest q;
    q.origin = Origin::kBulk;
    q.subscription_ids = subscriptions;
    q.truncate_history = truncate_history;
    q.email = "tester@sluice.local";
    auto pairs = ResolvePairs(tx, q);
    EXPECT_TRUE(pairs.ok()) << pairs.status().message();
    auto runs = CreateRuns(tx, q, *pairs);
    EXPECT_TRUE(runs.ok()) << runs.status().message();
    return runs.ok() ? *runs : std::vector<CreatedRun>{};
  });
}

std::string BackfillHarness::Digest(const std::string& url, const std::string& table) {
  try {
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    if (!tx.exec_params1("SELECT to_regclass($1) IS NOT NULL", table)[0].as<bool>())
      return "missing";
    auto r = tx.exec1(
        "SELECT count(*)::text || ':' || coalesce(md5(string_agg(t::text, '|' "
        "ORDER BY id)), '') FROM " +
        table + " t");
    return r[0].c_str();
  } catch (const std::exception& e) {
    return std::string("error: ") + e.what();
  }
}

std::int64_t BackfillHarness::Scalar(const std::string& url, const std::string& sql) {
  pqxx::connection c(url);
  auto r = pqxx::nontransaction(c).exec1(sql);
  return r[0].is_null() ? -1 : r[0].as<std::int64_t>();
}

BackfillItem BackfillHarness::Item(const common::Uuid& id) {
  return db_->Transact([&](pqxx::work& tx) { return *Repository::FindItem(tx, id); });
}
BackfillRun BackfillHarness::RunRow(const common::Uuid& id) {
  return db_->Transact([&](pqxx::work& tx) { return *Repository::FindRun(tx, id); });
}

std::string BackfillHarness::LoaderLogs() { return sluice::testing::LogTails(dir_, 2000); }

pid_t BackfillHarness::StartServe(const std::vector<std::string>& args) {
  auto data_dir = (dir() / "data").string();
  auto log = (dir() / "serve.log").string();
  std::string bin = std::getenv("SLUICE_BIN");
  std::vector<std::string> argv = {bin,           "serve",      "--registry-listen",
                                   "127.0.0.1:0", "--data-dir", data_dir};
  bool has_listen = false;
  for (const auto& a : args) has_listen = has_listen || a == "--listen";
  if (!has_listen) argv.insert(argv.end(), {"--listen", "127.0.0.1:0"});
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("SLUICE_DATABASE_URL", plane_url().c_str(), 1);
    if (!freopen(log.c_str(), "w", stdout) || !freopen(log.c_str(), "a", stderr)) _exit(126);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  return pid;
}

bool BackfillHarness::StopServe(pid_t pid) {
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

RunStatus BackfillHarness::WaitForRun(const common::Uuid& run_id, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  auto status = RunRow(run_id).status;
  while (status != RunStatus::kDone && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    status = RunRow(run_id).status;
  }
  return status;
}

}  // namespace sluice::backfill::testing
