// A Confluent Schema Registry compatible REST server over SchemaRepository.
// Speaks application/vnd.schemaregistry.v1+json (application/json accepted)
// and Confluent's error bodies {"error_code": ..., "message": ...}.
//
//   POST   /subjects/{s}/versions              register -> {"id"}
//   POST   /subjects/{s}                       lookup
//   GET    /subjects, /subjects/{s}/versions, /subjects/{s}/versions/{v|latest}[/schema]
//   GET    /schemas/ids/{id}[/schema], /schemas/types
//   DELETE /subjects/{s}[/versions/{v}]        soft; ?permanent=true hard
//   GET/PUT/DELETE /config[/{s}]
//   POST   /compatibility/subjects/{s}/versions/{v|latest}
//
// With a gate, every route but / and /schemas/types needs credentials
// (Bearer, or HTTP Basic with a token as the password); registering,
// deleting and configuring need write access to the subject (gate.h).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"
#include "common/tls.h"
#include "registry/gate.h"
#include "registry/repository.h"
#include "store/database.h"

namespace httplib {
class Server;
}

namespace sluice::registry {

class RegistryServer {
 public:
  // Without a gate every caller may do everything (a registry run alone);
  // `sluice serve` and `sluice up` pass the API's (api/registry_gate.h).
  explicit RegistryServer(store::Database& db, RegistryGate* gate = nullptr);
  // Request bodies past this are refused with 413 before they are read.
  static constexpr std::size_t kMaxBodyBytes = 4 << 20;
  ~RegistryServer();
  RegistryServer(const RegistryServer&) = delete;
  RegistryServer& operator=(const RegistryServer&) = delete;

  // Creates the registry's tables if needed, binds, and serves on a
  // background thread. Port 0 picks a free port (see port()). With `tls`
  // enabled it serves HTTPS only; a bad certificate or key is the error.
  common::Status Start(const std::string& host, int port, const common::TlsFiles& tls = {});
  int port() const { return port_; }
  // Stops serving and joins the thread; safe to call twice.
  void Stop();

 private:
  void Route();

  SchemaRepository repo_;
  RegistryGate* gate_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace sluice::registry
