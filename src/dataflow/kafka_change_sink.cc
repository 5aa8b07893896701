#include "dataflow/kafka_change_sink.h"

#include <fmt/format.h>

#include "dataflow/envelope.h"

namespace sluice::dataflow {

using common::Status;

Status KafkaChangeSink::SchemaChanged(const connectors::TableSchema& schema) {
  schemas_[schema.topic] = schema;
  return Status::Ok();
}

Status KafkaChangeSink::Emit(const connectors::ChangeEvent& event) {
  SLUICE_RETURN_IF_ERROR(failure_);
  auto it = schemas_.find(event.topic);
  static const connectors::TableSchema kNoSchema;
  auto encoded = EncodeEnvelope(event, it == schemas_.end() ? kNoSchema : it->second);
  auto status = producer_.Send(event.topic, encoded.key, encoded.value, next_id_);
  if (!status.ok()) {
    // A full local queue: let deliveries drain, then try once more.
    SLUICE_RETURN_IF_ERROR(Absorb(producer_.TakeDeliveries()));
    auto flushed = producer_.Flush(std::chrono::milliseconds(30000));
    if (!flushed.ok()) return flushed.status();
    SLUICE_RETURN_IF_ERROR(Absorb(*flushed));
    SLUICE_RETURN_IF_ERROR(producer_.Send(event.topic, encoded.key, encoded.value, next_id_));
  }
  ++next_id_;
  return Status::Ok();
}

Status KafkaChangeSink::Checkpoint(connectors::Lsn lsn) {
  checkpoints_.emplace_back(next_id_ - 1, lsn);
  return Pump();
}

Status KafkaChangeSink::Pump() { return Absorb(producer_.TakeDeliveries()); }

Status KafkaChangeSink::Flush() {
  auto deliveries = producer_.Flush(std::chrono::milliseconds(60000));
  if (!deliveries.ok()) return deliveries.status();
  return Absorb(*deliveries);
}

Status KafkaChangeSink::Absorb(const std::vector<kafka::Delivery>& deliveries) {
  for (const auto& d : deliveries) {
    if (!d.status.ok()) {
      failure_ = common::Unavailable(
          fmt::format("broker refused a message for {}: {}", d.topic, d.status.message()));
      continue;
    }
    if (d.id > watermark_) acked_above_.insert(d.id);
  }
  while (!acked_above_.empty() && *acked_above_.begin() == watermark_ + 1) {
    ++watermark_;
    acked_above_.erase(acked_above_.begin());
  }
  SLUICE_RETURN_IF_ERROR(failure_);
  connectors::Lsn confirmed = 0;
  while (!checkpoints_.empty() && checkpoints_.front().first <= watermark_) {
    confirmed = checkpoints_.front().second;
    checkpoints_.pop_front();
  }
  if (confirmed) Acknowledge(confirmed);
  return Status::Ok();
}

}  // namespace sluice::dataflow
