#include "registry/change_event.h"

#include "registry/avro_codec.h"
#include "registry/wire_format.h"

namespace sluice::registry {

using common::InvalidArgument;
using common::Result;
using nlohmann::json;

namespace {

// Avro names allow [A-Za-z0-9_] and no leading digit; table names allow more.
std::string AvroName(const std::string& s) {
  std::string out;
  for (char c : s) {
    bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out.insert(out.begin(), '_');
  return out;
}

std::string Namespace(const TableSpec& t) {
  std::string ns;
  for (const std::string* part : {&t.server, &t.schema, &t.table}) {
    if (part->empty()) continue;
    if (!ns.empty()) ns += '.';
    ns += AvroName(*part);
  }
  return ns;
}

json Nullable(json type) { return json::array({"null", std::move(type)}); }

}  // namespace

std::string AvroFieldName(const std::string& column) { return AvroName(column); }

json EnvelopeSchema(const TableSpec& t) {
  json fields = json::array();
  for (const auto& c : t.columns) {
    json f = {{"name", AvroName(c.name)},
              {"type", c.nullable ? Nullable(c.avro_type) : c.avro_type}};
    if (c.nullable) f["default"] = nullptr;
    if (!c.doc.empty()) f["doc"] = c.doc;
    fields.push_back(std::move(f));
  }
  json value = {{"type", "record"}, {"name", "Value"}, {"fields", std::move(fields)}};
  json source = {
      {"type", "record"},
      {"name", "Source"},
      {"namespace", "io.sluice"},
      {"fields", json::array({
                     {{"name", "version"}, {"type", "string"}},
                     {{"name", "connector"}, {"type", "string"}},
                     {{"name", "name"}, {"type", "string"}},
                     {{"name", "ts_ms"}, {"type", "long"}},
                     {{"name", "snapshot"}, {"type", "boolean"}, {"default", false}},
                     {{"name", "db"}, {"type", "string"}},
                     {{"name", "schema"}, {"type", "string"}},
                     {{"name", "table"}, {"type", "string"}},
                     {{"name", "lsn"}, {"type", Nullable("long")}, {"default", nullptr}},
                 })},
  };
  json envelope = {
      {"type", "record"},
      {"name", "Envelope"},
      {"fields", json::array({
                     {{"name", "before"}, {"type", Nullable(value)}, {"default", nullptr}},
                     {{"name", "after"}, {"type", Nullable("Value")}, {"default", nullptr}},
                     {{"name", "source"}, {"type", source}},
                     {{"name", "op"}, {"type", "string"}},
                     {{"name", "ts_ms"}, {"type", Nullable("long")}, {"default", nullptr}},
                 })},
  };
  if (t.track_unchanged) {
    envelope["fields"].push_back({{"name", "unchanged"},
                                  {"type", {{"type", "array"}, {"items", "string"}}},
                                  {"default", json::array()}});
  }
  std::string ns = Namespace(t);
  if (!ns.empty()) envelope["namespace"] = ns;
  return envelope;
}

Result<ChangeEventEncoder> ChangeEventEncoder::Create(TableSpec table, EventFormat format) {
  ChangeEventEncoder enc;
  json schema = EnvelopeSchema(table);
  auto parsed = avro::Schema::FromJson(schema);
  if (!parsed.ok()) {
    return InvalidArgument("envelope schema for " + table.table + ": " + parsed.status().message());
  }
  enc.schema_ = *parsed;
  enc.schema_text_ = schema.dump();
  enc.table_ = std::move(table);
  enc.format_ = format;
  return enc;
}

std::string ChangeEventEncoder::value_subject() const {
  std::string s;
  for (const std::string* part : {&table_.server, &table_.schema, &table_.table}) {
    if (part->empty()) continue;
    if (!s.empty()) s += '.';
    s += *part;
  }
  return s + "-value";
}

Result<json> ChangeEventEncoder::Envelope(const Change& c) const {
  bool needs_after = common::WritesRow(c.op);
  bool needs_before = c.op == common::ChangeOp::kDelete;
  if (needs_after && !c.after) {
    return InvalidArgument(std::string("op '") + common::Letter(c.op) + "' needs an after image");
  }
  if (needs_before && !c.before) return InvalidArgument("op 'd' needs a before image");
  // Row images keyed by the Avro-safe column names, so both formats agree.
  auto image = [&](const std::optional<json>& row) -> json {
    if (!row) return nullptr;
    json out = json::object();
    for (const auto& col : table_.columns) {
      auto it = row->find(col.name);
      out[AvroName(col.name)] = it == row->end() ? json(nullptr) : *it;
    }
    return out;
  };
  json source = {
      {"version", "sluice"},
      {"connector", "sluice"},
      {"name", table_.server},
      {"ts_ms", c.source.ts_ms},
      {"snapshot", c.source.snapshot},
      {"db", table_.db},
      {"schema", table_.schema},
      {"table", table_.table},
      {"lsn", c.source.lsn ? json(*c.source.lsn) : json(nullptr)},
  };
  json envelope = {{"before", image(c.before)},
                   {"after", image(c.after)},
                   {"source", std::move(source)},
                   {"op", std::string(1, common::Letter(c.op))},
                   {"ts_ms", c.ts_ms}};
  if (table_.track_unchanged) {
    json unchanged = json::array();
    for (const auto& name : c.unchanged) unchanged.push_back(AvroName(name));
    envelope["unchanged"] = std::move(unchanged);
  }
  return envelope;
}

Result<std::string> ChangeEventEncoder::Encode(const Change& change, std::int32_t schema_id) const {
  auto env = Envelope(change);
  if (!env.ok()) return env.status();
  if (format_ == EventFormat::kJson) return env->dump();
  auto bytes = avro::Encode(*schema_, *env);
  if (!bytes.ok()) return bytes.status();
  return FrameMessage(schema_id, *bytes);
}

}  // namespace sluice::registry
