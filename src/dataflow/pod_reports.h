// What a pod (worker) tells the back end, as it travels: who is reporting,
// rejected records, slot readings, column changes, and the JSON of each on
// the HTTP worker protocol. The back end's side, which writes these into the
// data-plane database, is model/pipelines/pod_reports.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "common/uuid.h"
#include "connectors/production_metrics.h"
#include "dataflow/datamodel_stage.h"
#include "dataflow/subscription_stage.h"

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
  // A source that keeps no slot (MySQL, `slot` "binlog") reading its tables
  // again from a new snapshot, each truncated in the targets first, and why
  // (a purged position, a row event it cannot read).
  std::optional<std::string> resnapshot_reason;
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
