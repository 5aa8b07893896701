// The embedded broker's principals, as `sluice up` keeps them: the back end
// is an admin; every worker launched against this broker gets a principal of
// its own whose grant is derived from its launch (orchestrator/broker_grants.h).
// They live in an ACL file the broker re-reads when it changes (broker/acl.h),
// written whole and renamed into place, 0600. `sluice serve` keeps the same
// file for a `sluice broker --acl-file` it shares a file system with.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "broker/acl.h"
#include "common/status.h"
#include "kafka/client_config.h"
#include "orchestrator/broker_grants.h"

namespace sluice::cli {

class EmbeddedBrokerAccess {
 public:
  static constexpr const char* kBackendPrincipal = "sluice-backend";

  // Writes `acl_file` with a back-end principal, keeping the principals
  // (and the back-end password) an existing file holds; `bootstrap` is the
  // broker's HOST:PORT as envs name it. `tls_ca_file` set: the broker
  // speaks TLS (its --tls-cert), and its clients verify it with this file.
  static common::Result<std::unique_ptr<EmbeddedBrokerAccess>> Create(
      std::filesystem::path acl_file, std::string bootstrap, std::string tls_ca_file = "");

  const std::filesystem::path& acl_file() const { return acl_file_; }
  // A client of this broker as the back end.
  kafka::ClientConfig BackendClient() const;

  // For orchestrator::SetBrokerIdentityIssuer: a worker whose env names this
  // broker connects as its own principal with `grant`; any other broker's
  // settings pass through unchanged.
  common::Result<nlohmann::json> IssueWorkerIdentity(const runtime::Worker& worker,
                                                     const nlohmann::json& broker,
                                                     const orchestrator::BrokerGrant& grant);

  // Whether an env's broker settings name this broker.
  bool Names(const nlohmann::json& broker) const;

 private:
  EmbeddedBrokerAccess(std::filesystem::path acl_file, std::string bootstrap,
                       std::string tls_ca_file);
  common::Status WriteLocked();
  // sasl_ssl with the CA, or sasl_plaintext.
  std::string security_protocol() const;

  std::filesystem::path acl_file_;
  std::string bootstrap_;
  std::string tls_ca_file_;
  std::string backend_password_;
  std::mutex mu_;
  std::map<std::string, std::pair<std::string, broker::Grant>> principals_;
};

// This process's own broker identity and the issuer of its workers'
// identities, from `access` (which must outlive every launch).
void InstallBrokerAccess(EmbeddedBrokerAccess& access);

}  // namespace sluice::cli
