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

SubscriptionStage::SubscriptionStage(SubscriptionSpec spec, std::vector<RowTransform> transforms,
                                     std::unique_ptr<connectors::targets::Target> target)
    : spec_(std::move(spec)), transforms_(std::move(transforms)), target_(std::move(target)) {
  if (spec_.error_table && spec_.error_target_url) {
    error_target_ = std::make_unique<connectors::targets::PostgresTarget>(
        connectors::targets::PostgresTargetOptions{*spec_.error_target_url, spec_.target_schema,
                                                   *spec_.error_table, true});
  }
}

common::Result<std::unique_ptr<SubscriptionStage>> SubscriptionStage::Create(
    const kafka::ClientConfig& broker, SubscriptionSpec spec, const TargetSpec& target_spec,
    std::shared_ptr<RegistryClient> registry) {
  std::vector<RowTransform> transforms;
  for (const auto* config : {&spec.datamodel_config, &spec.transform_config}) {
    auto transform = RowTransform::Create(*config);
    if (!transform.ok()) return transform.status();
    transforms.push_back(std::move(transform).value());
  }
  auto target = connectors::targets::MakeTarget(target_spec.type, target_spec.config,
                                                spec.target_schema, spec.target_table);
  if (!target.ok()) return target.status();
  if (spec.error_table && !spec.error_target_url && target_spec.type == "postgresql")
    spec.error_target_url = target_spec.config.value("url", std::string());
  std::string group = spec.consumer_group.empty() ? spec.id : spec.consumer_group;
  std::unique_ptr<SubscriptionStage> stage(
      new SubscriptionStage(std::move(spec), std::move(transforms), std::move(target).value()));
  stage->avro_ = std::make_unique<AvroEnvelopeDecoder>(std::move(registry));
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

common::Result<bool> SubscriptionStage::DeliverInserts() {
  for (const auto& t : transforms_)
    if (!t.is_identity()) return false;
  std::vector<connectors::targets::JsonRow> rows;
  rows.reserve(pending_.size());
  std::string_view columns;
  for (const auto& m : pending_) {
    if (m.key.empty() || IsWireFramed(m.value)) return false;
    auto view = ViewInsert(m.value);
    if (!view || (!columns.empty() && view->columns != columns)) return false;
    columns = view->columns;
    rows.push_back({m.key, view->image});
  }
  const auto* described = ColumnsFromText(columns);
  if (!described) return false;
  auto landed = target_->InsertJsonRows(rows, *described);
  if (!landed.ok() || !*landed) return landed;
  SLUICE_RETURN_IF_ERROR(consumer_->Commit(pending_));
  counters_.delivered += static_cast<std::int64_t>(pending_.size());
  pending_.clear();
  if (!inserts_in_place_) {
    inserts_in_place_ = true;
    spdlog::info("subscription {}: a batch of inserts was applied from its messages' own text",
                 spec_.id);
  }
  return true;
}

common::Status SubscriptionStage::Deliver() {
  // A batch of plain inserts of one table, with nothing to transform, goes
  // to the target as the messages' own JSON text (bench/cdc perf).
  auto inserted = DeliverInserts();
  if (!inserted.ok()) return inserted.status();
  if (*inserted) return common::Status::Ok();
  std::vector<TargetChange> batch;
  std::vector<std::size_t> origin;  // batch index -> pending_ index
  std::vector<RejectedRecord> undecodable;
  std::int64_t skipped = 0;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    const auto& m = pending_[i];
    auto change =
        IsWireFramed(m.value) ? avro_->Decode(m.key, m.value) : DecodeEnvelope(m.key, m.value);
    // An unreachable registry is the registry's problem, not the row's:
    // nothing is committed and the batch is retried.
    if (!change.ok() && change.status().code() == common::Code::kUnavailable)
      return change.status();
    if (!change.ok()) {
      undecodable.push_back({pending_[i], change.status().message()});
      continue;
    }
    bool kept = true;
    for (const auto& t : transforms_) {
      if (!t.Keeps(*change)) {
        kept = false;
        break;
      }
      t.Apply(*change);
    }
    if (!kept) {
      ++skipped;
      continue;
    }
    change->position =
        fmt::format("{}/{}/{}", pending_[i].topic, pending_[i].partition, pending_[i].offset);
    batch.push_back(std::move(change).value());
    origin.push_back(i);
  }
  std::vector<RejectedRecord> refused = std::move(undecodable);
  std::size_t refused_by_target = 0;
  if (!batch.empty()) {
    auto result = target_->Apply(batch);
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
  // Skipped is not error (#3958): a filtered or undecodable record was not
  // delivered on purpose; only the target's refusals are errors. Both kinds
  // still reach the error table above, as evidence.
  const auto undecodable_count = static_cast<std::int64_t>(refused.size() - refused_by_target);
  counters_.delivered += static_cast<std::int64_t>(batch.size() - refused_by_target);
  counters_.skipped += skipped + undecodable_count;
  counters_.errored += static_cast<std::int64_t>(refused_by_target);
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
