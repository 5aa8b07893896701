#include "dataflow/subscription_stage.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/time.h"
#include "dataflow/envelope.h"

namespace sluice::dataflow {

using connectors::targets::TargetChange;
using nlohmann::json;

namespace {
// The error table's shape: where the record was, what it held, and why the
// target refused it, in the target's own words.
const std::vector<connectors::targets::TargetColumn> kErrorColumns = {
    {"topic", "text", true},
    {"partition", "int4", true},
    {"offset", "int8", true},
    {"key", "text", false},
    {"value", "text", false},
    {"error", "text", false},
    {"subscription_id", "text", false},
    {"failed_at", "timestamptz", false}};
}  // namespace

SubscriptionStage::SubscriptionStage(SubscriptionSpec spec, RowTransform transform,
                                     std::string target_url)
    : spec_(std::move(spec)),
      transform_(std::move(transform)),
      target_({target_url, spec_.target_schema, spec_.target_table, true}) {
  if (spec_.error_table) {
    error_target_ = std::make_unique<connectors::targets::PostgresTarget>(
        connectors::targets::PostgresTargetOptions{target_url, spec_.target_schema,
                                                   *spec_.error_table, true});
  }
}

common::Result<std::unique_ptr<SubscriptionStage>> SubscriptionStage::Create(
    const kafka::ClientConfig& broker, SubscriptionSpec spec, std::string target_url) {
  auto transform = RowTransform::Create(spec.transform_config);
  if (!transform.ok()) return transform.status();
  std::string group = spec.consumer_group.empty() ? spec.id : spec.consumer_group;
  std::unique_ptr<SubscriptionStage> stage(
      new SubscriptionStage(std::move(spec), std::move(transform).value(), std::move(target_url)));
  auto consumer = kafka::Consumer::Create(broker, group);
  if (!consumer.ok()) return consumer.status();
  stage->consumer_ = std::move(consumer).value();
  SLUICE_RETURN_IF_ERROR(stage->consumer_->Subscribe({stage->spec_.topic}));
  stage->counters_.from_ms = common::NowEpochMillis();
  return stage;
}

common::Status SubscriptionStage::RunOnce(std::chrono::milliseconds poll_timeout) {
  if (pending_.empty()) {
    auto polled = consumer_->Poll(2000, poll_timeout);
    if (!polled.ok()) return polled.status();
    pending_ = std::move(polled).value();
    counters_.consumed += static_cast<std::int64_t>(pending_.size());
  }
  if (pending_.empty()) return common::Status::Ok();
  return Deliver();
}

common::Status SubscriptionStage::Deliver() {
  std::vector<TargetChange> batch;
  std::vector<std::size_t> origin;  // batch index -> pending_ index
  std::vector<RejectedRecord> undecodable;
  std::int64_t skipped = 0;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    auto change = DecodeEnvelope(pending_[i].key, pending_[i].value);
    if (!change.ok()) {
      undecodable.push_back({pending_[i], change.status().message()});
      continue;
    }
    if (!transform_.Keeps(*change)) {
      ++skipped;
      continue;
    }
    transform_.Apply(*change);
    batch.push_back(std::move(change).value());
    origin.push_back(i);
  }
  std::vector<RejectedRecord> refused = std::move(undecodable);
  std::size_t refused_by_target = 0;
  if (!batch.empty()) {
    auto result = target_.Apply(batch);
    if (!result.ok()) return result.status();  // keep pending_, retry later
    refused_by_target = result->size();
    for (const auto& r : *result) refused.push_back({pending_[origin[r.index]], r.error});
  }
  if (!refused.empty() && error_target_) {
    std::vector<TargetChange> rows;
    auto now = common::FormatUtc(common::Clock::now());
    for (const auto& r : refused) {
      json key = {{"topic", r.message.topic},
                  {"partition", r.message.partition},
                  {"offset", r.message.offset}};
      json after = key;
      after["key"] = r.message.key;
      after["value"] = r.message.value;
      after["error"] = r.error;
      after["subscription_id"] = spec_.id;
      after["failed_at"] = now + "+00";
      rows.push_back({'c', key, after, kErrorColumns});
    }
    auto written = error_target_->Apply(rows);
    if (!written.ok()) return written.status();
  }
  SLUICE_RETURN_IF_ERROR(consumer_->Commit(pending_));
  counters_.delivered += static_cast<std::int64_t>(batch.size() - refused_by_target);
  counters_.skipped += skipped;
  counters_.errored += static_cast<std::int64_t>(refused.size());
  for (auto& r : refused) rejected_.push_back(std::move(r));
  pending_.clear();
  return common::Status::Ok();
}

DeliveryCounters SubscriptionStage::TakeCounters() {
  auto out = counters_;
  out.to_ms = common::NowEpochMillis();
  counters_ = {};
  counters_.from_ms = out.to_ms;
  return out;
}

std::vector<RejectedRecord> SubscriptionStage::TakeRejected() {
  auto out = std::move(rejected_);
  rejected_.clear();
  return out;
}

}  // namespace sluice::dataflow
