// One blocking HTTP request through libcurl. The back end's own clients (the
// worker protocol, the control-plane's license verdicts, the Kubernetes API
// server) all need the same small thing: a method, headers, a body, a
// deadline, and the status and body back.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::common {

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;                  // sent when non-empty or when method is not GET
  std::chrono::milliseconds timeout{10'000};
  std::string ca_file;  // PEM bundle to verify the server with; empty: the system's
  // A team's destination (guard/http_destination.h): "host:port:address",
  // the checked address the connection must use (CURLOPT_RESOLVE). When
  // set, only http and https are spoken, no redirect is followed and no
  // proxy from the environment is used.
  std::string pinned_resolve;
};

struct HttpReply {
  long status = 0;
  std::string body;
  // Response headers, names lower-cased, values trimmed (the last of a repeated name).
  std::map<std::string, std::string> headers;
  bool ok() const { return status >= 200 && status < 300; }
  // A header's value, or empty; `name` lower-case.
  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// Unavailable when no answer came (connection refused, timeout, TLS); any
// HTTP status, 5xx included, is a reply for the caller to judge.
Result<HttpReply> SendHttp(const HttpRequest& request);

// "Authorization: Bearer <token>".
std::string BearerHeader(const std::string& token);

}  // namespace sluice::common
