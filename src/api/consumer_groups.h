// How the API resets a subscription's consumer group when its backfill is
// switched on: the env's broker, through a Kafka admin client.
#pragma once

#include <string>

#include "api/http.h"
#include "common/status.h"

namespace sluice::api {

// broker: the env's retention_configuration (bootstrap servers, security).
// Ok, or the broker's refusal (e.g. the group still has members).
common::Status ResetConsumerGroup(const Json& broker, const std::string& group,
                                  const std::string& topic);

}  // namespace sluice::api
