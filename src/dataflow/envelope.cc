#include "dataflow/envelope.h"

#include <fmt/format.h>

namespace sluice::dataflow {

using nlohmann::json;

std::string ColumnsJson(const connectors::TableSchema& schema) {
  json columns = json::array();
  for (const auto& c : schema.columns) {
    columns.push_back({{"name", c.name}, {"type", c.type_name}, {"key", c.key}});
  }
  return columns.dump();
}

EncodedEvent EncodeEnvelope(const connectors::ChangeEvent& event,
                            const connectors::TableSchema& schema) {
  return EncodeEnvelope(event, ColumnsJson(schema));
}

EncodedEvent EncodeEnvelope(const connectors::ChangeEvent& event, const std::string& columns_json) {
  json envelope = {{"op", std::string(1, static_cast<char>(event.op))},
                   {"before", event.before},
                   {"after", event.after},
                   {"source",
                    {{"schema", event.table.schema},
                     {"table", event.table.name},
                     {"lsn", event.lsn},
                     {"commit_lsn", event.commit_lsn},
                     {"ts_ms", event.commit_time_micros / 1000},
                     {"snapshot", event.op == connectors::Op::kRead}}},
                   {"schema_version", event.schema_version}};
  if (!event.unchanged_columns.empty()) envelope["unchanged"] = event.unchanged_columns;
  // The envelope is an object: splice the serialized columns in before its end.
  std::string value = envelope.dump();
  value.pop_back();
  value += ",\"columns\":";
  value += columns_json;
  value += '}';
  return {event.key.is_null() ? std::string() : event.key.dump(), std::move(value)};
}

common::Result<connectors::targets::TargetChange> DecodeEnvelope(const std::string& key,
                                                                 const std::string& value) {
  json envelope = json::parse(value, nullptr, false);
  if (envelope.is_discarded() || !envelope.is_object()) {
    return common::InvalidArgument("message value is not a JSON object");
  }
  auto op = envelope.value("op", std::string());
  if (op.size() != 1 || std::string("crudt").find(op[0]) == std::string::npos) {
    return common::InvalidArgument(fmt::format("unknown op '{}'", op));
  }
  connectors::targets::TargetChange change;
  change.op = op[0];
  change.source = envelope.value("source", json(nullptr));
  if (auto it = envelope.find("columns"); it != envelope.end() && it->is_array()) {
    for (const auto& c : *it) {
      change.columns.push_back(
          {c.value("name", std::string()), c.value("type", std::string()), c.value("key", false)});
    }
  }
  if (change.op == 't') return change;
  change.key = key.empty() ? json(nullptr) : json::parse(key, nullptr, false);
  if (!change.key.is_object()) return common::InvalidArgument("message key is not a JSON object");
  if (change.op == 'd') {
    change.after = nullptr;
    return change;
  }
  change.after = envelope.value("after", json(nullptr));
  if (!change.after.is_object()) {
    return common::InvalidArgument(fmt::format("op '{}' without an after image", op));
  }
  return change;
}

}  // namespace sluice::dataflow
