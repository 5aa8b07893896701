#include "connectors/targets/http_target.h"

#include <fmt/format.h>
#include <sodium.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <thread>

#include "common/hex.h"
#include "common/http_client.h"
#include "guard/http_destination.h"

namespace sluice::connectors::targets {

namespace {

using nlohmann::json;

std::string Body(const std::string& table, const std::vector<TargetChange>& batch,
                 std::size_t begin, std::size_t end) {
  json changes = json::array();
  for (std::size_t i = begin; i < end; ++i) {
    const auto& c = batch[i];
    // A key change is a delete of the old key, then the upsert of the new.
    if (c.old_key.is_object()) {
      json gone = {{"op", "d"}, {"key", c.old_key}, {"after", nullptr}};
      if (!c.position.empty()) gone["position"] = c.position;
      changes.push_back(std::move(gone));
    }
    json j = {{"op", std::string(1, common::Letter(c.op))}, {"key", c.key}, {"after", c.after}};
    if (!c.as_text.empty()) j["as_text"] = c.as_text;
    if (!c.position.empty()) j["position"] = c.position;
    changes.push_back(std::move(j));
  }
  return json{{"table", table}, {"changes", changes}}.dump(-1, ' ', false,
                                                           json::error_handler_t::replace);
}

std::string Digest(const std::string& text) {
  unsigned char out[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(out, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  return common::ToHex(std::string(reinterpret_cast<const char*>(out), sizeof out)).substr(0, 32);
}

}  // namespace

HttpVerdict ClassifyHttpStatus(long status) {
  if (status >= 200 && status < 300) return HttpVerdict::kDelivered;
  if (status == 400 || status == 413 || status == 422) return HttpVerdict::kRefused;
  // 401/403 (credentials), 404 (endpoint gone), 408/429 (not now), 5xx, a
  // redirect and any status with no agreed meaning: the receiver cannot
  // take anything now. Never a reason to drop a record.
  return HttpVerdict::kOutage;
}

std::optional<std::chrono::milliseconds> ParseRetryAfter(const std::string& value) {
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    if (value.size() > 9) return std::chrono::milliseconds(std::int64_t{999999999} * 1000);
    return std::chrono::seconds(std::stoll(value));
  }
  std::tm tm{};
  const char* end = strptime(value.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end) return std::nullopt;
  auto at = timegm(&tm);
  auto now = std::time(nullptr);
  return std::chrono::seconds(at > now ? at - now : 0);
}

std::string IdempotencyKey(const std::string& table, const std::vector<TargetChange>& batch,
                           const std::string& body) {
  // Runs of one partition, in order: "topic/partition" -> first..last offset.
  std::string key;
  std::string run;
  std::string first, last;
  auto flush = [&] {
    if (run.empty()) return;
    key += (key.empty() ? "" : ",") + run + "/" + first + (first == last ? "" : "-" + last);
  };
  for (const auto& c : batch) {
    auto slash = c.position.rfind('/');
    if (c.position.empty() || slash == std::string::npos) return "sha256:" + Digest(body);
    std::string part = c.position.substr(0, slash), offset = c.position.substr(slash + 1);
    if (part != run) {
      flush();
      run = part;
      first = offset;
    }
    last = offset;
  }
  flush();
  key = table + "@" + key;
  if (key.size() > 200) return table + "@sha256:" + Digest(key);
  return key;
}

HttpTarget::HttpTarget(HttpTargetOptions options) : options_(std::move(options)) {}

common::Result<std::vector<RejectedChange>> HttpTarget::Apply(
    const std::vector<TargetChange>& batch) {
  retry_after_.reset();
  std::vector<RejectedChange> refused;
  if (batch.empty()) return refused;
  SLUICE_RETURN_IF_ERROR(SendRange(batch, 0, batch.size(), refused));
  return refused;
}

common::Status HttpTarget::SendRange(const std::vector<TargetChange>& batch, std::size_t begin,
                                     std::size_t end, std::vector<RejectedChange>& refused) {
  std::vector<TargetChange> slice;  // only for the key: positions of [begin, end)
  slice.reserve(end - begin);
  for (std::size_t i = begin; i < end; ++i)
    slice.push_back({batch[i].op, {}, {}, {}, batch[i].position});
  std::string payload = Body(options_.table, batch, begin, end);
  common::HttpRequest request{
      "POST",
      options_.url,
      {"Content-Type: application/json",
       "Idempotency-Key: " + IdempotencyKey(options_.table, slice, payload)},
      std::move(payload),
      options_.timeout};
  for (const auto& [k, v] : options_.headers) request.headers.push_back(k + ": " + v);
  auto backoff = options_.initial_backoff;
  common::Result<common::HttpReply> sent = common::Unavailable("not sent");
  for (int attempt = 1; attempt <= std::max(1, options_.attempts); ++attempt) {
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
    // Only what may be a blip is retried in place: no answer, or a 5xx
    // that did not say when to come back.
    bool blip = !sent.ok() || (sent->status >= 500 && sent->Header("retry-after").empty());
    if (!blip) break;
    if (attempt < options_.attempts) {
      std::this_thread::sleep_for(backoff);
      backoff *= 2;
    }
  }
  if (!sent.ok())
    return common::Unavailable(
        fmt::format("webhook {} unreachable: {}", options_.url, sent.status().message()));
  const auto& reply = *sent;
  switch (ClassifyHttpStatus(reply.status)) {
    case HttpVerdict::kDelivered:
      return common::Status::Ok();
    case HttpVerdict::kOutage: {
      if (auto wait = ParseRetryAfter(reply.Header("retry-after")))
        retry_after_ = std::min(*wait, options_.max_retry_after);
      // Redirects are never followed: the batch was not delivered where it
      // was sent, and wherever it points was never checked.
      if (reply.status >= 300 && reply.status < 400)
        return common::Unavailable(
            fmt::format("webhook {} answered {} (a redirect); the HTTP target does not follow "
                        "redirects, nothing was delivered",
                        options_.url, reply.status));
      return common::Unavailable(fmt::format("webhook {} answered {}: {}", options_.url,
                                             reply.status, reply.body.substr(0, 500)));
    }
    case HttpVerdict::kRefused:
      break;
  }
  if (end - begin == 1) {
    refused.push_back({begin, fmt::format("webhook refused the change with {}: {}", reply.status,
                                          reply.body.substr(0, 500))});
    return common::Status::Ok();
  }
  // Bisect: each half on its own, in order, until the refused ones are
  // alone. An outage on the way stops here (the caller retries the batch).
  std::size_t mid = begin + (end - begin) / 2;
  SLUICE_RETURN_IF_ERROR(SendRange(batch, begin, mid, refused));
  return SendRange(batch, mid, end, refused);
}

}  // namespace sluice::connectors::targets
