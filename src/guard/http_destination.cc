#include "guard/http_destination.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <memory>

namespace sluice::guard {

namespace {

struct UrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};

std::string Part(CURLU* u, CURLUPart part) {
  char* text = nullptr;
  if (curl_url_get(u, part, &text, part == CURLUPART_PORT ? CURLU_DEFAULT_PORT : 0) != CURLUE_OK)
    return "";
  std::string out = text ? text : "";
  curl_free(text);
  return out;
}

}  // namespace

common::Result<HttpDestination> ParseHttpUrl(const std::string& url) {
  std::unique_ptr<CURLU, UrlDeleter> u(curl_url());
  if (!u) return common::Internal("curl_url failed");
  // No guessing of a scheme: "example.com/x" is refused, not made http.
  if (curl_url_set(u.get(), CURLUPART_URL, url.c_str(), CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK)
    return Refused("http-only", fmt::format("{} is not an absolute URL", url));
  HttpDestination d;
  d.scheme = Part(u.get(), CURLUPART_SCHEME);
  for (auto& c : d.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (d.scheme != "http" && d.scheme != "https")
    return Refused("http-only",
                   fmt::format("{}: only http and https are spoken, not {}", url, d.scheme));
  d.where.host = Part(u.get(), CURLUPART_HOST);
  if (d.where.host.size() >= 2 && d.where.host.front() == '[')
    d.where.host = d.where.host.substr(1, d.where.host.size() - 2);
  if (d.where.host.empty()) return Refused("http-only", fmt::format("{} names no host", url));
  std::string port = Part(u.get(), CURLUPART_PORT);
  d.where.port = port.empty() ? (d.scheme == "https" ? 443 : 80) : std::stoi(port);
  return d;
}

common::Status CheckHttp(const ConnectPolicy& policy, const std::string& url) {
  auto d = ParseHttpUrl(url);
  if (!d.ok()) return d.status();
  return CheckConfigured(policy, d->where);
}

common::Result<PinnedHttp> PinHttp(const ConnectPolicy& policy, const std::string& url) {
  auto d = ParseHttpUrl(url);
  if (!d.ok()) return d.status();
  auto addresses = ResolveChecked(policy, d->where);
  if (!addresses.ok()) return addresses.status();
  const auto& a = addresses->front();
  std::string host =
      d->where.host.find(':') != std::string::npos ? "[" + d->where.host + "]" : d->where.host;
  std::string address = a.v6 ? "[" + a.ToString() + "]" : a.ToString();
  return PinnedHttp{fmt::format("{}:{}:{}", host, d->where.port, address)};
}

}  // namespace sluice::guard
