// Turns one request frame (the bytes after the size prefix) into the
// response frame, for one connection: header parsing, version and SASL
// gating, dispatch to the handler. Transport-free so the fuzzer can drive it.
#pragma once

#include <string>
#include <string_view>

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "broker/protocol/wire.h"

namespace sluice::broker {

class RequestProcessor {
 public:
  enum class Outcome { kRespond, kNoResponse, kClose };

  RequestProcessor(Broker* broker, std::string peer);

  // Fills `response` (size-prefixed; record batches of a Fetch as file
  // slices) when the outcome is kRespond. Never throws: anything undecodable
  // is kClose.
  Outcome Process(std::string_view frame, protocol::Frame* response);

  // After a failed SaslAuthenticate the reply goes out, then the connection closes.
  bool hang_up_after_reply() const { return hang_up_; }

  // Whether the connection may use every API (SASL done, or SASL off).
  bool authenticated() const { return session_.authenticated; }
  // The largest next frame this connection may send: the pre-authentication
  // cap until SASL completes, then the broker's max request size.
  std::int64_t max_frame_bytes() const;

 private:
  Broker* broker_;
  std::string peer_;
  handlers::Session session_;
  bool raw_sasl_next_ = false;  // SaslHandshake v0: the next frame is a bare PLAIN token
  bool hang_up_ = false;
};

}  // namespace sluice::broker
