#include "connectors/postgres/type_mapping.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <sodium.h>

#include <cctype>
#include <charconv>
#include <unordered_map>

#include "common/base64.h"
#include "common/fast_json.h"
#include "common/json_text.h"

namespace sluice::connectors::postgres {

namespace {

using common::Result;
using nlohmann::json;

// Built-in type OIDs (pg_type.dat); stable across PostgreSQL versions.
enum Oid : std::uint32_t {
  kBool = 16,
  kBytea = 17,
  kChar = 18,
  kName = 19,
  kInt8 = 20,
  kInt2 = 21,
  kInt4 = 23,
  kText = 25,
  kOid = 26,
  kJson = 114,
  kXml = 142,
  kFloat4 = 700,
  kFloat8 = 701,
  kMoney = 790,
  kBpchar = 1042,
  kVarchar = 1043,
  kDate = 1082,
  kTime = 1083,
  kTimestamp = 1114,
  kTimestamptz = 1184,
  kInterval = 1186,
  kTimetz = 1266,
  kNumeric = 1700,
  kUuid = 2950,
  kJsonb = 3802,
  kInet = 869,
  kCidr = 650,
  kMacaddr = 829,
};

struct TypeInfo {
  const char* name;
  std::uint32_t element;  // for arrays
};

const std::unordered_map<std::uint32_t, TypeInfo>& Types() {
  static const std::unordered_map<std::uint32_t, TypeInfo> types = {
      {kBool, {"bool", 0}},
      {kBytea, {"bytea", 0}},
      {kChar, {"char", 0}},
      {kName, {"name", 0}},
      {kInt8, {"int8", 0}},
      {kInt2, {"int2", 0}},
      {kInt4, {"int4", 0}},
      {kText, {"text", 0}},
      {kOid, {"oid", 0}},
      {kJson, {"json", 0}},
      {kXml, {"xml", 0}},
      {kFloat4, {"float4", 0}},
      {kFloat8, {"float8", 0}},
      {kMoney, {"money", 0}},
      {kBpchar, {"bpchar", 0}},
      {kVarchar, {"varchar", 0}},
      {kDate, {"date", 0}},
      {kTime, {"time", 0}},
      {kTimestamp, {"timestamp", 0}},
      {kTimestamptz, {"timestamptz", 0}},
      {kInterval, {"interval", 0}},
      {kTimetz, {"timetz", 0}},
      {kNumeric, {"numeric", 0}},
      {kUuid, {"uuid", 0}},
      {kJsonb, {"jsonb", 0}},
      {kInet, {"inet", 0}},
      {kCidr, {"cidr", 0}},
      {kMacaddr, {"macaddr", 0}},
      {1000, {"_bool", kBool}},
      {1001, {"_bytea", kBytea}},
      {1002, {"_char", kChar}},
      {1003, {"_name", kName}},
      {1005, {"_int2", kInt2}},
      {1007, {"_int4", kInt4}},
      {1009, {"_text", kText}},
      {1014, {"_bpchar", kBpchar}},
      {1015, {"_varchar", kVarchar}},
      {1016, {"_int8", kInt8}},
      {1021, {"_float4", kFloat4}},
      {1022, {"_float8", kFloat8}},
      {1028, {"_oid", kOid}},
      {1115, {"_timestamp", kTimestamp}},
      {1182, {"_date", kDate}},
      {1183, {"_time", kTime}},
      {1185, {"_timestamptz", kTimestamptz}},
      {1187, {"_interval", kInterval}},
      {1231, {"_numeric", kNumeric}},
      {1270, {"_timetz", kTimetz}},
      {2951, {"_uuid", kUuid}},
      {199, {"_json", kJson}},
      {3807, {"_jsonb", kJsonb}},
      {1041, {"_inet", kInet}},
      {651, {"_cidr", kCidr}},
      {791, {"_money", kMoney}},
      {143, {"_xml", kXml}},
      // Carried as their text (element 0: even their arrays are one string,
      // as box arrays separate elements with ';' and the text is exact).
      {600, {"point", 0}},
      {601, {"lseg", 0}},
      {602, {"path", 0}},
      {603, {"box", 0}},
      {604, {"polygon", 0}},
      {628, {"line", 0}},
      {718, {"circle", 0}},
      {774, {"macaddr8", 0}},
      {1560, {"bit", 0}},
      {1562, {"varbit", 0}},
      {3614, {"tsvector", 0}},
      {3615, {"tsquery", 0}},
      {3220, {"pg_lsn", 0}},
      {3904, {"int4range", 0}},
      {3906, {"numrange", 0}},
      {3908, {"tsrange", 0}},
      {3910, {"tstzrange", 0}},
      {3912, {"daterange", 0}},
      {3926, {"int8range", 0}},
      {4451, {"int4multirange", 0}},
      {4532, {"nummultirange", 0}},
      {4533, {"tsmultirange", 0}},
      {4534, {"tstzmultirange", 0}},
      {4535, {"datemultirange", 0}},
      {4536, {"int8multirange", 0}},
      {1017, {"_point", 0}},
      {1018, {"_lseg", 0}},
      {1019, {"_path", 0}},
      {1020, {"_box", 0}},
      {1027, {"_polygon", 0}},
      {629, {"_line", 0}},
      {719, {"_circle", 0}},
      {1040, {"_macaddr", 0}},
      {775, {"_macaddr8", 0}},
      {1561, {"_bit", 0}},
      {1563, {"_varbit", 0}},
      {3643, {"_tsvector", 0}},
      {3645, {"_tsquery", 0}},
      {3905, {"_int4range", 0}},
      {3907, {"_numrange", 0}},
      {3909, {"_tsrange", 0}},
      {3911, {"_tstzrange", 0}},
      {3913, {"_daterange", 0}},
      {3927, {"_int8range", 0}},
  };
  return types;
}

common::Status Bad(std::uint32_t oid, std::string_view text, std::string_view why) {
  return common::InvalidArgument(
      fmt::format("cannot map value '{}' of type {} to JSON: {}", text, oid, why));
}

template <typename Int>
Result<json> ParseInt(std::uint32_t oid, std::string_view text) {
  Int v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) return Bad(oid, text, "not an integer");
  return json(v);
}

Result<json> ParseFloat(std::uint32_t oid, std::string_view text) {
  // NaN and the infinities have no JSON number: keep PostgreSQL's spelling.
  if (text == "NaN" || text == "Infinity" || text == "-Infinity") return json(std::string(text));
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) return Bad(oid, text, "not a float");
  return json(v);
}

