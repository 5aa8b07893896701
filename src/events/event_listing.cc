#include "events/event_listing.h"

#include <fmt/format.h>

#include <charconv>

#include <nlohmann/json.hpp>

#include "store/sql_time.h"

namespace sluice::events {

using common::ToEpochMicros;

namespace {

// A PostgreSQL uuid[] literal.
std::string UuidArray(const std::vector<common::Uuid>& ids) {
  std::string out = "{";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + ids[i].ToString();
  return out + "}";
}

}  // namespace

std::string PageToken::Encode() const {
  return fmt::format("{}_{}", ToEpochMicros(ts), id.ToString());
}

std::optional<PageToken> PageToken::Decode(const std::string& token) {
  auto sep = token.find('_');
  if (sep == std::string::npos) return std::nullopt;
  std::int64_t us = 0;
  auto [p, ec] = std::from_chars(token.data(), token.data() + sep, us);
  if (ec != std::errc() || p != token.data() + sep) return std::nullopt;
  auto id = common::Uuid::Parse(std::string_view(token).substr(sep + 1));
  if (!id) return std::nullopt;
  return PageToken{common::FromEpochMicros(us), *id};
}

namespace {

// The WHERE condition of a scope over resource_event e, with its parameters
// $1 (connector or connectors), $2 (datamodel(s) or subscription) and $3
// (a pipeline's subscriptions); each is NULL where the scope has none.
struct ScopeSql {
  std::string condition;
  std::string connectors;
  std::optional<std::string> resource, subscriptions;
};

ScopeSql BuildScope(const EventScope& s) {
  ScopeSql out;
  const bool pipeline = s.kind == EventScope::Kind::kPipeline;
  // Connector-wide events are those about neither a datamodel nor a subscription.
  out.condition = "e.connector_id = $1::uuid";
  if (s.kind == EventScope::Kind::kDatamodel) {
    out.condition +=
        " AND (e.datamodel_id = $2::uuid OR (e.datamodel_id IS NULL AND"
        " e.subscription_id IS NULL))";
  } else if (s.kind == EventScope::Kind::kSubscription) {
    out.condition +=
        " AND (e.subscription_id = $2::uuid OR (e.datamodel_id IS NULL AND"
        " e.subscription_id IS NULL))";
  } else if (pipeline) {
    // A subscription's event may carry its datamodel too; it belongs to that
    // subscription's pipeline only, not to every pipeline sharing the datamodel.
    out.condition =
        "((e.connector_id = ANY($1::uuid[]) AND e.datamodel_id IS NULL AND"
        " e.subscription_id IS NULL) OR e.subscription_id = ANY($3::uuid[]) OR"
        " (e.subscription_id IS NULL AND e.datamodel_id = ANY($2::uuid[])))";
  } else {
    out.condition += " AND $2::text IS NULL";
  }
  if (!pipeline) out.condition += " AND $3::text IS NULL";
  out.connectors = s.connector_id.ToString();
  if (pipeline) {
    out.connectors = UuidArray(s.connectors);
    out.resource = UuidArray(s.datamodels);
    out.subscriptions = UuidArray(s.subscriptions);
  } else if (s.kind != EventScope::Kind::kConnector) {
    out.resource = s.resource_id.ToString();
  }
  return out;
}

}  // namespace

std::vector<common::Uuid> TeamsInScope(pqxx::transaction_base& tx, const EventScope& scope) {
  auto sql = BuildScope(scope);
  auto rows = tx.exec_params(
      fmt::format("SELECT DISTINCT e.team_id::text FROM resource_event e WHERE {}", sql.condition),
      sql.connectors, sql.resource, sql.subscriptions);
  std::vector<common::Uuid> teams;
  for (const auto& r : rows) teams.push_back(*common::Uuid::Parse(r[0].c_str()));
  return teams;
}

common::Result<EventPage> ListEvents(pqxx::transaction_base& tx, const EventQuery& q) {
  if (q.limit < 1 || q.limit > kMaxPageSize) {
    return common::InvalidArgument(fmt::format("limit must be 1..{}", kMaxPageSize));
  }
  if (q.levels.empty()) return common::InvalidArgument("at least one level is required");
  const bool pipeline = q.scope.kind == EventScope::Kind::kPipeline;
  if (!pipeline && q.scope.kind != EventScope::Kind::kConnector && q.scope.resource_id.is_nil()) {
    return common::InvalidArgument("the datamodel or subscription id is required");
  }
  nlohmann::json levels = nlohmann::json::array();
  for (Level l : q.levels) levels.push_back(LevelName(l));
  auto sql = BuildScope(q.scope);
  std::optional<std::string> teams;
  if (q.teams) teams = UuidArray(*q.teams);
  std::optional<std::int64_t> after_ts;
  std::optional<std::string> after_id;
  if (q.after) {
    after_ts = ToEpochMicros(q.after->ts);
    after_id = q.after->id.ToString();
  }
  // One row more than asked says whether another page exists.
  auto res =
      tx.exec_params(fmt::format("SELECT {} FROM resource_event e WHERE {}"
                                 " AND ($8::uuid[] IS NULL OR e.team_id = ANY($8::uuid[]))"
                                 " AND e.level IN (SELECT jsonb_array_elements_text($4::jsonb))"
                                 " AND ($5::bigint IS NULL OR (e.ts, e.id) < (" SLUICE_SQL_TS(
                                     "$5") ", $6::uuid))"
                                           " ORDER BY e.ts DESC, e.id DESC LIMIT $7",
                                 internal::StoredEventColumns("e"), sql.condition),
                     sql.connectors, sql.resource, sql.subscriptions, levels.dump(), after_ts,
                     after_id, q.limit + 1, teams);
  EventPage page;
  for (const auto& row : res) {
    if (static_cast<int>(page.events.size()) == q.limit) {
      page.next = PageToken{page.events.back().ts, page.events.back().id};
      break;
    }
    page.events.push_back(internal::ReadStoredEvent(row, 0));
  }
  return page;
}

}  // namespace sluice::events
