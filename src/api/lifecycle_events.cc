#include "api/lifecycle_events.h"

#include <spdlog/spdlog.h>

namespace sluice::api {

void RecordLifecycle(pqxx::work& tx, const Principal& actor, const events::ResourceIds& about,
                     std::string code, std::string summary, Json details) {
  auto ev = events::LifecycleEvent(code, std::move(summary), actor.email, std::move(details));
  auto recorded = events::RecordAbout(tx, about, std::move(ev));
  // A connector with no team or env has no one to show the event to.
  if (!recorded.ok() && recorded.status().code() != common::Code::kNotFound)
    spdlog::warn("cannot record {}: {}", code, recorded.status().message());
}

}  // namespace sluice::api
