// Small SQL helpers private to the warehouse subsystem's stores: UUIDs cross
// libpq as text, timestamps leave PostgreSQL formatted as ISO-8601 UTC.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "common/uuid.h"

namespace sluice::warehouse::sql {

// Naive UTC now, for the spec's DATETIME columns.
inline constexpr const char* kNowUtc = "(now() AT TIME ZONE 'utc')";

inline std::string Iso(const std::string& column) {
  return "to_char(" + column + ", 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')";
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
inline std::optional<std::string> Param(const std::optional<common::Uuid>& id) {
  if (!id) return std::nullopt;
  return id->ToString();
}

}  // namespace sluice::warehouse::sql
