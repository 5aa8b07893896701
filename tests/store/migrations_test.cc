// `sluice db migrate`: versioned, forward-only, idempotent, safe to run
// concurrently, and refusing bad targets with one clear line.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <future>
#include <pqxx/pqxx>

#include "common/subprocess.h"
#include "common/uuid.h"
#include "store/migrations.h"
#include "support/test_database.h"

namespace sluice::testing {
namespace {

// An empty database (not cloned from the migrated template).
class EmptyDatabase {
 public:
  EmptyDatabase() : name_("sluice_e_" + common::Uuid::V4().ToString().substr(0, 8)) {
    pqxx::connection c(ClusterUrl("postgres"));
    pqxx::nontransaction(c).exec("CREATE DATABASE " + name_);
  }
  ~EmptyDatabase() {
    pqxx::connection c(ClusterUrl("postgres"));
    pqxx::nontransaction(c).exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  }
  std::string url() const { return ClusterUrl(name_); }

 private:
  std::string name_;
};

common::ProcessResult RunMigrate(const std::string& url) {
  return common::RunProcess(
      {"env", "SLUICE_DATABASE_URL=" + url, std::getenv("SLUICE_BIN"), "db", "migrate"});
}

int CountTables(const std::string& url) {
  pqxx::connection c(url);
  return pqxx::nontransaction(c)
      .exec1("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'")[0]
      .as<int>();
}

TEST(Migrate, EmptyDatabaseGetsTheFullSchema) {
  EmptyDatabase db;
  auto run = RunMigrate(db.url());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(CountTables(db.url()), 31);  // 30 spec tables + sluice_schema_migrations
}

TEST(Migrate, SecondRunIsANoOp) {
  EmptyDatabase db;
  ASSERT_EQ(RunMigrate(db.url()).exit_code, 0);
  auto again = RunMigrate(db.url());
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("up to date"), std::string::npos) << again.output;
  pqxx::connection c(db.url());
  auto rows = pqxx::nontransaction(c).exec("SELECT version FROM sluice_schema_migrations");
  EXPECT_EQ(rows.size(), static_cast<std::size_t>(store::LatestVersion()));
}

TEST(Migrate, ConcurrentRunsApplyEachMigrationOnce) {
  EmptyDatabase db;
  std::vector<std::future<common::ProcessResult>> runs;
  for (int i = 0; i < 4; ++i)
    runs.push_back(std::async(std::launch::async, [&] { return RunMigrate(db.url()); }));
  for (auto& r : runs) {
    auto result = r.get();
    EXPECT_EQ(result.exit_code, 0) << result.output;
  }
  pqxx::connection c(db.url());
  auto count = pqxx::nontransaction(c).exec1("SELECT count(*) FROM sluice_schema_migrations");
  EXPECT_EQ(count[0].as<int>(), store::LatestVersion());
  EXPECT_EQ(CountTables(db.url()), 31);
}

TEST(Migrate, UnreachableDatabaseExitsNonZeroWithOneLine) {
  auto run = RunMigrate("postgresql://postgres@127.0.0.1:1/nothing?connect_timeout=2");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("cannot connect to the database"), std::string::npos) << run.output;
  EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 1) << run.output;
}

TEST(Migrate, MissingUrlIsAClearError) {
  auto run = common::RunProcess(
      {"env", "-u", "SLUICE_DATABASE_URL", std::getenv("SLUICE_BIN"), "db", "migrate"});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("SLUICE_DATABASE_URL is not set"), std::string::npos) << run.output;
}

TEST(Migrate, NewerSchemaVersionIsRefusedAndNothingChanges) {
  EmptyDatabase db;
  {
    pqxx::connection c(db.url());
    pqxx::nontransaction tx(c);
    tx.exec(
        "CREATE TABLE sluice_schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT "
        "NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())");
    tx.exec(
        "INSERT INTO sluice_schema_migrations (version, name) VALUES (9999, 'from_the_future')");
  }
  auto run = RunMigrate(db.url());
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("newer than this sluice knows"), std::string::npos) << run.output;
  EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 1) << run.output;
  EXPECT_EQ(CountTables(db.url()), 1);  // only the bookkeeping table it already had
}

TEST(Migrate, StateOutsideTheSpecLivesInItsOwnSchemaAndOldTablesMoveThereWithTheirRows) {
  EmptyDatabase db;
  {
    // What an older sluice created lazily, in public, beside the spec's tables.
    pqxx::connection c(db.url());
    pqxx::nontransaction tx(c);
    tx.exec(
        "CREATE TABLE events_outbox_cursor (name VARCHAR(64) PRIMARY KEY, last_seq BIGINT NOT "
        "NULL, created_at TIMESTAMP, updated_at TIMESTAMP)");
    tx.exec("INSERT INTO events_outbox_cursor (name, last_seq) VALUES ('connector_events', 42)");
  }
  auto run = RunMigrate(db.url());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(CountTables(db.url()), 31);  // public: the spec's 30 + bookkeeping, nothing else
  pqxx::connection c(db.url());
  pqxx::nontransaction tx(c);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM information_schema.tables WHERE table_schema = "
                     "'sluice_state'")[0]
                .as<int>(),
            9);  // registry (3), outbox cursor, auth sessions and refresh tokens, source slots,
                 // worker launch numbers, source positions
  EXPECT_EQ(tx.exec1("SELECT last_seq FROM sluice_state.events_outbox_cursor WHERE name = "
                     "'connector_events'")[0]
                .as<int>(),
            42);
}

}  // namespace
}  // namespace sluice::testing
