#include <spdlog/spdlog.h>

#include "broker/handlers/handlers.h"
#include "broker/protocol/api.h"
#include "broker/protocol/record_batch.h"
#include "common/time.h"

namespace sluice::broker::handlers {

namespace err = protocol::error;

namespace {

struct PartitionResult {
  std::int32_t index;
  std::int16_t error = err::kNone;
  std::int64_t base_offset = -1;
  std::int64_t log_start_offset = -1;
};

// Validates and appends one partition's records; the batch bytes go to disk
// exactly as received apart from the assigned base offset.
PartitionResult AppendPartition(Broker& b, const std::string& topic, std::int32_t index,
                                std::optional<std::string_view> records) {
  PartitionResult r{index};
  storage::PartitionLog* log = b.logs().Partition(topic, index);
  if (!log) {
    r.error = err::kUnknownTopicOrPartition;
    return r;
  }
  if (!records || records->empty()) {
    r.error = err::kCorruptMessage;
    return r;
  }
  if (static_cast<std::int64_t>(records->size()) > b.options().max_message_bytes) {
    r.error = err::kMessageTooLarge;
    return r;
  }
  auto batches = protocol::SplitBatches(*records);
  if (!batches.ok()) {
    spdlog::debug("produce {}-{} rejected: {}", topic, index, batches.status().message());
    r.error = err::kCorruptMessage;
    return r;
  }
  const auto& first = batches->front();
  bool idempotent = first.producer_id >= 0 && batches->size() == 1;
  std::unique_lock<std::mutex> plock;
  if (idempotent) {
    plock = std::unique_lock(b.producers().lock());
    std::int32_t last_seq = first.base_sequence + first.last_offset_delta;
    auto verdict = b.producers().Check(topic, index, first.producer_id, first.producer_epoch,
                                       first.base_sequence, last_seq);
    if (verdict.error != err::kNone) {
      r.error = verdict.error;
      return r;
    }
    if (verdict.duplicate_of >= 0) {  // a retry of a batch we already stored
      r.base_offset = verdict.duplicate_of;
      r.log_start_offset = log->log_start_offset();
      return r;
    }
  }
  auto appended = b.logs().Append(log, *records);
  if (!appended.ok()) {
    // The append was taken back whole; the partition stays readable and the
    // producer retries (KAFKA_STORAGE_ERROR is retriable), e.g. once a full
    // disk has room again.
    spdlog::error("append {}-{}: {}", topic, index, appended.status().ToString());
    r.error = err::kKafkaStorageError;
    return r;
  }
  if (idempotent) {
    b.producers().Record(topic, index, first.producer_id, first.producer_epoch, first.base_sequence,
                         first.base_sequence + first.last_offset_delta, *appended);
  }
  r.base_offset = *appended;
  r.log_start_offset = log->log_start_offset();
  return r;
}

}  // namespace

Reply Produce(Broker& b, const RequestContext& ctx, Reader& in, Writer& out) {
  const int v = ctx.api_version;
  in.NullableString();  // transactional_id: transactions are not supported; batches stored as-is
  std::int16_t acks = in.Int16();
  in.Int32();  // timeout_ms: single replica, nothing to wait for
  bool bad_acks = acks != 0 && acks != 1 && acks != -1;
  std::vector<std::pair<std::string, std::vector<PartitionResult>>> results;
  std::int32_t topics = in.ArrayLength();
  for (std::int32_t t = 0; t < topics; ++t) {
    std::string name = in.String();
    bool authorized = ctx.MayProduce(name);
    bool exists = !bad_acks && authorized && b.EnsureTopic(name, true);
    auto& tr = results.emplace_back(name, std::vector<PartitionResult>{}).second;
    std::int32_t parts = in.ArrayLength();
    for (std::int32_t p = 0; p < parts; ++p) {
      std::int32_t index = in.Int32();
      auto records = in.NullableBytes();
      if (bad_acks) {
        tr.push_back({index, err::kInvalidRequiredAcks});
      } else if (!authorized) {
        tr.push_back({index, err::kTopicAuthorizationFailed});
      } else if (!exists) {
        tr.push_back({index, err::kUnknownTopicOrPartition});
      } else {
        tr.push_back(AppendPartition(b, name, index, records));
      }
    }
  }
  if (acks == 0) return Reply::kNone;  // Kafka sends no response for acks=0
  // An acknowledgement means "on disk": wait for the fdatasync covering each
  // append (or the retried original), shared with concurrent producers.
  for (auto& [name, parts] : results) {
    for (auto& r : parts) {
      if (r.error != err::kNone || r.base_offset < 0) continue;
      storage::PartitionLog* log = b.logs().Partition(name, r.index);
      if (log == nullptr) continue;
      auto st = b.logs().AwaitDurable(log, r.base_offset);
      if (!st.ok()) {
        spdlog::error("sync {}-{}: {}", name, r.index, st.ToString());
        r.error = err::kKafkaStorageError;
        r.base_offset = -1;
      }
    }
  }
  out.ArrayLength(results.size());
  for (const auto& [name, parts] : results) {
    out.String(name);
    out.ArrayLength(parts.size());
    for (const auto& r : parts) {
      out.Int32(r.index);
      out.Int16(r.error);
      out.Int64(r.base_offset);
      if (v >= 2) out.Int64(-1);  // log_append_time_ms: CreateTime topics
      if (v >= 5) out.Int64(r.log_start_offset);
    }
  }
  out.Int32(0);  // throttle_time_ms
  return Reply::kSend;
}

}  // namespace sluice::broker::handlers
