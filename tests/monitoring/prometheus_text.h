// A strict reader of the Prometheus text exposition format for tests: every
// sample keyed "name{labels}" as rendered; any line that is neither a
// # HELP / # TYPE comment nor a well-formed sample fails the test.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>

namespace sluice::testing {

inline std::map<std::string, double> ParsePrometheus(const std::string& text) {
  static const std::regex sample(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*)?\})? ([-+0-9.eE]+|NaN|[+-]Inf)$)");
  static const std::regex meta(R"(^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]*( .*)?$)");
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::smatch m;
    if (std::regex_match(line, meta)) continue;
    if (!std::regex_match(line, m, sample)) {
      ADD_FAILURE() << "not exposition format: " << line;
      continue;
    }
    out[m[1].str() + m[2].str()] = std::stod(m[7].str());
  }
  return out;
}

}  // namespace sluice::testing
