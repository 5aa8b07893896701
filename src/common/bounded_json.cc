#include "common/bounded_json.h"

namespace sluice::common {

std::optional<std::string> JsonShapeViolation(std::string_view text, const JsonLimits& limits) {
  int depth = 0;
  std::size_t entries = 0;
  bool in_string = false;
  bool just_opened = false;  // the last token opened a container
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // whatever is escaped cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    // The first token inside a container is its first entry, unless it
    // closes the container at once.
    if (just_opened && c != ']' && c != '}') ++entries;
    just_opened = false;
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > limits.max_depth) {
          return "JSON nests deeper than " + std::to_string(limits.max_depth) +
                 " levels (the depth limit)";
        }
        just_opened = true;
        break;
      case ']':
      case '}':
        // Unbalanced: not JSON, the parser will say so.
        if (depth > 0) --depth;
        break;
      case ',':
        ++entries;
        break;
      default:
        break;
    }
    if (entries > limits.max_entries) {
      return "JSON has more than " + std::to_string(limits.max_entries) +
             " members and elements (the size limit)";
    }
  }
  return std::nullopt;
}

Result<nlohmann::json> ParseBoundedJson(std::string_view text, const JsonLimits& limits) {
  if (auto violation = JsonShapeViolation(text, limits)) return InvalidArgument(*violation);
  // nlohmann stops at a NUL byte and would accept "1\0<anything>"; a raw NUL
  // is never JSON (not even inside a string), so it is refused here.
  if (auto nul = text.find('\0'); nul != std::string_view::npos) {
    return InvalidArgument("not valid JSON: a NUL byte at offset " + std::to_string(nul));
  }
  auto value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return InvalidArgument("not valid JSON");
  return value;
}

}  // namespace sluice::common
