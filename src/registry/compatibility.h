// Compatibility levels and the rule that applies them: which earlier
// versions a new schema is checked against, and in which direction.
//   BACKWARD: the new schema reads data written with the previous one.
//   FORWARD:  the previous schema reads data written with the new one.
//   FULL:     both. The _TRANSITIVE forms check every earlier version, not
//             only the latest. NONE checks nothing.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::registry {

enum class Compatibility {
  kBackward,
  kBackwardTransitive,
  kForward,
  kForwardTransitive,
  kFull,
  kFullTransitive,
  kNone,
};

inline constexpr Compatibility kDefaultCompatibility = Compatibility::kBackward;

const char* CompatibilityName(Compatibility c);                       // "BACKWARD", ...
std::optional<Compatibility> ParseCompatibility(std::string_view s);  // case-insensitive

// Can a reader with schema `reader` read what `writer` wrote? Returns the
// reasons it cannot (empty: it can). Implemented per schema language.
template <typename SchemaT>
using ReadCheck =
    std::function<std::vector<std::string>(const SchemaT& reader, const SchemaT& writer)>;

// Applies `level` to `candidate` against `previous` (oldest first) and
// returns every reason it is refused; empty means compatible.
template <typename SchemaT>
std::vector<std::string> CheckCompatibility(Compatibility level, const SchemaT& candidate,
                                            const std::vector<SchemaT>& previous,
                                            const ReadCheck<SchemaT>& can_read) {
  if (level == Compatibility::kNone || previous.empty()) return {};
  bool transitive = level == Compatibility::kBackwardTransitive ||
                    level == Compatibility::kForwardTransitive ||
                    level == Compatibility::kFullTransitive;
  bool backward = level != Compatibility::kForward && level != Compatibility::kForwardTransitive;
  bool forward = level != Compatibility::kBackward && level != Compatibility::kBackwardTransitive;
  std::vector<std::string> out;
  size_t first = transitive ? 0 : previous.size() - 1;
  // Newest first, as Confluent reports.
  for (size_t i = previous.size(); i-- > first;) {
    if (backward) {
      for (auto& m : can_read(candidate, previous[i])) out.push_back(std::move(m));
    }
    if (forward) {
      for (auto& m : can_read(previous[i], candidate)) out.push_back(std::move(m));
    }
  }
  return out;
}

}  // namespace sluice::registry
