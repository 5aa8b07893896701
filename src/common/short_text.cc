#include "common/short_text.h"

#include <fmt/format.h>

namespace sluice::common {

std::string ShortenedForMessage(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return fmt::format("{}… ({} bytes)", text.substr(0, cut), text.size());
}

}  // namespace sluice::common
