#include "registry/wire_format.h"

#include <fmt/format.h>

namespace sluice::registry {

std::string FrameMessage(std::int32_t schema_id, std::string_view payload) {
  std::string out;
  out.reserve(kWireHeaderSize + payload.size());
  auto id = static_cast<std::uint32_t>(schema_id);
  out.push_back(kWireMagic);
  out.push_back(static_cast<char>(id >> 24));
  out.push_back(static_cast<char>(id >> 16));
  out.push_back(static_cast<char>(id >> 8));
  out.push_back(static_cast<char>(id));
  out.append(payload);
  return out;
}

common::Result<FramedMessage> UnframeMessage(std::string_view message) {
  if (message.size() < kWireHeaderSize) {
    return common::InvalidArgument(
        fmt::format("message of {} bytes is shorter than the 5-byte header", message.size()));
  }
  if (message[0] != kWireMagic) {
    return common::InvalidArgument(fmt::format(
        "unknown magic byte {}", static_cast<int>(static_cast<std::uint8_t>(message[0]))));
  }
  std::uint32_t id = 0;
  for (size_t i = 1; i < kWireHeaderSize; ++i) {
    id = (id << 8) | static_cast<std::uint8_t>(message[i]);
  }
  return FramedMessage{static_cast<std::int32_t>(id), message.substr(kWireHeaderSize)};
}

}  // namespace sluice::registry
