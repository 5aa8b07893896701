#include "dataflow/row_transform.h"
#include "common/problems.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace sluice::dataflow {

using connectors::targets::TargetChange;
using nlohmann::json;

namespace {

const std::set<std::string> kCasts = {"string", "long", "double", "boolean", "json"};
const std::set<std::string> kFilterOps = {"eq", "ne", "gt", "lt", "in", "not_null"};

json CastValue(const json& v, const std::string& to) {
  if (v.is_null()) return v;
  try {
    if (to == "string") return v.is_string() ? v : json(v.dump());
    if (to == "long")
      return v.is_string() ? json(std::stoll(v.get<std::string>())) : json(v.get<long long>());
    if (to == "double")
      return v.is_string() ? json(std::stod(v.get<std::string>())) : json(v.get<double>());
    if (to == "boolean") {
      if (v.is_boolean()) return v;
      if (v.is_string()) return json(v == "true" || v == "t" || v == "1");
      return json(v.get<double>() != 0);
    }
    if (to == "json") return v.is_string() ? json::parse(v.get<std::string>()) : v;
  } catch (const std::exception&) {
    return nullptr;  // an uncastable value becomes NULL rather than a wrong value
  }
  return v;
}

double AsNumber(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    try {
      return std::stod(v.get<std::string>());
    } catch (...) {
    }
  }
  return 0;
}

}  // namespace

common::Result<RowTransform> RowTransform::Create(const json& config) {
  RowTransform t;
  if (config.is_null() || (config.is_object() && config.empty())) return t;
  if (!config.is_object()) return common::InvalidArgument("transform config must be an object");
  std::vector<std::string> problems;
  static const std::set<std::string> kKeys = {"select", "exclude",  "rename",
                                              "cast",   "computed", "filter"};
  for (const auto& [k, v] : config.items()) {
    if (!kKeys.count(k)) problems.push_back(fmt::format("unknown key '{}'", k));
  }
  auto strings = [&](const char* name, std::vector<std::string>& out) {
    if (!config.contains(name)) return;
    if (!config[name].is_array())
      return problems.push_back(fmt::format("{} must be a list of column names", name));
    for (const auto& c : config[name]) {
      if (!c.is_string())
        problems.push_back(fmt::format("{} must be a list of column names", name));
      else
        out.push_back(c.get<std::string>());
    }
  };
  strings("select", t.select_);
  strings("exclude", t.exclude_);
  auto pairs = [&](const char* name, std::vector<std::pair<std::string, std::string>>& out) {
    if (!config.contains(name)) return;
    if (!config[name].is_object())
      return problems.push_back(fmt::format("{} must be an object", name));
    for (const auto& [k, v] : config[name].items()) {
      if (!v.is_string())
        problems.push_back(fmt::format("{}.{} must be a string", name, k));
      else
        out.emplace_back(k, v.get<std::string>());
    }
  };
  pairs("rename", t.rename_);
  pairs("cast", t.cast_);
  for (const auto& [col, to] : t.cast_) {
    if (!kCasts.count(to)) problems.push_back(fmt::format("cast.{}: unknown type '{}'", col, to));
  }
  if (config.contains("computed")) {
    if (!config["computed"].is_object()) {
      problems.push_back("computed must be an object");
    } else {
      for (const auto& [name, spec] : config["computed"].items()) {
        bool ok =
            spec.is_object() && spec.size() == 1 &&
            (spec.contains("const") || (spec.contains("concat") && spec["concat"].is_array()));
        if (!ok)
          problems.push_back(
              fmt::format("computed.{}: expected {{\"const\": v}} or {{\"concat\": [...]}}", name));
      }
      t.computed_ = config["computed"];
    }
  }
  if (config.contains("filter")) {
    const auto& f = config["filter"];
    if (!f.is_object() || !f.contains("column") || !f["column"].is_string() || !f.contains("op") ||
        !f["op"].is_string() || !kFilterOps.count(f["op"].get<std::string>())) {
      problems.push_back(
          "filter: expected {\"column\": name, \"op\": eq|ne|gt|lt|in|not_null, \"value\": v}");
    } else if (f["op"] != "not_null" && !f.contains("value")) {
      problems.push_back("filter: value is required for this op");
    } else {
      t.filter_ = f;
    }
  }
  if (!problems.empty()) return common::AllProblems(problems);
  t.identity_ = false;
  return t;
}

