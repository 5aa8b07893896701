// Small helpers for the repositories that talk to the data-plane database:
// UUIDs cross libpq as text, timestamps leave PostgreSQL already formatted as
// ISO-8601 UTC, and the spec's DATETIME columns hold naive UTC.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "common/uuid.h"

namespace sluice::store::sql {

// Naive UTC now, for the spec's DATETIME columns.
inline constexpr const char* kNowUtc = "(now() AT TIME ZONE 'utc')";

// SQL expression rendering a naive-UTC timestamp column as ISO-8601 "...Z".
inline std::string Iso(const std::string& column) {
  return "to_char(" + column + ", 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')";
}
// Same for a timestamptz column.
inline std::string IsoTz(const std::string& column) {
  return Iso("(" + column + " AT TIME ZONE 'utc')");
}

inline common::Uuid GetUuid(const pqxx::field& f) {
  return common::Uuid::Parse(f.as<std::string>()).value_or(common::Uuid());
}
inline std::optional<common::Uuid> GetOptUuid(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return common::Uuid::Parse(f.as<std::string>());
}
inline std::optional<std::string> GetOptString(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<std::string>();
}
// NULL-able parameter for exec_params.
inline std::optional<std::string> Param(const std::optional<common::Uuid>& id) {
  if (!id) return std::nullopt;
  return id->ToString();
}

// Serialises writes about one pair of ids (user, env) / (user, team) for the
// rest of the transaction, so check-then-insert cannot race itself.
inline void LockPair(pqxx::work& tx, const std::string& kind, const common::Uuid& a,
                     const common::Uuid& b) {
  tx.exec_params("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                 kind + ":" + a.ToString() + ":" + b.ToString());
}

}  // namespace sluice::store::sql
