// Prints the reliability suite's summary, one line per category, from what
// its tests recorded (see record.h), e.g. "faults: 6 injected, 0 rows lost".
// Fails when a figure says something went wrong (rows lost, errors,
// failures, wrong answers) or a record cannot be read; a run that selected
// no reliability test says so and passes.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: reliability_summary DIR\n");
    return 2;
  }
  std::map<std::string, std::vector<std::pair<std::string, double>>> categories;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1])) {
    if (entry.path().extension() != ".txt") continue;
    auto& figures = categories[entry.path().stem().string()];
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream pairs(line);
      std::string pair;
      while (pairs >> pair) {
        auto eq = pair.find('=');
        if (eq == std::string::npos) continue;
        std::string key = pair.substr(0, eq);
        double value = 0;
        try {
          value = std::stod(pair.substr(eq + 1));
        } catch (const std::exception&) {
          std::fprintf(stderr, "reliability: unreadable figure '%s' in %s\n", pair.c_str(),
                       entry.path().c_str());
          return 1;
        }
        auto it = std::find_if(figures.begin(), figures.end(),
                               [&](const auto& f) { return f.first == key; });
        if (it == figures.end()) {
          figures.emplace_back(key, value);
        } else {
          it->second = key.rfind("max_", 0) == 0 ? std::max(it->second, value) : it->second + value;
        }
      }
    }
  }
  if (categories.empty()) {
    std::printf("reliability: no figures recorded (no reliability test ran)\n");
    return 0;
  }
  int bad = 0;
  for (const auto& [category, figures] : categories) {
    std::string line = category + ":";
    bool first = true;
    for (auto [key, value] : figures) {
      if (key.rfind("max_", 0) == 0) key = key.substr(4);
      std::replace(key.begin(), key.end(), '_', ' ');
      char number[32];
      if (value == static_cast<long long>(value))
        std::snprintf(number, sizeof number, "%lld", static_cast<long long>(value));
      else
        std::snprintf(number, sizeof number, "%.2f", value);
      line += std::string(first ? " " : ", ") + number + " " + key;
      first = false;
    }
    std::printf("%s\n", line.c_str());
    for (const auto& [key, value] : figures)
      for (const char* word : {"lost", "errors", "failures", "wrong", "leaks"})
        if (key.find(word) != std::string::npos && value > 0) ++bad;
  }
  if (bad) std::fprintf(stderr, "reliability: %d figure(s) report a failure\n", bad);
  return bad ? 1 : 0;
}
