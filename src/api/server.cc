#include "api/server.h"

#include <sys/socket.h>

#include <utility>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <pqxx/pqxx>

#include "api/authenticate.h"
#include "api/routes.h"
#include "api/static_files.h"
#include "guard/connect_policy.h"
#include "guard/postgres_conninfo.h"

namespace sluice::api {

ApiServer::ApiServer(store::Database& db, auth::SecretKey key, secrets::KeyRing keys,
                     ApiOptions options)
    : db_(db),
      options_(options),
      signer_(std::move(key)),
      limiter_({options_.login_max_failures, options_.login_failure_window,
                options_.login_max_tracked, options_.login_max_concurrent_verifications}),
      keys_(std::move(keys)),
      ctx_{db_, signer_, limiter_, options_, keys_} {
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

// Every answer is JSON (or a UI file with its own type): no browser may
// guess another type from the bytes.
void SetNoSniff(httplib::Response& res) {
  if (!res.has_header("X-Content-Type-Options"))
    res.set_header("X-Content-Type-Options", "nosniff");
}

// The UI is the bundle it was built as: scripts, styles and calls from this
// origin only, and never inside another site's frame (clickjacking).
// 'unsafe-inline' styles: React's style props and the "not built" page.
constexpr const char* kUiContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; "
    "base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

// The code and message of a 4xx/5xx cpp-httplib answers by itself, before
// any handler ran (a request it could not read, a body over the limit).
std::pair<const char*, const char*> HttpLibError(int status) {
  switch (status) {
    case 400:
      return {"bad_request", "the request could not be read as HTTP"};
    case 404:
      return {"not_found", "no such endpoint"};
    case 405:
      return {"method_not_allowed", "method not allowed"};
    case 413:
      return {"payload_too_large", "request body exceeds the limit of 4 MiB"};
    case 414:
      return {"uri_too_long", "request line is too long"};
    case 416:
      return {"range_not_satisfiable", "range not satisfiable"};
    case 431:
      return {"headers_too_large", "request headers are too large"};
    default:
      return {status < 500 ? "bad_request" : "internal",
              status < 500 ? "bad request" : "internal error"};
  }
}

// A POST, PUT, PATCH or DELETE with neither Content-Length nor chunked
// encoding has no body (RFC 9112 6.3); cpp-httplib would instead read
// until the client closes, so `curl -X POST` waited and got an empty 400.
bool HasNoBody(const httplib::Request& req) {
  if (req.method != "POST" && req.method != "PUT" && req.method != "PATCH" &&
      req.method != "DELETE")
    return false;
  return !req.has_header("Content-Length") && !req.has_header("Transfer-Encoding");
}

}  // namespace

void ApiServer::Dispatch(const httplib::Request& raw, httplib::Response& res) {
  SetNoSniff(res);
  auto match = router_.Find(raw.method, raw.path);
  if (!match.route) {
    if (serve_ui_ && (raw.method == "GET" || raw.method == "HEAD") && raw.path != "/api" &&
        raw.path.rfind("/api/", 0) != 0) {
      UiAnswer ui = AnswerUiPath(ui_dir_, raw.path);
      res.status = ui.status;
      res.set_header("Content-Security-Policy", kUiContentSecurityPolicy);
      res.set_header("X-Frame-Options", "DENY");
      res.set_header("Referrer-Policy", "no-referrer");
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

common::Status ApiServer::Start(const std::string& host, int port, const common::TlsFiles& tls) {
  if (http_) return common::FailedPrecondition("server already started");
  if (tls.enabled()) {
    common::Status configured;
    auto https = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
      configured = common::ConfigureServerTls(&ctx, tls);
      return configured.ok();
    });
    if (!configured.ok()) return configured;
    if (!https->is_valid()) return common::Internal("TLS: the HTTPS server did not start");
    http_ = std::move(https);
  } else {
    http_ = std::make_unique<httplib::Server>();
  }
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
  // Runs before cpp-httplib reads a body: a request that has none is
  // answered at once.
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!HasNoBody(req)) return httplib::Server::HandlerResponse::Unhandled;
    Dispatch(req, res);
    return httplib::Server::HandlerResponse::Handled;
  });
  // Every 4xx and 5xx passes here, ours (already with a JSON body) and the
  // ones cpp-httplib gives itself, which get the same JSON error shape.
  http_->set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
        SetNoSniff(res);
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        auto [code, message] = HttpLibError(res.status);
        RenderError(res, res.status, code, message);
        return httplib::Server::HandlerResponse::Handled;
      }));
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
  // No team's connection may reach this API or the control database it runs
  // on (guard/connect_policy.h).
  guard::ProtectInProcess(
      guard::ProtectedEndpoint::Make("api", "the data-plane's API", host, port_));
  guard::ProtectInProcess(guard::ControlDatabaseEndpoint(db_.url()));
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  // listen_after_bind sets is_running once its accept loop starts.
  for (int i = 0; i < 5000 && !http_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  spdlog::info("API listening on {}://{}:{}{}", tls.http_scheme(), host, port_, kApiPrefix);
  return common::Status::Ok();
}

void ApiServer::Stop() {
  if (!http_) return;
  http_->stop();
  if (thread_.joinable()) thread_.join();
  http_.reset();
}

}  // namespace sluice::api
