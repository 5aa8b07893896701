#include "dataflow/envelope.h"

#include <fmt/format.h>

#include <simdjson.h>

#include <iterator>
#include <string_view>

#include "common/fast_json.h"
#include "common/json_text.h"
#include "common/padded_json.h"

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
  return {EnvelopeKey(event), EnvelopeValue(event, columns_json)};
}

namespace {

// A row image: its JSON text when the source rendered one, else its tree.
void AppendImage(std::string& out, const std::string& text, const json& tree) {
  if (!text.empty()) {
    out += text;
  } else if (tree.is_null()) {
    out += "null";
  } else {
    // A SQL_ASCII source can hand over text that is not UTF-8, which JSON
    // cannot carry; strict dumping throws and the worker would crash-loop on
    // that row forever (found by the pgoutput fuzzer). Such bytes become U+FFFD.
    out += tree.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

void AppendNames(std::string& out, const std::vector<std::string>& names) {
  out.push_back('[');
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out.push_back(',');
    common::AppendJsonString(out, names[i]);
  }
  out.push_back(']');
}

}  // namespace

std::string EnvelopeValue(const connectors::ChangeEvent& event, const std::string& columns_json) {
  // Written member by member rather than as one json object: building that
  // object deep-copied both row images of every change (bench/cdc perf). The
  // members keep nlohmann's sorted order and spelling, and `columns` comes
  // last (the decoder's ParseSplit relies on it). Sized once: the images and
  // the columns are most of it.
  std::string value;
  value.reserve(256 + event.after_json.size() + event.before_json.size() + columns_json.size() +
                event.table.schema.size() + event.table.name.size());
  value += "{\"after\":";
  AppendImage(value, event.after_json, event.after);
  if (!event.text_columns.empty()) {
    value += ",\"as_text\":";
    AppendNames(value, event.text_columns);
  }
  value += ",\"before\":";
  AppendImage(value, event.before_json, event.before);
  value += ",\"op\":\"";
  value += common::Letter(event.op);
  auto out = std::back_inserter(value);
  fmt::format_to(out,
                 "\",\"schema_version\":{},\"source\":{{\"commit_lsn\":{},\"lsn\":{},\"schema\":",
                 event.schema_version, event.commit_lsn, event.lsn);
  common::AppendJsonString(value, event.table.schema);
  value += event.op == common::ChangeOp::kRead ? ",\"snapshot\":true,\"table\":"
                                               : ",\"snapshot\":false,\"table\":";
  common::AppendJsonString(value, event.table.name);
  fmt::format_to(out, ",\"ts_ms\":{}}}", event.commit_time_micros / 1000);
  if (!event.unchanged_columns.empty()) {
    value += ",\"unchanged\":";
    AppendNames(value, event.unchanged_columns);
  }
  value += ",\"columns\":";
  value += columns_json;
  value += '}';
  return value;
}

std::string EnvelopeKey(const connectors::ChangeEvent& event) {
  if (!event.key_json.empty()) return event.key_json;
  if (event.key.is_null()) return {};
  return event.key.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

std::vector<connectors::targets::TargetColumn> ColumnsFrom(const json& array) {
  std::vector<connectors::targets::TargetColumn> out;
  for (const auto& c : array) {
    if (!c.is_object()) continue;
    out.push_back(
        {c.value("name", std::string()), c.value("type", std::string()), c.value("key", false)});
  }
  return out;
}

// The encoder appends `,"columns":[...]` last, and a table's column list
// repeats on every message (ColumnsFromText). Anything else
// (another producer's key order, a text that does not split into two valid
// documents) takes the full parse.
bool ParseSplit(const std::string& value, json& envelope,
                std::vector<connectors::targets::TargetColumn>& columns) {
  static constexpr std::string_view kMarker = ",\"columns\":[";
  auto at = value.rfind(kMarker);
  if (at == std::string::npos || value.size() < 2 || value.compare(value.size() - 2, 2, "]}") != 0)
    return false;
  std::string_view text = std::string_view(value).substr(at + kMarker.size() - 1);
  text.remove_suffix(1);  // the envelope's closing brace
  const auto* cached = ColumnsFromText(text);
  if (!cached) return false;
  std::string head = value.substr(0, at);
  head += '}';
  envelope = common::ParseJsonFast(head);
  if (envelope.is_discarded() || !envelope.is_object()) return false;
  columns = *cached;
  return true;
}

}  // namespace

json OldKey(const connectors::targets::TargetChange& change, const json& before) {
  // The before image holds the old key (pgoutput's 'K' or 'O' tuple) only
  // when the update changed it, or under REPLICA IDENTITY FULL.
  if (!before.is_object() || !change.key.is_object()) return nullptr;
  json old = json::object();
  for (const auto& c : change.columns) {
    if (!c.key) continue;
    auto it = before.find(c.name);
    if (it == before.end()) return nullptr;
    old[c.name] = *it;
  }
  if (old.empty() || old == change.key) return nullptr;
  return old;
}

const std::vector<connectors::targets::TargetColumn>* ColumnsFromText(std::string_view text) {
  // A table's column list repeats on every message: parsed once per
  // distinct text.
  thread_local std::string cached_text;
  thread_local std::vector<connectors::targets::TargetColumn> cached;
  if (text != cached_text) {
    json parsed = json::parse(text, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_array()) return nullptr;
    cached_text = text;
    cached = ColumnsFrom(parsed);
  }
  return &cached;
}

std::optional<RowChangeView> ViewRowChange(const std::string& value) {
  namespace od = simdjson::ondemand;
  thread_local common::PaddedJson padded;
  od::document* doc = padded.Iterate(value);
  od::object root;
  if (!doc || doc->get_object().get(root)) return std::nullopt;
  RowChangeView view;
  std::string_view op;
  bool has_before = false;
  // Each member's raw text, as a view into `value`.
  auto raw = [&](od::value& v, std::string_view& out, bool object) {
    if (object) {
      od::object o;
      if (v.get_object().get(o) || o.raw_json().get(out)) return false;
    } else {
      od::array a;
      if (v.get_array().get(a) || a.raw_json().get(out)) return false;
    }
    out = padded.InText(out);
    return true;
  };
  for (auto field : root) {
    std::string_view name;
    od::value v;
    if (field.unescaped_key().get(name) || field.value().get(v)) return std::nullopt;
    bool is_null = false;
    if (name == "after") {
      if (v.is_null().get(is_null)) return std::nullopt;
      if (!is_null && !raw(v, view.image, true)) return std::nullopt;
    } else if (name == "before") {
      if (v.is_null().get(is_null)) return std::nullopt;
      has_before = !is_null;
    } else if (name == "op") {
      if (v.get_string().get(op) || op.size() != 1 ||
          std::string_view("cdru").find(op) == std::string_view::npos)
        return std::nullopt;
    } else if (name == "columns") {
      if (!raw(v, view.columns, false)) return std::nullopt;
    } else if (name == "unchanged") {
      if (!raw(v, view.unchanged, false)) return std::nullopt;
    } else if (name == "as_text") {
      if (!raw(v, view.as_text, false)) return std::nullopt;
    }
  }
  if (op.empty() || view.columns.empty()) return std::nullopt;
  view.op = *common::ChangeOpFromLetter(op);
  if (view.op == common::ChangeOp::kDelete) {
    view.image = {};
    view.unchanged = {};
    view.as_text = {};
    return view;
  }
  if (view.image.empty()) return std::nullopt;
  if (view.op == common::ChangeOp::kUpdate && has_before) return std::nullopt;
  return view;
}

common::Result<connectors::targets::TargetChange> DecodeEnvelope(const std::string& key,
                                                                 const std::string& value) {
  json envelope;
  connectors::targets::TargetChange change;
  if (!ParseSplit(value, envelope, change.columns)) {
    envelope = common::ParseJsonFast(value);
    if (envelope.is_discarded() || !envelope.is_object()) {
      return common::InvalidArgument("message value is not a JSON object");
    }
    change.columns.clear();
    if (auto it = envelope.find("columns"); it != envelope.end() && it->is_array())
      change.columns = ColumnsFrom(*it);
  }
  auto op = envelope.value("op", std::string());
  auto parsed_op = common::ChangeOpFromLetter(op);
  if (!parsed_op.ok()) return parsed_op.status();
  change.op = *parsed_op;
  // Moved out, not copied: the envelope is discarded after this.
  if (auto it = envelope.find("source"); it != envelope.end()) change.source = std::move(*it);
  if (change.op == common::ChangeOp::kTruncate) return change;
  change.key = key.empty() ? json(nullptr) : common::ParseJsonFast(key);
  if (!change.key.is_object()) return common::InvalidArgument("message key is not a JSON object");
  if (change.op == common::ChangeOp::kDelete) {
    change.after = nullptr;
    return change;
  }
  if (auto it = envelope.find("after"); it != envelope.end()) change.after = std::move(*it);
  if (!change.after.is_object()) {
    return common::InvalidArgument(fmt::format("op '{}' without an after image", op));
  }
  if (auto it = envelope.find("as_text"); it != envelope.end() && it->is_array())
    for (const auto& name : *it)
      if (name.is_string()) change.as_text.push_back(name.get<std::string>());
  if (change.op == common::ChangeOp::kUpdate)
    change.old_key = OldKey(change, envelope.value("before", json()));
  return change;
}

}  // namespace sluice::dataflow
