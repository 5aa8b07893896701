// Environments and their members.
#include "api/paging.h"
#include "api/routes.h"
#include "api/sql_util.h"
#include "common/hex.h"
#include "model/access/access.h"
#include "model/access/users_repository.h"
#include "model/config_keys.h"
#include "model/connect_checks.h"
#include "model/json_fields.h"
#include "model/operations/user_log_repository.h"
#include "orchestrator/broker_grants.h"
#include "orchestrator/launch_builder.h"
#include "runtime/worker_repository.h"

namespace sluice::api {
namespace {

using auth::Action;

auth::EnvRole RequireRole(FieldReader& f) {
  auto text = f.OptionalString("role", 16);
  if (!text) InvalidField("role", "is required");
  auto role = auth::ParseEnvRole(*text);
  if (!role) InvalidField("role", "must be admin, member or reader");
  return *role;
}

Response HandleListEnvs(ApiContext& ctx, Request& req) {
  Page page = ParsePage(req);
  const auto& caller = req.caller();
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    std::optional<common::Uuid> only_member_of;
    if (!caller.is_superuser) only_member_of = caller.user_id;
    Json items = Json::array();
    for (const auto& e : ListEnvs(tx, only_member_of, page.fetch(), page.offset)) {
      Json j = EnvJson(e);
      auto role = FindEnvRole(tx, caller.user_id, e.id);
      j["role"] = role ? Json(auth::EnvRoleName(*role)) : Json(nullptr);
      items.push_back(std::move(j));
    }
    return PageBody(std::move(items), page);
  }));
}

Response HandleCreateEnv(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  Json body = req.Body();
  FieldReader f(body);
  EnvRow e;
  e.id = f.OptionalUuid("id").value_or(common::Uuid::V4());
  e.name = f.RequiredString("name", 100);
  e.retention_configuration = f.OptionalObject("retention_configuration").value_or(Json::object());
  f.Finish();
  e.config_hash = common::Sha256Hex(e.retention_configuration.dump());
  return Response::Created(ctx.db.Transact([&](pqxx::work& tx) {
    if (FindEnv(tx, e.id)) throw ApiError(409, "already_exists", "an env with this id exists");
    RequireBootstrapAllowed(e.retention_configuration);
    if (FindEnvByName(tx, *e.name)) {
      throw ApiError(409, "already_exists", "an env with this name exists");
    }
    InsertEnv(tx, e);
    return EnvJson(*FindEnv(tx, e.id));
  }));
}

Response HandleGetEnv(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("env_id");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    Json j = EnvJson(RequireEnv(tx, req.caller(), id, Action::kEnvRead));
    auto role = FindEnvRole(tx, req.caller().user_id, id);
    j["role"] = role ? Json(auth::EnvRoleName(*role)) : Json(nullptr);
    return j;
  }));
}

Response HandlePatchEnv(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("env_id");
  Json body = req.Body();
  FieldReader f(body);
  auto name = f.OptionalString("name", 100);
  auto config = f.OptionalObject("retention_configuration");
  f.Finish();
  if (name && name->empty()) InvalidField("name", "must not be empty");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    EnvRow e = RequireEnv(tx, req.caller(), id, Action::kEnvManage);
    if (name && name != e.name) {
      if (FindEnvByName(tx, *name))
        throw ApiError(409, "already_exists", "an env with this name exists");
      e.name = name;
    }
    if (config) {
      RequireBootstrapAllowed(*config);
      e.retention_configuration = *config;
      e.config_hash = common::Sha256Hex(config->dump());
    }
    UpdateEnv(tx, e);
    return EnvJson(*FindEnv(tx, id));
  }));
}

Response HandleDeleteEnv(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  auto id = req.PathUuid("env_id");
  ctx.db.Transact([&](pqxx::work& tx) {
    if (!FindEnv(tx, id)) throw ApiError(404, "not_found", "env not found");
    DeleteEnv(tx, id);
  });
  return Response::NoContent();
}

Response HandleListEnvMembers(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("env_id");
  Page page = ParsePage(req);
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RequireEnv(tx, req.caller(), id, Action::kEnvRead);
    return PageBody(ListEnvMembers(tx, id, page.fetch(), page.offset), page);
  }));
}

Response HandleAddEnvMember(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("env_id");
  Json body = req.Body();
  FieldReader f(body);
  auto user_id = f.RequiredUuid("user_id");
  auto role = RequireRole(f);
  f.Finish();
  return Response::Created(ctx.db.Transact([&](pqxx::work& tx) {
    RequireEnv(tx, req.caller(), id, Action::kEnvManage);
    auto user = FindUserById(tx, user_id);
    if (!user) InvalidField("user_id", "no such user");
    if (GrantEnvRole(tx, user_id, id, role, /*update_existing=*/false) != GrantOutcome::kCreated) {
      throw ApiError(409, "already_exists", "the user is already a member of this env");
    }
    LogAction(tx, req.caller(), "grant", user_id);
    return Json{{"user_id", user_id.ToString()},
                {"email", user->email},
                {"env_id", id.ToString()},
                {"role", auth::EnvRoleName(role)}};
  }));
}

