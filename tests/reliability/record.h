// The reliability suite prints one summary line per category at its end
// (faults, load, bad input, access). Each test appends what it measured to
// $SLUICE_RELIABILITY_DIR/<category>.txt as "key=value" pairs; the summary
// step (summary_main.cc, run last by ctest) adds them up. Keys starting with
// "max_" keep the largest value instead of the sum.
#pragma once

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace sluice::testing {

inline void RecordReliability(const std::string& category,
                              const std::vector<std::pair<std::string, double>>& figures) {
  const char* dir = std::getenv("SLUICE_RELIABILITY_DIR");
#ifdef SLUICE_RELIABILITY_DIR_DEFAULT
  if (!dir) dir = SLUICE_RELIABILITY_DIR_DEFAULT;
#endif
  if (!dir) return;
  std::ofstream out(std::string(dir) + "/" + category + ".txt", std::ios::app);
  std::string line;
  for (const auto& [key, value] : figures)
    line += (line.empty() ? "" : " ") + key + "=" + std::to_string(value);
  out << line << "\n";
}

}  // namespace sluice::testing
