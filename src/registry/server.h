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
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "common/status.h"
#include "registry/repository.h"
#include "store/database.h"

namespace httplib {
class Server;
}

namespace sluice::registry {

class RegistryServer {
 public:
  explicit RegistryServer(store::Database& db);
  ~RegistryServer();
  RegistryServer(const RegistryServer&) = delete;
  RegistryServer& operator=(const RegistryServer&) = delete;

  // Creates the registry's tables if needed, binds, and serves on a
  // background thread. Port 0 picks a free port (see port()).
  common::Status Start(const std::string& host, int port);
  int port() const { return port_; }
  // Stops serving and joins the thread; safe to call twice.
  void Stop();

 private:
  void Route();

  SchemaRepository repo_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace sluice::registry
