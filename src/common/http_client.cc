#include "common/http_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <cctype>
#include <memory>

namespace sluice::common {

namespace {

size_t Collect(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

// One response header line "Name: value" into reply->headers (a status
// line or the blank line ending the block has no colon and is skipped).
size_t CollectHeader(char* data, size_t size, size_t count, void* out) {
  std::string line(data, size * count);
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    auto begin = line.find_first_not_of(" \t", colon + 1);
    auto end = line.find_last_not_of(" \t\r\n");
    static_cast<HttpReply*>(out)->headers[name] = begin == std::string::npos || end < begin
                                                      ? std::string()
                                                      : line.substr(begin, end - begin + 1);
  }
  return size * count;
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct HeaderListDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

}  // namespace

Result<HttpReply> SendHttp(const HttpRequest& request) {
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return Unavailable("curl_easy_init failed");
  curl_slist* raw_headers = nullptr;
  for (const auto& h : request.headers) raw_headers = curl_slist_append(raw_headers, h.c_str());
  std::unique_ptr<curl_slist, HeaderListDeleter> headers(raw_headers);
  HttpReply reply;
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (!request.body.empty() || request.method != "GET") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(request.body.size()));
  }
  std::unique_ptr<curl_slist, HeaderListDeleter> resolve;
  if (!request.pinned_resolve.empty()) {
    resolve.reset(curl_slist_append(nullptr, request.pinned_resolve.c_str()));
    curl_easy_setopt(c, CURLOPT_RESOLVE, resolve.get());
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROXY, "");
  }
  if (!request.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, request.ca_file.c_str());
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  // Signals would interrupt other threads' work; the timeout does the job.
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, CollectHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &reply);
  CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK)
    return Unavailable(
        fmt::format("{} {}: {}", request.method, request.url, curl_easy_strerror(rc)));
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
  return reply;
}

std::string BearerHeader(const std::string& token) { return "Authorization: Bearer " + token; }

}  // namespace sluice::common
