// Idempotency-Key support for create endpoints. With the header, the create
// runs in one transaction holding an advisory lock on (endpoint, key), so
// concurrent duplicates serialise and make one resource; the response is
// recorded (encrypted whole, since it may carry credentials) and replayed
// for 24 h. The same key with another payload is refused with 422. The
// request fingerprint is an HMAC keyed like the stored body, over the
// caller, the path and the canonical (key-sorted) JSON body.
#pragma once

#include <cstdint>
#include <functional>
#include <pqxx/pqxx>
#include <string>

#include "api/context.h"
#include "api/http.h"

namespace sluice::api {

inline constexpr const char* kIdempotencyHeader = "Idempotency-Key";
inline constexpr int kIdempotencyTtlHours = 24;

// `endpoint` is the route name the key is scoped to, e.g. "connectors:create".
Response IdempotentCreate(ApiContext& ctx, Request& req, const std::string& endpoint,
                          const Json& body, const std::function<Response(pqxx::work&)>& create);

// Deletes records past expires_at; returns how many. The scheduler calls this
// at least hourly.
std::int64_t DeleteExpiredIdempotencyRecords(store::Database& db);

}  // namespace sluice::api
