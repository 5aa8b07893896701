#include "registry/server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>

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

// The request body as a JSON object, or a 400 like Confluent's for bad JSON.
bool Body(const httplib::Request& req, httplib::Response& res, json& out) {
  out = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded() || !out.is_object()) {
    Fail(res, {400, "Unrecognized request body: expected a JSON object"});
    return false;
  }
  return true;
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

RegistryServer::RegistryServer(store::Database& db) : repo_(db) {}

RegistryServer::~RegistryServer() { Stop(); }

common::Status RegistryServer::Start(const std::string& host, int port) {
  SLUICE_RETURN_IF_ERROR(repo_.EnsureTables());
  http_ = std::make_unique<httplib::Server>();
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
  spdlog::info("schema registry listening on {}:{}", host, port_);
  return common::Status::Ok();
}

void RegistryServer::Stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

void RegistryServer::Route() {
  httplib::Server& s = *http_;
  SchemaRepository& repo = repo_;

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
         [&repo](const httplib::Request& req, httplib::Response& res) {
           SchemaType type;
           std::string text;
           if (!SchemaFromBody(req, res, type, text)) return;
           auto id = repo.Register(req.matches[1], type, text);
           if (!id.ok()) return Fail(res, id.error());
           Reply(res, 200, json{{"id", *id}});
         });

  s.Post(R"(/subjects/([^/]+))", [&repo](const httplib::Request& req, httplib::Response& res) {
    SchemaType type;
    std::string text;
    if (!SchemaFromBody(req, res, type, text)) return;
    auto v = repo.Lookup(req.matches[1], type, text, Flag(req, "deleted"));
    if (!v.ok()) return Fail(res, v.error());
    Reply(res, 200, VersionJson(*v));
  });

  s.Get("/subjects", [&repo](const httplib::Request& req, httplib::Response& res) {
    auto subjects = repo.Subjects(Flag(req, "deleted"));
    if (!subjects.ok()) return Fail(res, subjects.error());
    Reply(res, 200, *subjects);
  });

  s.Get(R"(/subjects/([^/]+)/versions)",
        [&repo](const httplib::Request& req, httplib::Response& res) {
          auto versions = repo.Versions(req.matches[1], Flag(req, "deleted"));
          if (!versions.ok()) return Fail(res, versions.error());
          Reply(res, 200, *versions);
        });

  s.Get(R"(/subjects/([^/]+)/versions/([^/]+))",
        [&repo](const httplib::Request& req, httplib::Response& res) {
          auto v = repo.GetVersion(req.matches[1], req.matches[2], Flag(req, "deleted"));
          if (!v.ok()) return Fail(res, v.error());
          Reply(res, 200, VersionJson(*v));
        });

  s.Get(R"(/subjects/([^/]+)/versions/([^/]+)/schema)",
        [&repo](const httplib::Request& req, httplib::Response& res) {
          auto v = repo.GetVersion(req.matches[1], req.matches[2], Flag(req, "deleted"));
          if (!v.ok()) return Fail(res, v.error());
          res.status = 200;
          res.set_content(v->schema, kContentType);
        });

  s.Get(R"(/subjects/([^/]+)/versions/([^/]+)/referencedby)",
        [&repo](const httplib::Request& req, httplib::Response& res) {
          auto v = repo.GetVersion(req.matches[1], req.matches[2], false);
          if (!v.ok()) return Fail(res, v.error());
          Reply(res, 200, json::array());  // references are not supported
        });

  auto get_schema = [&repo](const httplib::Request& req, httplib::Response& res, bool raw) {
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

  s.Delete(R"(/subjects/([^/]+))", [&repo](const httplib::Request& req, httplib::Response& res) {
    auto versions = repo.DeleteSubject(req.matches[1], Flag(req, "permanent"));
    if (!versions.ok()) return Fail(res, versions.error());
    Reply(res, 200, *versions);
  });

  s.Delete(R"(/subjects/([^/]+)/versions/([^/]+))", [&repo](const httplib::Request& req,
                                                            httplib::Response& res) {
    auto version = repo.DeleteVersion(req.matches[1], req.matches[2], Flag(req, "permanent"));
    if (!version.ok()) return Fail(res, version.error());
    Reply(res, 200, *version);
  });

  auto get_config = [&repo](const httplib::Request& req, httplib::Response& res,
                            std::optional<std::string> subject) {
    auto level = repo.GetCompatibility(subject, Flag(req, "defaultToGlobal"));
    if (!level.ok()) return Fail(res, level.error());
    Reply(res, 200, json{{"compatibilityLevel", CompatibilityName(*level)}});
  };
  auto put_config = [&repo](const httplib::Request& req, httplib::Response& res,
                            std::optional<std::string> subject) {
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
  auto delete_config = [&repo](const httplib::Request&, httplib::Response& res,
                               std::optional<std::string> subject) {
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
         [&repo](const httplib::Request& req, httplib::Response& res) {
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
