#include "api/lifecycle_events.h"

namespace sluice::api {

void RecordLifecycle(pqxx::work& tx, const Principal& actor, const events::ResourceIds& about,
                     std::string code, std::string summary, Json details) {
  events::RecordAboutOrLog(
      tx, about,
      events::LifecycleEvent(std::move(code), std::move(summary), actor.email, std::move(details)));
}

}  // namespace sluice::api
