// Reads a JSON request object field by field, enforcing each field's type and
// the VARCHAR limit of the column it lands in. Finish() refuses every field
// that was not read, so a typo never silently does nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "common/uuid.h"
#include "model/error.h"

namespace sluice::model {

class FieldReader {
 public:
  explicit FieldReader(const Json& object) : object_(object) {}

  bool Has(const std::string& key) const { return object_.contains(key); }
  // True when present and JSON null (for PATCH: "clear this").
  bool IsNull(const std::string& key) const;

  std::string RequiredString(const std::string& key, size_t max_chars);
  std::optional<std::string> OptionalString(const std::string& key, size_t max_chars);
  std::optional<bool> OptionalBool(const std::string& key);
  common::Uuid RequiredUuid(const std::string& key);
  std::optional<common::Uuid> OptionalUuid(const std::string& key);
  std::optional<std::int64_t> OptionalInt(const std::string& key, std::int64_t min,
                                          std::int64_t max);
  std::optional<Json> OptionalObject(const std::string& key);
  std::optional<Json> OptionalArray(const std::string& key);
  // Throws 400 unknown_field naming the first field nobody read.
  void Finish() const;

 private:
  const Json* Get(const std::string& key);
  const Json& object_;
  std::set<std::string> read_;
};

// Lower-cased, trimmed and shape-checked; 422 when it is not an address.
std::string NormalizeEmail(const std::string& email);

// 422 invalid_field with a message naming the field.
[[noreturn]] void InvalidField(const std::string& key, const std::string& why);

}  // namespace sluice::model
