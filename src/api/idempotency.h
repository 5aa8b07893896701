// Idempotency-Key support for create endpoints. With the header, the create
// runs in one transaction holding an advisory lock on (endpoint, key), so
// concurrent duplicates serialise and make one resource; the response is
// recorded unredacted (encrypted whole, since it carries credentials) and
// replayed for 24 h: the original answer and every replay are the recorded
// body passed through the same `present`, so a replay answers exactly what
// the original did. The same key with another payload is refused with 422. The
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

// How a recorded body is shown to the client, e.g. with its secrets
// redacted. Empty: as recorded.
using Present = std::function<Json(const Json&)>;

// `endpoint` is the route name the key is scoped to, e.g. "connectors:create".
// `create` answers the unredacted body; the client sees present(body).
Response IdempotentCreate(ApiContext& ctx, Request& req, const std::string& endpoint,
                          const Json& body, const std::function<Response(pqxx::work&)>& create,
                          const Present& present = {});

// Deletes records past expires_at; returns how many. The scheduler calls this
// at least hourly.
std::int64_t DeleteExpiredIdempotencyRecords(store::Database& db);

}  // namespace sluice::api