bool RowTransform::Keeps(const TargetChange& change) const {
  if (filter_.is_null() || change.op == common::ChangeOp::kDelete ||
      change.op == common::ChangeOp::kTruncate)
    return true;
  const auto col = filter_["column"].get<std::string>();
  const auto op = filter_["op"].get<std::string>();
  json v =
      change.after.is_object() && change.after.contains(col) ? change.after[col] : json(nullptr);
  if (op == "not_null") return !v.is_null();
  const json& want = filter_["value"];
  if (op == "eq") return v == want || (v.is_string() && v.get<std::string>() == want.dump());
  if (op == "ne") return !(v == want);
  if (op == "gt") return !v.is_null() && AsNumber(v) > AsNumber(want);
  if (op == "lt") return !v.is_null() && AsNumber(v) < AsNumber(want);
  if (op == "in") return want.is_array() && std::find(want.begin(), want.end(), v) != want.end();
  return true;
}

json RowTransform::ShapeImage(const json& image, bool is_key, const json& key) const {
  if (!image.is_object()) return image;
  json out = json::object();
  for (const auto& [k, v] : image.items()) {
    bool key_column = is_key || (key.is_object() && key.contains(k));
    bool selected = key_column || select_.empty() ||
                    std::find(select_.begin(), select_.end(), k) != select_.end();
    bool excluded = !key_column && std::find(exclude_.begin(), exclude_.end(), k) != exclude_.end();
    if (selected && !excluded) out[k] = v;
  }
  for (const auto& [col, to] : cast_)
    if (out.contains(col)) out[col] = CastValue(out[col], to);
  if (!is_key) {
    for (const auto& [name, spec] : computed_.items()) {
      if (spec.contains("const")) {
        out[name] = spec["const"];
        continue;
      }
      std::string s;
      for (const auto& part : spec["concat"]) {
        std::string p = part.get<std::string>();
        if (image.contains(p))
          s += image[p].is_string() ? image[p].get<std::string>() : image[p].dump();
        else
          s += p;  // not a column: a literal
      }
      out[name] = s;
    }
  }
  for (const auto& [from, to] : rename_) {
    if (out.contains(from)) {
      out[to] = out[from];
      out.erase(from);
    }
  }
  return out;
}

void RowTransform::Apply(TargetChange& change) const {
  if (identity_) return;
  change.after = ShapeImage(change.after, false, change.key);
  change.key = ShapeImage(change.key, true, change.key);
  if (change.old_key.is_object()) change.old_key = ShapeImage(change.old_key, true, change.old_key);
  for (auto& name : change.as_text)
    for (const auto& [from, to] : rename_)
      if (name == from) name = to;
  std::vector<connectors::targets::TargetColumn> columns;
  for (auto c : change.columns) {
    bool selected = c.key || select_.empty() ||
                    std::find(select_.begin(), select_.end(), c.name) != select_.end();
    bool excluded = !c.key && std::find(exclude_.begin(), exclude_.end(), c.name) != exclude_.end();
    if (!selected || excluded) continue;
    for (const auto& [col, to] : cast_) {
      if (col != c.name) continue;
      c.source_type = to == "string"    ? "text"
                      : to == "long"    ? "int8"
                      : to == "double"  ? "float8"
                      : to == "boolean" ? "bool"
                                        : "jsonb";
    }
    for (const auto& [from, to] : rename_)
      if (c.name == from) c.name = to;
    columns.push_back(c);
  }
  for (const auto& [name, spec] : computed_.items()) {
    columns.push_back(
        {name, spec.contains("const") && spec["const"].is_number() ? "numeric" : "text", false});
  }
  change.columns = std::move(columns);
}

}  // namespace sluice::dataflow
