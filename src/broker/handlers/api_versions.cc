#include "broker/handlers/handlers.h"
#include "broker/protocol/api.h"

namespace sluice::broker::handlers {

Reply ApiVersions(Broker&, const RequestContext& ctx, Reader&, Writer& out) {
  // A version we do not speak (e.g. the flexible v3 clients try first) is
  // answered in v0 layout with UNSUPPORTED_VERSION plus our ranges, so the
  // client retries with one we support.
  bool supported = ctx.api_version <= 2;
  out.Int16(supported ? protocol::error::kNone : protocol::error::kUnsupportedVersion);
  auto apis = protocol::SupportedApis();
  out.ArrayLength(apis.size());
  for (const auto& a : apis) {
    out.Int16(static_cast<std::int16_t>(a.key));
    out.Int16(a.min_version);
    out.Int16(a.max_version);
  }
  if (supported && ctx.api_version >= 1) out.Int32(0);  // throttle_time_ms
  return Reply::kSend;
}

}  // namespace sluice::broker::handlers
