#include "connectors/targets/copy_text.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "common/json_text.h"
#include "common/padded_json.h"

namespace sluice::connectors::targets {

using nlohmann::json;

namespace {

// A JSON array as a PostgreSQL array literal ({"a",NULL,{1,2}}).
std::string ArrayLiteral(const json& a) {
  std::string out = "{";
  bool first = true;
  for (const auto& e : a) {
    if (!first) out.push_back(',');
    first = false;
    if (e.is_null()) {
      out += "NULL";
    } else if (e.is_array()) {
      out += ArrayLiteral(e);
    } else if (e.is_number() || e.is_boolean()) {
      out += e.dump();
    } else {
      std::string text = e.is_string() ? e.get<std::string>() : e.dump();
      out.push_back('"');
      for (char c : text) {
        if (c == '"' || c == '\\') out.push_back('\\');
        out.push_back(c);
      }
      out.push_back('"');
    }
  }
  return out + "}";
}

namespace od = simdjson::ondemand;

// What a column's type asks of its JSON strings and containers, told once
// per column rather than by comparing its type name at every value.
enum class ValueRule { kPlain, kBytea, kJson, kJsonb };

ValueRule RuleOf(const std::string& type) {
  if (type == "bytea") return ValueRule::kBytea;
  if (type == "json") return ValueRule::kJson;
  if (type == "jsonb") return ValueRule::kJsonb;
  return ValueRule::kPlain;
}

// One value of a JSON image rendered as AppendCopyValue renders its tree;
// false when it needs more than its text (see RenderJsonImages).
bool AppendJsonValue(std::string& out, od::value v, ValueRule rule, od::json_type* kind) {
  if (v.type().get(*kind)) return false;
  switch (*kind) {
    case od::json_type::null:
      out += "\\N";
      return true;
    case od::json_type::boolean: {
      bool b = false;
      if (v.get_bool().get(b)) return false;
      out += b ? 't' : 'f';
      return true;
    }
    case od::json_type::string: {
      std::string_view s;
      // bytea needs decoding; a JSON string into json is the quoted JSON.
      if (rule != ValueRule::kPlain || v.get_string().get(s)) return false;
      AppendCopyEscaped(out, s);
      return true;
    }
    case od::json_type::number: {
      od::number_type nt;
      if (v.get_number_type().get(nt)) return false;
      if (nt == od::number_type::signed_integer) {
        std::int64_t i = 0;
        if (v.get_int64().get(i)) return false;
        fmt::format_int digits(i);
        out.append(digits.data(), digits.size());
      } else if (nt == od::number_type::unsigned_integer) {
        std::uint64_t u = 0;
        if (v.get_uint64().get(u)) return false;
        fmt::format_int digits(u);
        out.append(digits.data(), digits.size());
      } else {
        double d = 0;
        if (v.get_double().get(d) || !std::isfinite(d)) return false;
        // nlohmann's spelling, as the tree path writes it, without a tree
        // and a serializer per value.
        common::AppendJsonDouble(out, d);
      }
      return true;
    }
    case od::json_type::object:
    case od::json_type::array: {
      // Only jsonb reads any spelling of the same JSON alike; json and text
      // columns keep the text, which the tree path writes normalised.
      if (rule != ValueRule::kJsonb) return false;
      std::string_view raw;
      if (*kind == od::json_type::object) {
        od::object o;
        if (v.get_object().get(o) || o.raw_json().get(raw)) return false;
      } else {
        od::array a;
        if (v.get_array().get(a) || a.raw_json().get(raw)) return false;
      }
      AppendCopyEscaped(out, raw);
      return true;
    }
  }
  return false;
}

// The strings of a JSON array's text (none for empty text); false when the
// text is not such an array.
bool ReadNames(std::string_view text, std::vector<std::string>& names) {
  names.clear();
  if (text.empty()) return true;
  thread_local common::PaddedJson padded;
  od::document* doc = padded.Iterate(text);
  od::array list;
  if (!doc || doc->get_array().get(list)) return false;
  for (auto element : list) {
    std::string_view name;
    if (element.get_string().get(name)) return false;
    names.emplace_back(name);
  }
  return true;
}

}  // namespace

void AppendCopyEscaped(std::string& out, std::string_view s) {
  // The letter each special character is escaped with, 0 for the rest; runs
  // without a special character are appended whole.
  static constexpr auto kEscape = [] {
    std::array<char, 256> table{};
    table['\\'] = '\\';
    table['\t'] = 't';
    table['\n'] = 'n';
    table['\r'] = 'r';
    return table;
  }();
  std::size_t from = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char letter = kEscape[static_cast<unsigned char>(s[i])];
    if (!letter) continue;
    out.append(s.data() + from, i - from);
    out.push_back('\\');
    out.push_back(letter);
    from = i + 1;
  }
  out.append(s.data() + from, s.size() - from);
}

