// The HTTP webhook target: each batch is one JSON POST
// {"table", "changes": [{"op", "key", "after", "position"}...]} to `url`,
// with the configured headers. 2xx delivers the batch; a network error or a
// 5xx / 429 is retried with backoff and then reported as an error (nothing
// delivered); any other 4xx refuses the batch, with the response as reason.
// Only http and https are spoken, each request goes to an address the
// connect policy checked (guard/http_destination.h), and no redirect is
// followed: a 3xx is an error saying so, with nothing delivered.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "connectors/targets/target.h"

namespace sluice::connectors::targets {

struct HttpTargetOptions {
  std::string url;
  std::string table;
  std::map<std::string, std::string> headers;
  std::chrono::milliseconds timeout{10000};
  int attempts = 3;
  std::chrono::milliseconds initial_backoff{200};
};

class HttpTarget : public Target {
 public:
  explicit HttpTarget(HttpTargetOptions options);
  common::Result<std::vector<RejectedChange>> Apply(
      const std::vector<TargetChange>& batch) override;

 private:
  HttpTargetOptions options_;
};

}  // namespace sluice::connectors::targets
