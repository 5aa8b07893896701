// The initial snapshot: every chosen table read in one REPEATABLE READ
// transaction (on the slot's exported snapshot when there is one), in
// primary-key order, chunk by chunk (keyset pagination), as op 'r' events.
// After each chunk the sink is flushed and then the progress is reported, so
// progress the caller persists never runs ahead of what is durable.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "connectors/change_sink.h"
#include "connectors/postgres/change_assembler.h"
#include "connectors/production_metrics.h"

namespace sluice::connectors::postgres {

struct TableProgress {
  TableId table;
  bool done = false;
  // Text values of the last primary key read (in key order); empty: from the start.
  std::vector<std::string> last_key;
  std::int64_t rows = 0;
  // A re-snapshot after a lost position: the table goes out as a truncate
  // event before its first row (rows deleted in the lost changes must not
  // survive in the targets). Cleared once that truncate is durable.
  bool truncate_first = false;
};

// The resumable state of a snapshot: persist ToJson(), pass FromJson() back.
struct SnapshotProgress {
  std::vector<TableProgress> tables;
  // Set for a re-snapshot after a lost position: it must be finished
  // whatever the snapshot option says, even by a restarted source.
  bool resnapshot = false;

  bool Done() const;
  nlohmann::json ToJson() const;
  static common::Result<SnapshotProgress> FromJson(const nlohmann::json& j);
  // Progress for `tables`, keeping what `previous` already says about each.
  static SnapshotProgress For(const std::vector<TableId>& tables, const SnapshotProgress& previous);
  // A re-snapshot of `tables` from the start, each truncated first.
  static SnapshotProgress Resnapshot(const std::vector<TableId>& tables);
  // A re-snapshot a previous run began and did not finish.
  bool ResnapshotUnfinished() const { return resnapshot && !Done(); }
};

struct SnapshotOptions {
  std::string url;
  std::string snapshot_name;  // exported by CREATE_REPLICATION_SLOT; empty: a fresh one
  int chunk_size = 1000;
  std::string topic_prefix;
  std::function<void(const SnapshotProgress&)> on_progress;
  // Stop after this many chunks (0: no limit); lets tests interrupt a snapshot.
  int max_chunks = 0;
};

// Reads what `progress` says is left. Tables without a primary key are read
// in one pass (not resumable within the table).
common::Status ReadSnapshot(const SnapshotOptions& options, SnapshotProgress* progress,
                            ChangeSink* sink, SchemaCache* schemas,
                            ProductionMetrics* metrics = nullptr);

}  // namespace sluice::connectors::postgres
