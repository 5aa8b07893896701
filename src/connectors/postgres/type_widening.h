// Whether one PostgreSQL column type can take every value of another
// unchanged (a widening), by type name and modifier as pg_attribute keeps
// them (typname "int4", "varchar", ...; atttypmod, -1 for none). Shared by
// the source, which tells a widening from any other type change at the
// source, and the PostgreSQL target, which widens its own column to match.
// Header-only: the target library does not link the sources.
#pragma once

#include <cstdint>
#include <string>

namespace sluice::connectors::postgres {

struct ColumnType {
  std::string name;            // pg_type.typname: "int4", "varchar", "numeric", "_text"
  std::int32_t modifier = -1;  // atttypmod; -1 when the type has none
  bool operator==(const ColumnType&) const = default;
};

// "int4", "varchar(5)", "numeric(12,2)", "timestamptz(3)": the name with its
// modifier spelled out as in a column definition.
inline std::string FormatType(const ColumnType& t) {
  const auto& n = t.name;
  if (t.modifier < 0) return n;
  if (n == "varchar" || n == "bpchar") return n + "(" + std::to_string(t.modifier - 4) + ")";
  if (n == "numeric") {
    std::int32_t m = t.modifier - 4;
    return n + "(" + std::to_string((m >> 16) & 0xffff) + "," + std::to_string(m & 0xffff) + ")";
  }
  return n + "(" + std::to_string(t.modifier) + ")";
}

// True when every value of `from` is a value of `to` with the same text:
// int2 -> int4 -> int8 (and any of them -> unconstrained numeric), float4
// -> float8, varchar(n) -> varchar(m >= n), unconstrained varchar or text,
// numeric(p,s) -> numeric with as many digits on both sides of the point
// (or unconstrained), varbit(n) -> varbit(m >= n), and a time or timestamp
// type to more fractional digits. False for the same type (no change) and
// for anything else (a narrowing, or a change of kind such as text ->
// integer): the value may not fit.
inline bool IsSafeWidening(const ColumnType& from, const ColumnType& to) {
  if (from == to) return false;
  const auto& f = from.name;
  const auto& t = to.name;
  auto rank = [](const std::string& n) {
    return n == "int2" ? 1 : n == "int4" ? 2 : n == "int8" ? 3 : 0;
  };
  if (rank(f) && rank(t)) return rank(t) > rank(f);
  if (rank(f) && t == "numeric") return to.modifier < 0;
  if (f == "float4" && t == "float8") return true;
  if (f == "varchar" && t == "text") return true;
  if (f == "varchar" && t == "varchar")
    return to.modifier < 0 || (from.modifier >= 0 && to.modifier >= from.modifier);
  if (f == "varbit" && t == "varbit")
    return to.modifier < 0 || (from.modifier >= 0 && to.modifier >= from.modifier);
  if (f == "numeric" && t == "numeric") {
    if (to.modifier < 0) return true;
    if (from.modifier < 0) return false;
    std::int32_t fm = from.modifier - 4, tm = to.modifier - 4;
    std::int32_t fp = (fm >> 16) & 0xffff, fs = fm & 0xffff;
    std::int32_t tp = (tm >> 16) & 0xffff, ts = tm & 0xffff;
    return ts >= fs && tp - ts >= fp - fs;
  }
  if (f == t &&
      (f == "time" || f == "timetz" || f == "timestamp" || f == "timestamptz" || f == "interval")) {
    // The modifier of time types is the fractional digits, -1 the most (6).
    auto digits = [](std::int32_t m) { return m < 0 ? 6 : m; };
    return f != "interval" ? digits(to.modifier) >= digits(from.modifier)
                           : to.modifier < 0 && from.modifier >= 0;
  }
  return false;
}

}  // namespace sluice::connectors::postgres
