// SQL for backfill_run / backfill_item. Every state the launcher acts on is
// in these rows (nothing in memory), so an orchestrator restart, or another
// back end taking over, resumes where the last one stopped.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <vector>

#include "backfill/model.h"

namespace sluice::backfill {

class Repository {
 public:
  // Throws pqxx::unique_violation when the source already has a running run
  // (the active-run index); callers turn that into 409.
  static void InsertRun(pqxx::transaction_base& tx, const BackfillRun& run);
  static void InsertItem(pqxx::transaction_base& tx, const BackfillItem& item);

  static std::optional<BackfillRun> FindRun(pqxx::transaction_base& tx, const common::Uuid& id,
                                            bool for_update = false);
  static std::optional<BackfillRun> ActiveRunOf(pqxx::transaction_base& tx,
                                                const common::Uuid& source_connector_id);
  static std::vector<BackfillRun> RunningRuns(pqxx::transaction_base& tx);
  static std::vector<BackfillItem> ItemsOf(pqxx::transaction_base& tx, const common::Uuid& run_id,
                                           bool for_update = false);
  static std::optional<BackfillItem> FindItem(pqxx::transaction_base& tx, const common::Uuid& id,
                                              bool for_update = false);

  // Writes every mutable column of the item / run (and updated_at).
  static void UpdateItem(pqxx::transaction_base& tx, const BackfillItem& item);
  // Writes status and the stall pair; stalled_since is written with
  // coalesce(existing, given) so no tick can postpone it.
  static void UpdateRun(pqxx::transaction_base& tx, const BackfillRun& run);
};

// Timestamps cross into SQL as epoch microseconds (naive UTC columns).
std::int64_t Micros(common::TimePoint t);
common::TimePoint FromMicros(std::int64_t us);

}  // namespace sluice::backfill
