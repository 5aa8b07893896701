#include "guard/connect_policy.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <mutex>

namespace sluice::guard {

namespace {

constexpr const char* kRefusalPrefix = "refused by the connect policy (";

std::mutex& PolicyMutex() {
  static std::mutex m;
  return m;
}
std::shared_ptr<const ConnectPolicy>& PolicySlot() {
  static std::shared_ptr<const ConnectPolicy> policy = std::make_shared<ConnectPolicy>();
  return policy;
}

// getaddrinfo's answer, TCP only; an address literal answers itself.
common::Result<std::vector<Address>> Resolve(const std::string& host) {
  if (auto literal = Address::Parse(host)) return std::vector<Address>{*literal};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0)
    return common::Unavailable(fmt::format("{} does not resolve: {}", host, gai_strerror(rc)));
  std::vector<Address> out;
  for (addrinfo* i = found; i; i = i->ai_next) {
    auto a = Address::FromSockaddr(i->ai_addr);
    if (a && std::find(out.begin(), out.end(), *a) == out.end()) out.push_back(*a);
  }
  freeaddrinfo(found);
  if (out.empty()) return common::Unavailable(fmt::format("{} has no IP address", host));
  return out;
}

bool Reaches(const ProtectedEndpoint& e, const Address& a, int port) {
  if (port != e.port) return false;
  if (std::find(e.addresses.begin(), e.addresses.end(), a) != e.addresses.end()) return true;
  return e.any_local && IsLocalAddress(a);
}

}  // namespace

const char* const kDefaultDenied[2] = {"169.254.0.0/16", "fe80::/10"};

ProtectedEndpoint ProtectedEndpoint::Make(std::string rule, std::string what,
                                          const std::string& host, int port,
                                          std::optional<std::string> database) {
  ProtectedEndpoint e{std::move(rule), std::move(what), {}, false, port, std::move(database)};
  if (host.empty() || host == "*") {
    e.any_local = true;
    return e;
  }
  auto addresses = Resolve(host);
  if (addresses.ok()) e.addresses = *addresses;
  for (const auto& a : e.addresses) e.any_local = e.any_local || IsLocalAddress(a);
  // A name that does not resolve here is most likely this machine's own.
  if (e.addresses.empty()) e.any_local = true;
  return e;
}

std::string Destination::Shown() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return database ? fmt::format("{}:{}/{}", h, port, *database) : fmt::format("{}:{}", h, port);
}

ConnectPolicy::ConnectPolicy() {
  for (const char* block : kDefaultDenied) deny_.push_back(*Cidr::Parse(block));
}

common::Result<ConnectPolicy> ConnectPolicy::FromLists(const std::vector<std::string>& allow,
                                                       const std::vector<std::string>& deny) {
  ConnectPolicy p;
  for (const auto& text : allow) {
    auto c = Cidr::Parse(text);
    if (!c.ok()) return common::InvalidArgument("--connect-allow " + c.status().message());
    p.allow_.push_back(*c);
  }
  for (const auto& text : deny) {
    auto c = Cidr::Parse(text);
    if (!c.ok()) return common::InvalidArgument("--connect-deny " + c.status().message());
    p.deny_.push_back(*c);
  }
  return p;
}

void ConnectPolicy::Protect(ProtectedEndpoint endpoint) {
  for (const auto& e : protected_)
    if (e.rule == endpoint.rule && e.port == endpoint.port && e.database == endpoint.database &&
        e.any_local == endpoint.any_local && e.addresses == endpoint.addresses)
      return;  // protected already
  protected_.push_back(std::move(endpoint));
}

common::Status ConnectPolicy::CheckAddress(const Address& address, const Destination& d) const {
  std::string where = d.Shown();
  if (address.ToString() != d.host) where += fmt::format(" ({})", address.ToString());
  for (const auto& e : protected_) {
    if (!Reaches(e, address, d.port)) continue;
    if (e.database && d.database != e.database) continue;
    return Refused(e.rule,
                   fmt::format("{} is {}; a team's connection may not reach it", where, e.what));
  }
  if (address.IsUnspecified())
    return Refused("unspecified-address", fmt::format("{} names no host", where));
  for (const auto& c : deny_)
    if (c.Contains(address))
      return Refused("connect-deny",
                     fmt::format("{} is in the denied block {}", where, c.ToString()));
  if (!allow_.empty() && std::none_of(allow_.begin(), allow_.end(),
                                      [&](const Cidr& c) { return c.Contains(address); }))
    return Refused("connect-allow", fmt::format("{} is outside every allowed block", where));
  return common::Status::Ok();
}

nlohmann::json ConnectPolicy::ToJson() const {
  auto blocks = [](const std::vector<Cidr>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& c : list) out.push_back(c.ToString());
    return out;
  };
  nlohmann::json endpoints = nlohmann::json::array();
  for (const auto& e : protected_) {
    nlohmann::json addresses = nlohmann::json::array();
    for (const auto& a : e.addresses) addresses.push_back(a.ToString());
    nlohmann::json j = {{"rule", e.rule},
                        {"what", e.what},
                        {"addresses", addresses},
                        {"any_local", e.any_local},
                        {"port", e.port}};
    if (e.database) j["database"] = *e.database;
    endpoints.push_back(std::move(j));
  }
  return {{"allow", blocks(allow_)}, {"deny", blocks(deny_)}, {"protected", endpoints}};
}

