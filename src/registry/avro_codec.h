// Avro binary encoding of a JSON datum against a parsed schema, and back.
//
// Datum form ("plain JSON"): null/boolean/number/string as JSON; records and
// maps as objects; arrays as arrays; enums as the symbol string; bytes and
// fixed as strings whose code points 0-255 are the bytes (Avro's JSON
// encoding). A union value is either plain (the first branch that accepts
// it is used) or wrapped as {"<branch name>": value} per Avro's JSON
// encoding; Decode always returns the plain form.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "registry/avro_schema.h"

namespace sluice::registry::avro {

// Appends the encoding of `datum` to `out`.
common::Status Encode(const Schema& schema, const nlohmann::json& datum, std::string& out);
common::Result<std::string> Encode(const Schema& schema, const nlohmann::json& datum);

// Decodes exactly one datum; trailing bytes are an error.
common::Result<nlohmann::json> Decode(const Schema& schema, std::string_view bytes);

// Primitives, exposed for the wire format and tests.
void WriteLong(std::int64_t v, std::string& out);  // zig-zag varint
// Reads a zig-zag varint at data[pos], advancing pos.
common::Result<std::int64_t> ReadLong(std::string_view data, size_t& pos);
// The length-prefixed content of a string or bytes datum at data[pos], in
// place, advancing pos.
common::Result<std::string_view> ReadBytes(std::string_view data, size_t& pos);
// Steps over one datum of `node` at data[pos] without building it.
common::Status Skip(const Node& node, std::string_view data, size_t& pos);

}  // namespace sluice::registry::avro
