// A nullable column as JSON: its value, or null.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/uuid.h"

namespace sluice::common {

inline nlohmann::json NullableJson(const std::optional<std::string>& s) {
  return s ? nlohmann::json(*s) : nlohmann::json(nullptr);
}
inline nlohmann::json NullableJson(const std::optional<Uuid>& id) {
  return id ? nlohmann::json(id->ToString()) : nlohmann::json(nullptr);
}

}  // namespace sluice::common
