#include "connectors/targets/http_target.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <thread>

namespace sluice::connectors::targets {

namespace {

size_t Collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

struct Reply {
  long status = 0;
  std::string body;
  std::string error;  // transport error, empty when an HTTP answer came
};

Reply Post(const HttpTargetOptions& o, const std::string& payload) {
  Reply reply;
  CURL* curl = curl_easy_init();
  if (!curl) return {0, "", "curl_easy_init failed"};
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  for (const auto& [k, v] : o.headers) headers = curl_slist_append(headers, (k + ": " + v).c_str());
  curl_easy_setopt(curl, CURLOPT_URL, o.url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, payload.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(payload.size()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(o.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
  CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) reply.error = curl_easy_strerror(rc);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return reply;
}

}  // namespace

HttpTarget::HttpTarget(HttpTargetOptions options) : options_(std::move(options)) {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  (void)initialised;
}

common::Result<std::vector<RejectedChange>> HttpTarget::Apply(
    const std::vector<TargetChange>& batch) {
  nlohmann::json changes = nlohmann::json::array();
  for (const auto& c : batch) {
    nlohmann::json j = {{"op", std::string(1, c.op)}, {"key", c.key}, {"after", c.after}};
    if (!c.position.empty()) j["position"] = c.position;
    changes.push_back(std::move(j));
  }
  std::string payload = nlohmann::json{{"table", options_.table}, {"changes", changes}}.dump();
  auto backoff = options_.initial_backoff;
  Reply reply;
  for (int attempt = 1; attempt <= options_.attempts; ++attempt) {
    reply = Post(options_, payload);
    bool retryable = !reply.error.empty() || reply.status >= 500 || reply.status == 429;
    if (!retryable) break;
    if (attempt < options_.attempts) {
      std::this_thread::sleep_for(backoff);
      backoff *= 2;
    }
  }
  if (!reply.error.empty())
    return common::Unavailable(
        fmt::format("webhook {} unreachable: {}", options_.url, reply.error));
  if (reply.status >= 500 || reply.status == 429)
    return common::Unavailable(
        fmt::format("webhook answered {}: {}", reply.status, reply.body.substr(0, 500)));
  std::vector<RejectedChange> rejected;
  if (reply.status >= 400) {
    std::string why = fmt::format("webhook refused the batch with {}: {}", reply.status,
                                  reply.body.substr(0, 500));
    for (std::size_t i = 0; i < batch.size(); ++i) rejected.push_back({i, why});
  }
  return rejected;
}

}  // namespace sluice::connectors::targets
