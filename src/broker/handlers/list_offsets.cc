#include "broker/handlers/handlers.h"
#include "broker/protocol/api.h"

namespace sluice::broker::handlers {

namespace err = protocol::error;

namespace {
constexpr std::int64_t kLatest = -1;
constexpr std::int64_t kEarliest = -2;
}  // namespace

Reply ListOffsets(Broker& b, const RequestContext& ctx, Reader& in, Writer& out) {
  const int v = ctx.api_version;
  in.Int32();             // replica_id
  if (v >= 2) in.Int8();  // isolation_level
  struct Row {
    std::int32_t index;
    std::int16_t error;
    std::int64_t timestamp, offset;
  };
  std::vector<std::pair<std::string, std::vector<Row>>> results;
  std::int32_t nt = in.ArrayLength();
  for (std::int32_t t = 0; t < nt; ++t) {
    std::string name = in.String();
    auto& rows = results.emplace_back(name, std::vector<Row>{}).second;
    std::int32_t np = in.ArrayLength();
    for (std::int32_t p = 0; p < np; ++p) {
      std::int32_t index = in.Int32();
      if (v >= 4) in.Int32();  // current_leader_epoch
      std::int64_t ts = in.Int64();
      storage::PartitionLog* log = b.logs().Partition(name, index);
      if (!ctx.MayDescribe(name)) {
        rows.push_back({index, err::kTopicAuthorizationFailed, -1, -1});
      } else if (!log) {
        rows.push_back({index, err::kUnknownTopicOrPartition, -1, -1});
      } else if (ts == kLatest) {
        rows.push_back({index, err::kNone, -1, log->high_watermark()});
      } else if (ts == kEarliest) {
        rows.push_back({index, err::kNone, -1, log->log_start_offset()});
      } else {
        // Resolution is one batch: the first batch whose max timestamp reaches ts.
        std::int64_t off = log->OffsetForTimestamp(ts);
        if (off >= log->high_watermark()) {
          rows.push_back({index, err::kNone, -1, -1});
        } else {
          rows.push_back({index, err::kNone, ts, off});
        }
      }
    }
  }
  if (v >= 2) out.Int32(0);  // throttle_time_ms
  out.ArrayLength(results.size());
  for (const auto& [name, rows] : results) {
    out.String(name);
    out.ArrayLength(rows.size());
    for (const auto& r : rows) {
      out.Int32(r.index);
      out.Int16(r.error);
      out.Int64(r.timestamp);
      out.Int64(r.offset);
      if (v >= 4) out.Int32(0);  // leader_epoch
    }
  }
  return Reply::kSend;
}

}  // namespace sluice::broker::handlers
