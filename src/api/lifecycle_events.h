// The monitoring event a user's action leaves on what it touched: type
// lifecycle, level info, code such as connector.paused, the actor's email,
// and the message rendered with the actor when written.
#pragma once

#include <string>

#include "api/http.h"
#include "events/connector_events.h"

namespace sluice::api {

void RecordLifecycle(pqxx::work& tx, const Principal& actor, const events::ResourceIds& about,
                     std::string code, std::string summary, Json details = Json::object());

}  // namespace sluice::api
