// The back end's side of every report a pod makes: state, heartbeat,
// production and delivery metrics, rejected records. One implementation
// serves both transports — a local worker writing to the data-plane
// database, and the API's worker endpoints receiving them over HTTP — so the
// rules (Worker::accepts_reported_state under the row lock, metric
// validation, event folding) cannot differ between them.
#pragma once

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "common/uuid.h"
#include "connectors/production_metrics.h"
#include "dataflow/datamodel_stage.h"
#include "dataflow/subscription_stage.h"
#include "runtime/worker_state.h"

namespace sluice::dataflow {

// Who is reporting: one worker row, one launch generation, and the pod's
// own name (empty when it gave none). Events a pod reports carry the name
// and the launch's integer number (WorkerRepository::LaunchNumber); events
// the back end emits carry neither.
struct PodIdentity {
  common::Uuid worker_id;
  common::Uuid connector_id;
  common::Uuid generation;
  int shard = 0;
  std::string pod_name;
};

// The header a pod names itself in on the HTTP worker protocol.
inline constexpr const char* kPodNameHeader = "Sluice-Pod";

// This process's pod name: $SLUICE_POD_NAME (Kubernetes sets it from the
// pod's metadata.name), else the host name, sanitised.
std::string ThisPodName();
// Printable ASCII without spaces, at most 255 characters (the column's
// width); anything else is dropped.
std::string SanitisePodName(std::string_view name);

// A record the target refused, as it travels to the back end (no payload:
// the record itself stays on the broker and in the error table).
struct RejectedRef {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::string error;
  // What became of it (wire: "disposition", default error_table) and its
  // message key (wire: "key", may be absent), which a stop names.
  Disposition disposition = Disposition::kErrorTable;
  std::string key;
};

// A source's replication slot as its worker last read it (or, with
// lost_reason, the news that it was lost and is being read again).
struct SlotReport {
  std::string slot;
  std::string wal_status;  // reserved | extended | unreserved | lost
  std::optional<std::int64_t> safe_wal_size;
  std::int64_t lag_bytes = 0;
  double lag_seconds = 0;
  std::string confirmed_flush_lsn;
  std::string level = "ok";  // ok | warn | critical, against the connector's thresholds
  std::optional<std::string> lost_reason;
};

// A change to a source table's columns (DDL at the source) as the source
// worker read it from the replication stream (connectors/postgres/relation_diff.h).
struct ColumnChangeReport {
  std::string table;  // "schema.table" at the source
  // added | dropped | renamed | widened | type_changed
  std::string kind;
  std::string column;    // its (new) name
  std::string old_name;  // renamed only
  std::string old_type;  // as "varchar(5)", "int4"; empty when not known
  std::string new_type;
};

std::vector<RejectedRef> ToRefs(const std::vector<RejectedRecord>& records);

common::Status ApplyStateReport(pqxx::work& tx, const PodIdentity& pod, runtime::WorkerState state,
                                std::optional<std::string> reason);
// `observed`: the state the pod last reported of itself, if it said.
common::Status ApplyHeartbeat(pqxx::work& tx, const PodIdentity& pod,
                              std::optional<runtime::WorkerState> observed);
common::Status IngestProductionIntervals(pqxx::work& tx,
                                         const std::vector<connectors::TopicInterval>& intervals);
common::Status IngestDelivery(pqxx::work& tx, const std::string& subscription_id,
                              const std::string& topic, const DeliveryCounters& counters);
// One event per record, by what became of it: subscription.record_rejected
// (error table), subscription.record_skipped (on_refusal skip), or
// subscription.stopped (on_refusal stop, naming the key and position). Each
// folds by its reason.
common::Status RecordRejected(pqxx::work& tx, const PodIdentity& pod,
                              const std::string& subscription_id,
                              const std::vector<RejectedRef>& records);

// Keeps the slot's latest reading in sluice_state.source_slot and records
// an event when its level changes: source.slot_lag_warn,
// source.slot_lag_critical, or source.slot_lag_cleared once back under.
// A lost slot is source.slot_lost, naming the slot.
common::Status ApplySlotReport(pqxx::work& tx, const PodIdentity& pod, const SlotReport& report);

// One event per change: source.column_added (info), source.column_dropped
// (warn: the target keeps the column, NULL in new rows),
// source.column_renamed (warn: the target gains the new name, old rows keep
// their value under the old one), source.column_widened (info: the target
// column is widened to match), source.column_type_changed (warn: the
// target column stays as it is; a value it refuses goes the rejected-record
// path). Each names the table and column, and the types or names involved.
common::Status RecordColumnChanges(pqxx::work& tx, const PodIdentity& pod,
                                   const std::vector<ColumnChangeReport>& changes);

// One warn event per tally, datamodel.record_skipped, about the datamodel
// (which must be one of the pod's connector's: InvalidArgument otherwise):
// the reason is what the decoder said, so each reason folds into its own
// row; details carry the records skipped since the last report ("skipped"),
// the topic and the first one's partition and offset.
common::Status RecordSkipped(pqxx::work& tx, const PodIdentity& pod,
                             const std::vector<SkippedRecords>& tallies);

// A source's own position (a mysql-source's binlog position and GTID
// position, or its unfinished snapshot's progress: the worker's JSON), kept
// per connector shard in sluice_state.source_position so a new pod with no
// state file of its own resumes there. Saved only by the worker row's
// current generation: a replaced pod's late save is Conflict (it exits),
// so an old pod never moves the position of its successor.
common::Status SaveSourcePosition(pqxx::work& tx, const PodIdentity& pod,
                                  const nlohmann::json& state);
// The shard's saved state; null when none was saved.
common::Result<nlohmann::json> LoadSourcePosition(pqxx::work& tx, const PodIdentity& pod);

// Wire forms of the HTTP worker protocol.
nlohmann::json IntervalsToJson(const std::vector<connectors::TopicInterval>& intervals);
common::Result<std::vector<connectors::TopicInterval>> IntervalsFromJson(const nlohmann::json& j);
nlohmann::json CountersToJson(const DeliveryCounters& c);
common::Result<DeliveryCounters> CountersFromJson(const nlohmann::json& j);
nlohmann::json RejectedToJson(const std::vector<RejectedRef>& records);
common::Result<std::vector<RejectedRef>> RejectedFromJson(const nlohmann::json& j);
nlohmann::json SlotReportToJson(const SlotReport& report);
common::Result<SlotReport> SlotReportFromJson(const nlohmann::json& j);
nlohmann::json SkippedToJson(const std::vector<SkippedRecords>& tallies);
common::Result<std::vector<SkippedRecords>> SkippedFromJson(const nlohmann::json& j);
nlohmann::json ColumnChangesToJson(const std::vector<ColumnChangeReport>& changes);
common::Result<std::vector<ColumnChangeReport>> ColumnChangesFromJson(const nlohmann::json& j);

}  // namespace sluice::dataflow
