#include "registry/parsed_schema.h"

#include <algorithm>
#include <cctype>

#include "registry/avro_compatibility.h"

namespace sluice::registry {

common::Result<SchemaType> ParseSchemaType(std::string_view s) {
  std::string up(s);
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  if (up.empty() || up == "AVRO") return SchemaType::kAvro;
  if (up == "JSON") return SchemaType::kJson;
  return common::InvalidArgument("Invalid schema type " + std::string(s) +
                                 ": only AVRO and JSON are supported");
}

const char* SchemaTypeName(SchemaType t) { return t == SchemaType::kAvro ? "AVRO" : "JSON"; }
const char* SchemaTypeColumn(SchemaType t) { return t == SchemaType::kAvro ? "avro" : "json"; }

common::Result<ParsedSchema> ParsedSchema::Parse(SchemaType type, std::string_view text) {
  ParsedSchema p;
  p.type_ = type;
  if (type == SchemaType::kAvro) {
    auto s = avro::Schema::Parse(text);
    if (!s.ok()) return s.status();
    p.avro_ = *s;
    p.hash_ = p.avro_->ContentHash();
  } else {
    auto s = jsonschema::Schema::Parse(text);
    if (!s.ok()) return s.status();
    p.json_ = *s;
    p.hash_ = p.json_->ContentHash();
  }
  return p;
}

std::vector<std::string> ReadIncompatibilities(const ParsedSchema& reader,
                                               const ParsedSchema& writer) {
  if (reader.type() != writer.type()) {
    return {std::string("SCHEMA_TYPE_MISMATCH: a ") + SchemaTypeName(reader.type()) +
            " schema cannot read " + SchemaTypeName(writer.type()) + " data"};
  }
  if (reader.type() == SchemaType::kAvro) {
    return avro::ReadIncompatibilities(*reader.avro(), *writer.avro());
  }
  return jsonschema::ReadIncompatibilities(*reader.json(), *writer.json());
}

std::vector<std::string> CheckSchemaCompatibility(Compatibility level,
                                                  const ParsedSchema& candidate,
                                                  const std::vector<ParsedSchema>& previous) {
  return CheckCompatibility<ParsedSchema>(
      level, candidate, previous,
      [](const ParsedSchema& r, const ParsedSchema& w) { return ReadIncompatibilities(r, w); });
}

}  // namespace sluice::registry
