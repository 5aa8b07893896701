#include "dataflow/avro_envelope.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>

#include "common/json_text.h"
#include "common/time.h"
#include "dataflow/envelope.h"
#include "registry/avro_codec.h"
#include "registry/wire_format.h"

namespace sluice::dataflow {

using connectors::targets::TargetChange;
using nlohmann::json;

namespace {

enum class Kind { kBoolean, kLong, kDouble, kJsonText, kString };

Kind KindOf(const std::string& pg_type) {
  if (pg_type == "bool") return Kind::kBoolean;
  if (pg_type == "int2" || pg_type == "int4" || pg_type == "int8") return Kind::kLong;
  if (pg_type == "float4" || pg_type == "float8") return Kind::kDouble;
  if (pg_type == "json" || pg_type == "jsonb" || (!pg_type.empty() && pg_type[0] == '_'))
    return Kind::kJsonText;
  return Kind::kString;
}

json AvroType(Kind k) {
  switch (k) {
    case Kind::kBoolean:
      return "boolean";
    case Kind::kLong:
      return "long";
    case Kind::kDouble:
      return "double";
    default:
      return "string";
  }
}

// NaN and the infinities: JSON has no number for them, so the JSON format
// carries them as these strings.
const char* NonFiniteName(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return nullptr;
}
std::optional<double> NonFiniteFromName(const json& v) {
  if (!v.is_string()) return std::nullopt;
  const auto& s = v.get_ref<const std::string&>();
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "Infinity") return std::numeric_limits<double>::infinity();
  if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

// A JSON-format value as the Avro datum of its column.
json ToDatum(Kind k, const json& v) {
  if (v.is_null()) return v;
  switch (k) {
    case Kind::kDouble:
      if (auto d = NonFiniteFromName(v)) return *d;
      return v;
    case Kind::kJsonText:
      return v.dump();
    case Kind::kString:
      return v.is_string() ? v : json(v.dump());
    default:
      return v;
  }
}

// And back: exactly the value the JSON format carries.
json FromDatum(Kind k, const json& v) {
  if (v.is_null()) return v;
  if (k == Kind::kDouble && v.is_number_float()) {
    if (const char* name = NonFiniteName(v.get<double>())) return name;
  }
  if (k == Kind::kJsonText && v.is_string()) {
    auto parsed = json::parse(v.get<std::string>(), nullptr, false);
    return parsed.is_discarded() ? v : parsed;
  }
  return v;
}

// `as_text`: columns whose value is already their PostgreSQL text.
json Converted(const json& image, const connectors::TableSchema& schema,
               const std::vector<std::string>& as_text = {}) {
  if (!image.is_object()) return image;
  json out = json::object();
  for (const auto& c : schema.columns) {
    auto it = image.find(c.name);
    if (it == image.end()) continue;
    bool text =
        it->is_string() && std::find(as_text.begin(), as_text.end(), c.name) != as_text.end();
    out[c.name] = text ? *it : ToDatum(KindOf(c.type_name), *it);
  }
  return out;
}

}  // namespace

registry::TableSpec AvroTableSpec(const connectors::TableSchema& schema,
                                  const std::string& server) {
  registry::TableSpec spec;
  spec.server = server;
  spec.schema = schema.table.schema;
  spec.table = schema.table.name;
  spec.track_unchanged = true;
  for (const auto& c : schema.columns) {
    json doc = {{"column", c.name}, {"pg_type", c.type_name}, {"key", c.key}};
    spec.columns.push_back({c.name, AvroType(KindOf(c.type_name)), true, doc.dump()});
  }
  return spec;
}

registry::Change AvroChange(const connectors::ChangeEvent& event,
                            const connectors::TableSchema& schema) {
  registry::Change change;
  change.op = event.op;
  const auto& text = event.text_columns;
  bool deleted = event.op == common::ChangeOp::kDelete;
  if (event.before.is_object())
    change.before = Converted(event.before, schema, deleted ? text : std::vector<std::string>());
  if (event.after.is_object()) change.after = Converted(event.after, schema, text);
  // A delete under REPLICA IDENTITY DEFAULT carries the key only.
  if (event.op == common::ChangeOp::kDelete && !change.before)
    change.before = Converted(event.key, schema);
  if (event.lsn) change.source.lsn = static_cast<std::int64_t>(event.lsn);
  change.source.ts_ms = event.commit_time_micros / 1000;
  change.source.snapshot = event.op == common::ChangeOp::kRead;
  change.ts_ms = common::NowEpochMillis();
  change.unchanged = event.unchanged_columns;
  return change;
}

AvroChangeWriter::AvroChangeWriter(const connectors::TableSchema& schema, const std::string& server,
                                   int schema_id)
    : header_(registry::FrameMessage(schema_id, {})),
      server_(server),
      schema_name_(schema.table.schema),
      table_name_(schema.table.name) {
  for (const auto& c : schema.columns)
    columns_.push_back(
        {c.name, registry::AvroFieldName(c.name), static_cast<int>(KindOf(c.type_name))});
}

namespace {

void WriteString(std::string_view text, std::string& out) {
  registry::avro::WriteLong(static_cast<std::int64_t>(text.size()), out);
  out.append(text);
}

void WriteDouble(double d, std::string& out) {
  char bytes[sizeof d];
  std::memcpy(bytes, &d, sizeof d);  // little-endian, as Avro, on every host we build for
  out.append(bytes, sizeof d);
}

}  // namespace

common::Status AvroChangeWriter::WriteImage(const json& image,
                                            const std::vector<std::string>& as_text,
                                            std::string& out) const {
  namespace avro = registry::avro;
  for (const auto& c : columns_) {
    auto it = image.find(c.name);
    if (it == image.end() || it->is_null()) {
      out.push_back(0);  // the union's null branch
      continue;
    }
    out.push_back(2);  // zig-zag 1: the value's branch
    const json& v = *it;
    auto refuse = [&](std::string_view type) {
      return common::InvalidArgument(
          fmt::format("column {}: {} is not a {}", c.name,
                      v.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 80), type));
    };
    switch (static_cast<Kind>(c.kind)) {
      case Kind::kBoolean:
        if (!v.is_boolean()) return refuse("boolean");
        out.push_back(v.get<bool>() ? 1 : 0);
        break;
      case Kind::kLong:
        if (!v.is_number_integer() ||
            (v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX))
          return refuse("long");
        avro::WriteLong(v.get<std::int64_t>(), out);
        break;
      case Kind::kDouble:
        if (v.is_number()) {
          WriteDouble(v.get<double>(), out);
        } else if (auto d = NonFiniteFromName(v)) {
          WriteDouble(*d, out);
        } else {
          return refuse("double");
        }
        break;
      case Kind::kJsonText:
        if (v.is_string() && std::find(as_text.begin(), as_text.end(), c.name) != as_text.end())
          WriteString(v.get_ref<const std::string&>(), out);
        else
          WriteString(v.dump(-1, ' ', false, json::error_handler_t::replace), out);
        break;
      case Kind::kString:
        if (v.is_string())
          WriteString(v.get_ref<const std::string&>(), out);
        else
          WriteString(v.dump(-1, ' ', false, json::error_handler_t::replace), out);
        break;
    }
  }
  return common::Status::Ok();
}

