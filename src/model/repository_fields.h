// What the repositories share when they turn rows into JSON and apply a
// PATCH body: nullable columns, "absent keeps, null clears, a value sets",
// and the 409 a unique name index becomes.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <string_view>

#include "common/nullable_json.h"
#include "common/uuid.h"
#include "model/error.h"
#include "model/json_fields.h"

namespace sluice::model {

using common::NullableJson;

// PATCH semantics: an absent key keeps `out`, null clears it, a value sets it.
inline void PatchString(FieldReader& f, const std::string& key, size_t max,
                        std::optional<std::string>& out) {
  bool clear = f.IsNull(key);
  if (auto v = f.OptionalString(key, max)) out = v;
  if (clear) out.reset();
}
inline void PatchReference(FieldReader& f, const std::string& key,
                           std::optional<common::Uuid>& out) {
  bool clear = f.IsNull(key);
  if (auto v = f.OptionalUuid(key)) out = v;
  if (clear) out.reset();
}

// Runs a write; the env-wide unique name index refusing it is a 409 naming
// the kind of resource ("a pipeline with this name already exists").
template <typename Fn>
void RefuseNameClash(std::string_view kind, Fn&& write) {
  try {
    write();
  } catch (const pqxx::unique_violation&) {
    throw ApiError(409, "already_exists",
                   "a " + std::string(kind) + " with this name already exists in the env");
  }
}

}  // namespace sluice::model