// "2024-01-02 03:04:05.5+00" -> "2024-01-02T03:04:05.5Z"; "+05:30" stays an offset.
std::string IsoTimestamp(std::string_view text, bool with_zone) {
  std::string out(text);
  if (out == "infinity" || out == "-infinity") return out;
  auto space = out.find(' ');
  if (space != std::string::npos) out[space] = 'T';
  if (with_zone) {
    if (out.size() > 3 && out.compare(out.size() - 3, 3, "+00") == 0) {
      out.replace(out.size() - 3, 3, "Z");
    } else if (out.size() > 3 && (out[out.size() - 3] == '+' || out[out.size() - 3] == '-')) {
      out += ":00";
    }
  }
  return out;
}

Result<json> Bytea(std::string_view text) {
  if (text.size() < 2 || text[0] != '\\' || text[1] != 'x' || text.size() % 2 != 0) {
    return Bad(kBytea, text, "expected hex bytea output (bytea_output = hex)");
  }
  std::string bin((text.size() - 2) / 2, '\0');
  std::size_t bin_len = 0;
  if (sodium_hex2bin(reinterpret_cast<unsigned char*>(bin.data()), bin.size(), text.data() + 2,
                     text.size() - 2, nullptr, &bin_len, nullptr) != 0 ||
      bin_len != bin.size()) {
    return Bad(kBytea, text, "bad hex digits");
  }
  return json(common::Base64Encode(bin));
}

