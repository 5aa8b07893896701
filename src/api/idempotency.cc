#include "api/idempotency.h"

#include "api/sql_util.h"
#include "model/config_keys.h"

namespace sluice::api {
namespace {

std::string Canonical(const Request& req, const Json& body) {
  // nlohmann::json keeps object keys sorted, so dump() is canonical.
  return req.caller().user_id.ToString() + "\n" + req.raw.method + " " + req.raw.path + "\n" +
         body.dump();
}

std::string Hash(const secrets::KeyRing& keys, const std::string& kid, const std::string& payload) {
  auto h = secrets::KeyedHash(keys, kid, payload);
  if (!h.ok()) throw ApiError(500, "internal", h.status().message());
  return *h;
}

}  // namespace

Response IdempotentCreate(ApiContext& ctx, Request& req, const std::string& endpoint,
                          const Json& body, const std::function<Response(pqxx::work&)>& create,
                          const Present& present) {
  auto shown = [&present](Response r) {
    if (present) r.body = present(r.body);
    return r;
  };
  std::string key = req.raw.get_header_value(kIdempotencyHeader);
  if (!req.raw.has_header(kIdempotencyHeader)) return shown(ctx.db.Transact(create));
  if (key.empty() || key.size() > 200) {
    throw ApiError(422, "invalid_field", "Idempotency-Key must be 1 to 200 characters");
  }
  const std::string payload = Canonical(req, body);
  return shown(ctx.db.Transact([&](pqxx::work& tx) {
    tx.exec_params("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                   "idempotency:" + endpoint + ":" + key);
    auto rows = tx.exec_params(
        std::string("SELECT id, request_hash, response_status, response_body::text, "
                    "expires_at > ") +
            sql::kNowUtc + " FROM idempotency_record WHERE endpoint = $1 AND key = $2",
        endpoint, key);
    if (!rows.empty()) {
      if (rows[0][4].as<bool>()) {
        Json stored = Json::parse(rows[0][3].as<std::string>());
        if (Hash(ctx.keys, secrets::EnvelopeKeyId(stored), payload) !=
            rows[0][1].as<std::string>()) {
          throw ApiError(422, "idempotency_key_reused",
                         "Idempotency-Key was already used with a different request");
        }
        return shown(Response{rows[0][2].as<int>(), DecryptStored(stored, ctx.keys)});
      }
      tx.exec_params("DELETE FROM idempotency_record WHERE id = $1", rows[0][0].as<std::string>());
    }
    Response out = create(tx);
    Json envelope = secrets::EncryptConfiguration(out.body, ctx.keys);
    tx.exec_params(std::string("INSERT INTO idempotency_record (id, endpoint, key, request_hash, "
                               "response_status, response_body, expires_at, created_at, "
                               "updated_at) VALUES ($1, $2, $3, $4, $5, $6::json, ") +
                       sql::kNowUtc + " + interval '" + std::to_string(kIdempotencyTtlHours) +
                       " hours', " + sql::kNowUtc + ", " + sql::kNowUtc + ")",
                   common::Uuid::V4().ToString(), endpoint, key,
                   Hash(ctx.keys, secrets::EnvelopeKeyId(envelope), payload), out.status,
                   envelope.dump());
    return out;
  }));
}

std::int64_t DeleteExpiredIdempotencyRecords(store::Database& db) {
  return db.Transact([](pqxx::work& tx) {
    return static_cast<std::int64_t>(
        tx.exec(std::string("DELETE FROM idempotency_record WHERE expires_at <= ") + sql::kNowUtc)
            .affected_rows());
  });
}

}  // namespace sluice::api
