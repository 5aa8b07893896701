#include "registry/server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>

#include "common/bounded_json.h"

namespace sluice::registry {

using nlohmann::json;

namespace {

constexpr const char* kContentType = "application/vnd.schemaregistry.v1+json";

void Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), kContentType);
}

void Fail(httplib::Response& res, const RegistryError& e) {
  Reply(res, e.http_status(), json{{"error_code", e.code}, {"message", e.message}});
}

bool Flag(const httplib::Request& req, const char* name) {
  return req.has_param(name) && req.get_param_value(name) == "true";
}

// The request body as a JSON object, or a 400 like Confluent's for bad JSON
// (and for JSON past the depth or size limits, named in the message).
bool Body(const httplib::Request& req, httplib::Response& res, json& out) {
  auto parsed = common::ParseBoundedJson(req.body);
  if (!parsed.ok()) {
    Fail(res, {400, "Unrecognized request body: " + parsed.status().message()});
    return false;
  }
  if (!parsed->is_object()) {
    Fail(res, {400, "Unrecognized request body: expected a JSON object"});
    return false;
  }
  out = std::move(parsed).value();
  return true;
}

// Whether the gate lets this request through; the refusal is answered here,
// as Confluent's 401/403 bodies (its clients show the message).
bool Admitted(RegistryGate* gate, const httplib::Request& req, httplib::Response& res, bool write,
              const std::optional<std::string>& subject) {
  if (!gate) return true;
  std::string authorization = req.get_header_value("Authorization");
  common::Status st = gate->MayRead(authorization);
  if (st.ok() && write) st = gate->MayWrite(authorization, subject);
  if (st.ok()) return true;
  if (st.code() == common::Code::kUnauthenticated) {
    res.set_header("WWW-Authenticate", "Basic realm=\"sluice schema registry\"");
    Fail(res, {40101, st.message()});
  } else {
    Fail(res, {40301, st.message()});
  }
  return false;
}

// {"schema": "...", "schemaType": "AVRO"|"JSON"} from a request body.
bool SchemaFromBody(const httplib::Request& req, httplib::Response& res, SchemaType& type,
                    std::string& text) {
  json body;
  if (!Body(req, res, body)) return false;
  auto s = body.find("schema");
  if (s == body.end() || !s->is_string()) {
    Fail(res, {error_code::kInvalidSchema, "Empty schema"});
    return false;
  }
  text = s->get<std::string>();
  std::string type_name;
  if (auto t = body.find("schemaType"); t != body.end() && t->is_string()) type_name = *t;
  auto parsed_type = ParseSchemaType(type_name);
  if (!parsed_type.ok()) {
    Fail(res, {error_code::kInvalidSchema, parsed_type.status().message()});
    return false;
  }
  if (auto refs = body.find("references");
      refs != body.end() && refs->is_array() && !refs->empty()) {
    Fail(res, {error_code::kInvalidSchema, "Schema references are not supported"});
    return false;
  }
  type = *parsed_type;
  return true;
}

json VersionJson(const SchemaVersion& v) {
  json out = {{"subject", v.subject}, {"version", v.version}, {"id", v.id}, {"schema", v.schema}};
  if (v.type != SchemaType::kAvro) out["schemaType"] = SchemaTypeName(v.type);
  return out;
}

bool ParseId(const std::string& s, int& id) {
  auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), id);
  return err == std::errc() && end == s.data() + s.size();
}

const char* kInvalidLevel =
    "Invalid compatibility level. Valid values are none, backward, forward, full, "
    "backward_transitive, forward_transitive, and full_transitive";

}  // namespace

RegistryServer::RegistryServer(store::Database& db, RegistryGate* gate) : repo_(db), gate_(gate) {}

RegistryServer::~RegistryServer() { Stop(); }

common::Status RegistryServer::Start(const std::string& host, int port,
                                     const common::TlsFiles& tls) {
  SLUICE_RETURN_IF_ERROR(repo_.EnsureTables());
  if (tls.enabled()) {
    common::Status configured;
    auto https = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
      configured = common::ConfigureServerTls(&ctx, tls);
      return configured.ok();
    });
    if (!configured.ok()) return common::InvalidArgument("registry: " + configured.message());
    if (!https->is_valid()) return common::Internal("registry: the HTTPS server did not start");
    http_ = std::move(https);
  } else {
    http_ = std::make_unique<httplib::Server>();
  }
  // Schemas are small; a client sending more is refused before it is read.
  http_->set_payload_max_length(kMaxBodyBytes);
  Route();
  if (port == 0) {
    port_ = http_->bind_to_any_port(host);
    if (port_ <= 0) return common::Unavailable("registry: cannot bind " + host);
  } else {
    if (!http_->bind_to_port(host, port)) {
      return common::Unavailable("registry: cannot bind " + host + ":" + std::to_string(port));
    }
    port_ = port;
  }
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  // Stop() only reaches a server that is running; wait for it to be.
  while (!http_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  spdlog::info("schema registry listening on {}{}:{}", tls.enabled() ? "https://" : "", host,
               port_);
  return common::Status::Ok();
}

