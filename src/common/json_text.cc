#include "common/json_text.h"

#include <cmath>

#include <simdjson.h>
#include <nlohmann/json.hpp>

namespace sluice::common {

namespace {

// Valid UTF-8 without a character JSON escapes: written as it is, which is
// also what the serializer would write for it.
bool IsPlainJsonText(std::string_view text) {
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == '"' || c == '\\') return false;
  }
  return simdjson::validate_utf8(text.data(), text.size());
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view text) {
  if (IsPlainJsonText(text)) {
    out.push_back('"');
    out.append(text);
    out.push_back('"');
    return;
  }
  using nlohmann::json;
  out += json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}

void AppendJsonDouble(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  char digits[64];
  char* end = nlohmann::detail::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, static_cast<std::size_t>(end - digits));
}

}  // namespace sluice::common
