#include <chrono>

#include "broker/handlers/handlers.h"
#include "broker/protocol/api.h"

namespace sluice::broker::handlers {

namespace err = protocol::error;

namespace {

struct PartitionRequest {
  std::int32_t index;
  std::int64_t fetch_offset;
  std::int32_t max_bytes;
};

struct PartitionResponse {
  std::int32_t index;
  std::int16_t error = err::kNone;
  std::int64_t high_watermark = -1;
  std::int64_t log_start_offset = -1;
  protocol::FileSlice records;  // sent from the segment file, not copied
};

using Topics = std::vector<std::pair<std::string, std::vector<PartitionRequest>>>;
using Responses = std::vector<std::pair<std::string, std::vector<PartitionResponse>>>;

// Reads every requested partition once; returns bytes gathered and whether an
// error must be reported without waiting.
std::int64_t ReadAll(Broker& b, const RequestContext& ctx, const Topics& topics,
                     std::int64_t max_bytes, Responses* out, bool* errored) {
  out->clear();
  std::int64_t total = 0;
  for (const auto& [name, parts] : topics) {
    auto& tr = out->emplace_back(name, std::vector<PartitionResponse>{}).second;
    for (const auto& p : parts) {
      PartitionResponse r{p.index};
      storage::PartitionLog* log =
          ctx.MayConsume(name) ? b.logs().Partition(name, p.index) : nullptr;
      if (!ctx.MayConsume(name)) {
        r.error = err::kTopicAuthorizationFailed;
        *errored = true;
      } else if (!log) {
        r.error = err::kUnknownTopicOrPartition;
        *errored = true;
      } else {
        // KIP-74: the first non-empty partition may exceed the response limit.
        std::int64_t budget =
            std::min<std::int64_t>(p.max_bytes, std::max<std::int64_t>(max_bytes - total, 1));
        if (total > 0 && total >= max_bytes) budget = 0;
        if (budget > 0 || total == 0) {
          auto read = log->Read(p.fetch_offset, std::max<std::int64_t>(budget, 1));
          if (!read.ok()) {
            r.error = err::kOffsetOutOfRange;
            r.high_watermark = log->high_watermark();
            r.log_start_offset = log->log_start_offset();
            *errored = true;
          } else {
            r.high_watermark = read->high_watermark;
            r.log_start_offset = read->log_start_offset;
            r.records = std::move(read->records);
            total += r.records.length;
          }
        } else {
          r.high_watermark = log->high_watermark();
          r.log_start_offset = log->log_start_offset();
        }
      }
      tr.push_back(std::move(r));
    }
  }
  return total;
}

}  // namespace

Reply Fetch(Broker& b, const RequestContext& ctx, Reader& in, Writer& out) {
  const int v = ctx.api_version;
  in.Int32();  // replica_id
  std::int32_t max_wait_ms = in.Int32();
  std::int32_t min_bytes = in.Int32();
  std::int32_t max_bytes = v >= 3 ? in.Int32() : INT32_MAX;
  if (v >= 4) in.Int8();  // isolation_level: no transactions, so both levels read the same
  if (v >= 7) {
    in.Int32();  // session_id: we decline sessions (answer 0), so every fetch is a full fetch
    in.Int32();  // session_epoch
  }
  Topics topics;
  std::int32_t nt = in.ArrayLength();
  for (std::int32_t t = 0; t < nt; ++t) {
    auto& [name, parts] = topics.emplace_back(in.String(), std::vector<PartitionRequest>{});
    std::int32_t np = in.ArrayLength();
    for (std::int32_t p = 0; p < np; ++p) {
      PartitionRequest pr{};
      pr.index = in.Int32();
      if (v >= 9) in.Int32();  // current_leader_epoch
      pr.fetch_offset = in.Int64();
      if (v >= 5) in.Int64();  // log_start_offset (followers only)
      pr.max_bytes = in.Int32();
      parts.push_back(pr);
    }
  }
  if (v >= 7) {
    std::int32_t nf = in.ArrayLength();
    for (std::int32_t i = 0; i < nf; ++i) {
      in.String();
      in.Int32Array();
    }
  }
  if (v >= 11) in.String();  // rack_id

  // Long poll: answer once min_bytes are there, an error shows, or max_wait passes.
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(0, max_wait_ms));
  Responses responses;
  while (true) {
    std::uint64_t seq = b.logs().append_seq();
    bool errored = false;
    std::int64_t total = ReadAll(b, ctx, topics, max_bytes, &responses, &errored);
    if (errored || total >= min_bytes || (total > 0 && min_bytes <= 1) ||
        std::chrono::steady_clock::now() >= deadline) {
      break;
    }
    b.logs().WaitForAppend(seq, deadline);
  }

  out.Int32(0);  // throttle_time_ms
  if (v >= 7) {
    out.Int16(err::kNone);
    out.Int32(0);  // session_id
  }
  out.ArrayLength(responses.size());
  for (const auto& [name, parts] : responses) {
    out.String(name);
    out.ArrayLength(parts.size());
    for (const auto& r : parts) {
      out.Int32(r.index);
      out.Int16(r.error);
      out.Int64(r.high_watermark);
      out.Int64(r.high_watermark);  // last_stable_offset
      if (v >= 5) out.Int64(r.log_start_offset);
      out.ArrayLength(0);          // aborted_transactions
      if (v >= 11) out.Int32(-1);  // preferred_read_replica
      out.FileBytes(r.records);
    }
  }
  return Reply::kSend;
}

}  // namespace sluice::broker::handlers
