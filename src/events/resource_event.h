// One occurrence of a monitoring event about a connector, a datamodel or a
// subscription. The entity owns the rules: which fields are valid, how the
// display message is rendered (at write time, so the UI and the
// connector_events topic show the same words), and the fingerprint that
// decides which occurrences fold into one resource_event row.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "common/time.h"
#include "common/uuid.h"

namespace sluice::events {

// How loud: the Monitoring tab shows critical + error by default.
enum class Level { kCritical, kError, kWarn, kInfo };
// Where from: a user acting, the runtime reporting on itself, an undeliverable record.
enum class Type { kLifecycle, kConnector, kDlq };

const char* LevelName(Level l);
const char* TypeName(Type t);
std::optional<Level> ParseLevel(std::string_view s);
std::optional<Type> ParseType(std::string_view s);

// What the event is about, with names as they stand now (denormalised: the
// row outlives the resource and its renames).
struct ResourceRef {
  common::Uuid env_id;
  common::Uuid team_id;
  common::Uuid connector_id;
  std::string connector_name;
  std::optional<common::Uuid> datamodel_id;
  std::optional<std::string> datamodel_name;
  std::optional<common::Uuid> subscription_id;
  std::optional<std::string> subscription_name;
};

// Replaces the parts of a runtime message that change between repeats of the
// same situation — timestamps, UUIDs, hex (addresses, offsets, hashes) and
// numbers — by placeholders, and collapses whitespace, so a crash loop whose
// message names a new pod and restart count each time still folds.
std::string NormaliseReason(std::string_view reason);

struct ResourceEvent {
  common::TimePoint ts;
  Level level = Level::kInfo;
  Type type = Type::kConnector;
  std::string code;     // stable machine code, e.g. worker.oom_killed; [a-z0-9_.]{1,64}
  std::string summary;  // human sentence for the code, e.g. "Worker was OOM-killed"
  std::optional<std::string> reason;  // first line of what the runtime said
  nlohmann::json details = nlohmann::json::object();
  ResourceRef resource;
  std::optional<std::string> actor_email;  // for user-triggered (lifecycle) events
  std::optional<std::string> pod;
  std::optional<std::int32_t> generation;

  common::Status Validate() const;
  // 32 lower-case hex characters: SHA-256 over the code, the resource ids and
  // the normalised reason. Names, level, details and time do not count.
  std::string Fingerprint() const;
  // "<subject>: <summary> — <reason> (by <actor>)": the stored display string.
  std::string RenderMessage() const;
};

}  // namespace sluice::events