// The array literal grammar of array_in: '{' elements '}' with ',' between,
// elements either nested arrays, double-quoted strings (backslash escapes),
// unquoted words (NULL, case-insensitive, is null), optionally preceded by a
// dimension decoration "[1:3]=".
class ArrayParser {
 public:
  ArrayParser(std::uint32_t element_oid, std::string_view text)
      : element_(element_oid), text_(text) {}

  Result<json> Parse() {
    if (!text_.empty() && text_[0] == '[') {
      auto eq = text_.find('=');
      if (eq == std::string_view::npos) return Fail("dimension decoration without '='");
      pos_ = eq + 1;
    }
    auto value = ParseArray(0);
    if (!value.ok()) return value;
    SkipSpace();
    if (pos_ != text_.size()) return Fail("trailing characters");
    return value;
  }

 private:
  Result<json> ParseArray(int depth) {
    if (depth > 6) return Fail("more than 6 dimensions");
    SkipSpace();
    if (pos_ >= text_.size() || text_[pos_] != '{') return Fail("expected '{'");
    ++pos_;
    json out = json::array();
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return out;
    }
    while (true) {
      SkipSpace();
      if (pos_ >= text_.size()) return Fail("unterminated array");
      if (text_[pos_] == '{') {
        auto nested = ParseArray(depth + 1);
        if (!nested.ok()) return nested;
        out.push_back(std::move(*nested));
      } else {
        auto element = ParseElement();
        if (!element.ok()) return element;
        out.push_back(std::move(*element));
      }
      SkipSpace();
      if (pos_ >= text_.size()) return Fail("unterminated array");
      char c = text_[pos_++];
      if (c == '}') return out;
      if (c != ',') return Fail("expected ',' or '}'");
    }
  }

  Result<json> ParseElement() {
    std::string value;
    if (text_[pos_] == '"') {
      ++pos_;
      while (true) {
        if (pos_ >= text_.size()) return Fail("unterminated quoted element");
        char c = text_[pos_++];
        if (c == '"') break;
        if (c == '\\') {
          if (pos_ >= text_.size()) return Fail("dangling backslash");
          c = text_[pos_++];
        }
        value.push_back(c);
      }
      return TextToJson(element_, value);
    }
    while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '}') {
      char c = text_[pos_++];
      if (c == '\\' && pos_ < text_.size()) c = text_[pos_++];
      value.push_back(c);
    }
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) {
      value.pop_back();
    }
    if (value.size() == 4 && (value[0] == 'N' || value[0] == 'n') &&
        (value[1] == 'U' || value[1] == 'u') && (value[2] == 'L' || value[2] == 'l') &&
        (value[3] == 'L' || value[3] == 'l')) {
      return json(nullptr);
    }
    return TextToJson(element_, value);
  }

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  common::Status Fail(std::string_view why) {
    return Bad(element_, text_, fmt::format("bad array literal ({} at offset {})", why, pos_));
  }

  std::uint32_t element_;
  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

const char* SessionOptions() {
  return "-c DateStyle=ISO,YMD -c TimeZone=UTC -c IntervalStyle=iso_8601 -c bytea_output=hex "
         "-c extra_float_digits=3";
}

std::uint32_t ArrayElementType(std::uint32_t oid) {
  auto it = Types().find(oid);
  return it == Types().end() ? 0 : it->second.element;
}

std::string BuiltinTypeName(std::uint32_t oid) {
  auto it = Types().find(oid);
  return it == Types().end() ? "" : it->second.name;
}

Result<json> TextToJson(std::uint32_t type_oid, std::string_view text) {
  // numeric, text, varchar, uuid, date, time, interval, money, inet, enums, ...:
  // their text is already the exact, canonical spelling.
  if (TextIsJsonString(type_oid)) return json(std::string(text));
  switch (type_oid) {
    case kBool:
      if (text == "t") return json(true);
      if (text == "f") return json(false);
      return Bad(type_oid, text, "not a boolean");
    case kInt2:
    case kInt4:
    case kInt8:
      return ParseInt<std::int64_t>(type_oid, text);
    case kOid:
      return ParseInt<std::uint32_t>(type_oid, text);
    case kFloat4:
    case kFloat8:
      return ParseFloat(type_oid, text);
    case kTimestamptz:
      return json(IsoTimestamp(text, true));
    case kTimestamp:
      return json(IsoTimestamp(text, false));
    case kJson:
    case kJsonb: {
      json parsed = common::ParseJsonFast(text);
      if (parsed.is_discarded()) return Bad(type_oid, text, "invalid JSON");
      return parsed;
    }
    case kBytea:
      return Bytea(text);
    default:
      break;
  }
  return ArrayParser(ArrayElementType(type_oid), text).Parse();  // the rest are arrays
}

