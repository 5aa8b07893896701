// Reading the audit trail (superuser): filters, newest first, paged.
#include <algorithm>
#include <cctype>

#include "api/paging.h"
#include "api/routes.h"
#include "model/access/access.h"
#include "model/json_fields.h"
#include "model/operations/user_log_repository.h"

namespace sluice::api {
namespace {

std::optional<common::Uuid> UuidQuery(const Request& req, const std::string& name) {
  auto s = req.Query(name);
  if (!s) return std::nullopt;
  auto id = common::Uuid::Parse(*s);
  if (!id) InvalidField(name, "must be a UUID");
  return id;
}

// ISO-8601 date-time, checked here so PostgreSQL never sees garbage.
std::optional<std::string> TimeQuery(const Request& req, const std::string& name) {
  auto s = req.Query(name);
  if (!s) return std::nullopt;
  bool ok = s->size() >= 10 && s->size() <= 40 && std::all_of(s->begin(), s->end(), [](char c) {
              return std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == ':' ||
                     c == 'T' || c == 'Z' || c == '.' || c == ' ' || c == '+';
            });
  if (!ok) InvalidField(name, "must be an ISO-8601 timestamp");
  return s;
}

Response HandleListUserLog(ApiContext& ctx, Request& req) {
  RequireSuperuser(req.caller());
  Page page = ParsePage(req);
  UserLogFilter f;
  f.user_id = UuidQuery(req, "user_id");
  f.target_user_id = UuidQuery(req, "target_user_id");
  f.action = req.Query("action");
  f.user_type = req.Query("user_type");
  f.user_email = req.Query("user_email");
  f.since = TimeQuery(req, "since");
  f.until = TimeQuery(req, "until");
  return Response::Ok(ctx.db.Transact([&](pqxx::work& tx) {
    try {
      return PageBody(ListUserLog(tx, f, page.fetch(), page.offset), page);
    } catch (const pqxx::data_exception&) {
      throw ApiError(422, "invalid_field", "since/until: not a valid timestamp");
    }
  }));
}

}  // namespace

void RegisterUserLogRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "user-log");
  g.Get("/user-log",
        "Audit trail, newest first; filters user_id, target_user_id, action, user_type, "
        "user_email, since, until (superuser)",
        [&ctx](Request& q) { return HandleListUserLog(ctx, q); });
}

}  // namespace sluice::api
