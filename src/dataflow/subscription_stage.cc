#include "dataflow/subscription_stage.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <map>
#include <string_view>
#include <tuple>

#include "common/short_text.h"
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

std::optional<SubscriptionSpec::OnRefusal> ParseOnRefusal(const std::string& text) {
  if (text == "stop") return SubscriptionSpec::OnRefusal::kStop;
  if (text == "skip") return SubscriptionSpec::OnRefusal::kSkip;
  return std::nullopt;
}

const char* DispositionName(Disposition d) {
  switch (d) {
    case Disposition::kErrorTable:
      return "error_table";
    case Disposition::kSkipped:
      return "skipped";
    case Disposition::kStopped:
      return "stopped";
  }
  return "error_table";
}

std::optional<Disposition> ParseDisposition(const std::string& text) {
  for (auto d : {Disposition::kErrorTable, Disposition::kSkipped, Disposition::kStopped})
    if (text == DispositionName(d)) return d;
  return std::nullopt;
}

common::Status SubscriptionStage::RunOnce(std::chrono::milliseconds poll_timeout) {
  if (stopped_) return common::FailedPrecondition(*stopped_);
  retry_after_.reset();
  found_nothing_ = false;
  if (!under_way_.empty()) {
    auto finished = FinishStarted();
    NoteFirstDelivery();
    return finished;
  }
  const bool stable = target_->StableBatches();
  if (pending_.empty()) {
    if (!held_.empty()) {
      pending_ = std::move(held_);
      held_.clear();
    } else {
      SLUICE_RETURN_IF_ERROR(TopUp(poll_timeout));
    }
    // One partition after the other, each in offset order: the same
    // records make the same body whatever order the fetches came in.
    if (stable)
      std::stable_sort(pending_.begin(), pending_.end(), [](const auto& a, const auto& b) {
        return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
      });
    marked_ = false;
  }
  if (pending_.empty()) {
    found_nothing_ = true;
    return common::Status::Ok();
  }
  if (stable && !marked_) {
    if (!replay_checked_) {
      SLUICE_RETURN_IF_ERROR(TrimToReplay());
      replay_checked_ = true;
    }
    SLUICE_RETURN_IF_ERROR(MarkInFlight());
    marked_ = true;
  }
  auto delivered = Deliver();
  NoteFirstDelivery();
  return delivered;
}

void SubscriptionStage::NoteFirstDelivery() {
  if (first_delivered_ || counters_.delivered == 0) return;
  first_delivered_ = true;
  spdlog::debug("subscription {}: first batch delivered {} ms after the start", spec_.id,
                common::MillisSince(started_));
}

namespace {
// The note a stable batch leaves with the group's offset of each of its
// partitions: the last offset of the batch in that partition.
constexpr std::string_view kInFlight = "sluice.inflight:";
}  // namespace

