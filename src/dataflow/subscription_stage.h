// One subscription's delivery loop: consume its datamodel's topic with its
// own consumer group, shape each row, apply the batch to the target, send
// refused rows to the error table, and only then commit the offsets, so a
// crash anywhere redelivers rather than loses (the target applies
// idempotently, so a redelivery ends in the same state).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "connectors/targets/postgres_target.h"
#include "connectors/targets/target.h"
#include "dataflow/avro_envelope.h"
#include "dataflow/row_transform.h"
#include "kafka/consumer.h"

namespace sluice::dataflow {

struct SubscriptionSpec {
  std::string id;
  std::string topic;
  std::string consumer_group;  // subscription.consumer_id, defaulting to the id
  std::string target_table;
  std::string target_schema = "public";
  nlohmann::json transform_config;
  nlohmann::json datamodel_config;         // the datamodel's shaping, applied first
  std::optional<std::string> error_table;  // set when the error table is enabled
  // Where the error table lives: a PostgreSQL URL (the error-table target
  // connector's, or the target's own when it is PostgreSQL).
  std::optional<std::string> error_target_url;
};

// The target the stage writes to: its connector type and config.
struct TargetSpec {
  std::string type = "postgresql";
  nlohmann::json config;  // postgresql: {url}; http: {url, headers}; jsonl: {directory}
};

// What a delivery loop did since the last TakeCounters (consumption_metric).
struct DeliveryCounters {
  std::int64_t from_ms = 0, to_ms = 0;
  std::int64_t consumed = 0, delivered = 0, skipped = 0, errored = 0;
  // Set by the worker loop from the broker (not counted by the stage).
  std::optional<std::int64_t> consumer_lag;
};

struct RejectedRecord {
  kafka::Message message;
  std::string error;
};

class SubscriptionStage {
 public:
  // `registry` decodes Avro (wire-framed) messages; JSON ones need none.
  static common::Result<std::unique_ptr<SubscriptionStage>> Create(
      const kafka::ClientConfig& broker, SubscriptionSpec spec, const TargetSpec& target,
      std::shared_ptr<RegistryClient> registry = nullptr);

  // Polls one batch and delivers it. A target that is unreachable returns
  // Unavailable and keeps the batch for the next call (nothing committed).
  common::Status RunOnce(std::chrono::milliseconds poll_timeout);
  DeliveryCounters TakeCounters();
  // Records refused since the last call (for dlq events).
  std::vector<RejectedRecord> TakeRejected();
  void Close() { consumer_->Close(); }
  const SubscriptionSpec& spec() const { return spec_; }

 private:
  SubscriptionStage(SubscriptionSpec spec, std::vector<RowTransform> transforms,
                    std::unique_ptr<connectors::targets::Target> target);
  common::Status Deliver();
  // The whole batch as inserts read in place (Target::InsertJsonRows);
  // false when it is not that, or the target does not take it.
  common::Result<bool> DeliverInserts();

  SubscriptionSpec spec_;
  std::vector<RowTransform> transforms_;  // datamodel's, then subscription's
  std::unique_ptr<kafka::Consumer> consumer_;
  std::unique_ptr<AvroEnvelopeDecoder> avro_;
  std::unique_ptr<connectors::targets::Target> target_;
  std::unique_ptr<connectors::targets::PostgresTarget> error_target_;
  std::vector<kafka::Message> pending_;  // polled, not yet delivered
  DeliveryCounters counters_;
  std::vector<RejectedRecord> rejected_;
  bool inserts_in_place_ = false;  // DeliverInserts has landed a batch (logged once)
};

}  // namespace sluice::dataflow
