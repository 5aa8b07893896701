// The back end's side of every report a pod makes: state, heartbeat,
// production and delivery metrics, rejected records, slot readings, column
// changes, skipped records and the source position, written into the
// worker, metric and event rows. One implementation serves both transports
// (a worker reporting straight into the data-plane database,
// model/pipelines/database_reporter.h, and the API's worker endpoints receiving them
// over HTTP) so the rules (Worker::accepts_reported_state under the row
// lock, metric validation, event folding) cannot differ between them. The
// reports' own types and wire forms are the pod's: dataflow/pod_reports.h.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "connectors/production_metrics.h"
#include "dataflow/pod_reports.h"
#include "runtime/worker_state.h"

namespace sluice::model {

common::Status ApplyStateReport(pqxx::work& tx, const dataflow::PodIdentity& pod,
                                runtime::WorkerState state, std::optional<std::string> reason);
// `observed`: the state the pod last reported of itself, if it said.
common::Status ApplyHeartbeat(pqxx::work& tx, const dataflow::PodIdentity& pod,
                              std::optional<runtime::WorkerState> observed);
common::Status IngestProductionIntervals(pqxx::work& tx,
                                         const std::vector<connectors::TopicInterval>& intervals);
common::Status IngestDelivery(pqxx::work& tx, const std::string& subscription_id,
                              const std::string& topic, const dataflow::DeliveryCounters& counters);
// One event per record, by what became of it: subscription.record_rejected
// (error table), subscription.record_skipped (on_refusal skip), or
// subscription.stopped (on_refusal stop, naming the key and position). Each
// folds by its reason.
common::Status RecordRejected(pqxx::work& tx, const dataflow::PodIdentity& pod,
                              const std::string& subscription_id,
                              const std::vector<dataflow::RejectedRef>& records);

// Keeps the slot's latest reading in sluice_state.source_slot and records
// an event when its level changes: source.slot_lag_warn,
// source.slot_lag_critical, or source.slot_lag_cleared once back under.
// A lost slot is source.slot_lost, naming the slot.
common::Status ApplySlotReport(pqxx::work& tx, const dataflow::PodIdentity& pod,
                               const dataflow::SlotReport& report);

// One event per change: source.column_added (info), source.column_dropped
// (warn: the target keeps the column, NULL in new rows),
// source.column_renamed (warn: the target gains the new name, old rows keep
// their value under the old one), source.column_widened (info: the target
// column is widened to match), source.column_type_changed (warn: the
// target column stays as it is; a value it refuses goes the rejected-record
// path). Each names the table and column, and the types or names involved.
common::Status RecordColumnChanges(pqxx::work& tx, const dataflow::PodIdentity& pod,
                                   const std::vector<dataflow::ColumnChangeReport>& changes);

// One warn event per tally, datamodel.record_skipped, about the datamodel
// (which must be one of the pod's connector's: InvalidArgument otherwise):
// the reason is what the decoder said, so each reason folds into its own
// row; details carry the records skipped since the last report ("skipped"),
// the topic and the first one's partition and offset.
common::Status RecordSkipped(pqxx::work& tx, const dataflow::PodIdentity& pod,
                             const std::vector<dataflow::SkippedRecords>& tallies);

// A source's own position (a mysql-source's binlog position and GTID
// position, or its unfinished snapshot's progress: the worker's JSON), kept
// per connector shard in sluice_state.source_position so a new pod with no
// state file of its own resumes there. Saved only by the worker row's
// current generation: a replaced pod's late save is Conflict (it exits),
// so an old pod never moves the position of its successor.
common::Status SaveSourcePosition(pqxx::work& tx, const dataflow::PodIdentity& pod,
                                  const nlohmann::json& state);
// The shard's saved state; null when none was saved.
common::Result<nlohmann::json> LoadSourcePosition(pqxx::work& tx, const dataflow::PodIdentity& pod);

}  // namespace sluice::model
