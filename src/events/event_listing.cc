#include "events/event_listing.h"

#include <fmt/format.h>

#include <charconv>

#include <nlohmann/json.hpp>

#include "events/sql_time.h"

namespace sluice::events {

using internal::EpochMicros;

namespace {

// A PostgreSQL uuid[] literal.
std::string UuidArray(const std::vector<common::Uuid>& ids) {
  std::string out = "{";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + ids[i].ToString();
  return out + "}";
}

}  // namespace

std::string PageToken::Encode() const {
  return fmt::format("{}_{}", EpochMicros(ts), id.ToString());
}

std::optional<PageToken> PageToken::Decode(const std::string& token) {
  auto sep = token.find('_');
  if (sep == std::string::npos) return std::nullopt;
  std::int64_t us = 0;
  auto [p, ec] = std::from_chars(token.data(), token.data() + sep, us);
  if (ec != std::errc() || p != token.data() + sep) return std::nullopt;
  auto id = common::Uuid::Parse(std::string_view(token).substr(sep + 1));
  if (!id) return std::nullopt;
  return PageToken{internal::FromEpochMicros(us), *id};
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

  // Connector-wide events are those about neither a datamodel nor a subscription.
  std::string scope = "e.connector_id = $1::uuid";
  if (q.scope.kind == EventScope::Kind::kDatamodel) {
    scope +=
        " AND (e.datamodel_id = $2::uuid OR (e.datamodel_id IS NULL AND"
        " e.subscription_id IS NULL))";
  } else if (q.scope.kind == EventScope::Kind::kSubscription) {
    scope +=
        " AND (e.subscription_id = $2::uuid OR (e.datamodel_id IS NULL AND"
        " e.subscription_id IS NULL))";
  } else if (pipeline) {
    // $1: the connectors, $2: datamodels, $7: subscriptions. A subscription's
    // event may carry its datamodel too; it belongs to that subscription's
    // pipeline only, not to every pipeline sharing the datamodel.
    scope =
        "((e.connector_id = ANY($1::uuid[]) AND e.datamodel_id IS NULL AND"
        " e.subscription_id IS NULL) OR e.subscription_id = ANY($7::uuid[]) OR"
        " (e.subscription_id IS NULL AND e.datamodel_id = ANY($2::uuid[])))";
  } else {
    scope += " AND $2::text IS NULL";
  }
  if (!pipeline) scope += " AND $7::text IS NULL";
  std::string connector = q.scope.connector_id.ToString();
  std::optional<std::string> resource, subscriptions;
  if (pipeline) {
    connector = UuidArray(q.scope.connectors);
    resource = UuidArray(q.scope.datamodels);
    subscriptions = UuidArray(q.scope.subscriptions);
  } else if (q.scope.kind != EventScope::Kind::kConnector) {
    resource = q.scope.resource_id.ToString();
  }
  std::optional<std::int64_t> after_ts;
  std::optional<std::string> after_id;
  if (q.after) {
    after_ts = EpochMicros(q.after->ts);
    after_id = q.after->id.ToString();
  }
  // One row more than asked says whether another page exists.
  auto res = tx.exec_params(
      fmt::format("SELECT {} FROM resource_event e WHERE {}"
                  " AND e.level IN (SELECT jsonb_array_elements_text($3::jsonb))"
                  " AND ($4::bigint IS NULL OR (e.ts, e.id) < (" SLUICE_EV_TS(
                      "$4") ", $5::uuid))"
                            " ORDER BY e.ts DESC, e.id DESC LIMIT $6",
                  internal::StoredEventColumns("e"), scope),
      connector, resource, levels.dump(), after_ts, after_id, q.limit + 1, subscriptions);
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
