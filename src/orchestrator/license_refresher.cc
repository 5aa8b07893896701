#include "orchestrator/license_refresher.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "runtime/license_repository.h"

namespace sluice::orchestrator {

namespace {

size_t Collect(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

}  // namespace

common::Result<runtime::LicenseVerdict> ParseVerdict(const std::string& body,
                                                     common::TimePoint now) {
  auto json = nlohmann::json::parse(body, nullptr, false);
  if (!json.is_object()) return common::InvalidArgument("license verdict is not a JSON object");
  auto active = json.contains("license_active") ? json["license_active"] : json["active"];
  if (!active.is_boolean())
    return common::InvalidArgument("license verdict has no boolean license_active");
  runtime::LicenseVerdict v;
  v.active = active.get<bool>();
  v.seen_at = now;
  auto expires = json.contains("license_expires_at") ? json["license_expires_at"]
                                                     : json.value("expires_at", nlohmann::json());
  if (!expires.is_null()) {
    if (!expires.is_string())
      return common::InvalidArgument("license_expires_at must be an ISO-8601 string or null");
    v.expires_at = common::ParseIso8601(expires.get<std::string>());
    if (!v.expires_at)
      return common::InvalidArgument(fmt::format(
          "license_expires_at {} is not an ISO-8601 UTC time", expires.get<std::string>()));
  }
  return v;
}

common::Result<runtime::LicenseVerdict> FetchVerdict(const LicenseSource& source,
                                                     common::TimePoint now) {
  if (!source.control_plane_url) return runtime::LicenseVerdict{true, std::nullopt, now};
  CURL* curl = curl_easy_init();
  if (!curl) return common::Unavailable("curl_easy_init failed");
  std::string body;
  curl_slist* headers = curl_slist_append(nullptr, "Accept: application/json");
  if (!source.bearer_token.empty())
    headers = curl_slist_append(headers, ("Authorization: Bearer " + source.bearer_token).c_str());
  curl_easy_setopt(curl, CURLOPT_URL, source.control_plane_url->c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(source.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK)
    return common::Unavailable(fmt::format("control-plane {} unreachable: {}",
                                           *source.control_plane_url, curl_easy_strerror(rc)));
  if (status != 200)
    return common::Unavailable(
        fmt::format("control-plane {} answered HTTP {}", *source.control_plane_url, status));
  return ParseVerdict(body, now);
}

common::Status RefreshLicense(store::Database& db, const LicenseSource& source) {
  auto verdict = FetchVerdict(source, common::Clock::now());
  if (!verdict.ok()) return verdict.status();
  return db.Transact([&](pqxx::work& tx) {
    runtime::LicenseRepository::Store(tx, *verdict);
    return common::Status::Ok();
  });
}

}  // namespace sluice::orchestrator
