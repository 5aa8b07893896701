// The connector types Sluice knows, each with its configuration definition.
// A type id names the system and the direction ("postgresql-source"), so the
// connector's `way` follows from the type and is never the caller's choice.
// Stored rows keep the system ("postgresql") in connector_type and the
// direction in way, which is what the runtime reads.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::connectors::types {

enum class Way { kSource, kTarget };
const char* WayName(Way way);

enum class FieldType { kString, kInteger, kBoolean, kObject };

struct FieldDef {
  std::string name;
  FieldType type = FieldType::kString;
  bool required = false;
  // Redacted on every API read. For an object field: each of its values.
  bool secret = false;
  nlohmann::json default_value;      // null: no default
  std::vector<std::string> allowed;  // strings only; empty: any
  std::int64_t min = 0, max = 0;     // integers only; max == 0: unbounded
  size_t max_length = 0;             // strings only; 0: unbounded
  std::string description;
};

struct ConnectorType {
  std::string id;      // "postgresql-source"
  std::string system;  // "postgresql": connector.connector_type
  Way way = Way::kSource;
  std::string title;
  std::vector<FieldDef> fields;

  // A JSON-Schema-like description of the configuration, for the API.
  nlohmann::json Schema() const;
  const FieldDef* Field(std::string_view name) const;
};

const std::vector<ConnectorType>& AllConnectorTypes();
// nullptr for an unknown id.
const ConnectorType* FindConnectorType(std::string_view id);
// The type of a stored row; nullptr when the registry no longer knows it.
const ConnectorType* FindStoredType(std::string_view system, std::string_view way);

// Warehouse engines share the definition shape (their way is meaningless).
const std::vector<ConnectorType>& AllWarehouseTypes();
const ConnectorType* FindWarehouseType(std::string_view id);

}  // namespace sluice::connectors::types