void AppendCopyValue(std::string& out, const std::string& source_type, const json& v) {
  if (v.is_null()) {
    out += "\\N";
  } else if (v.is_string()) {
    // Into json, a JSON string is the quoted JSON, as json_populate_record
    // reads it (a value carried as its text is passed with type "text").
    if (source_type == "json" || source_type == "jsonb")
      AppendCopyEscaped(out, v.dump(-1, ' ', false, json::error_handler_t::replace));
    else
      AppendCopyEscaped(out, v.get_ref<const std::string&>());
  } else if (v.is_boolean()) {
    out += v.get<bool>() ? "t" : "f";
  } else if (v.is_number()) {
    out += v.dump();
  } else if (v.is_array() && source_type.size() > 1 && source_type[0] == '_') {
    AppendCopyEscaped(out, ArrayLiteral(v));
  } else {
    AppendCopyEscaped(out, v.dump());
  }
}

std::optional<CopyText> RenderJsonImages(
    const std::vector<JsonRow>& rows,
    const std::function<const std::string&(std::string_view)>& type_of) {
  CopyText out;
  std::vector<ValueRule> rules;  // the image's columns', in order
  // The key members' rules by name: keys name the same few columns.
  std::vector<std::pair<std::string, ValueRule>> key_rules;
  auto key_rule = [&](std::string_view name) {
    for (const auto& [known, rule] : key_rules)
      if (known == name) return rule;
    key_rules.emplace_back(std::string(name), RuleOf(type_of(name)));
    return key_rules.back().second;
  };
  // The key's members rendered the same way, to find them in the image.
  struct KeyMember {
    std::string name, text;
    od::json_type kind;
  };
  std::vector<KeyMember> key;
  std::vector<std::string> as_text;  // this row's columns whose string is their text
  std::string_view as_text_of;       // the text `as_text` was read from
  thread_local common::PaddedJson padded;
  for (const auto& row : rows) {
    key.clear();
    // Rows of one table mostly name the same columns: read once per text.
    if (row.as_text != as_text_of) {
      if (!ReadNames(row.as_text, as_text)) return std::nullopt;
      as_text_of = row.as_text;
    }
    od::document* doc = padded.Iterate(row.key);
    od::object members;
    if (!doc || doc->get_object().get(members)) return std::nullopt;
    for (auto field : members) {
      std::string_view name;
      od::value v;
      KeyMember member;
      if (field.unescaped_key().get(name) || field.value().get(v)) return std::nullopt;
      member.name = name;
      if (!AppendJsonValue(member.text, v, key_rule(name), &member.kind)) return std::nullopt;
      key.push_back(std::move(member));
    }
    doc = padded.Iterate(row.image);
    if (!doc || doc->get_object().get(members)) return std::nullopt;
    bool first_row = out.names.empty();
    std::size_t j = 0, keys_seen = 0;
    for (auto field : members) {
      std::string_view name;
      od::value v;
      if (field.unescaped_key().get(name) || field.value().get(v)) return std::nullopt;
      if (first_row) {
        out.names.emplace_back(name);
        rules.push_back(RuleOf(type_of(name)));
      } else if (j >= out.names.size() || out.names[j] != name) {
        return std::nullopt;
      }
      if (j) out.rows.push_back('\t');
      const std::size_t value_at = out.rows.size();  // rendered in place
      od::json_type kind;
      const bool text_carried =
          !as_text.empty() && std::find(as_text.begin(), as_text.end(), name) != as_text.end();
      if (text_carried && !v.type().get(kind) && kind == od::json_type::string) {
        std::string_view text;
        if (v.get_string().get(text)) return std::nullopt;
        AppendCopyEscaped(out.rows, text);  // its text is what COPY reads
      } else if (!AppendJsonValue(out.rows, v, rules[j], &kind)) {
        return std::nullopt;
      }
      const std::string_view value = std::string_view(out.rows).substr(value_at);
      for (const auto& k : key) {
        if (k.name != name) continue;
        if (k.kind != kind || k.text != value) return std::nullopt;
        ++keys_seen;
      }
      ++j;
    }
    if (j != out.names.size() || keys_seen != key.size() || j == 0) return std::nullopt;
    out.rows.push_back('\n');
  }
  return out;
}

