// Text quoted in a message (an event's reason, a worker's error) kept short.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sluice::common {

// `text` whole when it has at most `max_bytes`, else its first bytes up to
// a UTF-8 character boundary and how long it was: the key of a table keyed
// by its whole row can run to kilobytes.
std::string ShortenedForMessage(std::string_view text, std::size_t max_bytes = 200);

}  // namespace sluice::common