common::Result<ConnectPolicy> ConnectPolicy::FromJson(const nlohmann::json& j) {
  if (!j.is_object()) return common::InvalidArgument("connect_policy: must be an object");
  try {
    ConnectPolicy p;
    p.deny_.clear();
    for (const auto& [field, list] : {std::pair{"allow", &p.allow_}, std::pair{"deny", &p.deny_}})
      for (const auto& text : j.value(field, nlohmann::json::array())) {
        auto c = Cidr::Parse(text.get<std::string>());
        if (!c.ok()) return common::InvalidArgument("connect_policy: " + c.status().message());
        list->push_back(*c);
      }
    // The defaults hold whatever the launch says.
    for (const char* block : kDefaultDenied) {
      auto c = *Cidr::Parse(block);
      if (std::none_of(p.deny_.begin(), p.deny_.end(),
                       [&](const Cidr& d) { return d.ToString() == c.ToString(); }))
        p.deny_.push_back(c);
    }
    for (const auto& e : j.value("protected", nlohmann::json::array())) {
      ProtectedEndpoint pe;
      pe.rule = e.at("rule").get<std::string>();
      pe.what = e.value("what", pe.rule);
      for (const auto& a : e.value("addresses", nlohmann::json::array()))
        if (auto parsed = Address::Parse(a.get<std::string>())) pe.addresses.push_back(*parsed);
      pe.any_local = e.value("any_local", false);
      pe.port = e.at("port").get<int>();
      if (e.contains("database") && e["database"].is_string())
        pe.database = e["database"].get<std::string>();
      p.protected_.push_back(std::move(pe));
    }
    return p;
  } catch (const nlohmann::json::exception& e) {
    return common::InvalidArgument(fmt::format("connect_policy: {}", e.what()));
  }
}

common::Status Refused(const std::string& rule, const std::string& why) {
  return common::InvalidArgument(kRefusalPrefix + rule + "): " + why);
}

bool IsRefusal(const common::Status& status) {
  return status.code() == common::Code::kInvalidArgument &&
         status.message().rfind(kRefusalPrefix, 0) == 0;
}

common::Result<std::vector<Address>> ResolveChecked(const ConnectPolicy& policy,
                                                    const Destination& d) {
  if (d.host.empty()) return Refused("no-host", "a connection needs a host name or address");
  if (d.port <= 0 || d.port > 65535)
    return Refused("no-port", fmt::format("{}: the port is out of range", d.Shown()));
  auto addresses = Resolve(d.host);
  if (!addresses.ok()) return addresses.status();
  for (const auto& a : *addresses) SLUICE_RETURN_IF_ERROR(policy.CheckAddress(a, d));
  return addresses;
}

common::Status CheckConfigured(const ConnectPolicy& policy, const Destination& d) {
  auto checked = ResolveChecked(policy, d);
  if (checked.ok() || checked.status().code() == common::Code::kUnavailable)
    return common::Status::Ok();
  return checked.status();
}

common::Status CheckBootstrap(const ConnectPolicy& policy, const std::string& bootstrap,
                              bool resolve) {
  std::size_t start = 0;
  while (start < bootstrap.size()) {
    auto end = bootstrap.find(',', start);
    if (end == std::string::npos) end = bootstrap.size();
    std::string server = bootstrap.substr(start, end - start);
    start = end + 1;
    while (!server.empty() && server.front() == ' ') server.erase(0, 1);
    while (!server.empty() && server.back() == ' ') server.pop_back();
    if (server.empty()) continue;
    // An optional PROTOCOL:// prefix (SASL_SSL://host:9093).
    if (auto scheme = server.find("://"); scheme != std::string::npos)
      server = server.substr(scheme + 3);
    auto colon = server.rfind(':');
    Destination d;
    d.host = colon == std::string::npos ? server : server.substr(0, colon);
    std::string port = colon == std::string::npos ? "9092" : server.substr(colon + 1);
    if (d.host.size() >= 2 && d.host.front() == '[' && d.host.back() == ']')
      d.host = d.host.substr(1, d.host.size() - 2);
    if (port.empty() || port.size() > 5 ||
        port.find_first_not_of("0123456789") != std::string::npos)
      return Refused("no-port", fmt::format("{}: the port is not a number", server));
    d.port = std::stoi(port);
    if (resolve) {
      auto checked = ResolveChecked(policy, d);
      if (!checked.ok()) return checked.status();
    } else {
      SLUICE_RETURN_IF_ERROR(CheckConfigured(policy, d));
    }
  }
  return common::Status::Ok();
}

common::Status CheckResolvedBroker(const ConnectPolicy& policy, const sockaddr* address,
                                   const std::string& broker_name) {
  auto a = Address::FromSockaddr(address);
  if (!a) return Refused("no-host", broker_name + ": not an IPv4 or IPv6 address");
  // The port is the socket's own, whatever the name says.
  Destination d;
  auto colon = broker_name.rfind(':');
  d.host = colon == std::string::npos ? broker_name : broker_name.substr(0, colon);
  if (address->sa_family == AF_INET)
    d.port = ntohs(reinterpret_cast<const sockaddr_in*>(address)->sin_port);
  else
    d.port = ntohs(reinterpret_cast<const sockaddr_in6*>(address)->sin6_port);
  return policy.CheckAddress(*a, d);
}

std::shared_ptr<const ConnectPolicy> ProcessPolicy() {
  std::lock_guard lock(PolicyMutex());
  return PolicySlot();
}

void SetProcessPolicy(ConnectPolicy policy) {
  std::lock_guard lock(PolicyMutex());
  // Endpoints protected before the operator's lists were read stay protected.
  for (const auto& e : PolicySlot()->protected_endpoints()) policy.Protect(e);
  PolicySlot() = std::make_shared<const ConnectPolicy>(std::move(policy));
}

void ProtectInProcess(ProtectedEndpoint endpoint) {
  std::lock_guard lock(PolicyMutex());
  auto next = std::make_shared<ConnectPolicy>(*PolicySlot());
  next->Protect(std::move(endpoint));
  PolicySlot() = std::move(next);
}

}  // namespace sluice::guard
