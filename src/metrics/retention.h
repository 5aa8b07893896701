// Raw metric retention: deletes production_metric / consumption_metric rows
// older than the retention in bounded batches (one short transaction each, so
// ingestion is never blocked for long), and keeps one
// raw_metric_retention_state row per table saying how that went. The prune
// walks the created_at index, so a missing or INVALID index is rebuilt
// CONCURRENTLY first.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "store/database.h"

namespace sluice::metrics {

struct RetentionOptions {
  std::chrono::seconds retention{0};  // 0 disables pruning (and clears failed_at)
  int batch_size = 5000;              // rows per DELETE
  int max_batches = 100;              // per table per cycle; the rest waits
};

struct TableRetention {
  std::string table;
  std::int64_t deleted = 0;
  bool caught_up = false;  // no deletable row left behind
  bool index_rebuilt = false;
  common::Status status;  // the prune's failure, also stored in the state row
};

// The state row as stored, for the API and /metrics.
struct RetentionState {
  std::string table;
  common::TimePoint tracked_since;
  std::optional<common::TimePoint> caught_up_at;
  std::optional<common::TimePoint> failed_at;
  std::optional<common::TimePoint> index_invalid_since;
  std::optional<std::string> error;
  std::optional<std::string> index_error;
};

class RawRetention {
 public:
  static constexpr std::size_t kMaxErrorChars = 500;

  RawRetention(store::Database& db, RetentionOptions opts) : db_(db), opts_(opts) {}

  // One cycle over both raw tables. Failures are recorded, not thrown.
  std::vector<TableRetention> RunOnce(common::TimePoint now);

  static std::vector<RetentionState> ReadStates(pqxx::transaction_base& tx);

  // "<exception type>: <first line of message>", cut to kMaxErrorChars.
  static std::string DescribeError(const std::exception& e);

 private:
  TableRetention RunTable(const std::string& table, common::TimePoint now);
  // Rebuilds ix_<table>_created_at when missing or INVALID; true if it did.
  bool EnsureIndex(const std::string& table, common::TimePoint now);

  store::Database& db_;
  RetentionOptions opts_;
};

}  // namespace sluice::metrics