common::Status SubscriptionStage::TrimToReplay() {
  std::vector<kafka::TopicPartition> parts;
  std::map<kafka::TopicPartition, std::int64_t> first;
  for (const auto& m : pending_)
    if (first.try_emplace({m.topic, m.partition}, m.offset).second)
      parts.push_back({m.topic, m.partition});
  auto committed = consumer_->Committed(parts, std::chrono::seconds(10));
  if (!committed.ok()) return committed.status();
  // Partitions whose group offset is where this batch starts and carries a
  // note: the previous run sent [first, last] and crashed before committing.
  std::map<kafka::TopicPartition, std::int64_t> last;
  for (const auto& [tp, c] : *committed) {
    if (c.metadata.rfind(kInFlight, 0) != 0 || c.offset != first[tp]) continue;
    try {
      last[tp] = std::stoll(c.metadata.substr(kInFlight.size()));
    } catch (const std::exception&) {
    }
  }
  if (last.empty()) return common::Status::Ok();
  // A poll may hand over less than the batch had: read on to its end.
  auto short_of_it = [&] {
    std::map<kafka::TopicPartition, std::int64_t> reached;
    for (const auto& m : pending_) reached[{m.topic, m.partition}] = m.offset;
    for (const auto& [tp, end] : last)
      if (reached[tp] < end) return true;
    return false;
  };
  for (int i = 0; i < 25 && short_of_it(); ++i) {
    auto more = consumer_->Poll(kMaxBatch, std::chrono::milliseconds(200));
    if (!more.ok()) return more.status();
    counters_.consumed += static_cast<std::int64_t>(more->size());
    for (auto& m : *more) pending_.push_back(std::move(m));
    std::stable_sort(pending_.begin(), pending_.end(), [](const auto& a, const auto& b) {
      return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
    });
  }
  // The same batch: its records, and none of a partition it did not hold.
  std::vector<kafka::Message> batch;
  for (auto& m : pending_) {
    auto it = last.find({m.topic, m.partition});
    if (it != last.end() && m.offset <= it->second)
      batch.push_back(std::move(m));
    else
      held_.push_back(std::move(m));
  }
  spdlog::info("subscription {}: replaying the batch a previous run left in flight ({} records)",
               spec_.id, batch.size());
  pending_ = std::move(batch);
  return common::Status::Ok();
}

common::Status SubscriptionStage::MarkInFlight() {
  std::map<kafka::TopicPartition, kafka::CommittedOffset> marks;
  for (const auto& m : pending_) {
    auto [it, fresh] = marks.try_emplace({m.topic, m.partition});
    if (fresh) it->second.offset = m.offset;  // the group stays where the batch starts
    it->second.metadata = std::string(kInFlight) + std::to_string(m.offset);
  }
  return consumer_->CommitWithMetadata(marks);
}

common::Result<std::unique_ptr<connectors::targets::PreparedRows>>
SubscriptionStage::PrepareInPlace() {
  for (const auto& t : transforms_)
    if (!t.is_identity()) return connectors::targets::NotPrepared();
  std::vector<connectors::targets::JsonRow> rows;
  rows.reserve(pending_.size());
  std::string_view columns;  // JSON: the envelopes' `columns` text
  const std::vector<connectors::targets::TargetColumn>* avro_columns = nullptr;
  std::deque<AvroEnvelopeDecoder::RowText> avro_rows;  // the Avro rows' text, viewed by `rows`
  for (const auto& m : pending_) {
    if (m.key.empty()) return connectors::targets::NotPrepared();
    if (IsWireFramed(m.value)) {
      auto row = avro_->ViewRowChange(m.value);
      if (!row || !columns.empty()) return connectors::targets::NotPrepared();
      if (avro_columns && row->columns != avro_columns)
        return connectors::targets::NotPrepared();  // one schema per batch
      avro_columns = row->columns;
      avro_rows.push_back(std::move(*row));
      const auto& text = avro_rows.back();
      rows.push_back({m.key, text.image, text.unchanged, text.op});
      continue;
    }
    auto view = ViewRowChange(m.value);
    if (!view || avro_columns) return connectors::targets::NotPrepared();
    if (view->op != common::ChangeOp::kDelete) {
      if (!columns.empty() && view->columns != columns) return connectors::targets::NotPrepared();
      columns = view->columns;
    }
    rows.push_back({m.key, view->image, view->unchanged, view->op, view->as_text});
  }
  const auto* described = avro_columns      ? avro_columns
                          : columns.empty() ? nullptr
                                            : ColumnsFromText(columns);
  if (!described) return connectors::targets::NotPrepared();
  return target_->PrepareJsonRows(rows, *described);
}

common::Status SubscriptionStage::Deliver() {
  // A batch of row changes of one table, with nothing to transform, goes to
  // the target as the messages' own JSON text, or text written straight
  // from their Avro payloads (bench/cdc perf).
  auto prepared = PrepareInPlace();
  if (!prepared.ok()) return prepared.status();
  return DeliverPrepared(std::move(*prepared));
}

