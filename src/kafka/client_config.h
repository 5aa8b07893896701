// Kafka CLIENT side (librdkafka), not the broker (that is src/broker/).
// How Sluice reaches a Kafka cluster (the embedded broker or a real one):
// parsed from env.retention_configuration and turned into librdkafka settings.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include <sys/socket.h>

#include <librdkafka/rdkafkacpp.h>
#include <nlohmann/json.hpp>

#include "common/status.h"

namespace sluice::kafka {

struct ClientConfig {
  std::string bootstrap_servers;
  std::string security_protocol = "plaintext";  // plaintext | ssl | sasl_plaintext | sasl_ssl
  std::string sasl_mechanism;                   // PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
  std::string sasl_username;
  std::string sasl_password;
  // TLS: PEM text or file locations; whichever the configuration carries.
  std::string ssl_ca_pem, ssl_ca_location;
  std::string ssl_certificate_pem, ssl_certificate_location;
  std::string ssl_key_pem, ssl_key_location, ssl_key_password;
  // Topic defaults the environment asks for (-1: broker default).
  std::int64_t retention_ms = -1;
  std::int64_t retention_bytes = -1;
  // Raw librdkafka properties, applied last (escape hatch, e.g. "client.id").
  std::map<std::string, std::string> extra;

  // Accepts the JSON of env.retention_configuration. Unknown keys are ignored
  // (the column also carries settings for others); a bad type is an error.
  static common::Result<ClientConfig> FromJson(const nlohmann::json& j);

  // A librdkafka configuration with these settings plus `overrides`.
  common::Result<std::unique_ptr<RdKafka::Conf>> ToConf(
      const std::map<std::string, std::string>& overrides) const;
};

// Process-wide: the identity this process has on a broker it runs itself
// (`sluice up`'s back end is that broker's admin). FromJson gives it to
// settings naming that broker (same bootstrap) without SASL of their own.
void SetOwnBrokerIdentity(ClientConfig identity);
// Process-wide: every broker connection the clients of this process open,
// to the bootstrap servers and to every broker the cluster's metadata
// advertises, is first shown to `check` with the address it resolved to and
// the broker's "host:port" name. A refused connection fails as if the
// broker were unreachable (EACCES), and the refusal is logged. A worker sets
// this from its connect policy, so a name that resolves elsewhere later, or
// a cluster that advertises another address, gains nothing.
using ConnectCheck =
    std::function<common::Status(const struct sockaddr* address, const std::string& broker_name)>;
void SetConnectCheck(ConnectCheck check);

// "localhost:9092", "0.0.0.0:9092" and "127.0.0.1:9092" are one address.
std::string NormalizedBootstrap(std::string bootstrap);

}  // namespace sluice::kafka
