// Control-plane sync (superuser, typically a service account): envs are
// upserted by UUID with config_hash deciding whether anything changed;
// users and their env roles by UUID with `version` deciding which side is
// stale. A batch is one transaction: one refused item changes nothing.
#include <climits>
#include <set>

#include "api/routes.h"
#include "api/sql_util.h"
#include "common/hex.h"
#include "model/access/access.h"
#include "model/access/sessions_repository.h"
#include "model/access/users_repository.h"
#include "model/json_fields.h"

namespace sluice::api {
namespace {

Response SyncEnvs(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  Json body = req.Body();
  FieldReader top(body);
  auto envs = top.OptionalArray("envs");
  top.Finish();
  if (!envs) InvalidField("envs", "is required");
  std::vector<EnvRow> incoming;
  for (const auto& item : *envs) {
    if (!item.is_object()) InvalidField("envs", "items must be objects");
    FieldReader f(item);
    EnvRow e;
    e.id = f.RequiredUuid("id");
    e.name = f.RequiredString("name", 100);
    e.retention_configuration =
        f.OptionalObject("retention_configuration").value_or(Json::object());
    e.config_hash = f.OptionalString("config_hash", 64);
    f.Finish();
    if (!e.config_hash) e.config_hash = common::Sha256Hex(e.retention_configuration.dump());
    incoming.push_back(std::move(e));
  }
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    Json results = Json::array();
    for (const auto& e : incoming) {
      auto local = FindEnv(tx, e.id);
      auto same_name = FindEnvByName(tx, *e.name);
      // The UUID is the identity; a name already bound to another UUID, or
      // this UUID bound to another name, means two control-planes disagree.
      if ((local && local->name != e.name) || (same_name && same_name->id != e.id)) {
        throw ApiError(409, "conflict",
                       "env " + e.id.ToString() + " exists here with a different identity");
      }
      std::string outcome = "unchanged";
      if (!local) {
        InsertEnv(tx, e);
        outcome = "created";
      } else if (local->config_hash != e.config_hash) {
        UpdateEnv(tx, e);
        outcome = "updated";
      }
      results.push_back({{"id", e.id.ToString()}, {"result", outcome}});
    }
    return Json{{"results", results}};
  }));
}

struct IncomingUser {
  UserRow row;
  std::vector<std::pair<common::Uuid, auth::EnvRole>> env_roles;
};

Response SyncUsers(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  Json body = req.Body();
  FieldReader top(body);
  auto users = top.OptionalArray("users");
  top.Finish();
  if (!users) InvalidField("users", "is required");
  std::vector<IncomingUser> incoming;
  for (const auto& item : *users) {
    if (!item.is_object()) InvalidField("users", "items must be objects");
    FieldReader f(item);
    IncomingUser u;
    u.row.id = f.RequiredUuid("id");
    u.row.email = NormalizeEmail(f.RequiredString("email", 320));
    u.row.is_active = f.OptionalBool("is_active").value_or(true);
    u.row.is_superuser = f.OptionalBool("is_superuser").value_or(false);
    u.row.is_verified = f.OptionalBool("is_verified").value_or(true);
    auto version = f.OptionalInt("version", 1, INT32_MAX);
    if (!version) InvalidField("version", "is required");
    u.row.version = static_cast<int>(*version);
    auto roles = f.OptionalArray("env_roles").value_or(Json::array());
    f.Finish();
    for (const auto& m : roles) {
      if (!m.is_object()) InvalidField("env_roles", "items must be objects");
      FieldReader mf(m);
      auto env_id = mf.RequiredUuid("env_id");
      auto role = auth::ParseEnvRole(mf.RequiredString("role", 16));
      mf.Finish();
      if (!role) InvalidField("role", "must be admin, member or reader");
      u.env_roles.emplace_back(env_id, *role);
    }
    incoming.push_back(std::move(u));
  }
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    Json results = Json::array();
    for (auto& u : incoming) {
      auto local = FindUserById(tx, u.row.id);
      std::string outcome;
      if (local && local->version >= u.row.version) {
        // Ours is as new or newer: the control-plane is the stale side.
        outcome = local->version == u.row.version ? "unchanged" : "stale";
        results.push_back(
            {{"id", u.row.id.ToString()}, {"result", outcome}, {"local_version", local->version}});
        continue;
      }
      if (local) {
        // Local password and UI preference are this data-plane's own.
        u.row.hashed_password = local->hashed_password;
        u.row.active_env_id = local->active_env_id;
        UpdateUserKeepingVersion(tx, u.row);
        if (!u.row.is_active) RevokeUserSessions(tx, u.row.id, std::nullopt, kRevokedDeactivated);
        outcome = "updated";
      } else {
        InsertUser(tx, u.row);
        outcome = "created";
      }
      std::set<common::Uuid> wanted;
      for (const auto& [env_id, role] : u.env_roles) {
        if (!FindEnv(tx, env_id)) InvalidField("env_roles", "unknown env " + env_id.ToString());
        GrantEnvRole(tx, u.row.id, env_id, role, true);
        wanted.insert(env_id);
      }
      for (const auto& r : tx.exec_params("SELECT env_id FROM env_member WHERE user_id = $1",
                                          u.row.id.ToString())) {
        auto env_id = sql::GetUuid(r[0]);
        if (!wanted.count(env_id)) RevokeEnvRole(tx, u.row.id, env_id);
      }
      // The grants above bumped the version; the control-plane's number stands.
      tx.exec_params("UPDATE \"user\" SET version = $2 WHERE id = $1", u.row.id.ToString(),
                     u.row.version);
      results.push_back(
          {{"id", u.row.id.ToString()}, {"result", outcome}, {"local_version", u.row.version}});
    }
    return Json{{"results", results}};
  }));
}