bool TextIsJsonString(std::uint32_t type_oid) {
  switch (type_oid) {
    case kBool:
    case kInt2:
    case kInt4:
    case kInt8:
    case kOid:
    case kFloat4:
    case kFloat8:
    case kTimestamptz:
    case kTimestamp:
    case kJson:
    case kJsonb:
    case kBytea:
      return false;
    default:
      return ArrayElementType(type_oid) == 0;
  }
}

namespace {

// Every number of a jsonb text is one that TextToJson's double or integer
// dumps back with the same spelling (jsonb prints numbers as numeric does:
// no exponent, scale kept, so 1.50 or 1e400 are not).
bool JsonNumbersExact(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
      ++i;
      continue;
    }
    if (c != '-' && (c < '0' || c > '9')) {
      ++i;
      continue;
    }
    std::size_t from = i;
    bool integral = true;
    while (i < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '-' || text[i] == '+' ||
            text[i] == '.' || text[i] == 'e' || text[i] == 'E')) {
      if (!std::isdigit(static_cast<unsigned char>(text[i])) && text[i] != '-') integral = false;
      ++i;
    }
    std::string_view token = text.substr(from, i - from);
    const char* end = token.data() + token.size();
    std::string spelled;
    if (integral) {
      std::int64_t v = 0;
      std::uint64_t u = 0;
      if (auto [p, ec] = std::from_chars(token.data(), end, v); ec == std::errc() && p == end) {
        spelled = json(v).dump();
      } else if (auto [q, ec2] = std::from_chars(token.data(), end, u);
                 ec2 == std::errc() && q == end) {
        spelled = json(u).dump();
      } else {
        return false;
      }
    } else {
      double d = 0;
      auto [p, ec] = std::from_chars(token.data(), end, d);
      if (ec != std::errc() || p != end) return false;
      spelled = json(d).dump();
    }
    if (spelled != token) return false;
  }
  return true;
}

}  // namespace

bool CarriedAsText(std::uint32_t type_oid, std::string_view text) {
  switch (type_oid) {
    case kJson:
    case 199:   // _json
    case 3807:  // _jsonb
      return true;
    case kJsonb:
      return !JsonNumbersExact(text);
    default:
      return false;
  }
}

common::Status AppendValueJson(std::string& out, std::uint32_t type_oid, std::string_view text) {
  constexpr auto kReplace = json::error_handler_t::replace;
  // The common types are written without building a value; each spelling
  // is the one dumping TextToJson's value gives.
  std::int64_t integer = 0;
  auto whole_integer = [&] {
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), integer);
    return ec == std::errc() && p == text.data() + text.size();
  };
  switch (type_oid) {
    case kInt2:
    case kInt4:
    case kInt8:
      if (!whole_integer()) break;  // TextToJson says what is wrong
      out += fmt::format_int(integer).c_str();
      return common::Status::Ok();
    case kBool:
      if (text != "t" && text != "f") break;
      out += text == "t" ? "true" : "false";
      return common::Status::Ok();
    case kTimestamptz:
    case kTimestamp: {
      auto iso = IsoTimestamp(text, type_oid == kTimestamptz);
      common::AppendJsonString(out, iso);
      return common::Status::Ok();
    }
    default:
      if (!TextIsJsonString(type_oid)) break;
      common::AppendJsonString(out, text);
      return common::Status::Ok();
  }
  auto value = TextToJson(type_oid, text);
  if (!value.ok()) return value.status();
  out += value->dump(-1, ' ', false, kReplace);
  return common::Status::Ok();
}

}  // namespace sluice::connectors::postgres
