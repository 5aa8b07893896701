// One subscription's delivery loop: consume its datamodel's topic with its
// own consumer group, shape each row, apply the batch to the target, and
// only then commit the offsets, so a crash anywhere redelivers rather than
// loses (the target applies idempotently, so a redelivery ends in the same
// state).
//
// A target failure is one of two kinds (connectors/targets/target.h). An
// outage keeps the batch and commits nothing; the caller retries it with
// backoff. Records the target refuses go to the error table when the
// subscription has one; without one, on_refusal decides: `stop` (the
// default) commits only what lies before the refused record and stops the
// subscription there until it is restarted, `skip` commits past it and
// counts it skipped. Nothing is ever committed past a record silently.
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
  // Without an error table, what a record the target refuses does:
  // kStop halts the subscription at it, kSkip commits past it (counted
  // skipped, with an event). subscription.config.on_refusal.
  enum class OnRefusal { kStop, kSkip };
  OnRefusal on_refusal = OnRefusal::kStop;
};

// "stop" | "skip" (subscription.config.on_refusal); nullopt for anything else.
std::optional<SubscriptionSpec::OnRefusal> ParseOnRefusal(const std::string& text);

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
  // Extends these counters over the interval that follows them.
  void Add(const DeliveryCounters& next) {
    to_ms = next.to_ms;
    consumed += next.consumed;
    delivered += next.delivered;
    skipped += next.skipped;
    errored += next.errored;
  }
};

// What became of a record the target refused.
enum class Disposition {
  kErrorTable,  // written to the subscription's error table, offset committed
  kSkipped,     // on_refusal skip: offset committed, counted skipped
  kStopped,     // on_refusal stop: the subscription stopped at it, not committed
};
const char* DispositionName(Disposition d);
std::optional<Disposition> ParseDisposition(const std::string& text);

struct RejectedRecord {
  kafka::Message message;
  std::string error;
  Disposition disposition = Disposition::kErrorTable;
};

class SubscriptionStage {
 public:
  // `registry` decodes Avro (wire-framed) messages; JSON ones need none.
  static common::Result<std::unique_ptr<SubscriptionStage>> Create(
      const kafka::ClientConfig& broker, SubscriptionSpec spec, const TargetSpec& target,
      std::shared_ptr<RegistryClient> registry = nullptr);

  // Polls one batch and delivers it. A target outage returns Unavailable
  // and keeps the batch for the next call (nothing committed); RetryAfter()
  // then says how long the target asked to be left alone, if it did. Once
  // stopped (a refusal under on_refusal stop) it does nothing and returns
  // FailedPrecondition with the reason.
  common::Status RunOnce(std::chrono::milliseconds poll_timeout);
  std::optional<std::chrono::milliseconds> RetryAfter() const { return retry_after_; }
  // Set once the subscription stopped at a refused record: why, naming the
  // record's key and position, in the target's words.
  const std::optional<std::string>& stopped() const { return stopped_; }
  DeliveryCounters TakeCounters();
  // Records refused since the last call (for dlq events).
  std::vector<RejectedRecord> TakeRejected();
  // Finishes a batch still under way at the target (see RunOnce), then
  // leaves the group.
  void Close();
  const SubscriptionSpec& spec() const { return spec_; }
  // A record arriving for this subscription wakes `wakeup`.
  void WakeOnArrival(kafka::ArrivalWakeup& wakeup) { consumer_->WakeOnArrival(wakeup); }
  // The last RunOnce found no record to deliver.
  bool found_nothing() const { return found_nothing_; }

 private:
  SubscriptionStage(SubscriptionSpec spec, std::vector<RowTransform> transforms,
                    std::unique_ptr<connectors::targets::Target> target);
  // Delivers pending_: started at the target in place (Target::
  // PrepareJsonRows; finished by the next RunOnce) where it takes that path,
  // else decoded.
  common::Status Deliver();
  // Starts `prepared` (pending_'s rows, or null) at the target, moving
  // pending_ to under_way_; delivers pending_ decoded when there is nothing
  // prepared or the target declines it.
  common::Status DeliverPrepared(std::unique_ptr<connectors::targets::PreparedRows> prepared);
  // Each record of pending_ decoded (and transformed) and applied; what the
  // target refuses goes to the error table, or stops the subscription.
  common::Status DeliverDecoded();
  // pending_ as row changes read in place, prepared by the target; null when
  // it is not that (a transform, another kind of record, two schemas) or
  // the target does not take it.
  common::Result<std::unique_ptr<connectors::targets::PreparedRows>> PrepareInPlace();
  // The batch started last time: what arrived since is polled, and from a
  // backlog prepared while the target database applies it; then it is
  // finished (its offsets committed) and the next one started. A batch that
  // did not land goes the ordinary way again, before the records polled
  // after it.
  common::Status FinishStarted();
  // Puts the started batch back in front of pending_ (held meanwhile).
  void Requeue();
  // Adds to pending_ what the consumer holds, up to a batch, waiting up to
  // `wait` for a first record.
  common::Status TopUp(std::chrono::milliseconds wait);
  static constexpr std::size_t kMaxBatch = 2000;  // records a batch takes at most
  // Debug log: the first batch delivered, once.
  void NoteFirstDelivery();
  // on_refusal stop: commits what lies before the first refused record of
  // each partition, and stops (FailedPrecondition naming that record).
  // `landed`/`filtered`: the batch's changes delivered / filtered out.
  // Stable batches: re-forms the batch a previous run noted in flight
  // (same records; the rest held for later), then notes this one.
  common::Status TrimToReplay();
  common::Status MarkInFlight();
  common::Status StopAt(std::vector<RejectedRecord> undecodable,
                        std::vector<RejectedRecord> by_target, std::int64_t landed,
                        std::int64_t filtered);

  SubscriptionSpec spec_;
  std::vector<RowTransform> transforms_;  // datamodel's, then subscription's
  std::unique_ptr<kafka::Consumer> consumer_;
  std::unique_ptr<AvroEnvelopeDecoder> avro_;
  std::unique_ptr<connectors::targets::Target> target_;
  std::unique_ptr<connectors::targets::PostgresTarget> error_target_;
  std::vector<kafka::Message> pending_;  // polled, not yet delivered
  // Started at the target and not finished yet: its offsets wait for the
  // database's commit.
  std::vector<kafka::Message> under_way_;
  DeliveryCounters counters_;
  std::vector<RejectedRecord> rejected_;
  bool applied_in_place_ = false;  // a batch landed in place (logged once)
  std::optional<std::chrono::milliseconds> retry_after_;
  std::optional<std::string> stopped_;
  bool found_nothing_ = false;
  // When the stage was made, and whether its first records were polled and
  // delivered yet (debug log: where a restart's time to the first row goes).
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  bool first_polled_ = false, first_delivered_ = false;
  // Stable batches (Target::StableBatches): polled messages left for the
  // next batch, whether this batch's range is noted with the group's
  // offsets yet, and whether a note left by a previous run was looked for.
  std::vector<kafka::Message> held_;
  bool marked_ = false;
  bool replay_checked_ = false;
};

}  // namespace sluice::dataflow
