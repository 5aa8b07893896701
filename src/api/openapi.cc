#include "api/openapi.h"

#include <algorithm>

#include "api/routes.h"

namespace sluice::api {

Json BuildOpenApi(const Router& router) {
  Json error_schema = {
      {"type", "object"},
      {"required", {"error"}},
      {"properties",
       {{"error",
         {{"type", "object"},
          {"required", {"code", "message"}},
          {"properties", {{"code", {{"type", "string"}}}, {"message", {{"type", "string"}}}}}}}}}};
  Json error_response = {
      {"description", "Error"},
      {"content", {{"application/json", {{"schema", {{"$ref", "#/components/schemas/Error"}}}}}}}};
  Json paths = Json::object();
  for (const auto& r : router.routes()) {
    std::string method = r.method;
    std::transform(method.begin(), method.end(), method.begin(), ::tolower);
    Json op = {{"summary", r.summary},
               {"tags", {r.tag}},
               {"operationId", method + r.pattern},
               {"responses", {{"2XX", {{"description", "Success"}}}, {"4XX", error_response}}}};
    Json params = Json::array();
    for (const auto& seg : r.segments) {
      if (seg.size() > 2 && seg.front() == '{') {
        params.push_back({{"name", seg.substr(1, seg.size() - 2)},
                          {"in", "path"},
                          {"required", true},
                          {"schema", {{"type", "string"}, {"format", "uuid"}}}});
      }
    }
    if (!params.empty()) op["parameters"] = params;
    if (r.method == "POST" || r.method == "PATCH") {
      op["requestBody"] = {{"content", {{"application/json", {{"schema", {{"type", "object"}}}}}}}};
    }
    if (r.access == Access::kPublic) op["security"] = Json::array();
    paths[r.pattern][method] = op;
  }
  return {{"openapi", "3.0.3"},
          {"info", {{"title", "Sluice data-plane API"}, {"version", "1"}}},
          {"paths", paths},
          {"security", {{{"bearer", Json::array()}}}},
          {"components",
           {{"schemas", {{"Error", error_schema}}},
            {"securitySchemes", {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}}}}}}};
}

void RegisterOpenApiRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "meta");
  // Built per request: routes added after this one are documented too.
  g.Get(
      "/openapi.json", "This document", [&r](Request&) { return Response::Ok(BuildOpenApi(r)); },
      Access::kPublic);
  g.Get(
      "/health", "Liveness",
      [](Request&) {
        return Response::Ok({{"status", "ok"}});
      },
      Access::kPublic);
  // Readiness (a Kubernetes readinessProbe): 200 once the data-plane
  // database answers a query, 503 with its words otherwise, so a replica cut
  // off from the database takes no traffic while its liveness stays green.
  g.Get(
      "/health/ready", "Readiness: the data-plane database answers",
      [&ctx](Request&) {
        try {
          ctx.db.Direct([](pqxx::nontransaction& tx) { tx.exec("SELECT 1"); });
          return Response::Ok({{"status", "ok"}, {"database", "ok"}});
        } catch (const std::exception& e) {
          return Response{503, ErrorBody("database_unavailable", e.what())};
        }
      },
      Access::kPublic);
}

}  // namespace sluice::api
