// Versioned, forward-only schema migrations tracked in one bookkeeping table,
// sluice_schema_migrations. Safe to run twice and concurrently: the runner
// holds a session advisory lock for its whole run.
#pragma once

#include <string>

#include "common/status.h"

namespace sluice::store {

// Name of the one table outside the spec's 30 that Sluice's migrations own.
inline constexpr const char* kMigrationsTable = "sluice_schema_migrations";

struct MigrateReport {
  int from_version = 0;  // highest version applied before this run
  int to_version = 0;    // highest version applied after it
};

// Applies every embedded migration the database lacks, each in its own
// transaction. Refuses, changing nothing, a database that is unreachable or
// whose schema is newer than this binary knows.
common::Result<MigrateReport> Migrate(const std::string& url);

// Highest migration version this binary carries.
int LatestVersion();

}  // namespace sluice::store
