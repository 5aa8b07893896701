#include "registry/compatibility.h"

#include <algorithm>
#include <cctype>

namespace sluice::registry {

const char* CompatibilityName(Compatibility c) {
  switch (c) {
    case Compatibility::kBackward:
      return "BACKWARD";
    case Compatibility::kBackwardTransitive:
      return "BACKWARD_TRANSITIVE";
    case Compatibility::kForward:
      return "FORWARD";
    case Compatibility::kForwardTransitive:
      return "FORWARD_TRANSITIVE";
    case Compatibility::kFull:
      return "FULL";
    case Compatibility::kFullTransitive:
      return "FULL_TRANSITIVE";
    case Compatibility::kNone:
      return "NONE";
  }
  return "BACKWARD";
}

std::optional<Compatibility> ParseCompatibility(std::string_view s) {
  std::string up(s);
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  for (Compatibility c :
       {Compatibility::kBackward, Compatibility::kBackwardTransitive, Compatibility::kForward,
        Compatibility::kForwardTransitive, Compatibility::kFull, Compatibility::kFullTransitive,
        Compatibility::kNone}) {
    if (up == CompatibilityName(c)) return c;
  }
  return std::nullopt;
}

}  // namespace sluice::registry
