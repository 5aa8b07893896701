#include "broker/handlers/handlers.h"
#include "broker/protocol/api.h"

namespace sluice::broker::handlers {

Reply InitProducerId(Broker& b, const RequestContext&, Reader& in, Writer& out) {
  auto transactional_id = in.NullableString();
  in.Int32();  // transaction_timeout_ms
  out.Int32(0);
  if (transactional_id) {
    // Idempotence yes, transactions no: say so rather than half-implement them.
    out.Int16(protocol::error::kTransactionalIdAuthorizationFailed);
    out.Int64(-1);
    out.Int16(-1);
    return Reply::kSend;
  }
  out.Int16(protocol::error::kNone);
  out.Int64(b.producers().NextProducerId());
  out.Int16(0);
  return Reply::kSend;
}

}  // namespace sluice::broker::handlers
