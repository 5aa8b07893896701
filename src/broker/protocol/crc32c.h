// CRC-32C (Castagnoli), the checksum of Kafka record batches (magic 2).
#pragma once

#include <cstdint>
#include <string_view>

namespace sluice::broker::protocol {

std::uint32_t Crc32c(std::string_view data, std::uint32_t crc = 0);

}  // namespace sluice::broker::protocol
