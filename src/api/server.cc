#include "api/server.h"

#include <sys/socket.h>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <pqxx/pqxx>

#include "api/authenticate.h"
#include "api/routes.h"
#include "api/static_files.h"

namespace sluice::api {

ApiServer::ApiServer(store::Database& db, auth::SecretKey key, ApiOptions options)
    : db_(db),
      options_(options),
      signer_(std::move(key)),
      limiter_(options_.login_max_failures, options_.login_failure_window),
      ctx_{db_, signer_, limiter_, options_} {
  RegisterBuiltinRoutes(router_, ctx_);
}

ApiServer::~ApiServer() { Stop(); }

namespace {

void Render(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  if (status == 204) return;
  res.set_content(body.dump(), "application/json");
}

void RenderError(httplib::Response& res, int status, const std::string& code,
                 const std::string& message) {
  Render(res, status, ErrorBody(code, message));
}

}  // namespace

void ApiServer::Dispatch(const httplib::Request& raw, httplib::Response& res) {
  auto match = router_.Find(raw.method, raw.path);
  if (!match.route) {
    if (serve_ui_ && (raw.method == "GET" || raw.method == "HEAD") && raw.path != "/api" &&
        raw.path.rfind("/api/", 0) != 0) {
      UiAnswer ui = AnswerUiPath(ui_dir_, raw.path);
      res.status = ui.status;
      res.set_header("Cache-Control",
                     ui.immutable ? "public, max-age=31536000, immutable" : "no-cache");
      res.set_content(std::move(ui.body), ui.content_type);
      return;
    }
    if (match.path_exists) return RenderError(res, 405, "method_not_allowed", "method not allowed");
    return RenderError(res, 404, "not_found", "no such endpoint: " + raw.path);
  }
  Request req{raw, std::move(match.params), std::nullopt};
  try {
    if (match.route->access == Access::kAuthenticated) {
      auto principal = Authenticate(ctx_, raw.get_header_value("Authorization"));
      if (!principal.ok()) {
        res.set_header("WWW-Authenticate", "Bearer");
        return RenderError(res, 401, "unauthenticated", principal.status().message());
      }
      req.principal = std::move(*principal);
    } else if (match.route->access == Access::kWorker) {
      auto pod = AuthenticatePod(ctx_, raw.get_header_value("Authorization"));
      if (!pod.ok()) {
        res.set_header("WWW-Authenticate", "Bearer");
        return RenderError(res, 401, "unauthenticated", pod.status().message());
      }
      req.pod = *pod;
    }
    Response out = match.route->handler(req);
    if (!out.content_type.empty()) {
      res.status = out.status;
      res.set_content(out.text, out.content_type);
      return;
    }
    Render(res, out.status, out.body);
  } catch (const ApiError& e) {
    RenderError(res, e.http_status(), e.code(), e.what());
  } catch (const pqxx::foreign_key_violation& e) {
    // E.g. deleting a team that still owns connectors: the caller's to fix.
    RenderError(res, 409, "still_referenced",
                "other things still refer to it; delete or move them first");
  } catch (const pqxx::broken_connection& e) {
    spdlog::error("{} {}: database unreachable: {}", raw.method, raw.path, e.what());
    RenderError(res, 503, "unavailable", "database unavailable");
  } catch (const std::exception& e) {
    spdlog::error("{} {}: {}", raw.method, raw.path, e.what());
    RenderError(res, 500, "internal", "internal error");
  }
}

common::Status ApiServer::Start(const std::string& host, int port) {
  if (http_) return common::FailedPrecondition("server already started");
  http_ = std::make_unique<httplib::Server>();
  http_->set_payload_max_length(4 << 20);
  // Hundreds of clients (the UI, the CLI, every worker's heartbeat) keep
  // connections open; each open connection holds a pool thread while it
  // lives, so the pool is wider than the cores, and a connection serves many
  // requests before it is recycled.
  http_->new_task_queue = [] { return new httplib::ThreadPool(64); };
  http_->set_keep_alive_max_count(1000);
  // Debian's httplib is a compiled library that listens with a backlog of 5,
  // which resets connections when hundreds of clients connect at once. The
  // socket is ours to see before bind; listening on it again after bind
  // raises the backlog (Linux allows it).
  http_->set_socket_options([this](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd_ = sock;
  });
  // One catch-all per method; httplib reads the body before calling it, and
  // our Router does the matching (so 404 and 405 render as JSON errors).
  auto dispatch = [this](const httplib::Request& req, httplib::Response& res) {
    Dispatch(req, res);
  };
  http_->Get(".*", dispatch);
  http_->Post(".*", dispatch);
  http_->Put(".*", dispatch);
  http_->Patch(".*", dispatch);
  http_->Delete(".*", dispatch);
  http_->Options(".*", dispatch);
  if (port == 0) {
    port_ = http_->bind_to_any_port(host);
    if (port_ <= 0) return common::Unavailable("cannot bind " + host + ":0");
  } else {
    if (!http_->bind_to_port(host, port)) {
      return common::Unavailable("cannot bind " + host + ":" + std::to_string(port));
    }
    port_ = port;
  }
  if (listen_fd_ >= 0) ::listen(listen_fd_, 1024);
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  // listen_after_bind sets is_running once its accept loop starts.
  for (int i = 0; i < 5000 && !http_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  spdlog::info("API listening on http://{}:{}{}", host, port_, kApiPrefix);
  return common::Status::Ok();
}

void ApiServer::Stop() {
  if (!http_) return;
  http_->stop();
  if (thread_.joinable()) thread_.join();
  http_.reset();
}

}  // namespace sluice::api
