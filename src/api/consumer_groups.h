// How the API resets a subscription's consumer group when its backfill is
// switched on. The API library does not link a Kafka client: whoever runs
// the server installs one (e.g. over kafka::Admin::ResetGroupToEarliest).
// Without one, the reset is reported as skipped and the runtime's own start
// (auto.offset.reset=earliest for a fresh group) is what remains.
#pragma once

#include <functional>
#include <string>

#include "api/http.h"
#include "common/status.h"

namespace sluice::api {

// broker: the env's retention_configuration (bootstrap servers, security).
using GroupResetter = std::function<common::Status(const Json& broker, const std::string& group,
                                                   const std::string& topic)>;

void SetGroupResetter(GroupResetter resetter);
// Ok, the failure, or Unavailable when no resetter is installed.
common::Status ResetConsumerGroup(const Json& broker, const std::string& group,
                                  const std::string& topic);

}  // namespace sluice::api
