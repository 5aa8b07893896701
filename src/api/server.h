// The HTTP JSON API: cpp-httplib underneath, our Router on top. Every request
// goes through one dispatch: route lookup, bearer authentication (re-reading
// the user), the handler, and error rendering as {"error":{code,message}}.
//
//   ApiServer server(db, key, keys);
//   server.Start("127.0.0.1", 0);   // port 0: any free port, see port()
//
// A new API area is one Register<Area>Routes(RouteGroup, ApiContext&) listed
// in routes.cc; its routes appear in /api/v1/openapi.json automatically.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "api/context.h"
#include "api/router.h"
#include "auth/secret_key.h"
#include "common/status.h"
#include "common/tls.h"

namespace httplib {
class Server;
}

namespace sluice::api {

class ApiServer {
 public:
  ApiServer(store::Database& db, auth::SecretKey key, secrets::KeyRing keys,
            ApiOptions options = {});
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Routes may be added until Start.
  Router& router() { return router_; }
  // Serve the web UI's files (see static_files.h) for GETs outside /api/;
  // nullopt dir: a page saying how to build it. Call before Start.
  void ServeUi(std::optional<std::string> dir) {
    serve_ui_ = true;
    ui_dir_ = std::move(dir);
  }
  ApiContext& context() { return ctx_; }

  // Binds and serves on a background thread; returns once accepting. With
  // `tls` enabled it serves HTTPS only; a bad certificate or key is the error.
  common::Status Start(const std::string& host, int port, const common::TlsFiles& tls = {});
  int port() const { return port_; }
  void Stop();

 private:
  void Dispatch(const httplib::Request& req, httplib::Response& res);

  store::Database& db_;
  ApiOptions options_;
  auth::TokenSigner signer_;
  auth::LoginLimiter limiter_;
  secrets::KeyRing keys_;
  ApiContext ctx_;
  Router router_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
  bool serve_ui_ = false;
  std::optional<std::string> ui_dir_;
  int listen_fd_ = -1;  // the listening socket, seen before bind
};

}  // namespace sluice::api
