#include <optional>
#include <vector>

#include "broker/handlers/handlers.h"
#include "broker/protocol/api.h"
#include "broker/storage/log_manager.h"

namespace sluice::broker::handlers {

namespace err = protocol::error;

Reply Metadata(Broker& b, const RequestContext& ctx, Reader& in, Writer& out) {
  const int v = ctx.api_version;
  std::optional<std::vector<std::string>> wanted;
  std::int32_t n = in.ArrayLength();
  if (n >= 0) {
    wanted.emplace();
    for (std::int32_t i = 0; i < n; ++i) wanted->push_back(in.String());
  }
  if (v == 0 && wanted && wanted->empty()) wanted.reset();  // v0: empty means all
  bool allow_auto = true;
  if (v >= 4) allow_auto = in.Bool();
  if (v >= 8) {
    in.Bool();
    in.Bool();
  }

  if (v >= 3) out.Int32(0);  // throttle_time_ms
  out.ArrayLength(1);
  out.Int32(b.options().node_id);
  out.String(b.advertised_host());
  out.Int32(b.advertised_port());
  if (v >= 1) out.NullableString(std::nullopt);  // rack
  if (v >= 2) out.NullableString(b.cluster_id());
  if (v >= 1) out.Int32(b.options().node_id);  // controller

  std::vector<std::string> names = wanted ? *wanted : b.logs().TopicNames();
  // Listing every topic lists those the principal may know of.
  if (!wanted)
    std::erase_if(names, [&](const std::string& topic) { return !ctx.MayDescribe(topic); });
  out.ArrayLength(names.size());
  for (const auto& name : names) {
    std::int16_t topic_error = err::kNone;
    std::int32_t partitions = 0;
    if (!storage::IsValidTopicName(name)) {
      topic_error = err::kInvalidTopic;
    } else if (!ctx.MayDescribe(name)) {
      topic_error = err::kTopicAuthorizationFailed;
    } else if (!b.EnsureTopic(name, wanted.has_value() && allow_auto && ctx.MayProduce(name))) {
      topic_error = err::kUnknownTopicOrPartition;
    } else {
      partitions = b.logs().PartitionCount(name).value_or(0);
    }
    out.Int16(topic_error);
    out.String(name);
    if (v >= 1) out.Bool(false);  // is_internal
    out.ArrayLength(static_cast<std::size_t>(partitions));
    for (std::int32_t p = 0; p < partitions; ++p) {
      out.Int16(err::kNone);
      out.Int32(p);
      out.Int32(b.options().node_id);
      if (v >= 7) out.Int32(0);  // leader_epoch
      out.Int32Array({b.options().node_id});
      out.Int32Array({b.options().node_id});
      if (v >= 5) out.Int32Array({});
    }
    if (v >= 8) out.Int32(INT32_MIN);  // topic_authorized_operations: not requested
  }
  if (v >= 8) out.Int32(INT32_MIN);  // cluster_authorized_operations
  return Reply::kSend;
}

}  // namespace sluice::broker::handlers