common::Result<std::string> AvroChangeWriter::Write(const connectors::ChangeEvent& event,
                                                    std::int64_t now_ms) const {
  namespace avro = registry::avro;
  const bool deleted = event.op == common::ChangeOp::kDelete;
  const json* before = event.before.is_object()           ? &event.before
                       : deleted && event.key.is_object() ? &event.key
                                                          : nullptr;
  if (common::WritesRow(event.op) && !event.after.is_object())
    return common::InvalidArgument(
        fmt::format("op '{}' needs an after image", common::Letter(event.op)));
  if (deleted && !before) return common::InvalidArgument("op 'd' needs a before image");
  static const std::vector<std::string> kNoText;
  std::string out = header_;
  out.reserve(256);
  if (before) {
    out.push_back(2);
    SLUICE_RETURN_IF_ERROR(WriteImage(*before, deleted ? event.text_columns : kNoText, out));
  } else {
    out.push_back(0);
  }
  if (event.after.is_object()) {
    out.push_back(2);
    SLUICE_RETURN_IF_ERROR(WriteImage(event.after, event.text_columns, out));
  } else {
    out.push_back(0);
  }
  // source: version, connector, name, ts_ms, snapshot, db, schema, table, lsn.
  WriteString("sluice", out);
  WriteString("sluice", out);
  WriteString(server_, out);
  avro::WriteLong(event.commit_time_micros / 1000, out);
  out.push_back(event.op == common::ChangeOp::kRead ? 1 : 0);
  WriteString("", out);  // db: the source's database is not named (AvroTableSpec)
  WriteString(schema_name_, out);
  WriteString(table_name_, out);
  if (event.lsn) {
    out.push_back(2);
    avro::WriteLong(static_cast<std::int64_t>(event.lsn), out);
  } else {
    out.push_back(0);
  }
  const char op = common::Letter(event.op);
  WriteString(std::string_view(&op, 1), out);
  out.push_back(2);  // ts_ms is nullable
  avro::WriteLong(now_ms, out);
  if (!event.unchanged_columns.empty()) {
    avro::WriteLong(static_cast<std::int64_t>(event.unchanged_columns.size()), out);
    for (const auto& name : event.unchanged_columns)
      WriteString(registry::AvroFieldName(name), out);
  }
  out.push_back(0);  // the unchanged array's end
  return out;
}

