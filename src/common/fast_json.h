// JSON text -> nlohmann::json through simdjson's parser. The data path decodes
// every change's envelope; nlohmann's own lexer reads a character at a time
// and was the largest cost in a target worker (bench/cdc perf).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace sluice::common {

// The same value nlohmann::json::parse gives (non-negative integers as
// unsigned, the last of duplicate keys wins); a discarded value when the
// text is not JSON. What simdjson refuses takes nlohmann's own parser.
nlohmann::json ParseJsonFast(std::string_view text);

}  // namespace sluice::common
