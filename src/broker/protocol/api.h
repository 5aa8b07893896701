// The Kafka APIs this broker serves, the version range it advertises for each,
// and the protocol error codes it answers with. Only non-flexible versions are
// advertised, so every request uses request header v1 and response header v0.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace sluice::broker::protocol {

enum class ApiKey : std::int16_t {
  kProduce = 0,
  kFetch = 1,
  kListOffsets = 2,
  kMetadata = 3,
  kOffsetCommit = 8,
  kOffsetFetch = 9,
  kFindCoordinator = 10,
  kJoinGroup = 11,
  kHeartbeat = 12,
  kLeaveGroup = 13,
  kSyncGroup = 14,
  kDescribeGroups = 15,
  kListGroups = 16,
  kSaslHandshake = 17,
  kApiVersions = 18,
  kCreateTopics = 19,
  kDeleteTopics = 20,
  kInitProducerId = 22,
  kDescribeConfigs = 32,
  kSaslAuthenticate = 36,
  kCreatePartitions = 37,
};

struct ApiRange {
  ApiKey key;
  std::int16_t min_version;
  std::int16_t max_version;
};

// Every API we answer, in the order ApiVersions lists them.
std::span<const ApiRange> SupportedApis();
std::optional<ApiRange> FindApi(std::int16_t key);

// Kafka error codes (see org.apache.kafka.common.protocol.Errors).
namespace error {
inline constexpr std::int16_t kNone = 0;
inline constexpr std::int16_t kOffsetOutOfRange = 1;
inline constexpr std::int16_t kCorruptMessage = 2;
inline constexpr std::int16_t kUnknownTopicOrPartition = 3;
inline constexpr std::int16_t kInvalidFetchSize = 4;
inline constexpr std::int16_t kNotLeader = 6;
inline constexpr std::int16_t kRequestTimedOut = 7;
inline constexpr std::int16_t kMessageTooLarge = 10;
inline constexpr std::int16_t kOffsetMetadataTooLarge = 12;
inline constexpr std::int16_t kCoordinatorLoadInProgress = 14;
inline constexpr std::int16_t kCoordinatorNotAvailable = 15;
inline constexpr std::int16_t kNotCoordinator = 16;
inline constexpr std::int16_t kInvalidTopic = 17;
inline constexpr std::int16_t kRecordListTooLarge = 18;
inline constexpr std::int16_t kInvalidRequiredAcks = 21;
inline constexpr std::int16_t kIllegalGeneration = 22;
inline constexpr std::int16_t kInconsistentGroupProtocol = 23;
inline constexpr std::int16_t kInvalidGroupId = 24;
inline constexpr std::int16_t kUnknownMemberId = 25;
inline constexpr std::int16_t kInvalidSessionTimeout = 26;
inline constexpr std::int16_t kRebalanceInProgress = 27;
inline constexpr std::int16_t kInvalidCommitOffsetSize = 28;
inline constexpr std::int16_t kTopicAuthorizationFailed = 29;
inline constexpr std::int16_t kGroupAuthorizationFailed = 30;
inline constexpr std::int16_t kClusterAuthorizationFailed = 31;
inline constexpr std::int16_t kInvalidTimestamp = 32;
inline constexpr std::int16_t kUnsupportedSaslMechanism = 33;
inline constexpr std::int16_t kIllegalSaslState = 34;
inline constexpr std::int16_t kUnsupportedVersion = 35;
inline constexpr std::int16_t kTopicAlreadyExists = 36;
inline constexpr std::int16_t kInvalidPartitions = 37;
inline constexpr std::int16_t kInvalidReplicationFactor = 38;
inline constexpr std::int16_t kInvalidRequest = 42;
inline constexpr std::int16_t kUnsupportedForMessageFormat = 43;
inline constexpr std::int16_t kOutOfOrderSequence = 45;
inline constexpr std::int16_t kDuplicateSequence = 46;
inline constexpr std::int16_t kInvalidProducerEpoch = 47;
inline constexpr std::int16_t kInvalidConfig = 40;
inline constexpr std::int16_t kKafkaStorageError = 56;
inline constexpr std::int16_t kSaslAuthenticationFailed = 58;
inline constexpr std::int16_t kUnknownProducerId = 59;
inline constexpr std::int16_t kTransactionalIdAuthorizationFailed = 53;
inline constexpr std::int16_t kNonEmptyGroup = 68;
inline constexpr std::int16_t kGroupIdNotFound = 69;
inline constexpr std::int16_t kMemberIdRequired = 79;
inline constexpr std::int16_t kUnknownServerError = -1;
}  // namespace error

}  // namespace sluice::broker::protocol
