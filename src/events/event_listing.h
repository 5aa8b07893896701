// The monitoring listing: events of a connector, a datamodel, a subscription
// or a pipeline, newest first (ts DESC, id DESC), filtered by level and paged
// with an opaque keyset token. A datamodel or subscription view also shows
// its connector's own (connector-wide) events; the connector view shows all
// of its datamodels' and subscriptions' events as well; a pipeline view shows
// its datamodels' and subscriptions' events and the connector-wide events of
// its connectors.
#pragma once

#include <pqxx/pqxx>

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "common/uuid.h"
#include "events/resource_event.h"
#include "events/stored_event.h"

namespace sluice::events {

struct EventScope {
  enum class Kind { kConnector, kDatamodel, kSubscription, kPipeline };
  Kind kind = Kind::kConnector;
  common::Uuid connector_id;
  common::Uuid resource_id;  // the datamodel or subscription; unused for kConnector
  // kPipeline only: its source/target connectors, datamodels, subscriptions.
  std::vector<common::Uuid> connectors, datamodels, subscriptions;

  static EventScope Connector(common::Uuid c) { return {Kind::kConnector, c, {}}; }
  static EventScope Datamodel(common::Uuid c, common::Uuid d) { return {Kind::kDatamodel, c, d}; }
  static EventScope Subscription(common::Uuid c, common::Uuid s) {
    return {Kind::kSubscription, c, s};
  }
  static EventScope Pipeline(std::vector<common::Uuid> connectors,
                             std::vector<common::Uuid> datamodels,
                             std::vector<common::Uuid> subscriptions) {
    EventScope scope;
    scope.kind = Kind::kPipeline;
    scope.connectors = std::move(connectors);
    scope.datamodels = std::move(datamodels);
    scope.subscriptions = std::move(subscriptions);
    return scope;
  }
};

// Position after the last row of a page.
struct PageToken {
  common::TimePoint ts;
  common::Uuid id;

  std::string Encode() const;  // "<epoch micros>_<uuid>"
  static std::optional<PageToken> Decode(const std::string& token);
};

inline constexpr int kDefaultPageSize = 50;
inline constexpr int kMaxPageSize = 500;

struct EventQuery {
  EventScope scope;
  std::vector<Level> levels = {Level::kCritical, Level::kError};  // errors only by default
  int limit = kDefaultPageSize;                                   // 1..kMaxPageSize
  std::optional<PageToken> after;
  // Only events recorded for these teams (read access to an event is read
  // access to its own team_id); nullopt: no such filter.
  std::optional<std::vector<common::Uuid>> teams;
};

struct EventPage {
  std::vector<StoredEvent> events;
  std::optional<PageToken> next;  // absent on the last page
};

common::Result<EventPage> ListEvents(pqxx::transaction_base& tx, const EventQuery& q);

// The teams the events of a scope were recorded for.
std::vector<common::Uuid> TeamsInScope(pqxx::transaction_base& tx, const EventScope& scope);

}  // namespace sluice::events