void RegistryServer::Stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

void RegistryServer::Route() {
  httplib::Server& s = *http_;
  SchemaRepository& repo = repo_;
  RegistryGate* gate = gate_;
  // Reads need a caller the gate knows; writes one who may write the subject.
  auto read = [gate](const httplib::Request& req, httplib::Response& res) {
    return Admitted(gate, req, res, false, std::nullopt);
  };
  auto write = [gate](const httplib::Request& req, httplib::Response& res,
                      std::optional<std::string> subject) {
    return Admitted(gate, req, res, true, subject);
  };

  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      Reply(res, res.status,
            json{{"error_code", res.status}, {"message", "HTTP " + std::to_string(res.status)}});
    }
  });
  s.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        Fail(res, {50000, "Internal error: " + what});
      });

  s.Get("/",
        [](const httplib::Request&, httplib::Response& res) { Reply(res, 200, json::object()); });
  s.Get("/schemas/types", [](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200, json::array({"JSON", "AVRO"}));
  });

  s.Post(R"(/subjects/([^/]+)/versions)",
         [&repo, write](const httplib::Request& req, httplib::Response& res) {
           if (!write(req, res, std::string(req.matches[1]))) return;
           SchemaType type;
           std::string text;
           if (!SchemaFromBody(req, res, type, text)) return;
           auto id = repo.Register(req.matches[1], type, text);
           if (!id.ok()) return Fail(res, id.error());
           Reply(res, 200, json{{"id", *id}});
         });

  s.Post(R"(/subjects/([^/]+))",
         [&repo, read](const httplib::Request& req, httplib::Response& res) {
           if (!read(req, res)) return;
           SchemaType type;
           std::string text;
           if (!SchemaFromBody(req, res, type, text)) return;
           auto v = repo.Lookup(req.matches[1], type, text, Flag(req, "deleted"));
           if (!v.ok()) return Fail(res, v.error());
           Reply(res, 200, VersionJson(*v));
         });

  s.Get("/subjects", [&repo, read](const httplib::Request& req, httplib::Response& res) {
    if (!read(req, res)) return;
    auto subjects = repo.Subjects(Flag(req, "deleted"));
    if (!subjects.ok()) return Fail(res, subjects.error());
    Reply(res, 200, *subjects);
  });

  s.Get(R"(/subjects/([^/]+)/versions)",
        [&repo, read](const httplib::Request& req, httplib::Response& res) {
          if (!read(req, res)) return;
          auto versions = repo.Versions(req.matches[1], Flag(req, "deleted"));
          if (!versions.ok()) return Fail(res, versions.error());
          Reply(res, 200, *versions);
        });

  s.Get(R"(/subjects/([^/]+)/versions/([^/]+))",
        [&repo, read](const httplib::Request& req, httplib::Response& res) {
          if (!read(req, res)) return;
          auto v = repo.GetVersion(req.matches[1], req.matches[2], Flag(req, "deleted"));
          if (!v.ok()) return Fail(res, v.error());
          Reply(res, 200, VersionJson(*v));
        });

  s.Get(R"(/subjects/([^/]+)/versions/([^/]+)/schema)",
        [&repo, read](const httplib::Request& req, httplib::Response& res) {
          if (!read(req, res)) return;
          auto v = repo.GetVersion(req.matches[1], req.matches[2], Flag(req, "deleted"));
          if (!v.ok()) return Fail(res, v.error());
          res.status = 200;
          res.set_content(v->schema, kContentType);
        });

  s.Get(R"(/subjects/([^/]+)/versions/([^/]+)/referencedby)",
        [&repo, read](const httplib::Request& req, httplib::Response& res) {
          if (!read(req, res)) return;
          auto v = repo.GetVersion(req.matches[1], req.matches[2], false);
          if (!v.ok()) return Fail(res, v.error());
          Reply(res, 200, json::array());  // references are not supported
        });

  auto get_schema = [&repo, read](const httplib::Request& req, httplib::Response& res, bool raw) {
    if (!read(req, res)) return;
    int id = 0;
    if (!ParseId(req.matches[1], id)) {
      return Fail(res, {error_code::kSchemaNotFound,
                        "Schema " + std::string(req.matches[1]) + " not found"});
    }
    auto schema = repo.GetSchema(id);
    if (!schema.ok()) return Fail(res, schema.error());
    if (raw) {
      res.status = 200;
      res.set_content(schema->schema, kContentType);
      return;
    }
    json out = {{"schema", schema->schema}};
    if (schema->type != SchemaType::kAvro) out["schemaType"] = SchemaTypeName(schema->type);
    Reply(res, 200, out);
  };
  s.Get(R"(/schemas/ids/([^/]+))",
        [get_schema](const httplib::Request& req, httplib::Response& res) {
          get_schema(req, res, false);
        });
  s.Get(R"(/schemas/ids/([^/]+)/schema)",
        [get_schema](const httplib::Request& req, httplib::Response& res) {
          get_schema(req, res, true);
        });

  s.Delete(R"(/subjects/([^/]+))",
           [&repo, write](const httplib::Request& req, httplib::Response& res) {
             if (!write(req, res, std::string(req.matches[1]))) return;
             auto versions = repo.DeleteSubject(req.matches[1], Flag(req, "permanent"));
             if (!versions.ok()) return Fail(res, versions.error());
             Reply(res, 200, *versions);
           });

  s.Delete(R"(/subjects/([^/]+)/versions/([^/]+))", [&repo, write](const httplib::Request& req,
                                                                   httplib::Response& res) {
    if (!write(req, res, std::string(req.matches[1]))) return;
    auto version = repo.DeleteVersion(req.matches[1], req.matches[2], Flag(req, "permanent"));
    if (!version.ok()) return Fail(res, version.error());
    Reply(res, 200, *version);
  });

  auto get_config = [&repo, read](const httplib::Request& req, httplib::Response& res,
                                  std::optional<std::string> subject) {
    if (!read(req, res)) return;
    auto level = repo.GetCompatibility(subject, Flag(req, "defaultToGlobal"));
    if (!level.ok()) return Fail(res, level.error());
    Reply(res, 200, json{{"compatibilityLevel", CompatibilityName(*level)}});
  };
  auto put_config = [&repo, write](const httplib::Request& req, httplib::Response& res,
                                   std::optional<std::string> subject) {
    if (!write(req, res, subject)) return;
    json body;
    if (!Body(req, res, body)) return;
    auto c = body.find("compatibility");
    std::optional<Compatibility> level;
    if (c != body.end() && c->is_string()) level = ParseCompatibility(c->get<std::string>());
    if (!level) return Fail(res, {error_code::kInvalidCompatibilityLevel, kInvalidLevel});
    auto set = repo.SetCompatibility(subject, *level);
    if (!set.ok()) return Fail(res, set.error());
    Reply(res, 200, json{{"compatibility", CompatibilityName(*set)}});
  };
  auto delete_config = [&repo, write](const httplib::Request& req, httplib::Response& res,
                                      std::optional<std::string> subject) {
    if (!write(req, res, subject)) return;
    auto old = repo.DeleteCompatibility(subject);
    if (!old.ok()) return Fail(res, old.error());
    Reply(res, 200, json{{"compatibilityLevel", CompatibilityName(*old)}});
  };
  s.Get("/config", [get_config](const httplib::Request& req, httplib::Response& res) {
    get_config(req, res, std::nullopt);
  });
  s.Put("/config", [put_config](const httplib::Request& req, httplib::Response& res) {
    put_config(req, res, std::nullopt);
  });
  s.Delete("/config", [delete_config](const httplib::Request& req, httplib::Response& res) {
    delete_config(req, res, std::nullopt);
  });
  s.Get(R"(/config/([^/]+))", [get_config](const httplib::Request& req, httplib::Response& res) {
    get_config(req, res, std::string(req.matches[1]));
  });
  s.Put(R"(/config/([^/]+))", [put_config](const httplib::Request& req, httplib::Response& res) {
    put_config(req, res, std::string(req.matches[1]));
  });
  s.Delete(R"(/config/([^/]+))",
           [delete_config](const httplib::Request& req, httplib::Response& res) {
             delete_config(req, res, std::string(req.matches[1]));
           });

  s.Post(R"(/compatibility/subjects/([^/]+)/versions/([^/]+))",
         [&repo, read](const httplib::Request& req, httplib::Response& res) {
           if (!read(req, res)) return;
           SchemaType type;
           std::string text;
           if (!SchemaFromBody(req, res, type, text)) return;
           auto reasons = repo.TestCompatibility(req.matches[1], req.matches[2], type, text);
           if (!reasons.ok()) return Fail(res, reasons.error());
           json out = {{"is_compatible", reasons->empty()}};
           if (Flag(req, "verbose")) out["messages"] = *reasons;
           Reply(res, 200, out);
         });
}

}  // namespace sluice::registry
