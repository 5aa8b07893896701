// SASL/PLAIN (RFC 4616) via SaslHandshake + SaslAuthenticate (KIP-152).
#include <spdlog/spdlog.h>

#include "broker/handlers/handlers.h"
#include "broker/protocol/api.h"

namespace sluice::broker::handlers {

namespace err = protocol::error;

Reply SaslHandshake(Broker&, const RequestContext&, Session& s, Reader& in, Writer& out) {
  std::string mechanism = in.String();
  bool ok = mechanism == "PLAIN";
  s.handshake_done = ok;
  out.Int16(ok ? err::kNone : err::kUnsupportedSaslMechanism);
  out.ArrayLength(1);
  out.String("PLAIN");
  return Reply::kSend;
}

Reply SaslAuthenticate(Broker& b, const RequestContext& ctx, Session& s, Reader& in, Writer& out) {
  auto token = in.Bytes();
  std::int16_t code = err::kNone;
  std::optional<std::string> message;
  if (!s.handshake_done) {
    code = err::kIllegalSaslState;
    message = "SaslHandshake first";
  } else {
    auto user = b.Authenticate(token);
    if (!user.ok()) {
      code = err::kSaslAuthenticationFailed;
      message = user.status().message();
      spdlog::warn("SASL/PLAIN authentication failed from {}", ctx.client_host);
    } else {
      s.authenticated = true;
      s.principal = *user;
    }
  }
  out.Int16(code);
  out.NullableString(message);
  out.Bytes("");
  if (ctx.api_version >= 1) out.Int64(0);  // session_lifetime_ms: no re-authentication
  return Reply::kSend;
}

}  // namespace sluice::broker::handlers
