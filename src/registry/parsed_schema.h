// A schema of either language the registry accepts, behind one type: what
// the repository stores and the compatibility rule compares.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "registry/avro_schema.h"
#include "registry/compatibility.h"
#include "registry/json_schema.h"

namespace sluice::registry {

enum class SchemaType { kAvro, kJson };

// "AVRO"/"JSON" as Confluent's schemaType spells them (case-insensitive on
// input; absent means AVRO). PROTOBUF is not supported.
common::Result<SchemaType> ParseSchemaType(std::string_view s);
const char* SchemaTypeName(SchemaType t);    // "AVRO", "JSON"
const char* SchemaTypeColumn(SchemaType t);  // the schema.type column: "avro", "json"

class ParsedSchema {
 public:
  // Parse failures carry the parser's words (Confluent's 42201 message).
  static common::Result<ParsedSchema> Parse(SchemaType type, std::string_view text);

  SchemaType type() const { return type_; }
  // SHA-256 hex over the normalized form: the dedupe key of the schema table.
  const std::string& hash() const { return hash_; }
  const avro::SchemaPtr& avro() const { return avro_; }
  const jsonschema::SchemaPtr& json() const { return json_; }

 private:
  SchemaType type_ = SchemaType::kAvro;
  std::string hash_;
  avro::SchemaPtr avro_;
  jsonschema::SchemaPtr json_;
};

// Reasons `reader` cannot read `writer`'s data; a language mismatch is one.
std::vector<std::string> ReadIncompatibilities(const ParsedSchema& reader,
                                               const ParsedSchema& writer);

// CheckCompatibility (compatibility.h) for ParsedSchema.
std::vector<std::string> CheckSchemaCompatibility(Compatibility level,
                                                  const ParsedSchema& candidate,
                                                  const std::vector<ParsedSchema>& previous);

}  // namespace sluice::registry
