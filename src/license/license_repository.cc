#include "license/license_repository.h"

#include "common/uuid.h"

namespace sluice::license {

namespace {

std::optional<common::TimePoint> OptTime(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return common::FromEpochMicros(f.as<long long>());
}

std::optional<long long> Micros(const std::optional<common::TimePoint>& t) {
  if (!t) return std::nullopt;
  return common::ToEpochMicros(*t);
}

}  // namespace

std::optional<LicenseVerdict> LicenseRepository::Load(pqxx::transaction_base& tx) {
  auto r = tx.exec(
      "SELECT license_active, (extract(epoch FROM license_expires_at) * 1000000)::bigint, "
      "(extract(epoch FROM last_seen_at) * 1000000)::bigint FROM license_state "
      "ORDER BY last_seen_at DESC LIMIT 1");
  if (r.empty()) return std::nullopt;
  LicenseVerdict v;
  v.active = r[0][0].as<bool>();
  v.expires_at = OptTime(r[0][1]);
  v.seen_at = common::FromEpochMicros(r[0][2].as<long long>());
  return v;
}

void LicenseRepository::Store(pqxx::transaction_base& tx, const LicenseVerdict& verdict) {
  // The table has no natural key to upsert on; a transaction-scoped advisory
  // lock serialises the read-then-write so the row stays single.
  tx.exec("SELECT pg_advisory_xact_lock(hashtext('sluice.license_state'))");
  constexpr const char* kExpires = "(to_timestamp($2::bigint / 1e6) AT TIME ZONE 'UTC')";
  constexpr const char* kSeen = "(to_timestamp($3::bigint / 1e6) AT TIME ZONE 'UTC')";
  auto updated = tx.exec_params(
      std::string("UPDATE license_state SET license_active = $1, license_expires_at = ") +
          kExpires + ", last_seen_at = " + kSeen + ", updated_at = now() AT TIME ZONE 'UTC'",
      verdict.active, Micros(verdict.expires_at), common::ToEpochMicros(verdict.seen_at));
  if (updated.affected_rows() > 0) return;
  tx.exec_params(std::string("INSERT INTO license_state (license_active, license_expires_at, "
                             "last_seen_at, id, created_at, updated_at) VALUES ($1, ") +
                     kExpires + ", " + kSeen +
                     ", $4, now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC')",
                 verdict.active, Micros(verdict.expires_at), common::ToEpochMicros(verdict.seen_at),
                 common::Uuid::V4().ToString());
}

}  // namespace sluice::license