common::Status SubscriptionStage::DeliverPrepared(
    std::unique_ptr<connectors::targets::PreparedRows> prepared) {
  if (prepared) {
    auto started = target_->StartPrepared(std::move(prepared));
    if (!started.ok()) {  // an outage: keep pending_, commit nothing, retry later
      retry_after_ = target_->RetryAfter();
      return started.status();
    }
    if (*started) {
      under_way_ = std::move(pending_);
      pending_.clear();
      return common::Status::Ok();
    }
  }
  return DeliverDecoded();
}

common::Status SubscriptionStage::FinishStarted() {
  // The database applies the started batch meanwhile.
  if (pending_.empty()) {
    if (!held_.empty()) {
      pending_ = std::move(held_);
      held_.clear();
    } else {
      (void)TopUp(std::chrono::milliseconds(0));  // an error: the next ordinary poll says it
    }
  }
  // Prepared ahead only from a backlog (a whole batch waiting): at a steady
  // rate, what arrives while the started batch finishes joins the next one
  // instead of waiting for the one after it (latency at 10k changes/s).
  const bool backlog = pending_.size() >= kMaxBatch;
  common::Result<std::unique_ptr<connectors::targets::PreparedRows>> next =
      std::unique_ptr<connectors::targets::PreparedRows>();
  if (backlog) next = PrepareInPlace();
  auto finished = target_->FinishPrepared();
  if (!finished.ok() || !*finished) {
    Requeue();
    if (!finished.ok()) {  // an outage: nothing landed, retried whole later
      retry_after_ = target_->RetryAfter();
      return finished.status();
    }
    return DeliverDecoded();  // the database refused it: row by row
  }
  if (auto committed = consumer_->Commit(under_way_); !committed.ok()) {
    Requeue();  // landed, but applied again (idempotently) after a replay
    return committed;
  }
  counters_.delivered += static_cast<std::int64_t>(under_way_.size());
  under_way_.clear();
  if (!applied_in_place_) {
    applied_in_place_ = true;
    spdlog::info("subscription {}: a batch was applied from its messages' own text", spec_.id);
  }
  if (!backlog) {
    (void)TopUp(std::chrono::milliseconds(0));
    return pending_.empty() ? common::Status::Ok() : Deliver();
  }
  if (!next.ok()) return next.status();
  return DeliverPrepared(std::move(*next));
}

common::Status SubscriptionStage::TopUp(std::chrono::milliseconds wait) {
  if (pending_.size() >= kMaxBatch) return common::Status::Ok();
  auto polled = consumer_->Poll(kMaxBatch - pending_.size(), wait);
  if (!polled.ok()) return polled.status();
  counters_.consumed += static_cast<std::int64_t>(polled->size());
  if (pending_.empty()) {
    pending_ = std::move(polled).value();
  } else {
    for (auto& m : *polled) pending_.push_back(std::move(m));
  }
  if (!pending_.empty() && !first_polled_) {
    first_polled_ = true;
    spdlog::debug("subscription {}: first {} records polled {} ms after the start", spec_.id,
                  pending_.size(), common::MillisSince(started_));
  }
  return common::Status::Ok();
}

void SubscriptionStage::Requeue() {
  for (auto& m : pending_) held_.push_back(std::move(m));
  pending_ = std::move(under_way_);
  under_way_.clear();
}

void SubscriptionStage::Close() {
  if (!under_way_.empty()) {
    auto finished = target_->FinishPrepared();
    if (finished.ok() && *finished && consumer_->Commit(under_way_).ok())
      counters_.delivered += static_cast<std::int64_t>(under_way_.size());
    under_way_.clear();
  }
  consumer_->Close();
}

