// OffsetCommit and OffsetFetch.
#include "broker/handlers/handlers.h"
#include "broker/protocol/api.h"

namespace sluice::broker::handlers {

namespace err = protocol::error;

Reply OffsetCommit(Broker& b, const RequestContext& ctx, Reader& in, Writer& out) {
  const int v = ctx.api_version;
  std::string group = in.String();
  std::int32_t generation = v >= 1 ? in.Int32() : -1;
  std::string member = v >= 1 ? in.String() : "";
  if (v >= 7) in.NullableString();
  if (v >= 2 && v <= 4) in.Int64();  // retention_time_ms
  std::vector<std::pair<std::string, std::vector<std::int32_t>>> shape;
  std::vector<groups::OffsetCommitEntry> entries;
  std::vector<std::int16_t> per_partition;
  std::int32_t nt = in.ArrayLength();
  for (std::int32_t t = 0; t < nt; ++t) {
    std::string name = in.String();
    auto& parts = shape.emplace_back(name, std::vector<std::int32_t>{}).second;
    std::int32_t np = in.ArrayLength();
    for (std::int32_t p = 0; p < np; ++p) {
      std::int32_t index = in.Int32();
      std::int64_t offset = in.Int64();
      if (v >= 6) in.Int32();  // committed_leader_epoch
      if (v == 1) in.Int64();  // commit_timestamp
      auto meta = in.NullableString();
      parts.push_back(index);
      if (!ctx.MayUseGroup(group)) {
        per_partition.push_back(err::kGroupAuthorizationFailed);
      } else if (!ctx.MayConsume(name)) {
        per_partition.push_back(err::kTopicAuthorizationFailed);
      } else if (!b.logs().Partition(name, index)) {
        per_partition.push_back(err::kUnknownTopicOrPartition);
      } else if (meta && meta->size() > 4096) {
        per_partition.push_back(err::kOffsetMetadataTooLarge);
      } else {
        per_partition.push_back(err::kNone);
        entries.push_back({{name, index}, offset, meta.value_or("")});
      }
    }
  }
  std::int16_t group_error = ctx.MayUseGroup(group)
                                 ? b.groups().CommitOffsets(group, generation, member, entries)
                                 : err::kGroupAuthorizationFailed;
  if (v >= 3) out.Int32(0);
  out.ArrayLength(shape.size());
  std::size_t i = 0;
  for (const auto& [name, parts] : shape) {
    out.String(name);
    out.ArrayLength(parts.size());
    for (auto index : parts) {
      out.Int32(index);
      std::int16_t e = per_partition[i++];
      out.Int16(e != err::kNone ? e : group_error);
    }
  }
  return Reply::kSend;
}

Reply OffsetFetch(Broker& b, const RequestContext& ctx, Reader& in, Writer& out) {
  const int v = ctx.api_version;
  std::string group = in.String();
  std::vector<std::pair<std::string, std::vector<std::int32_t>>> wanted;
  std::int32_t nt = in.ArrayLength();
  const bool group_ok = ctx.MayUseGroup(group);
  if (nt < 0 && group_ok) {  // null (v2+): every partition the group committed
    std::map<std::string, std::vector<std::int32_t>> all;
    for (const auto& [k, o] : b.offsets().All(group)) all[k.topic].push_back(k.partition);
    wanted.assign(all.begin(), all.end());
  }
  for (std::int32_t t = 0; t < nt; ++t) {
    std::string name = in.String();
    wanted.emplace_back(name, in.Int32Array());
  }
  if (v >= 3) out.Int32(0);
  out.ArrayLength(wanted.size());
  for (const auto& [name, parts] : wanted) {
    out.String(name);
    out.ArrayLength(parts.size());
    std::int16_t error = !group_ok                ? err::kGroupAuthorizationFailed
                         : !ctx.MayDescribe(name) ? err::kTopicAuthorizationFailed
                                                  : err::kNone;
    for (auto p : parts) {
      auto c = error == err::kNone ? b.offsets().Get(group, {name, p}) : std::nullopt;
      out.Int32(p);
      out.Int64(c ? c->offset : -1);
      if (v >= 5) out.Int32(-1);  // committed_leader_epoch
      out.NullableString(c ? std::optional<std::string>(c->metadata)
                           : std::optional<std::string>(""));
      out.Int16(error);
    }
  }
  if (v >= 2) out.Int16(group_ok ? err::kNone : err::kGroupAuthorizationFailed);
  return Reply::kSend;
}

}  // namespace sluice::broker::handlers
