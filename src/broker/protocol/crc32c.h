// CRC-32C (Castagnoli), the checksum of Kafka record batches (magic 2).
#pragma once

#include <cstdint>
#include <string_view>

namespace sluice::broker::protocol {

// Uses the CPU's crc32 instruction when there is one (x86-64 with SSE4.2):
// every produced batch is checksummed in full, so this is on the produce path.
std::uint32_t Crc32c(std::string_view data, std::uint32_t crc = 0);

// The table-driven version Crc32c falls back to; kept callable so tests can
// check the two agree.
std::uint32_t Crc32cSoftware(std::string_view data, std::uint32_t crc = 0);

}  // namespace sluice::broker::protocol
