// libFuzzer target for the Workspace statement splitter. Beyond not crashing,
// splitting is stable: the statements it returns, joined again by ";" on
// lines of their own, split into the same statements (nothing merged, lost
// or cut), in both quoting dialects.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "warehouse/statement_splitter.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view script(reinterpret_cast<const char*>(data), size);
  for (bool backslash : {false, true}) {
    sluice::warehouse::SplitOptions options{backslash};
    auto first = sluice::warehouse::SplitStatements(script, options);
    std::string joined;
    for (const auto& s : first) {
      if (s.empty()) {
        std::fprintf(stderr, "splitter returned an empty statement\n");
        std::abort();
      }
      joined += s + "\n;\n";
    }
    // Only the last statement may end inside an unterminated quote or
    // comment, which would swallow what follows it; leave it unjoined.
    if (!first.empty()) joined.resize(joined.size() - 3);
    if (sluice::warehouse::SplitStatements(joined, options) != first) {
      std::fprintf(stderr, "splitting is not stable for this script\n");
      std::abort();
    }
  }
  return 0;
}