std::optional<MergedImage> MergePartialImage(std::string_view earlier, std::string_view later,
                                             std::string_view unchanged) {
  thread_local common::PaddedJson padded;
  // The left-out names, each with its JSON string token as written.
  std::vector<std::pair<std::string, std::string>> names;
  od::document* doc = padded.Iterate(unchanged);
  od::array array;
  if (!doc || doc->get_array().get(array)) return std::nullopt;
  for (auto element : array) {
    od::value v;
    std::string_view name;
    if (element.get(v)) return std::nullopt;
    std::string_view token = v.raw_json_token();  // a peek, before get_string reads it
    while (!token.empty() && (token.back() == ' ' || token.back() == '\n')) token.remove_suffix(1);
    if (v.get_string().get(name)) return std::nullopt;
    names.emplace_back(std::string(name), std::string(padded.InText(token)));
  }
  // The earlier image's values of those columns, as written.
  std::vector<std::string> values(names.size());
  std::vector<bool> found(names.size(), false);
  doc = padded.Iterate(earlier);
  od::object members;
  if (!doc || doc->get_object().get(members)) return std::nullopt;
  for (auto field : members) {
    std::string_view name;
    od::value v;
    if (field.unescaped_key().get(name) || field.value().get(v)) return std::nullopt;
    std::size_t i = 0;
    while (i < names.size() && names[i].first != name) ++i;
    if (i == names.size()) continue;
    od::json_type kind;
    std::string_view raw;
    if (v.type().get(kind)) return std::nullopt;
    if (kind == od::json_type::object) {
      od::object o;
      if (v.get_object().get(o) || o.raw_json().get(raw)) return std::nullopt;
    } else if (kind == od::json_type::array) {
      od::array a;
      if (v.get_array().get(a) || a.raw_json().get(raw)) return std::nullopt;
    } else {
      raw = v.raw_json_token();
    }
    while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n')) raw.remove_suffix(1);
    values[i] = padded.InText(raw);
    found[i] = true;
  }
  auto close = later.find_last_of('}');
  if (close == std::string_view::npos) return std::nullopt;
  MergedImage out;
  out.image.assign(later.substr(0, close));
  bool empty = out.image.find_first_not_of(" \n\t{") == std::string::npos;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!found[i]) {
      out.unchanged += out.unchanged.empty() ? "[" : ",";
      out.unchanged += names[i].second;
      continue;
    }
    if (!empty) out.image += ',';
    empty = false;
    out.image += names[i].second;
    out.image += ':';
    out.image += values[i];
  }
  out.image += '}';
  if (!out.unchanged.empty()) out.unchanged += ']';
  return out;
}

std::optional<std::string> CanonicalKeyText(std::string_view key) {
  thread_local common::PaddedJson padded;
  od::document* doc = padded.Iterate(key);
  od::object members;
  if (!doc || doc->get_object().get(members)) return std::nullopt;
  // Reused from key to key, strings and all: one call per row of a batch.
  thread_local std::vector<std::pair<std::string, std::string>> named;
  std::size_t count = 0;
  for (auto field : members) {
    std::string_view name;
    od::value v;
    if (field.unescaped_key().get(name) || field.value().get(v)) return std::nullopt;
    if (count == named.size()) named.emplace_back();
    auto& [member, text] = named[count++];
    member.assign(name);
    text.clear();
    od::json_type kind;
    if (!AppendJsonValue(text, v, ValueRule::kPlain, &kind)) return std::nullopt;
    text.push_back(static_cast<char>('0' + static_cast<int>(kind)));
  }
  std::sort(named.begin(), named.begin() + static_cast<std::ptrdiff_t>(count));
  std::string out;
  for (std::size_t i = 0; i < count; ++i) {
    const auto& [member, text] = named[i];
    // Lengths first: no name or value can run into the next.
    fmt::format_int name_size(member.size()), text_size(text.size());
    out.append(name_size.data(), name_size.size()).push_back(':');
    out.append(text_size.data(), text_size.size()).push_back(':');
    out += member;
    out += text;
  }
  return out;
}

}  // namespace sluice::connectors::targets
