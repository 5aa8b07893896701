// A list of strings as one PostgreSQL text[] literal, so a query binds a set
// of topics or ids as a single parameter ($1::text[]).
#pragma once

#include <string>
#include <vector>

namespace sluice::store::sql {

// {"a","b\"c"}: every element quoted, quotes and backslashes escaped.
inline std::string TextArrayLiteral(const std::vector<std::string>& items) {
  std::string out = "{";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += '"';
    for (char c : items[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

}  // namespace sluice::store::sql
