// Live consumer lag of a subscription's consumer group, asked of the env's
// broker (kafka::Admin): per partition log end minus the group's committed
// offset. A broker that cannot be asked within the timeout gives the last
// lag a worker reported, marked as such, and the reason.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/http.h"
#include "common/status.h"

namespace sluice::api {

struct GroupPartitionLag {
  std::int32_t partition = 0;
  std::int64_t committed = -1;  // -1: never committed
  std::int64_t log_end = 0;
  std::int64_t lag = 0;
};

// broker: the env's retention_configuration.
common::Result<std::vector<GroupPartitionLag>> ReadGroupLag(const Json& broker,
                                                            const std::string& group,
                                                            const std::string& topic,
                                                            std::chrono::milliseconds timeout);

// The API's Lag JSON (see API_CONTRACTS.md): {records, source, consumer_group,
// topic, partitions, error}.
Json LagJson(const Json& broker, const std::string& group, const std::optional<std::string>& topic,
             std::chrono::milliseconds timeout, std::optional<std::int64_t> last_reported);

}  // namespace sluice::api
