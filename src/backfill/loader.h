// The loader: one backfill item, read from the PostgreSQL source and written
// into the destination in idempotent batches (upserts by key), in parallel
// partitions. Run by `sluice loader` (src/cli/loader_command.cc).
//
// THE ORDERING RULE (backfill beside live CDC, nothing lost or duplicated):
// every destination table has a "backfill fence", an advisory lock on the
// target database keyed by PostgresTarget::BackfillFenceKey(schema, table).
//   - The live stream's target (PostgresTarget) takes the fence EXCLUSIVELY
//     inside every batch's transaction.
//   - The loader takes it SHARED around each chunk, and reads the chunk from
//     the source only AFTER it holds the fence; the chunk is committed into
//     the destination before the fence is released.
// So a chunk's rows are a source state at least as new as every change the
// stream had applied to the destination before the chunk (those committed at
// the source before the stream could apply them, i.e. before the read), and
// every change the stream applies after the chunk either is newer (it wins:
// upsert/delete by key) or belongs to a lagging stream that replays, in
// order, up to the newest state. A row deleted at the source before the read
// is not read (no resurrection); one deleted after is deleted by the stream
// after the chunk. Upserts make a repeated chunk (requeue, retry) harmless.
// A sequential_read holds one snapshot for the whole table, so it holds the
// fence for the whole read: the stream to that table waits, then resumes.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace sluice::backfill {

// What the launcher hands a loader (JSON in the 0600 launch file).
struct LoaderConfig {
  std::string item_id;
  std::optional<std::int64_t> attempt_micros;  // the item's started_at: fences reports
  std::string source_url;
  std::string source_table;  // "schema.table"
  std::string target_type;   // postgresql | http | jsonl
  nlohmann::json target;     // the target runtime config (as MakeTarget takes it)
  std::string target_schema = "public";
  std::string target_table;
  bool truncate_history = false;
  bool already_truncated = false;  // an earlier attempt emptied it: do not again
  std::optional<std::string> partition_column;
  bool sequential_read = false;
  std::vector<nlohmann::json> transforms;  // datamodel shaping, then the subscription's
  std::optional<std::string> report_database_url;
  int partitions = 4;
  int chunk_rows = 20000;  // rows per chunk (the fence is held for one chunk)
  // The launcher's connect policy (guard/connect_policy.h), so the loader's
  // connect-time check is serve's; null: this process's own.
  nlohmann::json connect_policy;

  nlohmann::json ToJson() const;
  static common::Result<LoaderConfig> FromJson(const nlohmann::json& j);
};

struct CheckVerdict {
  std::optional<std::int64_t> approximate_row_count;  // pg_class.reltuples, when analysed
};

// The pre-check rules (the load applies the same ones before any truncate):
// the source table exists, its key is usable (a primary key, or the operator
// accepted a sequential read), a partition column exists, and a PostgreSQL
// destination that already exists has a primary key the shaped rows carry.
// InvalidArgument / FailedPrecondition / NotFound: rejected. Unavailable: no
// verdict (the caller fails open).
common::Result<CheckVerdict> CheckPair(const LoaderConfig& config);

// Progress callbacks, dated by the loader's own clock.
struct LoadHooks {
  // Asked before anything is written or emptied: is this attempt still live?
  std::function<common::Status()> still_ours;
  std::function<common::Status(common::TimePoint)> on_truncated;
  std::function<common::Status(std::int64_t rows, common::TimePoint)> on_progress;
};

// Loads the item; returns the rows written. `stop` ends it early (an error).
common::Result<std::int64_t> LoadPair(const LoaderConfig& config, const LoadHooks& hooks,
                                      const std::atomic<bool>& stop);

}  // namespace sluice::backfill