common::Status SubscriptionStage::DeliverDecoded() {
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
  std::vector<RejectedRecord> by_target;
  if (!batch.empty()) {
    auto result = target_->Apply(batch);
    if (!result.ok()) {  // an outage: keep pending_, commit nothing, retry later
      retry_after_ = target_->RetryAfter();
      return result.status();
    }
    for (const auto& r : *result) by_target.push_back({pending_[origin[r.index]], r.error});
  }
  const auto refused_by_target = static_cast<std::int64_t>(by_target.size());
  const auto undecodable_count = static_cast<std::int64_t>(refused.size());
  if (!by_target.empty() && !error_target_ &&
      spec_.on_refusal == SubscriptionSpec::OnRefusal::kStop)
    return StopAt(std::move(refused), std::move(by_target),
                  static_cast<std::int64_t>(batch.size()) - refused_by_target, skipped);
  for (auto& r : by_target) {
    r.disposition = error_target_ ? Disposition::kErrorTable : Disposition::kSkipped;
    refused.push_back(std::move(r));
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
      rows.push_back({common::ChangeOp::kCreate, key, after, kErrorColumns});
    }
    auto written = error_target_->Apply(rows);
    if (!written.ok()) return written.status();
    // The error table refusing its own rows leaves nowhere to put them:
    // nothing is committed, and the words say why.
    if (!written->empty())
      return common::Unavailable(
          fmt::format("error table {} refused a row: {}", *spec_.error_table, (*written)[0].error));
  }
  SLUICE_RETURN_IF_ERROR(consumer_->Commit(pending_));
  // Skipped is not error (#3958): a filtered or undecodable record was not
  // delivered on purpose; only the target's refusals are errors (or skips,
  // under on_refusal skip). Undecodable records still reach the error table
  // above, as evidence.
  counters_.delivered += static_cast<std::int64_t>(batch.size()) - refused_by_target;
  counters_.skipped += skipped + undecodable_count;
  if (error_target_)
    counters_.errored += refused_by_target;
  else
    counters_.skipped += refused_by_target;
  for (auto& r : refused) rejected_.push_back(std::move(r));
  pending_.clear();
  return common::Status::Ok();
}

common::Status SubscriptionStage::StopAt(std::vector<RejectedRecord> undecodable,
                                         std::vector<RejectedRecord> by_target, std::int64_t landed,
                                         std::int64_t filtered) {
  // Per partition, the first record refused: offsets are committed up to
  // it and no further, so a restart starts at that record.
  std::map<std::pair<std::string, std::int32_t>, std::int64_t> stop_at;
  for (const auto& r : by_target) {
    auto [it, fresh] =
        stop_at.try_emplace({r.message.topic, r.message.partition}, r.message.offset);
    if (!fresh) it->second = std::min(it->second, r.message.offset);
  }
  std::vector<kafka::Message> before;
  for (const auto& m : pending_) {
    auto it = stop_at.find({m.topic, m.partition});
    if (it == stop_at.end() || m.offset < it->second) before.push_back(m);
  }
  SLUICE_RETURN_IF_ERROR(consumer_->Commit(before));
  const RejectedRecord* first = &by_target.front();
  for (const auto& r : by_target)
    if (r.message.offset == stop_at[{r.message.topic, r.message.partition}]) {
      first = &r;
      break;
    }
  stopped_ = fmt::format(
      "stopped at a record the target refused (key {} at {}/{}/{}); fix the target or set "
      "on_refusal, then restart the subscription: {}",
      first->message.key.empty() ? "null" : common::ShortenedForMessage(first->message.key),
      first->message.topic, first->message.partition, first->message.offset, first->error);
  spdlog::error("subscription {}: {}", spec_.id, *stopped_);
  // It polls no more until restarted: leave the group now rather than be
  // dropped from it for not polling.
  consumer_->Close();
  RejectedRecord at = *first;
  at.disposition = Disposition::kStopped;
  counters_.delivered += landed;
  counters_.skipped += filtered + static_cast<std::int64_t>(undecodable.size());
  counters_.errored += static_cast<std::int64_t>(by_target.size());
  for (auto& r : undecodable) rejected_.push_back(std::move(r));
  rejected_.push_back(std::move(at));
  pending_.clear();
  return common::FailedPrecondition(*stopped_);
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
