#include "broker/protocol/api.h"

#include <array>

namespace sluice::broker::protocol {

namespace {
// Upper bounds stop just below each API's first flexible version (KIP-482).
constexpr std::array<ApiRange, 21> kApis = {{
    {ApiKey::kProduce, 3, 7},          {ApiKey::kFetch, 4, 11},
    {ApiKey::kListOffsets, 1, 5},      {ApiKey::kMetadata, 0, 8},
    {ApiKey::kOffsetCommit, 0, 7},     {ApiKey::kOffsetFetch, 0, 5},
    {ApiKey::kFindCoordinator, 0, 2},  {ApiKey::kJoinGroup, 0, 5},
    {ApiKey::kHeartbeat, 0, 3},        {ApiKey::kLeaveGroup, 0, 3},
    {ApiKey::kSyncGroup, 0, 3},        {ApiKey::kDescribeGroups, 0, 4},
    {ApiKey::kListGroups, 0, 2},       {ApiKey::kSaslHandshake, 0, 1},
    {ApiKey::kApiVersions, 0, 2},      {ApiKey::kCreateTopics, 0, 4},
    {ApiKey::kDeleteTopics, 0, 3},     {ApiKey::kInitProducerId, 0, 1},
    {ApiKey::kDescribeConfigs, 0, 3},  {ApiKey::kSaslAuthenticate, 0, 1},
    {ApiKey::kCreatePartitions, 0, 1},
}};
}  // namespace

std::span<const ApiRange> SupportedApis() { return kApis; }

std::optional<ApiRange> FindApi(std::int16_t key) {
  for (const auto& a : kApis) {
    if (static_cast<std::int16_t>(a.key) == key) return a;
  }
  return std::nullopt;
}

}  // namespace sluice::broker::protocol
