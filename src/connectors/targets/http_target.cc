#include "connectors/targets/http_target.h"

#include <fmt/format.h>

#include <thread>

#include "common/http_client.h"
#include "guard/http_destination.h"

namespace sluice::connectors::targets {

HttpTarget::HttpTarget(HttpTargetOptions options) : options_(std::move(options)) {}

common::Result<std::vector<RejectedChange>> HttpTarget::Apply(
    const std::vector<TargetChange>& batch) {
  nlohmann::json changes = nlohmann::json::array();
  for (const auto& c : batch) {
    // A key change is a delete of the old key, then the upsert of the new.
    if (c.old_key.is_object()) {
      nlohmann::json gone = {{"op", "d"}, {"key", c.old_key}, {"after", nullptr}};
      if (!c.position.empty()) gone["position"] = c.position;
      changes.push_back(std::move(gone));
    }
    nlohmann::json j = {{"op", std::string(1, c.op)}, {"key", c.key}, {"after", c.after}};
    if (!c.as_text.empty()) j["as_text"] = c.as_text;
    if (!c.position.empty()) j["position"] = c.position;
    changes.push_back(std::move(j));
  }
  std::string payload = nlohmann::json{{"table", options_.table}, {"changes", changes}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  common::HttpRequest request{"POST",
                              options_.url,
                              {"Content-Type: application/json"},
                              std::move(payload),
                              options_.timeout};
  for (const auto& [k, v] : options_.headers) request.headers.push_back(k + ": " + v);
  auto backoff = options_.initial_backoff;
  common::Result<common::HttpReply> sent = common::Unavailable("not sent");
  for (int attempt = 1; attempt <= options_.attempts; ++attempt) {
    // The connect policy, at connect time: resolved once, every address
    // checked, and the request made to the checked one.
    auto pinned = guard::PinHttp(*guard::ProcessPolicy(), options_.url);
    if (!pinned.ok() && guard::IsRefusal(pinned.status())) return pinned.status();
    if (pinned.ok()) {
      request.pinned_resolve = pinned->resolve;
      sent = common::SendHttp(request);
    } else {
      sent = pinned.status();
    }
    bool retryable = !sent.ok() || sent->status >= 500 || sent->status == 429;
    if (!retryable) break;
    if (attempt < options_.attempts) {
      std::this_thread::sleep_for(backoff);
      backoff *= 2;
    }
  }
  if (!sent.ok())
    return common::Unavailable(
        fmt::format("webhook {} unreachable: {}", options_.url, sent.status().message()));
  const auto& reply = *sent;
  if (reply.status >= 500 || reply.status == 429)
    return common::Unavailable(
        fmt::format("webhook answered {}: {}", reply.status, reply.body.substr(0, 500)));
  // Redirects are never followed: the batch was not delivered where it
  // was sent, and wherever it points was never checked.
  if (reply.status >= 300 && reply.status < 400)
    return common::Unavailable(fmt::format(
        "webhook answered {} (a redirect); the HTTP target does not follow redirects, nothing "
        "was delivered",
        reply.status));
  std::vector<RejectedChange> rejected;
  if (reply.status >= 400) {
    std::string why = fmt::format("webhook refused the batch with {}: {}", reply.status,
                                  reply.body.substr(0, 500));
    for (std::size_t i = 0; i < batch.size(); ++i) rejected.push_back({i, why});
  }
  return rejected;
}

}  // namespace sluice::connectors::targets
