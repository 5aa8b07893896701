// The connect policy: where a connection opened on a team's behalf (a
// connector, a warehouse, a backfill loader, the HTTP target, an env's
// broker bootstrap) may go. Independently of any credentials, it may not
// reach the data-plane's own control database (same server and database),
// its API or its schema registry, nor an address the operator denies
// (--connect-deny; link-local metadata addresses always), nor, when the
// operator gave an allow list (--connect-allow), an address outside it.
//
// A refusal is an InvalidArgument (the API's 422) whose message starts with
// "refused by the connect policy (<rule>)". The check is made when a
// configuration is saved and again at connect time: a name is resolved once,
// every address it resolves to is checked, and the connection is then made
// to a checked address (see postgres_conninfo.h, http_destination.h), so a
// name that resolves differently the second time gains nothing.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "guard/address.h"

namespace sluice::guard {

// A server of the data plane's own that no team's connection may reach.
struct ProtectedEndpoint {
  std::string rule;  // named in the refusal: control-database, api, registry
  std::string what;  // "the data-plane's control database"
  std::vector<Address> addresses;
  // Listening on this machine (loopback, all interfaces, or a local
  // address): every local address with this port reaches it.
  bool any_local = false;
  int port = 0;
  // Only this database on that server (the control database); nullopt: the
  // whole endpoint (the API, the registry).
  std::optional<std::string> database;

  // Resolves `host` ("0.0.0.0", "::" and "" mean every local address).
  static ProtectedEndpoint Make(std::string rule, std::string what, const std::string& host,
                                int port, std::optional<std::string> database = std::nullopt);
};

// Where a connection goes: a host name or address, its port and, for
// PostgreSQL, the database it opens.
struct Destination {
  std::string host;
  int port = 0;
  std::optional<std::string> database;
  std::string Shown() const;  // host:port[/database]
};

// Link-local addresses, where cloud metadata services answer: always denied.
extern const char* const kDefaultDenied[2];

class ConnectPolicy {
 public:
  ConnectPolicy();  // the default denies only (kDefaultDenied)
  // Operator lists of CIDR blocks or single addresses. An address in a deny
  // block is refused; with a non-empty allow list, so is one outside every
  // allow block. Denies (the defaults included) win over allows.
  static common::Result<ConnectPolicy> FromLists(const std::vector<std::string>& allow,
                                                 const std::vector<std::string>& deny);

  void Protect(ProtectedEndpoint endpoint);

  // The rule `address` (one that `d.host` resolved to) breaks, if any.
  common::Status CheckAddress(const Address& address, const Destination& d) const;

  // What a worker or loader is launched with, so its connect-time check is
  // serve's. FromJson of ToJson is the same policy.
  nlohmann::json ToJson() const;
  static common::Result<ConnectPolicy> FromJson(const nlohmann::json& j);

  const std::vector<Cidr>& allow() const { return allow_; }
  const std::vector<Cidr>& deny() const { return deny_; }
  const std::vector<ProtectedEndpoint>& protected_endpoints() const { return protected_; }

 private:
  std::vector<Cidr> allow_, deny_;
  std::vector<ProtectedEndpoint> protected_;
};

// The refusal every check returns: InvalidArgument, naming the rule.
common::Status Refused(const std::string& rule, const std::string& why);
// Whether `status` is such a refusal (a configuration error, never retried).
bool IsRefusal(const common::Status& status);

// Resolves `d.host` once and checks every address it resolves to; the
// addresses come back in getaddrinfo's order, for the caller to connect to.
// Unavailable when the name does not resolve.
common::Result<std::vector<Address>> ResolveChecked(const ConnectPolicy& policy,
                                                    const Destination& d);

// When a configuration is saved: ResolveChecked, except that a name which
// does not resolve (yet) passes; connect time checks it again.
common::Status CheckConfigured(const ConnectPolicy& policy, const Destination& d);

// A Kafka bootstrap list ("host:port,[v6]:port"): each broker checked, as
// CheckConfigured (saving) or ResolveChecked (connect time, `resolve`).
common::Status CheckBootstrap(const ConnectPolicy& policy, const std::string& bootstrap,
                              bool resolve);

// At connect time, for a client library that resolves names itself (the
// Kafka client): the address `broker_name` ("host:port") resolved to,
// checked as ResolveChecked checks each of its addresses.
common::Status CheckResolvedBroker(const ConnectPolicy& policy, const sockaddr* address,
                                   const std::string& broker_name);

// The policy of this process: `serve`/`up` set it from their flags and
// protect their own endpoints; a worker or loader sets the one it was
// launched with. Until set, ConnectPolicy().
std::shared_ptr<const ConnectPolicy> ProcessPolicy();
void SetProcessPolicy(ConnectPolicy policy);
// Adds an endpoint to the process policy (the API and the control database
// when an ApiServer starts, the registry when it does).
void ProtectInProcess(ProtectedEndpoint endpoint);

}  // namespace sluice::guard
