// PostgreSQL text-format values to JSON, by type OID. The rules keep values
// exact: numeric stays a string (JSON numbers are doubles to most readers),
// timestamps become ISO-8601, json/jsonb nest, bytea becomes base64 and
// arrays become JSON arrays. Unknown types pass through as their text.
//
// Assumes the session settings the source connects with (SessionOptions):
// DateStyle ISO, TimeZone UTC, bytea_output hex, extra_float_digits 3.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::connectors::postgres {

// libpq "options" making every value's text form predictable.
const char* SessionOptions();

// The element type of a built-in array type, or 0 when `oid` is no known array.
std::uint32_t ArrayElementType(std::uint32_t oid);
// The pg_catalog name of a built-in type ("int4", "_text"), or "" if unknown.
std::string BuiltinTypeName(std::uint32_t oid);

common::Result<nlohmann::json> TextToJson(std::uint32_t type_oid, std::string_view text);

// Whether TextToJson gives a value of this type as its text unchanged, a
// JSON string (numeric, text, uuid, date, enums, ...).
bool TextIsJsonString(std::uint32_t type_oid);

// Whether a value is carried as its PostgreSQL text (a JSON string that the
// envelope lists in `as_text`) instead of TextToJson's value: json, whose text
// (spacing, key order, duplicate keys) is the value; jsonb holding a number a
// double does not give back with the same spelling (1e400, 1.50, 2^70); and
// arrays of either. A value TextToJson refuses is carried so too.
bool CarriedAsText(std::uint32_t type_oid, std::string_view text);

// Appends the compact JSON of TextToJson(type_oid, text), byte for byte what
// dumping that value gives (invalid UTF-8 replaced by U+FFFD), without
// building the value when it is a string.
common::Status AppendValueJson(std::string& out, std::uint32_t type_oid, std::string_view text);

}  // namespace sluice::connectors::postgres
