#include "cli/broker_access.h"

#include <sodium.h>

#include <fstream>

namespace sluice::cli {

namespace fs = std::filesystem;

namespace {

std::string RandomSecret() {
  unsigned char bytes[24];
  randombytes_buf(bytes, sizeof bytes);
  std::string out;
  static const char* digits = "0123456789abcdef";
  for (unsigned char b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

}  // namespace

EmbeddedBrokerAccess::EmbeddedBrokerAccess(fs::path acl_file, std::string bootstrap,
                                           std::string tls_ca_file)
    : acl_file_(std::move(acl_file)),
      bootstrap_(std::move(bootstrap)),
      tls_ca_file_(std::move(tls_ca_file)) {}

common::Result<std::unique_ptr<EmbeddedBrokerAccess>> EmbeddedBrokerAccess::Create(
    fs::path acl_file, std::string bootstrap, std::string tls_ca_file) {
  if (sodium_init() < 0) return common::Internal("libsodium did not initialise");
  auto access = std::unique_ptr<EmbeddedBrokerAccess>(
      new EmbeddedBrokerAccess(std::move(acl_file), std::move(bootstrap), std::move(tls_ca_file)));
  std::lock_guard lock(access->mu_);
  // A restarted back end keeps the principals it issued: workers still
  // running (they outlive `serve`) go on authenticating with theirs.
  std::error_code ec;
  if (fs::exists(access->acl_file_, ec)) {
    std::ifstream in(access->acl_file_);
    auto parsed = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    auto table = parsed.is_discarded() ? common::Result<std::shared_ptr<const broker::AclTable>>(
                                             common::InvalidArgument("not JSON"))
                                       : broker::AclTable::FromJson(parsed);
    if (!table.ok())
      return common::InvalidArgument("broker ACL file " + access->acl_file_.string() + ": " +
                                     table.status().message() +
                                     " (fix or remove it; removing it revokes every worker's "
                                     "broker credentials)");
    for (const auto& [principal, password] : (*table)->passwords())
      access->principals_[principal] = {password, *(*table)->GrantOf(principal)};
  }
  auto& backend = access->principals_[kBackendPrincipal];
  if (backend.first.empty()) backend.first = RandomSecret();
  backend.second = broker::Grant{};
  backend.second.admin = true;
  access->backend_password_ = backend.first;
  SLUICE_RETURN_IF_ERROR(access->WriteLocked());
  return access;
}

void InstallBrokerAccess(EmbeddedBrokerAccess& access) {
  kafka::SetOwnBrokerIdentity(access.BackendClient());
  orchestrator::SetBrokerIdentityIssuer([&access](const runtime::Worker& w, const nlohmann::json& b,
                                                  const orchestrator::BrokerGrant& g) {
    return access.IssueWorkerIdentity(w, b, g);
  });
}

std::string EmbeddedBrokerAccess::security_protocol() const {
  return tls_ca_file_.empty() ? "sasl_plaintext" : "sasl_ssl";
}

kafka::ClientConfig EmbeddedBrokerAccess::BackendClient() const {
  kafka::ClientConfig c;
  c.bootstrap_servers = bootstrap_;
  c.security_protocol = security_protocol();
  c.ssl_ca_location = tls_ca_file_;
  c.sasl_mechanism = "PLAIN";
  c.sasl_username = kBackendPrincipal;
  c.sasl_password = backend_password_;
  return c;
}

bool EmbeddedBrokerAccess::Names(const nlohmann::json& broker) const {
  if (!broker.is_object()) return false;
  auto it = broker.find("bootstrap_servers");
  if (it == broker.end()) return false;
  std::string servers;
  if (it->is_string()) {
    servers = it->get<std::string>();
  } else if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
    servers = (*it)[0].get<std::string>();
  }
  return !servers.empty() &&
         kafka::NormalizedBootstrap(servers) == kafka::NormalizedBootstrap(bootstrap_);
}

common::Result<nlohmann::json> EmbeddedBrokerAccess::IssueWorkerIdentity(
    const runtime::Worker& worker, const nlohmann::json& broker,
    const orchestrator::BrokerGrant& grant) {
  if (!Names(broker)) return broker;
  std::string principal = orchestrator::WorkerPrincipal(worker);
  broker::Grant g;
  g.produce = grant.produce;
  g.consume = grant.consume;
  g.groups = grant.groups;
  std::string password;
  {
    std::lock_guard lock(mu_);
    auto& entry = principals_[principal];
    // One password per worker row; a relaunch with a new grant keeps it.
    bool fresh = entry.first.empty();
    if (fresh) entry.first = RandomSecret();
    password = entry.first;
    bool changed = fresh || entry.second.produce != g.produce ||
                   entry.second.consume != g.consume || entry.second.groups != g.groups;
    entry.second = std::move(g);
    if (changed) SLUICE_RETURN_IF_ERROR(WriteLocked());
  }
  nlohmann::json out = broker;
  out["security_protocol"] = security_protocol();
  if (!tls_ca_file_.empty()) out["ssl_ca_location"] = tls_ca_file_;
  out["sasl_mechanism"] = "PLAIN";
  out["sasl_username"] = principal;
  out["sasl_password"] = password;
  return out;
}

common::Status EmbeddedBrokerAccess::WriteLocked() {
  fs::path tmp = acl_file_;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    fs::permissions(tmp, fs::perms::owner_read | fs::perms::owner_write);
    out << broker::AclJson(principals_).dump(2) << "\n";
    out.flush();
    if (!out) return common::Internal("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, acl_file_, ec);
  if (ec) return common::Internal("rename " + tmp.string() + ": " + ec.message());
  return {};
}

}  // namespace sluice::cli
