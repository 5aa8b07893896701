// Confluent's wire format for a Kafka key or value: magic byte 0, the
// schema's registry id as 4 bytes big-endian, then the Avro binary datum.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::registry {

inline constexpr char kWireMagic = 0;
inline constexpr size_t kWireHeaderSize = 5;

std::string FrameMessage(std::int32_t schema_id, std::string_view payload);

struct FramedMessage {
  std::int32_t schema_id = 0;
  std::string_view payload;  // points into the input
};
// Fails on a short buffer or a magic byte other than 0.
common::Result<FramedMessage> UnframeMessage(std::string_view message);

}  // namespace sluice::registry
