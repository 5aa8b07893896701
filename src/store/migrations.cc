#include "store/migrations.h"

#include <fmt/format.h>
#include <pqxx/pqxx>

#include "store/migration_list.h"

namespace sluice::store {

using common::FirstLine;

namespace {
// Arbitrary but fixed: every sluice process migrating this database contends
// for the same key.
constexpr long long kMigrationLockKey = 0x5173'6c75'6963'6501LL;

}  // namespace

int LatestVersion() {
  int latest = 0;
  for (const auto& m : EmbeddedMigrations()) latest = std::max(latest, m.version);
  return latest;
}

common::Result<MigrateReport> Migrate(const std::string& url) {
  std::unique_ptr<pqxx::connection> conn;
  try {
    conn = std::make_unique<pqxx::connection>(url);
  } catch (const std::exception& e) {
    return common::Unavailable(
        fmt::format("cannot connect to the database: {}", FirstLine(e.what())));
  }

  try {
    {
      pqxx::nontransaction lock(*conn);
      lock.exec_params("SELECT pg_advisory_lock($1)", kMigrationLockKey);
    }
    MigrateReport report;
    {
      pqxx::work tx(*conn);
      tx.exec(fmt::format(
          "CREATE TABLE IF NOT EXISTS {} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
          "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
          kMigrationsTable));
      auto row =
          tx.exec1(fmt::format("SELECT coalesce(max(version), 0) FROM {}", kMigrationsTable));
      report.from_version = row[0].as<int>();
      tx.commit();
    }
    report.to_version = report.from_version;
    if (report.from_version > LatestVersion()) {
      pqxx::nontransaction unlock(*conn);
      unlock.exec_params("SELECT pg_advisory_unlock($1)", kMigrationLockKey);
      return common::FailedPrecondition(fmt::format(
          "database schema is at version {}, newer than this sluice knows ({}); upgrade sluice",
          report.from_version, LatestVersion()));
    }
    for (const auto& m : EmbeddedMigrations()) {
      if (m.version <= report.from_version) continue;
      pqxx::work tx(*conn);
      tx.exec(m.sql);
      tx.exec_params(
          fmt::format("INSERT INTO {} (version, name) VALUES ($1, $2)", kMigrationsTable),
          m.version, m.name);
      tx.commit();
      report.to_version = m.version;
    }
    pqxx::nontransaction unlock(*conn);
    unlock.exec_params("SELECT pg_advisory_unlock($1)", kMigrationLockKey);
    return report;
  } catch (const pqxx::broken_connection& e) {
    return common::Unavailable(fmt::format("database connection lost: {}", FirstLine(e.what())));
  } catch (const std::exception& e) {
    return common::Internal(fmt::format("migration failed: {}", FirstLine(e.what())));
  }
}

}  // namespace sluice::store