bool IsWireFramed(const std::string& value) {
  return value.size() >= registry::kWireHeaderSize && value[0] == registry::kWireMagic;
}

common::Result<const AvroEnvelopeDecoder::Reader*> AvroEnvelopeDecoder::ReaderFor(int id) {
  if (auto it = readers_.find(id); it != readers_.end()) return &it->second;
  if (!registry_) {
    return common::InvalidArgument(
        fmt::format("Avro message (schema id {}) but no schema registry is configured", id));
  }
  auto text = registry_->SchemaText(id);
  if (!text.ok()) {
    if (text.status().code() == common::Code::kUnavailable) return text.status();
    return common::InvalidArgument(text.status().message());
  }
  auto schema = registry::avro::Schema::Parse(*text);
  if (!schema.ok())
    return common::InvalidArgument(fmt::format("schema {}: {}", id, schema.status().message()));
  Reader reader{*schema, {}};
  const auto& root = (*schema)->root();
  int before = root.type == registry::avro::Type::kRecord ? root.FieldIndex("before") : -1;
  const registry::avro::Node* value = nullptr;
  if (before >= 0) {
    for (const auto* branch : root.fields[before].type->branches)
      if (branch->type == registry::avro::Type::kRecord) value = branch;
  }
  if (!value || root.FieldIndex("op") < 0)
    return common::InvalidArgument(fmt::format("schema {} is not a change envelope", id));
  for (const auto& f : value->fields) {
    auto doc = json::parse(f.doc, nullptr, false);
    Column col{f.name, {f.name, "", false}};
    if (doc.is_object()) {
      col.column.name = doc.value("column", f.name);
      col.column.source_type = doc.value("pg_type", std::string());
      col.column.key = doc.value("key", false);
    }
    auto kind = KindOf(col.column.source_type);
    col.json_text = kind == Kind::kJsonText;
    col.jsonb = col.column.source_type == "jsonb";
    col.floating = kind == Kind::kDouble;
    reader.described.push_back(col.column);
    reader.columns.push_back(std::move(col));
  }
  reader.before = before;
  reader.after = root.FieldIndex("after");
  reader.op = root.FieldIndex("op");
  reader.unchanged = root.FieldIndex("unchanged");
  return &readers_.emplace(id, std::move(reader)).first->second;
}

namespace {

namespace avro = registry::avro;

// The union's branch at data[pos] (a plain type is its own branch).
const avro::Node* Branch(const avro::Node& node, std::string_view data, size_t& pos) {
  if (node.type != avro::Type::kUnion) return &node;
  auto i = avro::ReadLong(data, pos);
  if (!i.ok() || *i < 0 || *i >= static_cast<std::int64_t>(node.branches.size())) return nullptr;
  return node.branches[*i];
}

// A jsonb object or array's text, spliced into the image only once it is
// known to be exactly one JSON value (it could close the image otherwise).
bool AppendJsonbText(std::string_view text, std::string& out) {
  auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || (text[first] != '{' && text[first] != '[')) return false;
  thread_local simdjson::dom::parser parser;
  if (parser.parse(text.data(), text.size(), true).error()) return false;
  out.append(text);
  return true;
}

