#include "license/license_refresher.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/http_client.h"
#include "license/license_repository.h"

namespace sluice::license {

common::Result<license::LicenseVerdict> ParseVerdict(const std::string& body,
                                                     common::TimePoint now) {
  auto json = nlohmann::json::parse(body, nullptr, false);
  if (!json.is_object()) return common::InvalidArgument("license verdict is not a JSON object");
  auto active = json.contains("license_active") ? json["license_active"] : json["active"];
  if (!active.is_boolean())
    return common::InvalidArgument("license verdict has no boolean license_active");
  license::LicenseVerdict v;
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

common::Result<license::LicenseVerdict> FetchVerdict(const LicenseSource& source,
                                                     common::TimePoint now) {
  if (!source.control_plane_url) return license::CommunityVerdict(now);
  common::HttpRequest request;
  request.url = *source.control_plane_url;
  request.headers = {"Accept: application/json"};
  if (!source.bearer_token.empty())
    request.headers.push_back(common::BearerHeader(source.bearer_token));
  request.timeout = source.timeout;
  auto reply = common::SendHttp(request);
  if (!reply.ok())
    return common::Unavailable(
        fmt::format("control-plane unreachable: {}", reply.status().message()));
  if (reply->status != 200)
    return common::Unavailable(
        fmt::format("control-plane {} answered HTTP {}", *source.control_plane_url, reply->status));
  return ParseVerdict(reply->body, now);
}

common::Status RefreshLicense(store::Database& db, const LicenseSource& source) {
  auto verdict = FetchVerdict(source, common::Clock::now());
  if (!verdict.ok()) return verdict.status();
  return db.Transact([&](pqxx::work& tx) {
    license::LicenseRepository::Store(tx, *verdict);
    return common::Status::Ok();
  });
}

}  // namespace sluice::license
