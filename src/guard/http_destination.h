// The HTTP side of the connect policy. A team's HTTP destination (the HTTP
// target's url, a Databricks warehouse's host) speaks http or https only;
// file://, gopher://, ftp:// and the rest are refused. PinHttp resolves the
// host once, checks every address and hands back what curl needs to
// connect to the checked address (CURLOPT_RESOLVE), with the protocols
// limited to http and https and no redirect followed.
#pragma once

#include <string>

#include "common/status.h"
#include "guard/connect_policy.h"

namespace sluice::guard {

struct HttpDestination {
  std::string scheme;  // http | https
  Destination where;
};

// Refused unless the url is absolute http(s) with a host.
common::Result<HttpDestination> ParseHttpUrl(const std::string& url);

// When a configuration is saved (see CheckConfigured).
common::Status CheckHttp(const ConnectPolicy& policy, const std::string& url);

struct PinnedHttp {
  std::string resolve;  // "host:port:address", for CURLOPT_RESOLVE
};
common::Result<PinnedHttp> PinHttp(const ConnectPolicy& policy, const std::string& url);

}  // namespace sluice::guard
