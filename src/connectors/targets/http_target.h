// The HTTP webhook target. Each batch is one JSON POST to `url`:
//
//   {"table": "...", "changes": [{"op", "key", "after", "position", "as_text"?}...]}
//
// with the configured headers and an Idempotency-Key header naming exactly
// the records in the body (table, topic, partition and offset range), so a
// replay of the same records carries the same key. What the reply means
// (the contract is in the README, "HTTP target"):
//
//  - 2xx: every change in the body is delivered.
//  - 400, 413, 422: the receiver refuses something in the body. The batch is
//    bisected (each half posted on its own, in order) until the single
//    changes it refuses are found; the rest land. Those few are returned as
//    refused, with the reply's status and body as the reason.
//  - anything else (no answer, a timeout, 3xx, 401, 403, 404, 408, 429,
//    5xx, any other status): an OUTAGE. Nothing is refused; Apply returns
//    Unavailable with the webhook's words, and RetryAfter() carries the
//    reply's Retry-After (seconds or an HTTP date) when it had one.
//
// Only http and https are spoken, each request goes to an address the
// connect policy checked (guard/http_destination.h), and no redirect is
// followed: a 3xx is an outage saying so, with nothing delivered.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "connectors/targets/target.h"

namespace sluice::connectors::targets {

struct HttpTargetOptions {
  std::string url;
  std::string table;
  std::map<std::string, std::string> headers;
  std::chrono::milliseconds timeout{10000};
  // Attempts per request for a connection error or a 5xx without
  // Retry-After, before the outage is handed to the caller (whose backoff
  // is the long one); 1 disables the short in-place retry.
  int attempts = 3;
  std::chrono::milliseconds initial_backoff{200};
  // A Retry-After longer than this is taken as this (a receiver asking for
  // a day's pause still gets asked again every minute; a consumer that
  // stops polling for 5 minutes loses its place in the group).
  std::chrono::milliseconds max_retry_after{60000};
};

// What a webhook's status code means for the records it was sent.
enum class HttpVerdict { kDelivered, kRefused, kOutage };
HttpVerdict ClassifyHttpStatus(long status);

// A Retry-After header's value (delta seconds or an IMF-fixdate) as a
// duration from now; nullopt when it is absent or unreadable.
std::optional<std::chrono::milliseconds> ParseRetryAfter(const std::string& value);

// The Idempotency-Key of a body holding `batch`: "<table>@<topic>/<partition>/
// <first>-<last>[,...]" per partition, from the changes' positions, or a
// digest of the body when a change has no position or the text grows long.
std::string IdempotencyKey(const std::string& table, const std::vector<TargetChange>& batch,
                           const std::string& body);

class HttpTarget : public Target {
 public:
  explicit HttpTarget(HttpTargetOptions options);
  common::Result<std::vector<RejectedChange>> Apply(
      const std::vector<TargetChange>& batch) override;
  std::optional<std::chrono::milliseconds> RetryAfter() const override { return retry_after_; }
  bool StableBatches() const override { return true; }

 private:
  // Posts batch[begin, end); bisects on a refusal, appending the refused.
  common::Status SendRange(const std::vector<TargetChange>& batch, std::size_t begin,
                           std::size_t end, std::vector<RejectedChange>& refused);

  HttpTargetOptions options_;
  std::optional<std::chrono::milliseconds> retry_after_;
};

}  // namespace sluice::connectors::targets
