// Shared by the events tests: a connector with one datamodel and one
// subscription, and a builder for occurrences about any of them.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "events/resource_event.h"

namespace sluice::events {

struct Resources {
  common::Uuid env = common::Uuid::V4();
  common::Uuid team = common::Uuid::V4();
  common::Uuid connector = common::Uuid::V4();
  common::Uuid datamodel = common::Uuid::V4();
  common::Uuid subscription = common::Uuid::V4();

  ResourceRef Connector() const { return {env, team, connector, "orders-pg", {}, {}, {}, {}}; }
  ResourceRef Datamodel() const {
    auto r = Connector();
    r.datamodel_id = datamodel;
    r.datamodel_name = "public.orders";
    return r;
  }
  ResourceRef Subscription() const {
    auto r = Connector();
    r.subscription_id = subscription;
    r.subscription_name = "orders-to-warehouse";
    return r;
  }
};

inline ResourceEvent MakeEvent(const ResourceRef& ref, std::string code,
                               std::optional<std::string> reason, common::TimePoint ts,
                               Level level = Level::kError) {
  ResourceEvent e;
  e.ts = ts;
  e.level = level;
  e.type = Type::kConnector;
  e.code = std::move(code);
  e.summary = "Worker restarted";
  e.reason = std::move(reason);
  e.resource = ref;
  return e;
}

// A fixed instant, so fingerprints and windows are reproducible.
inline common::TimePoint T0() {
  using namespace std::chrono;
  return common::TimePoint(sys_days(year(2026) / March / 10) + hours(12));
}

}  // namespace sluice::events
