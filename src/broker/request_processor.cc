#include "broker/request_processor.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "broker/protocol/api.h"
#include "broker/protocol/wire.h"

namespace sluice::broker {

using protocol::ApiKey;
namespace h = handlers;

namespace {

h::Reply Dispatch(Broker& b, const h::RequestContext& ctx, h::Session& s, protocol::Reader& in,
                  protocol::Writer& out) {
  switch (static_cast<ApiKey>(ctx.api_key)) {
    case ApiKey::kProduce:
      return h::Produce(b, ctx, in, out);
    case ApiKey::kFetch:
      return h::Fetch(b, ctx, in, out);
    case ApiKey::kListOffsets:
      return h::ListOffsets(b, ctx, in, out);
    case ApiKey::kMetadata:
      return h::Metadata(b, ctx, in, out);
    case ApiKey::kOffsetCommit:
      return h::OffsetCommit(b, ctx, in, out);
    case ApiKey::kOffsetFetch:
      return h::OffsetFetch(b, ctx, in, out);
    case ApiKey::kFindCoordinator:
      return h::FindCoordinator(b, ctx, in, out);
    case ApiKey::kJoinGroup:
      return h::JoinGroup(b, ctx, in, out);
    case ApiKey::kHeartbeat:
      return h::Heartbeat(b, ctx, in, out);
    case ApiKey::kLeaveGroup:
      return h::LeaveGroup(b, ctx, in, out);
    case ApiKey::kSyncGroup:
      return h::SyncGroup(b, ctx, in, out);
    case ApiKey::kDescribeGroups:
      return h::DescribeGroups(b, ctx, in, out);
    case ApiKey::kListGroups:
      return h::ListGroups(b, ctx, in, out);
    case ApiKey::kSaslHandshake:
      return h::SaslHandshake(b, ctx, s, in, out);
    case ApiKey::kApiVersions:
      return h::ApiVersions(b, ctx, in, out);
    case ApiKey::kCreateTopics:
      return h::CreateTopics(b, ctx, in, out);
    case ApiKey::kDeleteTopics:
      return h::DeleteTopics(b, ctx, in, out);
    case ApiKey::kInitProducerId:
      return h::InitProducerId(b, ctx, in, out);
    case ApiKey::kDescribeConfigs:
      return h::DescribeConfigs(b, ctx, in, out);
    case ApiKey::kSaslAuthenticate:
      return h::SaslAuthenticate(b, ctx, s, in, out);
    case ApiKey::kCreatePartitions:
      return h::CreatePartitions(b, ctx, in, out);
  }
  return h::Reply::kClose;
}

bool AllowedBeforeAuth(std::int16_t key) {
  auto k = static_cast<ApiKey>(key);
  return k == ApiKey::kApiVersions || k == ApiKey::kSaslHandshake || k == ApiKey::kSaslAuthenticate;
}

}  // namespace

RequestProcessor::RequestProcessor(Broker* broker, std::string peer)
    : broker_(broker), peer_(std::move(peer)) {
  session_.authenticated = !broker_->requires_authentication();
}

std::int64_t RequestProcessor::max_frame_bytes() const {
  const auto& o = broker_->options();
  if (session_.authenticated) return o.max_request_bytes;
  return std::min(o.max_preauth_request_bytes, o.max_request_bytes);
}

RequestProcessor::Outcome RequestProcessor::Process(std::string_view frame,
                                                    protocol::Frame* response) {
  Broker& b = *broker_;
  *response = {};
  if (raw_sasl_next_) {
    raw_sasl_next_ = false;
    auto user = b.Authenticate(frame);
    if (!user.ok()) {
      spdlog::warn("{}: SASL/PLAIN authentication failed", peer_);
      return Outcome::kClose;
    }
    session_.authenticated = true;
    session_.principal = *user;
    response->bytes.assign(4, '\0');  // an empty token frame says "accepted"
    return Outcome::kRespond;
  }
  h::RequestContext ctx;
  ctx.client_host = peer_;
  protocol::Writer out;
  h::Reply reply = h::Reply::kClose;
  try {
    protocol::Reader in(frame);
    ctx.api_key = in.Int16();
    ctx.api_version = in.Int16();
    ctx.correlation_id = in.Int32();
    ctx.client_id = in.NullableString().value_or("");
    auto api = protocol::FindApi(ctx.api_key);
    if (!api) {
      spdlog::warn("{}: unknown API key {}; closing", peer_, ctx.api_key);
      return Outcome::kClose;
    }
    if (!session_.authenticated && !AllowedBeforeAuth(ctx.api_key)) {
      spdlog::warn("{}: API {} before SASL authentication; closing", peer_, ctx.api_key);
      return Outcome::kClose;
    }
    if (!session_.principal.empty()) ctx.grant = b.GrantFor(session_.principal);
    out.Int32(0);  // size, patched below
    out.Int32(ctx.correlation_id);
    bool in_range = ctx.api_version >= api->min_version && ctx.api_version <= api->max_version;
    if (!in_range && api->key != ApiKey::kApiVersions) {
      spdlog::warn("{}: API {} v{} not supported; closing", peer_, ctx.api_key, ctx.api_version);
      return Outcome::kClose;
    }
    reply = Dispatch(b, ctx, session_, in, out);
    if (api->key == ApiKey::kSaslHandshake && ctx.api_version == 0 && session_.handshake_done) {
      raw_sasl_next_ = true;
    }
    if (api->key == ApiKey::kSaslAuthenticate && !session_.authenticated) hang_up_ = true;
  } catch (const protocol::DecodeError& e) {
    spdlog::warn("{}: malformed request (api {} v{}): {}; closing", peer_, ctx.api_key,
                 ctx.api_version, e.what());
    return Outcome::kClose;
  } catch (const std::exception& e) {
    spdlog::error("{}: request failed (api {} v{}): {}; closing", peer_, ctx.api_key,
                  ctx.api_version, e.what());
    return Outcome::kClose;
  }
  if (reply == h::Reply::kClose) return Outcome::kClose;
  if (reply == h::Reply::kNone) return Outcome::kNoResponse;
  out.Patch32(0, static_cast<std::int32_t>(out.total_size() - 4));
  *response = out.TakeFrame();
  return Outcome::kRespond;
}

}  // namespace sluice::broker