// A float or double, as the shortest text giving it back; NaN and the
// infinities as the JSON format's strings, for a floating-point column only.
template <typename Floating>
bool AppendFloating(std::string_view data, size_t& pos, bool floating, std::string& out) {
  Floating v;
  if (data.size() - pos < sizeof v) return false;
  std::memcpy(&v, data.data() + pos, sizeof v);
  pos += sizeof v;
  if (const char* name = NonFiniteName(v)) {
    common::AppendJsonString(out, name);
    return floating;
  }
  fmt::format_to(std::back_inserter(out), "{}", v);
  return true;
}

// One column's value as the JSON format writes it; false when it has no
// plain JSON text here.
bool AppendValue(const avro::Node& node, bool json_text, bool jsonb, bool floating,
                 std::string_view data, size_t& pos, std::string& out) {
  const avro::Node* n = Branch(node, data, pos);
  if (!n) return false;
  switch (n->type) {
    case avro::Type::kNull:
      out += "null";
      return true;
    case avro::Type::kBoolean:
      if (pos >= data.size() || static_cast<std::uint8_t>(data[pos]) > 1) return false;
      out += data[pos++] ? "true" : "false";
      return true;
    case avro::Type::kInt:
    case avro::Type::kLong: {
      auto v = avro::ReadLong(data, pos);
      if (!v.ok()) return false;
      out += fmt::format_int(*v).c_str();
      return true;
    }
    case avro::Type::kDouble:
      return AppendFloating<double>(data, pos, floating, out);
    case avro::Type::kFloat:
      return AppendFloating<float>(data, pos, floating, out);
    case avro::Type::kString: {
      auto text = avro::ReadBytes(data, pos);
      if (!text.ok()) return false;
      if (jsonb) return AppendJsonbText(*text, out);
      if (json_text) return false;
      common::AppendJsonString(out, *text);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

std::optional<AvroEnvelopeDecoder::RowText> AvroEnvelopeDecoder::ViewRowChange(
    const std::string& value) {
  auto framed = registry::UnframeMessage(value);
  if (!framed.ok()) return std::nullopt;
  auto found = ReaderFor(framed->schema_id);
  if (!found.ok()) return std::nullopt;
  const Reader& reader = **found;
  const auto& root = reader.schema->root();
  if (reader.after < 0 || reader.op < 0) return std::nullopt;
  std::string_view data = framed->payload;
  size_t pos = 0;
  size_t after_at = 0;
  const avro::Node* after = nullptr;
  bool has_before = false;
  std::string_view op;
  std::vector<bool> left_out(reader.columns.size(), false);
  bool any_left_out = false;
  for (int i = 0; i < static_cast<int>(root.fields.size()); ++i) {
    const avro::Node& type = *root.fields[i].type;
    if (i == reader.before || i == reader.after) {
      const avro::Node* branch = Branch(type, data, pos);
      if (!branch) return std::nullopt;
      if (i == reader.before) has_before = branch->type != avro::Type::kNull;
      if (i == reader.after && branch->type != avro::Type::kNull) {
        if (branch->type != avro::Type::kRecord || branch->fields.size() != reader.columns.size())
          return std::nullopt;
        after = branch;
        after_at = pos;
      }
      if (!avro::Skip(*branch, data, pos).ok()) return std::nullopt;
    } else if (i == reader.op) {
      if (type.type != avro::Type::kString) return std::nullopt;
      auto text = avro::ReadBytes(data, pos);
      if (!text.ok()) return std::nullopt;
      op = *text;
    } else if (i == reader.unchanged) {
      const avro::Node* list = Branch(type, data, pos);
      if (!list) return std::nullopt;
      if (list->type == avro::Type::kNull) continue;
      if (list->type != avro::Type::kArray || list->items->type != avro::Type::kString)
        return std::nullopt;
      while (true) {
        auto count = avro::ReadLong(data, pos);
        if (!count.ok() || *count < 0) return std::nullopt;  // sized blocks: Decode reads them
        if (*count == 0) break;
        for (std::int64_t k = 0; k < *count; ++k) {
          auto name = avro::ReadBytes(data, pos);
          if (!name.ok()) return std::nullopt;
          size_t c = 0;
          while (c < reader.columns.size() && reader.columns[c].field != *name) ++c;
          if (c == reader.columns.size()) return std::nullopt;
          left_out[c] = true;
          any_left_out = true;
        }
      }
    } else if (!avro::Skip(type, data, pos).ok()) {
      return std::nullopt;
    }
  }
  if (pos != data.size() || op.size() != 1) return std::nullopt;
  auto parsed_op = common::ChangeOpFromLetter(op);
  if (!parsed_op.ok() || *parsed_op == common::ChangeOp::kTruncate) return std::nullopt;
  RowText row;
  row.op = *parsed_op;
  row.columns = &reader.described;
  if (row.op == common::ChangeOp::kDelete) return row;
  if (!after || (row.op == common::ChangeOp::kUpdate && has_before)) return std::nullopt;
  row.image.reserve(data.size() + 16 * reader.columns.size());
  row.image.push_back('{');
  pos = after_at;
  bool first = true;
  for (size_t c = 0; c < reader.columns.size(); ++c) {
    const auto& column = reader.columns[c];
    if (left_out[c]) {
      if (!avro::Skip(*after->fields[c].type, data, pos).ok()) return std::nullopt;
      continue;
    }
    if (!first) row.image.push_back(',');
    first = false;
    common::AppendJsonString(row.image, column.column.name);
    row.image.push_back(':');
    if (!AppendValue(*after->fields[c].type, column.json_text, column.jsonb, column.floating, data,
                     pos, row.image))
      return std::nullopt;
  }
  row.image.push_back('}');
  if (any_left_out) {
    row.unchanged.push_back('[');
    for (size_t c = 0; c < reader.columns.size(); ++c) {
      if (!left_out[c]) continue;
      if (row.unchanged.size() > 1) row.unchanged.push_back(',');
      common::AppendJsonString(row.unchanged, reader.columns[c].column.name);
    }
    row.unchanged.push_back(']');
  }
  return row;
}

common::Result<TargetChange> AvroEnvelopeDecoder::Decode(const std::string& key,
                                                         const std::string& value) {
  auto framed = registry::UnframeMessage(value);
  if (!framed.ok()) return common::InvalidArgument(framed.status().message());
  auto reader = ReaderFor(framed->schema_id);
  if (!reader.ok()) return reader.status();
  auto datum = registry::avro::Decode(*(*reader)->schema, framed->payload);
  if (!datum.ok())
    return common::InvalidArgument("Avro payload does not decode: " + datum.status().message());
  TargetChange change;
  auto op = datum->value("op", std::string());
  auto parsed_op = common::ChangeOpFromLetter(op);
  if (!parsed_op.ok()) return parsed_op.status();
  change.op = *parsed_op;
  change.source = datum->value("source", json(nullptr));
  for (const auto& c : (*reader)->columns) change.columns.push_back(c.column);
  if (change.op == common::ChangeOp::kTruncate) return change;
  change.key = key.empty() ? json(nullptr) : json::parse(key, nullptr, false);
  if (!change.key.is_object()) return common::InvalidArgument("message key is not a JSON object");
  if (change.op == common::ChangeOp::kDelete) {
    change.after = nullptr;
    return change;
  }
  const json& after = (*datum)["after"];
  if (!after.is_object())
    return common::InvalidArgument(fmt::format("op '{}' without an after image", op));
  std::vector<std::string> unchanged;
  if (auto it = datum->find("unchanged"); it != datum->end() && it->is_array())
    unchanged = it->get<std::vector<std::string>>();
  change.after = json::object();
  for (const auto& c : (*reader)->columns) {
    if (std::find(unchanged.begin(), unchanged.end(), c.field) != unchanged.end()) continue;
    auto it = after.find(c.field);
    change.after[c.column.name] =
        it == after.end() ? json(nullptr) : FromDatum(KindOf(c.column.source_type), *it);
    // JSON text whose JSON form would not give the same text back (json
    // always: the source carries it as its text) goes as the text.
    const auto& type = c.column.source_type;
    if ((type == "json" || type == "jsonb") && it != after.end() && it->is_string()) {
      const auto& text = it->get_ref<const std::string&>();
      auto reparsed = json::parse(text, nullptr, false);
      if (type == "json" || reparsed.is_discarded() || reparsed.dump() != text) {
        change.after[c.column.name] = text;
        change.as_text.push_back(c.column.name);
      }
    }
  }
  json before = json::object();
  if (const json& b = (*datum)["before"]; b.is_object())
    for (const auto& c : (*reader)->columns)
      if (auto it = b.find(c.field); it != b.end())
        before[c.column.name] = FromDatum(KindOf(c.column.source_type), *it);
  if (change.op == common::ChangeOp::kUpdate) change.old_key = OldKey(change, before);
  return change;
}

}  // namespace sluice::dataflow
