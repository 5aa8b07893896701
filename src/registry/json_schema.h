// JSON Schema documents (schemaType JSON). Deliberately small: a structural
// check at registration, a canonical form for dedupe and a conservative
// compatibility rule; not a validator of JSON Schema's full vocabulary.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::registry::jsonschema {

class Schema {
 public:
  // Accepts a JSON object or boolean whose "type" (string or array of the
  // seven JSON Schema type names), "properties" (object of schemas),
  // "required" (array of strings), "items", "additionalProperties" and
  // "enum" (array) are well-formed, recursively.
  static common::Result<std::shared_ptr<const Schema>> Parse(std::string_view text);

  const nlohmann::json& doc() const { return doc_; }
  // Compact JSON with object keys sorted: the dedupe form.
  const std::string& canonical_form() const { return canonical_; }
  std::string ContentHash() const;

 private:
  nlohmann::json doc_;
  std::string canonical_;
};

using SchemaPtr = std::shared_ptr<const Schema>;

// Can a consumer validating with `reader` accept every document `writer`
// accepts? Conservative, per subschema:
//  - reader "type" must include each writer type ("number" covers "integer");
//  - a property required by the reader must be required by the writer;
//  - a writer property the reader closes off (additionalProperties: false,
//    property absent) is refused;
//  - a reader "enum" must contain every value of the writer's enum (and a
//    writer without an enum cannot be read by a reader with one);
//  - properties and items present on both sides are compared recursively.
// Keywords outside these are ignored by the check.
std::vector<std::string> ReadIncompatibilities(const Schema& reader, const Schema& writer);

}  // namespace sluice::registry::jsonschema