Response HandleChangeEnvMember(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("env_id");
  auto user_id = req.PathUuid("user_id");
  Json body = req.Body();
  FieldReader f(body);
  auto role = RequireRole(f);
  f.Finish();
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    RequireEnv(tx, req.caller(), id, Action::kEnvManage);
    if (!FindEnvRole(tx, user_id, id)) throw ApiError(404, "not_found", "membership not found");
    GrantEnvRole(tx, user_id, id, role, /*update_existing=*/true);
    LogAction(tx, req.caller(), "grant", user_id);
    return Json{{"user_id", user_id.ToString()},
                {"env_id", id.ToString()},
                {"role", auth::EnvRoleName(role)}};
  }));
}

Response HandleRemoveEnvMember(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("env_id");
  auto user_id = req.PathUuid("user_id");
  ctx.db.Transact([&](pqxx::work& tx) {
    RequireEnv(tx, req.caller(), id, Action::kEnvManage);
    if (!RevokeEnvRole(tx, user_id, id)) throw ApiError(404, "not_found", "membership not found");
    LogAction(tx, req.caller(), "revoke", user_id);
  });
  return Response::NoContent();
}

// What each worker of the env may do on the broker, for an operator running
// their own Kafka: the grants `sluice up` gives its embedded broker, as
// kafka-acls commands (literal topics and groups, one principal per worker).
Response BrokerAcls(ApiContext& ctx, Request& req) {
  auto id = req.PathUuid("env_id");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    EnvRow e = RequireEnv(tx, req.caller(), id, Action::kEnvManage);
    std::string bootstrap = "<bootstrap>";
    if (auto it = e.retention_configuration.find("bootstrap_servers");
        it != e.retention_configuration.end() && it->is_string())
      bootstrap = it->get<std::string>();
    Json workers = Json::array();
    Json commands = Json::array();
    for (const auto& r : tx.exec_params(
             "SELECT id FROM connector WHERE env_id = $1 ORDER BY name, id", id.ToString())) {
      auto connector = sql::GetUuid(r[0]);
      for (const auto& w : runtime::WorkerRepository::ForConnector(tx, connector)) {
        auto launch = orchestrator::BuildLaunchConfig(tx, w, &ctx.keys);
        Json entry = {{"worker_id", w.id.ToString()},
                      {"connector_id", connector.ToString()},
                      {"shard_index", w.shard_index},
                      {"principal", orchestrator::WorkerPrincipal(w)}};
        if (!launch.ok()) {
          entry["error"] = launch.status().message();
          workers.push_back(std::move(entry));
          continue;
        }
        auto grant = orchestrator::GrantForLaunch(*launch);
        entry["produce"] = grant.produce;
        entry["consume"] = grant.consume;
        entry["groups"] = grant.groups;
        for (auto& c :
             orchestrator::KafkaAclsCommands(bootstrap, orchestrator::WorkerPrincipal(w), grant))
          commands.push_back(std::move(c));
        workers.push_back(std::move(entry));
      }
    }
    return Json{{"env_id", id.ToString()}, {"workers", workers}, {"kafka_acls", commands}};
  }));
}

}  // namespace

void RegisterEnvsRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "envs");
  g.Get("/envs", "List the envs the caller belongs to (all, for a superuser)",
        [&ctx](Request& q) { return HandleListEnvs(ctx, q); });
  g.Post("/envs", "Create an env (superuser)",
         [&ctx](Request& q) { return HandleCreateEnv(ctx, q); });
  g.Get("/envs/{env_id}", "Read an env", [&ctx](Request& q) { return HandleGetEnv(ctx, q); });
  g.Patch("/envs/{env_id}", "Change an env (env admin)",
          [&ctx](Request& q) { return HandlePatchEnv(ctx, q); });
  g.Delete("/envs/{env_id}", "Delete an env and its teams (superuser)",
           [&ctx](Request& q) { return HandleDeleteEnv(ctx, q); });
  g.Get("/envs/{env_id}/broker-acls",
        "What each worker may do on the broker, as kafka-acls commands (env admin)",
        [&ctx](Request& q) { return BrokerAcls(ctx, q); });
  g.Get("/envs/{env_id}/members", "List env members",
        [&ctx](Request& q) { return HandleListEnvMembers(ctx, q); });
  g.Post("/envs/{env_id}/members", "Grant an env role (env admin); 409 if already a member",
         [&ctx](Request& q) { return HandleAddEnvMember(ctx, q); });
  g.Patch("/envs/{env_id}/members/{user_id}", "Change a member's env role (env admin)",
          [&ctx](Request& q) { return HandleChangeEnvMember(ctx, q); });
  g.Delete("/envs/{env_id}/members/{user_id}",
           "Revoke env membership and the user's teams in it (env admin)",
           [&ctx](Request& q) { return HandleRemoveEnvMember(ctx, q); });
}

}  // namespace sluice::api
