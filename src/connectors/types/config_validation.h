// Rules on connector configurations: validation against a type's definition
// (every failing field is reported, not just the first), defaults, redaction
// of secret fields, and merging a redacted update back onto stored secrets.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "connectors/types/connector_types.h"

namespace sluice::connectors::types {

// What API reads show instead of a secret value.
inline constexpr const char* kRedacted = "********";

struct FieldError {
  std::string field;
  std::string message;
};

// Every problem with `config` for `type`: missing required fields, wrong
// types, values outside the allowed set, unknown fields.
std::vector<FieldError> Validate(const ConnectorType& type, const nlohmann::json& config);

// `config` with defaults filled in for absent optional fields.
nlohmann::json ApplyDefaults(const ConnectorType& type, const nlohmann::json& config);

// `config` with every secret value replaced by kRedacted.
nlohmann::json Redact(const ConnectorType* type, const nlohmann::json& config);

// An update may echo kRedacted for a secret it does not change: those take
// the stored value.
nlohmann::json KeepUnchangedSecrets(const ConnectorType& type, const nlohmann::json& update,
                                    const nlohmann::json& stored);

// "<prefix>.<schema>.<table>" with characters Kafka refuses replaced; the
// same spelling the PostgreSQL source publishes under.
std::string TopicForTable(const std::string& prefix, const std::string& schema,
                          const std::string& table);

}  // namespace sluice::connectors::types
