#include "registry/json_schema.h"

#include <fmt/format.h>

#include <set>

#include "common/bounded_json.h"
#include "common/hex.h"

namespace sluice::registry::jsonschema {

using common::InvalidArgument;
using common::Status;
using nlohmann::json;

namespace {

const std::set<std::string> kTypes = {"null",   "boolean", "object", "array",
                                      "number", "integer", "string"};

Status Check(const json& s, const std::string& path) {
  if (s.is_boolean()) return Status::Ok();
  if (!s.is_object()) return InvalidArgument(fmt::format("{}: a schema must be an object", path));
  if (auto t = s.find("type"); t != s.end()) {
    auto valid = [](const json& v) { return v.is_string() && kTypes.count(v.get<std::string>()); };
    bool ok = valid(*t);
    if (t->is_array()) {
      ok = !t->empty();
      for (const auto& v : *t) ok = ok && valid(v);
    }
    if (!ok) return InvalidArgument(fmt::format("{}/type: unknown type {}", path, t->dump()));
  }
  if (auto p = s.find("properties"); p != s.end()) {
    if (!p->is_object()) return InvalidArgument(path + "/properties: must be an object");
    for (const auto& [k, v] : p->items())
      SLUICE_RETURN_IF_ERROR(Check(v, path + "/properties/" + k));
  }
  if (auto r = s.find("required"); r != s.end()) {
    bool ok = r->is_array();
    for (const auto& v : *r) ok = ok && v.is_string();
    if (!ok) return InvalidArgument(path + "/required: must be an array of strings");
  }
  if (auto e = s.find("enum"); e != s.end() && !e->is_array()) {
    return InvalidArgument(path + "/enum: must be an array");
  }
  for (const char* key : {"items", "additionalProperties", "not"}) {
    if (auto sub = s.find(key); sub != s.end()) {
      if (std::string_view(key) == "items" && sub->is_array()) {
        for (size_t i = 0; i < sub->size(); ++i) {
          SLUICE_RETURN_IF_ERROR(Check((*sub)[i], fmt::format("{}/items/{}", path, i)));
        }
      } else {
        SLUICE_RETURN_IF_ERROR(Check(*sub, path + "/" + key));
      }
    }
  }
  for (const char* key : {"allOf", "anyOf", "oneOf"}) {
    if (auto sub = s.find(key); sub != s.end()) {
      if (!sub->is_array())
        return InvalidArgument(fmt::format("{}/{}: must be an array", path, key));
      for (size_t i = 0; i < sub->size(); ++i) {
        SLUICE_RETURN_IF_ERROR(Check((*sub)[i], fmt::format("{}/{}/{}", path, key, i)));
      }
    }
  }
  return Status::Ok();
}

std::set<std::string> Types(const json& s) {
  std::set<std::string> out;
  if (!s.is_object()) return out;
  auto t = s.find("type");
  if (t == s.end()) return out;  // empty: any type
  if (t->is_string()) out.insert(t->get<std::string>());
  if (t->is_array()) {
    for (const auto& v : *t) out.insert(v.get<std::string>());
  }
  return out;
}

std::set<std::string> Required(const json& s) {
  std::set<std::string> out;
  if (!s.is_object()) return out;
  if (auto r = s.find("required"); r != s.end()) {
    for (const auto& v : *r) out.insert(v.get<std::string>());
  }
  return out;
}

const json* Properties(const json& s) {
  if (!s.is_object()) return nullptr;
  auto p = s.find("properties");
  return p == s.end() ? nullptr : &*p;
}

bool ClosesAdditional(const json& s) {
  if (!s.is_object()) return false;
  auto a = s.find("additionalProperties");
  return a != s.end() && a->is_boolean() && !a->get<bool>();
}

void Compare(const json& reader, const json& writer, const std::string& path,
             std::vector<std::string>& out) {
  if (reader.is_boolean()) {
    if (!reader.get<bool>() && !(writer.is_boolean() && !writer.get<bool>())) {
      out.push_back(fmt::format("FALSE_SCHEMA at '{}': the reader accepts nothing", path));
    }
    return;
  }
  std::set<std::string> rt = Types(reader), wt = Types(writer);
  if (!rt.empty()) {
    if (wt.empty()) {
      out.push_back(
          fmt::format("TYPE_NARROWED at '{}': the reader restricts type to {}, the "
                      "writer allows any",
                      path, fmt::join(rt, ",")));
    }
    for (const auto& t : wt) {
      if (!rt.count(t) && !(t == "integer" && rt.count("number"))) {
        out.push_back(
            fmt::format("TYPE_CHANGED at '{}': the reader does not accept type {}", path, t));
      }
    }
  }
  if (reader.is_object() && reader.contains("enum")) {
    const json& re = reader["enum"];
    if (!writer.is_object() || !writer.contains("enum")) {
      out.push_back(
          fmt::format("ENUM_ADDED at '{}': the reader restricts values to an enum", path));
    } else {
      for (const auto& v : writer["enum"]) {
        if (std::find(re.begin(), re.end(), v) == re.end()) {
          out.push_back(
              fmt::format("ENUM_VALUE_REMOVED at '{}': {} no longer allowed", path, v.dump()));
        }
      }
    }
  }
  std::set<std::string> wreq = Required(writer);
  for (const auto& r : Required(reader)) {
    if (!wreq.count(r)) {
      out.push_back(fmt::format(
          "REQUIRED_PROPERTY_ADDED at '{}/properties/{}': required by the reader, optional to "
          "the writer",
          path, r));
    }
  }
  const json* rp = Properties(reader);
  const json* wp = Properties(writer);
  if (wp) {
    for (const auto& [name, wsub] : wp->items()) {
      std::string ppath = path + "/properties/" + name;
      if (rp && rp->contains(name)) {
        Compare((*rp)[name], wsub, ppath, out);
      } else if (ClosesAdditional(reader)) {
        out.push_back(fmt::format(
            "PROPERTY_REMOVED at '{}': the reader forbids additional properties", ppath));
      }
    }
  }
  if (reader.is_object() && writer.is_object() && reader.contains("items") &&
      writer.contains("items") && reader["items"].is_object() && writer["items"].is_object()) {
    Compare(reader["items"], writer["items"], path + "/items", out);
  }
}

}  // namespace

common::Result<SchemaPtr> Schema::Parse(std::string_view text) {
  // Bounded like every JSON from outside: Check and the comparisons recurse per level.
  auto parsed = common::ParseBoundedJson(text);
  if (!parsed.ok()) return InvalidArgument("Invalid JSON Schema: " + parsed.status().message());
  json doc = std::move(parsed).value();
  Status st = Check(doc, "#");
  if (!st.ok()) return InvalidArgument("Invalid JSON Schema: " + st.message());
  auto s = std::make_shared<Schema>();
  s->doc_ = std::move(doc);
  s->canonical_ = s->doc_.dump();  // nlohmann's object is a std::map: keys come sorted
  return SchemaPtr(std::move(s));
}

std::string Schema::ContentHash() const { return common::Sha256Hex(canonical_); }

std::vector<std::string> ReadIncompatibilities(const Schema& reader, const Schema& writer) {
  std::vector<std::string> out;
  Compare(reader.doc(), writer.doc(), "#", out);
  return out;
}

}  // namespace sluice::registry::jsonschema
