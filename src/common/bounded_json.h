// JSON from the outside (request bodies, replies, schema texts) parsed only
// when its shape is within limits. nlohmann::json builds values without
// recursion, but copying, dumping and comparing them recurse once per level:
// a valid document nested 900k levels deep parses fine and then overflows
// the stack of whatever touches it. The shape is checked on the raw bytes
// before anything is built, so nothing ever recurses past the limit.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::common {

struct JsonLimits {
  // Levels of arrays and objects; a scalar document has depth 0.
  int max_depth = 64;
  // Members of objects plus elements of arrays, over the whole document.
  std::size_t max_entries = 100'000;
};

// For what a worker or loader reads back from the back end or the registry:
// a launch config embeds request bodies a few levels down, and lists every
// table of a source.
inline constexpr JsonLimits kReplyJsonLimits{128, 1'000'000};

// Why `text` is refused before parsing (the message names the limit), or
// nullopt when it is within `limits`. Exact for valid JSON; for invalid
// JSON it describes the prefix a parser reads before failing. Stops at the first breach, so its
// cost is one pass over at most the whole text and no allocation.
std::optional<std::string> JsonShapeViolation(std::string_view text, const JsonLimits& limits);

// The JSON value of `text`; InvalidArgument when it breaks a limit (said
// first, as the reason) or is not JSON.
Result<nlohmann::json> ParseBoundedJson(std::string_view text, const JsonLimits& limits = {});

}  // namespace sluice::common
