#include "kafka/client_config.h"

#include <algorithm>
#include <cerrno>
#include <optional>

#include <sys/socket.h>

#include <fmt/format.h>
#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

namespace sluice::kafka {

using common::InvalidArgument;
using common::Result;

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

template <typename T>
common::Status Get(const nlohmann::json& j, const char* key, T* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  try {
    *out = it->get<T>();
  } catch (const std::exception&) {
    return InvalidArgument(fmt::format("retention_configuration.{} has the wrong type", key));
  }
  return {};
}

std::optional<ClientConfig>& OwnBrokerIdentity() {
  static std::optional<ClientConfig> identity;
  return identity;
}

ConnectCheck& ProcessConnectCheck() {
  static ConnectCheck check;
  return check;
}

// librdkafka's connect_cb: called on its broker thread with a non-blocking
// socket; 0 means connected or in progress, anything else is an errno.
int CheckedConnect(int sockfd, const struct sockaddr* address, int address_length,
                   const char* broker_name, void* /*opaque*/) {
  if (const auto& check = ProcessConnectCheck()) {
    auto verdict = check(address, broker_name ? broker_name : "");
    if (!verdict.ok()) {
      spdlog::error("broker connection to {} not opened: {}", broker_name ? broker_name : "?",
                    verdict.message());
      return EACCES;
    }
  }
  if (::connect(sockfd, address, static_cast<socklen_t>(address_length)) == -1 &&
      errno != EINPROGRESS)
    return errno;
  return 0;
}

}  // namespace

void SetConnectCheck(ConnectCheck check) { ProcessConnectCheck() = std::move(check); }

void SetOwnBrokerIdentity(ClientConfig identity) { OwnBrokerIdentity() = std::move(identity); }

std::string NormalizedBootstrap(std::string bootstrap) {
  for (std::string alias : {"localhost:", "0.0.0.0:"}) {
    if (bootstrap.rfind(alias, 0) == 0) bootstrap = "127.0.0.1:" + bootstrap.substr(alias.size());
  }
  return bootstrap;
}

Result<ClientConfig> ClientConfig::FromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgument("retention_configuration must be a JSON object");
  ClientConfig c;
  // bootstrap_servers may be "h1:9092,h2:9092" or a list.
  if (auto it = j.find("bootstrap_servers"); it != j.end() && it->is_array()) {
    for (const auto& s : *it) {
      if (!s.is_string())
        return InvalidArgument("retention_configuration.bootstrap_servers: strings only");
      c.bootstrap_servers += (c.bootstrap_servers.empty() ? "" : ",") + s.get<std::string>();
    }
  } else {
    SLUICE_RETURN_IF_ERROR(Get(j, "bootstrap_servers", &c.bootstrap_servers));
  }
  if (c.bootstrap_servers.empty())
    return InvalidArgument("retention_configuration.bootstrap_servers is required");
  SLUICE_RETURN_IF_ERROR(Get(j, "security_protocol", &c.security_protocol));
  c.security_protocol = Lower(c.security_protocol);
  if (c.security_protocol != "plaintext" && c.security_protocol != "ssl" &&
      c.security_protocol != "sasl_plaintext" && c.security_protocol != "sasl_ssl") {
    return InvalidArgument(fmt::format("unknown security_protocol '{}'", c.security_protocol));
  }
  SLUICE_RETURN_IF_ERROR(Get(j, "sasl_mechanism", &c.sasl_mechanism));
  SLUICE_RETURN_IF_ERROR(Get(j, "sasl_username", &c.sasl_username));
  SLUICE_RETURN_IF_ERROR(Get(j, "sasl_password", &c.sasl_password));
  SLUICE_RETURN_IF_ERROR(Get(j, "ssl_ca_pem", &c.ssl_ca_pem));
  SLUICE_RETURN_IF_ERROR(Get(j, "ssl_ca_location", &c.ssl_ca_location));
  SLUICE_RETURN_IF_ERROR(Get(j, "ssl_certificate_pem", &c.ssl_certificate_pem));
  SLUICE_RETURN_IF_ERROR(Get(j, "ssl_certificate_location", &c.ssl_certificate_location));
  SLUICE_RETURN_IF_ERROR(Get(j, "ssl_key_pem", &c.ssl_key_pem));
  SLUICE_RETURN_IF_ERROR(Get(j, "ssl_key_location", &c.ssl_key_location));
  SLUICE_RETURN_IF_ERROR(Get(j, "ssl_key_password", &c.ssl_key_password));
  SLUICE_RETURN_IF_ERROR(Get(j, "retention_ms", &c.retention_ms));
  SLUICE_RETURN_IF_ERROR(Get(j, "retention_bytes", &c.retention_bytes));
  if (auto it = j.find("client_config"); it != j.end() && it->is_object()) {
    for (const auto& [k, v] : it->items())
      c.extra[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  bool sasl = c.security_protocol.rfind("sasl_", 0) == 0;
  if (const auto& own = OwnBrokerIdentity();
      own && !sasl && c.security_protocol == "plaintext" &&
      NormalizedBootstrap(c.bootstrap_servers) == NormalizedBootstrap(own->bootstrap_servers)) {
    c.security_protocol = own->security_protocol;
    c.sasl_mechanism = own->sasl_mechanism;
    c.sasl_username = own->sasl_username;
    c.sasl_password = own->sasl_password;
    // A TLS listener: verified as the process's own clients verify it.
    if (c.ssl_ca_pem.empty() && c.ssl_ca_location.empty()) c.ssl_ca_location = own->ssl_ca_location;
    sasl = true;
  }
  if (sasl && c.sasl_mechanism.empty()) c.sasl_mechanism = "PLAIN";
  if (sasl && c.sasl_username.empty())
    return InvalidArgument("SASL needs sasl_username and sasl_password");
  return c;
}

Result<std::unique_ptr<RdKafka::Conf>> ClientConfig::ToConf(
    const std::map<std::string, std::string>& overrides) const {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::map<std::string, std::string> props = {{"bootstrap.servers", bootstrap_servers},
                                              {"security.protocol", security_protocol}};
  if (security_protocol.rfind("sasl_", 0) == 0) {
    props["sasl.mechanisms"] = sasl_mechanism;
    props["sasl.username"] = sasl_username;
    props["sasl.password"] = sasl_password;
  }
  auto put = [&](const char* name, const std::string& v) {
    if (!v.empty()) props[name] = v;
  };
  put("ssl.ca.pem", ssl_ca_pem);
  put("ssl.ca.location", ssl_ca_location);
  put("ssl.certificate.pem", ssl_certificate_pem);
  put("ssl.certificate.location", ssl_certificate_location);
  put("ssl.key.pem", ssl_key_pem);
  put("ssl.key.location", ssl_key_location);
  put("ssl.key.password", ssl_key_password);
  for (const auto& [k, v] : extra) props[k] = v;
  for (const auto& [k, v] : overrides) props[k] = v;
  std::string err;
  for (const auto& [k, v] : props) {
    if (conf->set(k, v, err) != RdKafka::Conf::CONF_OK) {
      return InvalidArgument(fmt::format("kafka setting {}: {}", k, err));
    }
  }
  if (ProcessConnectCheck()) rd_kafka_conf_set_connect_cb(conf->c_ptr_global(), CheckedConnect);
  return conf;
}

}  // namespace sluice::kafka
