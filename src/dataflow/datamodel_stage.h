// A datamodel's republishing loop, run by its source connector's worker:
// consume the raw topic with the datamodel's consumer group, shape each row
// by the datamodel's `config` (config.transform: column selection, renames,
// casts, computed columns, row filter; see row_transform.h), publish the
// result onto `target_topic` keyed by the shaped key, and commit the input
// offsets only once the broker acknowledged every output message. A crash
// republishes rather than loses; subscriptions apply idempotently.
//
// Input is either Sluice's change envelope (JSON or Avro, a CDC topic) or,
// for a `kafka` source connector, plain JSON values of an existing topic:
// each value is an upsert of the row it holds, a tombstone (empty value) a
// delete, keyed by config.key (value fields) or else by the message key
// when that is a JSON object. Output is the change envelope, in JSON or in
// Avro (the output schema registered under "<target_topic>-value").
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "dataflow/avro_envelope.h"
#include "dataflow/kafka_change_sink.h"
#include "dataflow/row_transform.h"
#include "kafka/consumer.h"
#include "kafka/producer.h"

namespace sluice::dataflow {

struct DatamodelSpec {
  std::string id;
  std::string source_topic;
  std::string target_topic;
  std::string consumer_group;            // datamodel.consumer_id, defaulting to "datamodel-<id>"
  nlohmann::json transform;              // datamodel.config.transform
  std::vector<std::string> key_columns;  // datamodel.config.key, for plain JSON input
  std::string input = "envelope";        // envelope | json
  std::string format = "json";           // output: json | avro (needs the registry)
  // Set when source_topic is an env's connector_events topic: only the
  // records whose team_id is this team's are read, every other one is passed
  // over unseen (the subscription's resource filter, a permission boundary).
  std::optional<std::string> only_team;
};

// Records a datamodel stage could not read (undecodable, no key, ...) and
// skipped, tallied by reason: the worker reports them to the back end as
// datamodel.record_skipped events, each reason at most once per interval
// with its count, so a flood of bad records is not a flood of events.
struct SkippedRecords {
  std::string datamodel_id;
  std::string topic;       // the datamodel's source topic
  std::string reason;      // what the decoder said
  std::int64_t count = 0;  // skipped for this reason since the last report
  // The first of them, where it stays (on the source topic).
  std::int32_t partition = 0;
  std::int64_t offset = 0;
};

// Adds `more` into `into`, reason by reason (the first position kept). At
// most kMaxSkipReasons reasons per datamodel: the rest count under one
// catch-all reason, so distinct messages cannot grow the tally either.
inline constexpr std::size_t kMaxSkipReasons = 20;
void MergeSkipped(std::vector<SkippedRecords>& into, const std::vector<SkippedRecords>& more);

class DatamodelStage {
 public:
  static common::Result<std::unique_ptr<DatamodelStage>> Create(
      const kafka::ClientConfig& broker, DatamodelSpec spec,
      std::shared_ptr<RegistryClient> registry);

  // Polls one batch and republishes it; an error leaves the batch
  // uncommitted (the caller restarts the worker, which replays it).
  common::Status RunOnce(std::chrono::milliseconds poll_timeout);
  void Close() { consumer_->Close(); }
  // A record arriving on the raw topic wakes `wakeup`.
  void WakeOnArrival(kafka::ArrivalWakeup& wakeup) { consumer_->WakeOnArrival(wakeup); }
  // The last RunOnce found no record.
  bool found_nothing() const { return found_nothing_; }
  const DatamodelSpec& spec() const { return spec_; }
  std::int64_t republished() const { return republished_; }
  std::int64_t skipped() const { return skipped_; }
  // Records of other teams passed over (only_team); never counted as skipped.
  std::int64_t other_teams() const { return other_teams_; }
  // The records skipped as unreadable since the last call, by reason (a
  // row the transform's filter drops is not one: it was read and kept out).
  std::vector<SkippedRecords> TakeSkipped() { return std::exchange(unreadable_, {}); }

 private:
  DatamodelStage(DatamodelSpec spec, RowTransform transform,
                 std::shared_ptr<RegistryClient> registry);
  common::Result<connectors::targets::TargetChange> Decode(const kafka::Message& m);
  common::Result<std::string> EncodeValue(const connectors::targets::TargetChange& change);

  DatamodelSpec spec_;
  RowTransform transform_;
  std::shared_ptr<RegistryClient> registry_;
  AvroEnvelopeDecoder avro_in_;
  std::unique_ptr<kafka::Consumer> consumer_;
  bool found_nothing_ = false;
  std::unique_ptr<kafka::Producer> producer_;
  // Avro output: the writer of the current column set.
  std::vector<connectors::targets::TargetColumn> avro_columns_;
  std::optional<registry::ChangeEventEncoder> avro_out_;
  int avro_schema_id_ = 0;
  std::int64_t next_id_ = 1;
  std::int64_t republished_ = 0, skipped_ = 0, other_teams_ = 0;
  std::vector<SkippedRecords> unreadable_;
};

// A plain JSON value as a change (the `kafka` source's input).
common::Result<connectors::targets::TargetChange> ChangeFromJsonValue(
    const std::string& key, const std::string& value, const std::vector<std::string>& key_columns);

}  // namespace sluice::dataflow
