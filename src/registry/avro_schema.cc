#include "registry/avro_schema.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "common/bounded_json.h"
#include "common/hex.h"

namespace sluice::registry::avro {

using common::InvalidArgument;
using common::Result;
using common::Status;
using nlohmann::json;

const char* TypeName(Type t) {
  switch (t) {
    case Type::kNull:
      return "null";
    case Type::kBoolean:
      return "boolean";
    case Type::kInt:
      return "int";
    case Type::kLong:
      return "long";
    case Type::kFloat:
      return "float";
    case Type::kDouble:
      return "double";
    case Type::kBytes:
      return "bytes";
    case Type::kString:
      return "string";
    case Type::kRecord:
      return "record";
    case Type::kEnum:
      return "enum";
    case Type::kArray:
      return "array";
    case Type::kMap:
      return "map";
    case Type::kUnion:
      return "union";
    case Type::kFixed:
      return "fixed";
  }
  return "?";
}

int Node::FieldIndex(std::string_view n) const {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == n) return static_cast<int>(i);
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    for (const auto& a : fields[i].aliases) {
      if (a == n) return static_cast<int>(i);
    }
  }
  return -1;
}

namespace {

std::optional<Type> PrimitiveType(std::string_view s) {
  static const std::map<std::string_view, Type> kPrimitives = {
      {"null", Type::kNull},   {"boolean", Type::kBoolean}, {"int", Type::kInt},
      {"long", Type::kLong},   {"float", Type::kFloat},     {"double", Type::kDouble},
      {"bytes", Type::kBytes}, {"string", Type::kString},
  };
  auto it = kPrimitives.find(s);
  if (it == kPrimitives.end()) return std::nullopt;
  return it->second;
}

bool IsValidName(std::string_view s) {
  if (s.empty()) return false;
  auto head = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (!head(s[0])) return false;
  for (char c : s) {
    if (!head(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool IsValidFullName(std::string_view s) {
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    if (!IsValidName(s.substr(start, dot == std::string_view::npos ? dot : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// Text of a JSON value for error messages, kept short.
std::string Brief(const json& j) {
  std::string s = j.dump();
  if (s.size() > 120) s = s.substr(0, 117) + "...";
  return s;
}

}  // namespace

class Parser {
 public:
  explicit Parser(Schema& out) : out_(out) {}

  Result<const Node*> ParseNode(const json& j, const std::string& ns) {
    if (j.is_string()) return ParseReference(j.get<std::string>(), ns);
    if (j.is_array()) return ParseUnion(j, ns);
    if (!j.is_object()) return InvalidArgument("Not a schema: " + Brief(j));
    auto t = j.find("type");
    if (t == j.end()) return InvalidArgument("No type: " + Brief(j));
    if (!t->is_string()) {
      // {"type": {...}} or {"type": [...]}: Avro reads the nested schema.
      if (t->is_object() || t->is_array()) return ParseNode(*t, ns);
      return InvalidArgument("Type not a string or schema: " + Brief(j));
    }
    const std::string type = t->get<std::string>();
    if (auto prim = PrimitiveType(type)) {
      Node* n = New(*prim);
      ReadLogical(*n, j);
      return static_cast<const Node*>(n);
    }
    if (type == "record" || type == "error") return ParseRecord(j, ns);
    if (type == "enum") return ParseEnum(j, ns);
    if (type == "fixed") return ParseFixed(j, ns);
    if (type == "array") {
      auto items = j.find("items");
      if (items == j.end()) return InvalidArgument("Array has no items type: " + Brief(j));
      auto item = ParseNode(*items, ns);
      if (!item.ok()) return item.status();
      Node* n = New(Type::kArray);
      n->items = *item;
      return static_cast<const Node*>(n);
    }
    if (type == "map") {
      auto values = j.find("values");
      if (values == j.end()) return InvalidArgument("Map has no values type: " + Brief(j));
      auto value = ParseNode(*values, ns);
      if (!value.ok()) return value.status();
      Node* n = New(Type::kMap);
      n->values = *value;
      return static_cast<const Node*>(n);
    }
    // {"type": "com.example.Named"}: a reference written as an object.
    return ParseReference(type, ns);
  }

 private:
  Node* New(Type t) {
    out_.nodes_.push_back(std::make_unique<Node>());
    out_.nodes_.back()->type = t;
    return out_.nodes_.back().get();
  }

  Result<const Node*> ParseReference(const std::string& name, const std::string& ns) {
    if (auto prim = PrimitiveType(name)) return static_cast<const Node*>(New(*prim));
    std::string full = name.find('.') == std::string::npos && !ns.empty() ? ns + "." + name : name;
    auto it = named_.find(full);
    if (it == named_.end() && full != name) it = named_.find(name);  // null namespace
    if (it == named_.end()) {
      return InvalidArgument(
          fmt::format("\"{}\" is not a defined name. The type of the \"{}\" "
                      "field must be a defined name or a {{\"type\": ...}} "
                      "expression.",
                      full, current_field_));
    }
    return it->second;
  }

  Result<const Node*> ParseUnion(const json& j, const std::string& ns) {
    Node* n = New(Type::kUnion);
    std::set<std::string> seen;
    for (const auto& b : j) {
      auto branch = ParseNode(b, ns);
      if (!branch.ok()) return branch.status();
      const Node* bn = *branch;
      if (bn->type == Type::kUnion) return InvalidArgument("Nested union: " + Brief(j));
      std::string key = bn->is_named() ? bn->full_name : TypeName(bn->type);
      if (!seen.insert(key).second) return InvalidArgument("Duplicate in union:" + key);
      n->branches.push_back(bn);
    }
    return static_cast<const Node*>(n);
  }

  // Fills name/full_name/aliases and returns the namespace that names inside
  // this type resolve against.
  Result<std::string> ReadName(Node& n, const json& j, const std::string& ns) {
    auto name = j.find("name");
    if (name == j.end() || !name->is_string()) {
      return InvalidArgument("No name in schema: " + Brief(j));
    }
    std::string nm = name->get<std::string>();
    std::string space = ns;
    if (auto nsj = j.find("namespace"); nsj != j.end()) {
      if (nsj->is_null()) {
        space.clear();
      } else if (!nsj->is_string()) {
        return InvalidArgument("Namespace not a string: " + Brief(j));
      } else {
        space = nsj->get<std::string>();
      }
    }
    if (auto dot = nm.rfind('.'); dot != std::string::npos) {
      space = nm.substr(0, dot);
      nm = nm.substr(dot + 1);
    }
    if (!IsValidName(nm)) return InvalidArgument("Illegal name: " + nm);
    if (!space.empty() && !IsValidFullName(space)) {
      return InvalidArgument("Illegal namespace: " + space);
    }
    if (PrimitiveType(nm) && space.empty()) {
      return InvalidArgument("Schemas may not be named after primitives: " + nm);
    }
    n.name = nm;
    n.full_name = space.empty() ? nm : space + "." + nm;
    if (named_.count(n.full_name)) return InvalidArgument("Can't redefine: " + n.full_name);
    if (auto doc = j.find("doc"); doc != j.end() && doc->is_string()) n.doc = *doc;
    if (auto al = j.find("aliases"); al != j.end()) {
      if (!al->is_array()) return InvalidArgument("aliases not an array: " + Brief(j));
      for (const auto& a : *al) {
        if (!a.is_string()) return InvalidArgument("alias not a string: " + Brief(a));
        std::string s = a.get<std::string>();
        if (!IsValidFullName(s)) return InvalidArgument("Illegal alias: " + s);
        n.aliases.push_back(s.find('.') == std::string::npos && !space.empty() ? space + "." + s
                                                                               : s);
      }
    }
    named_[n.full_name] = &n;
    return space;
  }

  Result<const Node*> ParseRecord(const json& j, const std::string& ns) {
    Node* n = New(Type::kRecord);
    auto space = ReadName(*n, j, ns);
    if (!space.ok()) return space.status();
    auto fields = j.find("fields");
    if (fields == j.end() || !fields->is_array()) {
      return InvalidArgument("Record has no fields: " + Brief(j));
    }
    std::set<std::string> names;
    for (const auto& f : *fields) {
      if (!f.is_object()) return InvalidArgument("Field not an object: " + Brief(f));
      auto fname = f.find("name");
      if (fname == f.end() || !fname->is_string()) {
        return InvalidArgument("No field name: " + Brief(f));
      }
      Field field;
      field.name = *fname;
      if (!IsValidName(field.name)) return InvalidArgument("Illegal field name: " + field.name);
      if (!names.insert(field.name).second) {
        return InvalidArgument("Duplicate field " + field.name + " in record " + n->full_name);
      }
      auto ftype = f.find("type");
      if (ftype == f.end()) return InvalidArgument("No field type: " + Brief(f));
      current_field_ = field.name;
      auto type = ParseNode(*ftype, *space);
      if (!type.ok()) return type.status();
      field.type = *type;
      if (auto d = f.find("default"); d != f.end()) {
        Status st = ValidateDefault(*field.type, *d);
        if (!st.ok()) {
          return InvalidArgument(fmt::format("Invalid default for field {}: {} not a {}",
                                             field.name, Brief(*d), Brief(*ftype)));
        }
        field.default_value = *d;
      }
      if (auto o = f.find("order"); o != f.end()) {
        if (!o->is_string() || (*o != "ascending" && *o != "descending" && *o != "ignore")) {
          return InvalidArgument("Illegal sort order: " + Brief(*o));
        }
        field.order = *o;
      }
      if (auto al = f.find("aliases"); al != f.end() && al->is_array()) {
        for (const auto& a : *al) {
          if (a.is_string()) field.aliases.push_back(a);
        }
      }
      if (auto doc = f.find("doc"); doc != f.end() && doc->is_string()) field.doc = *doc;
      n->fields.push_back(std::move(field));
    }
    return static_cast<const Node*>(n);
  }

  Result<const Node*> ParseEnum(const json& j, const std::string& ns) {
    Node* n = New(Type::kEnum);
    auto space = ReadName(*n, j, ns);
    if (!space.ok()) return space.status();
    auto symbols = j.find("symbols");
    if (symbols == j.end() || !symbols->is_array()) {
      return InvalidArgument("Enum has no symbols: " + Brief(j));
    }
    std::set<std::string> seen;
    for (const auto& s : *symbols) {
      if (!s.is_string() || !IsValidName(s.get<std::string>())) {
        return InvalidArgument("Illegal enum symbol: " + Brief(s));
      }
      if (!seen.insert(s.get<std::string>()).second) {
        return InvalidArgument("Duplicate enum symbol: " + s.get<std::string>());
      }
      n->symbols.push_back(s);
    }
    if (auto d = j.find("default"); d != j.end()) {
      if (!d->is_string() || !seen.count(d->get<std::string>())) {
        return InvalidArgument("The Enum Default: " + Brief(*d) + " is not in the enum symbol set");
      }
      n->enum_default = d->get<std::string>();
    }
    return static_cast<const Node*>(n);
  }

  Result<const Node*> ParseFixed(const json& j, const std::string& ns) {
    Node* n = New(Type::kFixed);
    auto space = ReadName(*n, j, ns);
    if (!space.ok()) return space.status();
    auto size = j.find("size");
    if (size == j.end() || !size->is_number_integer() || size->get<std::int64_t>() < 0 ||
        size->get<std::int64_t>() > INT32_MAX) {
      return InvalidArgument("Invalid or no size: " + Brief(j));
    }
    n->size = size->get<int>();
    ReadLogical(*n, j);
    return static_cast<const Node*>(n);
  }

  // Keeps a logicalType only where the spec allows it; otherwise ignored.
  static void ReadLogical(Node& n, const json& j) {
    auto lt = j.find("logicalType");
    if (lt == j.end() || !lt->is_string()) return;
    const std::string name = *lt;
    bool ok = false;
    if (name == "decimal") {
      if (n.type == Type::kBytes || n.type == Type::kFixed) {
        auto p = j.find("precision");
        auto s = j.find("scale");
        int precision = p != j.end() && p->is_number_integer() ? p->get<int>() : 0;
        int scale = s != j.end() && s->is_number_integer() ? s->get<int>() : 0;
        ok = precision > 0 && scale >= 0 && scale <= precision;
        if (ok) {
          n.precision = precision;
          n.scale = scale;
        }
      }
    } else if (name == "uuid") {
      ok = n.type == Type::kString;
    } else if (name == "date" || name == "time-millis") {
      ok = n.type == Type::kInt;
    } else if (name == "time-micros" || name == "timestamp-millis" || name == "timestamp-micros" ||
               name == "local-timestamp-millis" || name == "local-timestamp-micros") {
      ok = n.type == Type::kLong;
    } else if (name == "duration") {
      ok = n.type == Type::kFixed && n.size == 12;
    }
    if (ok) n.logical_type = name;
  }

  Schema& out_;
  std::map<std::string, const Node*> named_;
  std::string current_field_;
};

namespace {

// Writes the canonical form; `full` adds the attributes of normalized_form().
class FormWriter {
 public:
  explicit FormWriter(bool full) : full_(full) {}

  std::string Write(const Node& n) {
    Emit(n);
    return std::move(out_);
  }

 private:
  void Str(std::string_view s) { out_ += json(s).dump(); }
  void Key(std::string_view k) {
    Str(k);
    out_ += ':';
  }

  void Emit(const Node& n) {
    switch (n.type) {
      case Type::kRecord:
      case Type::kEnum:
      case Type::kFixed:
        if (!defined_.insert(n.full_name).second) {
          Str(n.full_name);
          return;
        }
        break;
      case Type::kUnion:
        out_ += '[';
        for (size_t i = 0; i < n.branches.size(); ++i) {
          if (i) out_ += ',';
          Emit(*n.branches[i]);
        }
        out_ += ']';
        return;
      default:
        break;
    }
    bool has_logical = full_ && !n.logical_type.empty();
    if (n.type <= Type::kString && !has_logical) {
      Str(TypeName(n.type));
      return;
    }
    out_ += '{';
    if (n.is_named()) {
      Key("name");
      Str(n.full_name);
      out_ += ',';
    }
    Key("type");
    Str(TypeName(n.type));
    if (n.type == Type::kRecord) {
      out_ += ",";
      Key("fields");
      out_ += '[';
      for (size_t i = 0; i < n.fields.size(); ++i) {
        const Field& f = n.fields[i];
        if (i) out_ += ',';
        out_ += '{';
        Key("name");
        Str(f.name);
        out_ += ',';
        Key("type");
        Emit(*f.type);
        if (full_) {
          if (f.default_value) {
            out_ += ',';
            Key("default");
            out_ += f.default_value->dump();
          }
          if (!f.aliases.empty()) {
            out_ += ',';
            Key("aliases");
            out_ += json(f.aliases).dump();
          }
          if (f.order != "ascending") {
            out_ += ',';
            Key("order");
            Str(f.order);
          }
          if (!f.doc.empty()) {
            out_ += ',';
            Key("doc");
            Str(f.doc);
          }
        }
        out_ += '}';
      }
      out_ += ']';
    } else if (n.type == Type::kEnum) {
      out_ += ',';
      Key("symbols");
      out_ += json(n.symbols).dump();
      if (full_ && n.enum_default) {
        out_ += ',';
        Key("default");
        Str(*n.enum_default);
      }
    } else if (n.type == Type::kArray) {
      out_ += ',';
      Key("items");
      Emit(*n.items);
    } else if (n.type == Type::kMap) {
      out_ += ',';
      Key("values");
      Emit(*n.values);
    } else if (n.type == Type::kFixed) {
      out_ += ',';
      Key("size");
      out_ += std::to_string(n.size);
    }
    if (full_) {
      if (!n.aliases.empty()) {
        out_ += ',';
        Key("aliases");
        out_ += json(n.aliases).dump();
      }
      if (!n.logical_type.empty()) {
        out_ += ',';
        Key("logicalType");
        Str(n.logical_type);
        if (n.logical_type == "decimal") {
          out_ += fmt::format(",\"precision\":{},\"scale\":{}", n.precision, n.scale);
        }
      }
      if (!n.doc.empty()) {
        out_ += ',';
        Key("doc");
        Str(n.doc);
      }
    }
    out_ += '}';
  }

  bool full_;
  std::string out_;
  std::set<std::string> defined_;
};

}  // namespace

Result<SchemaPtr> Schema::Parse(std::string_view text) {
  // Bounded like every JSON from outside: the parser below recurses per level.
  if (auto violation = common::JsonShapeViolation(text, {}))
    return InvalidArgument("Invalid schema: " + *violation);
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    // Avro treats a bare name ("string") as JSON too; anything else is not JSON.
    return InvalidArgument("Invalid schema: not valid JSON: " + std::string(text.substr(0, 120)));
  }
  return FromJson(doc);
}

Result<SchemaPtr> Schema::FromJson(const json& doc) {
  auto schema = std::shared_ptr<Schema>(new Schema());
  Parser parser(*schema);
  auto root = parser.ParseNode(doc, "");
  if (!root.ok()) return root.status();
  schema->root_ = *root;
  schema->canonical_ = FormWriter(false).Write(*schema->root_);
  schema->normalized_ = FormWriter(true).Write(*schema->root_);
  return SchemaPtr(std::move(schema));
}

std::string Schema::Fingerprint() const { return common::Sha256Hex(canonical_); }
std::string Schema::ContentHash() const { return common::Sha256Hex(normalized_); }

const Node* Schema::FindNamed(std::string_view full_name) const {
  for (const auto& n : nodes_) {
    if (n->is_named() && n->full_name == full_name) return n.get();
  }
  return nullptr;
}

Status ValidateDefault(const Node& node, const json& v) {
  auto bad = [&] { return InvalidArgument(Brief(v) + " is not a " + TypeName(node.type)); };
  switch (node.type) {
    case Type::kNull:
      return v.is_null() ? Status::Ok() : bad();
    case Type::kBoolean:
      return v.is_boolean() ? Status::Ok() : bad();
    case Type::kInt:
      if (!v.is_number_integer()) return bad();
      if (v.is_number_unsigned()
              ? v.get<std::uint64_t>() > INT32_MAX
              : (v.get<std::int64_t>() < INT32_MIN || v.get<std::int64_t>() > INT32_MAX)) {
        return bad();
      }
      return Status::Ok();
    case Type::kLong:
      if (!v.is_number_integer()) return bad();
      if (v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX) return bad();
      return Status::Ok();
    case Type::kFloat:
    case Type::kDouble:
      return v.is_number() ? Status::Ok() : bad();
    case Type::kBytes:
    case Type::kString:
      return v.is_string() ? Status::Ok() : bad();
    case Type::kFixed:
      return v.is_string() ? Status::Ok() : bad();
    case Type::kEnum:
      if (!v.is_string()) return bad();
      for (const auto& s : node.symbols) {
        if (s == v.get<std::string>()) return Status::Ok();
      }
      return bad();
    case Type::kArray:
      if (!v.is_array()) return bad();
      for (const auto& e : v) SLUICE_RETURN_IF_ERROR(ValidateDefault(*node.items, e));
      return Status::Ok();
    case Type::kMap:
      if (!v.is_object()) return bad();
      for (const auto& [k, e] : v.items()) SLUICE_RETURN_IF_ERROR(ValidateDefault(*node.values, e));
      return Status::Ok();
    case Type::kUnion:
      if (node.branches.empty()) return bad();
      return ValidateDefault(*node.branches[0], v);
    case Type::kRecord:
      if (!v.is_object()) return bad();
      for (const auto& f : node.fields) {
        auto it = v.find(f.name);
        if (it == v.end()) {
          if (!f.default_value) return InvalidArgument("missing field " + f.name);
          continue;
        }
        SLUICE_RETURN_IF_ERROR(ValidateDefault(*f.type, *it));
      }
      return Status::Ok();
  }
  return bad();
}

}  // namespace sluice::registry::avro
