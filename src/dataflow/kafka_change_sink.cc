#include "dataflow/kafka_change_sink.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/time.h"
#include "dataflow/avro_envelope.h"
#include "dataflow/envelope.h"

namespace sluice::dataflow {

using common::Status;

Status KafkaChangeSink::SchemaChanged(const connectors::TableSchema& schema) {
  if (registry_) {
    auto encoder = registry::ChangeEventEncoder::Create(AvroTableSpec(schema, server_),
                                                        registry::EventFormat::kAvro);
    if (!encoder.ok()) return encoder.status();
    // Re-registering identical content is a no-op answering the same id.
    auto id = registry_->Register(schema.topic + "-value", encoder->schema_text());
    if (!id.ok()) {
      return Status(id.status().code(),
                    fmt::format("registering the schema of {}: {}", schema.table.Qualified(),
                                id.status().message()));
    }
    writers_.insert_or_assign(schema.topic, AvroChangeWriter(schema, server_, *id));
  }
  schemas_[schema.topic] = schema;
  columns_json_[schema.topic] = ColumnsJson(schema);
  return Status::Ok();
}

common::Result<std::string> KafkaChangeSink::EncodeValue(const connectors::ChangeEvent& event,
                                                         const connectors::TableSchema& schema) {
  if (!registry_) {
    auto it = columns_json_.find(event.topic);
    if (it == columns_json_.end()) return EnvelopeValue(event, ColumnsJson(schema));
    return EnvelopeValue(event, it->second);
  }
  auto it = writers_.find(event.topic);
  if (it == writers_.end())
    return common::Internal("no registered schema for topic " + event.topic);
  auto bytes = it->second.Write(event, common::NowEpochMillis());
  if (!bytes.ok()) {
    return common::InvalidArgument(fmt::format("encoding a change of {} as Avro: {}",
                                               event.table.Qualified(), bytes.status().message()));
  }
  return bytes;
}

Status KafkaChangeSink::Emit(const connectors::ChangeEvent& event) {
  SLUICE_RETURN_IF_ERROR(failure_);
  auto it = schemas_.find(event.topic);
  static const connectors::TableSchema kNoSchema;
  const auto& schema = it == schemas_.end() ? kNoSchema : it->second;
  auto value = EncodeValue(event, schema);
  if (!value.ok()) return value.status();
  EncodedEvent encoded{EnvelopeKey(event), std::move(value).value()};
  if (unacknowledged_messages() == 0) last_progress_ = std::chrono::steady_clock::now();
  auto status = producer_.Send(event.topic, encoded.key, encoded.value, next_id_);
  if (!status.ok()) {
    // A full local queue: let deliveries drain, then try once more.
    SLUICE_RETURN_IF_ERROR(Absorb(producer_.TakeDeliveries()));
    auto flushed = producer_.Flush(std::chrono::milliseconds(30000));
    if (!flushed.ok()) return flushed.status();
    SLUICE_RETURN_IF_ERROR(Absorb(*flushed));
    SLUICE_RETURN_IF_ERROR(producer_.Send(event.topic, encoded.key, encoded.value, next_id_));
  }
  if (next_id_ == 1)
    spdlog::debug("first change sent {} ms after the start ({})", common::MillisSince(created_),
                  event.topic);
  ++next_id_;
  return Status::Ok();
}

Status KafkaChangeSink::Checkpoint(connectors::Lsn lsn) {
  checkpoints_.emplace_back(next_id_ - 1, lsn);
  return Pump();
}

Status KafkaChangeSink::Pump() { return Absorb(producer_.TakeDeliveries()); }

Status KafkaChangeSink::CaughtUp() {
  // Only for a whole transaction not sent yet: the rest of a transaction the
  // source is still reading would follow at once, and forcing its first
  // part out cost a send per read (3.6 per 10-row transaction at 10k/s).
  if (checkpoints_.empty() || checkpoints_.back().first < sent_now_below_) return Pump();
  // Bounded: a slow broker must not hold the source off new changes for
  // long. What is still outstanding then (say, a message whose topic's
  // partitions are not known yet) is sent again next call.
  auto flushed = producer_.Flush(std::chrono::milliseconds(50));
  if (!flushed.ok()) return Pump();
  sent_now_below_ = next_id_;
  return Absorb(*flushed);
}

Status KafkaChangeSink::Flush() {
  auto deliveries = producer_.Flush(std::chrono::milliseconds(60000));
  if (!deliveries.ok()) return deliveries.status();
  return Absorb(*deliveries);
}

std::chrono::steady_clock::duration KafkaChangeSink::AcknowledgedNoneFor(
    std::chrono::steady_clock::time_point now) const {
  if (unacknowledged_messages() == 0) return {};
  return now - last_progress_;
}

Status KafkaChangeSink::Absorb(const std::vector<kafka::Delivery>& deliveries) {
  for (const auto& d : deliveries) {
    if (!d.status.ok()) {
      failure_ = common::Unavailable(
          fmt::format("broker refused a message for {}: {}", d.topic, d.status.message()));
      continue;
    }
    last_progress_ = std::chrono::steady_clock::now();
    // Deliveries mostly come back in order: those advance the watermark
    // without going through the set.
    if (d.id == watermark_ + 1)
      ++watermark_;
    else if (d.id > watermark_)
      acked_above_.insert(d.id);
  }
  while (!acked_above_.empty() && *acked_above_.begin() == watermark_ + 1) {
    ++watermark_;
    acked_above_.erase(acked_above_.begin());
  }
  SLUICE_RETURN_IF_ERROR(failure_);
  if (watermark_ > 0 && !first_acknowledged_) {
    first_acknowledged_ = true;
    spdlog::debug("first change acknowledged {} ms after the start", common::MillisSince(created_));
  }
  connectors::Lsn confirmed = 0;
  while (!checkpoints_.empty() && checkpoints_.front().first <= watermark_) {
    confirmed = checkpoints_.front().second;
    checkpoints_.pop_front();
  }
  if (confirmed) Acknowledge(confirmed);
  return Status::Ok();
}

}  // namespace sluice::dataflow