// Keyset paging on (updated_at, id): stable while rows keep changing.
Response PullUsers(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  int limit = 100;
  if (auto l = req.Query("limit")) {
    try {
      limit = std::stoi(*l);
    } catch (const std::exception&) {
      limit = 0;
    }
    if (limit < 1 || limit > 1000) InvalidField("limit", "must be between 1 and 1000");
  }
  auto after = req.Query("updated_after");
  std::optional<common::Uuid> after_id;
  if (auto a = req.Query("after_id")) {
    after_id = common::Uuid::Parse(*a);
    if (!after_id) InvalidField("after_id", "must be a UUID");
  }
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    pqxx::result res;
    try {
      res = tx.exec_params(
          "SELECT id FROM \"user\" WHERE $1::timestamptz IS NULL OR "
          "(updated_at, id) > ($1::timestamptz, COALESCE($2::uuid, "
          "'00000000-0000-0000-0000-000000000000'::uuid)) ORDER BY updated_at, id LIMIT $3",
          after, sql::Param(after_id), limit + 1);
    } catch (const pqxx::data_exception&) {
      throw ApiError(422, "invalid_field", "updated_after: not a valid timestamp");
    }
    Json items = Json::array();
    Json next = nullptr;
    for (int i = 0; i < static_cast<int>(res.size()) && i < limit; ++i) {
      auto u = FindUserById(tx, sql::GetUuid(res[i][0]));
      if (!u) continue;
      Json j = UserJson(*u);
      j.erase("has_password");
      j["env_roles"] = ListUserEnvRoles(tx, u->id);
      items.push_back(std::move(j));
      if (i == limit - 1 && static_cast<int>(res.size()) > limit) {
        next = {{"updated_after", u->updated_at}, {"after_id", u->id.ToString()}};
      }
    }
    return Json{{"items", items}, {"next", next}};
  }));
}

}  // namespace

void RegisterSyncRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "sync");
  g.Post("/sync/envs", "Upsert envs by UUID; refuses an env known here with another identity",
         [&ctx](Request& q) { return SyncEnvs(ctx, q); });
  g.Post("/sync/users", "Upsert users and env roles by UUID; the higher version wins",
         [&ctx](Request& q) { return SyncUsers(ctx, q); });
  g.Get("/sync/users", "Users changed after a cursor, paged on (updated_at, id)",
        [&ctx](Request& q) { return PullUsers(ctx, q); });
}

}  // namespace sluice::api
