#include "warehouse/statement_splitter.h"

#include <cctype>

namespace sluice::warehouse {
namespace {

bool IsIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// The dollar-quote opening tag ("$$" or "$name$") starting at s[i], or empty.
std::string_view DollarTag(std::string_view s, size_t i) {
  if (s[i] != '$') return {};
  if (i > 0 && (IsIdentChar(s[i - 1]) || s[i - 1] == '$')) return {};  // part of a name: a$b$
  size_t j = i + 1;
  if (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) return {};  // $1 parameter
  while (j < s.size() && (IsIdentChar(s[j]))) ++j;
  if (j < s.size() && s[j] == '$') return s.substr(i, j - i + 1);
  return {};
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && IsSpace(s[b])) ++b;
  while (e > b && IsSpace(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

}  // namespace

std::vector<std::string> SplitStatements(std::string_view s, SplitOptions options) {
  std::vector<std::string> out;
  size_t start = 0;
  bool has_code = false;  // anything but whitespace and comments since `start`
  auto finish = [&](size_t end) {
    if (has_code) out.push_back(Trim(s.substr(start, end - start)));
    start = end + 1;
    has_code = false;
  };
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '-' && i + 1 < s.size() && s[i + 1] == '-') {
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      // PostgreSQL block comments nest.
      int depth = 1;
      i += 2;
      while (i < s.size() && depth > 0) {
        if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '*') {
          ++depth;
          i += 2;
        } else if (s[i] == '*' && i + 1 < s.size() && s[i + 1] == '/') {
          --depth;
          i += 2;
        } else {
          ++i;
        }
      }
      continue;
    }
    if (c == ';') {
      finish(i);
      ++i;
      continue;
    }
    if (IsSpace(c)) {
      ++i;
      continue;
    }
    has_code = true;
    if (c == '\'' || c == '"' || c == '`') {
      // E'...' (or e'...') takes backslash escapes in PostgreSQL too.
      bool backslashes = options.backslash_escapes && c != '`';
      if (c == '\'' && i > 0 && (s[i - 1] == 'E' || s[i - 1] == 'e') &&
          (i < 2 || !IsIdentChar(s[i - 2]))) {
        backslashes = true;
      }
      ++i;
      while (i < s.size()) {
        if (backslashes && s[i] == '\\') {
          i += 2;
          continue;
        }
        if (s[i] == c) {
          if (i + 1 < s.size() && s[i + 1] == c) {  // doubled quote: an escaped one
            i += 2;
            continue;
          }
          break;
        }
        ++i;
      }
      ++i;  // past the closing quote (or the end of an unterminated one)
      continue;
    }
    if (c == '$') {
      std::string_view tag = DollarTag(s, i);
      if (!tag.empty()) {
        size_t close = s.find(tag, i + tag.size());
        i = close == std::string_view::npos ? s.size() : close + tag.size();
        continue;
      }
    }
    ++i;
  }
  if (start < s.size()) finish(s.size());
  return out;
}

}  // namespace sluice::warehouse
