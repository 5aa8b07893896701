// A parsed Avro schema (https://avro.apache.org/docs/1.11.1/specification/):
// the type tree, its Parsing Canonical Form and the content hashes the
// registry keys on. Parsing validates the way Avro's own parser does (names,
// duplicate fields/symbols/union branches, defaults), so a bad schema is
// refused at registration with the parser's words.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::registry::avro {

enum class Type {
  kNull,
  kBoolean,
  kInt,
  kLong,
  kFloat,
  kDouble,
  kBytes,
  kString,
  kRecord,
  kEnum,
  kArray,
  kMap,
  kUnion,
  kFixed,
};

// "null", "record", ... as the spec spells them.
const char* TypeName(Type t);

struct Node;

struct Field {
  std::string name;
  const Node* type = nullptr;
  std::optional<nlohmann::json> default_value;  // absent: no default
  std::vector<std::string> aliases;
  std::string order = "ascending";
  std::string doc;
};

// One node of the type tree. Named types (record, enum, fixed) are defined
// once and referenced by pointer, so recursive records are plain cycles.
struct Node {
  Type type = Type::kNull;
  // Named types only.
  std::string name;                  // unqualified
  std::string full_name;             // namespace-qualified
  std::vector<std::string> aliases;  // fully qualified
  std::string doc;
  // Logical type, kept only when valid for the underlying type (the spec says
  // an invalid one is ignored). precision/scale are for "decimal".
  std::string logical_type;
  int precision = 0;
  int scale = 0;
  std::vector<Field> fields;                // record
  std::vector<std::string> symbols;         // enum
  std::optional<std::string> enum_default;  // enum
  const Node* items = nullptr;              // array
  const Node* values = nullptr;             // map
  std::vector<const Node*> branches;        // union
  int size = 0;                             // fixed

  bool is_named() const {
    return type == Type::kRecord || type == Type::kEnum || type == Type::kFixed;
  }
  // Index of the field called `n` (or with alias `n`), or -1.
  int FieldIndex(std::string_view n) const;
};

class Schema {
 public:
  // Parses schema text; the error names what is wrong and where.
  static common::Result<std::shared_ptr<const Schema>> Parse(std::string_view text);
  static common::Result<std::shared_ptr<const Schema>> FromJson(const nlohmann::json& doc);

  const Node& root() const { return *root_; }

  // Parsing Canonical Form: the spec's transformation (PRIMITIVES, FULLNAMES,
  // STRIP, ORDER, STRINGS, INTEGERS, WHITESPACE). Two schemas that read and
  // write the same bytes have the same canonical form.
  const std::string& canonical_form() const { return canonical_; }
  // SHA-256 hex of the canonical form: Avro's fingerprint, written as hex.
  std::string Fingerprint() const;

  // The canonical form plus the attributes that change meaning to a reader
  // (default, aliases, order, logicalType, precision, scale, doc): what the
  // registry dedupes on. PCF alone would merge a schema that adds a default
  // with the one without it, which resolve differently.
  const std::string& normalized_form() const { return normalized_; }
  std::string ContentHash() const;

  // Named types defined in this schema, by full name.
  const Node* FindNamed(std::string_view full_name) const;

 private:
  friend class Parser;
  std::vector<std::unique_ptr<Node>> nodes_;
  const Node* root_ = nullptr;
  std::string canonical_;
  std::string normalized_;
};

using SchemaPtr = std::shared_ptr<const Schema>;

// Checks that `value` is a valid default (or datum in the plain JSON form of
// avro_codec.h) for `node`; for a union the first branch decides, as the
// spec requires of defaults.
common::Status ValidateDefault(const Node& node, const nlohmann::json& value);

}  // namespace sluice::registry::avro
