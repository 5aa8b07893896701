#include "events/resource_event.h"

#include <fmt/format.h>

#include <regex>

#include "common/hex.h"

namespace sluice::events {

const char* LevelName(Level l) {
  switch (l) {
    case Level::kCritical:
      return "critical";
    case Level::kError:
      return "error";
    case Level::kWarn:
      return "warn";
    case Level::kInfo:
      return "info";
  }
  return "info";
}

const char* TypeName(Type t) {
  switch (t) {
    case Type::kLifecycle:
      return "lifecycle";
    case Type::kConnector:
      return "connector";
    case Type::kDlq:
      return "dlq";
  }
  return "connector";
}

std::optional<Level> ParseLevel(std::string_view s) {
  for (Level l : {Level::kCritical, Level::kError, Level::kWarn, Level::kInfo}) {
    if (s == LevelName(l)) return l;
  }
  return std::nullopt;
}

std::optional<Type> ParseType(std::string_view s) {
  for (Type t : {Type::kLifecycle, Type::kConnector, Type::kDlq}) {
    if (s == TypeName(t)) return t;
  }
  return std::nullopt;
}

std::string NormaliseReason(std::string_view reason) {
  // Order matters: a timestamp or UUID contains numbers and hex runs.
  static const std::regex kTimestamp(
      R"(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)");
  static const std::regex kClock(R"(\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b)");
  static const std::regex kUuid(
      R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})");
  static const std::regex kHexPrefixed(R"(\b0[xX][0-9a-fA-F]+\b)");
  // Bare hex runs of 8+ with at least one digit (pod suffixes, hashes, ids).
  static const std::regex kHexRun(R"(\b(?=[0-9a-fA-F]*[0-9])[0-9a-fA-F]{8,}\b)");
  // Kubernetes pod suffixes ("-x7k2p") that carry a digit.
  static const std::regex kPodSuffix(R"(-(?=[a-z]*[0-9])[a-z0-9]{5}\b)");
  static const std::regex kNumber(R"(\d+(\.\d+)?)");
  static const std::regex kSpace(R"(\s+)");
  std::string s(reason);
  s = std::regex_replace(s, kTimestamp, "<ts>");
  s = std::regex_replace(s, kClock, "<ts>");
  s = std::regex_replace(s, kUuid, "<uuid>");
  s = std::regex_replace(s, kHexPrefixed, "<hex>");
  s = std::regex_replace(s, kHexRun, "<hex>");
  s = std::regex_replace(s, kPodSuffix, "-<pod>");
  s = std::regex_replace(s, kNumber, "<n>");
  s = std::regex_replace(s, kSpace, " ");
  auto b = s.find_first_not_of(' ');
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(' ');
  return s.substr(b, e - b + 1);
}

common::Status ResourceEvent::Validate() const {
  using common::InvalidArgument;
  if (code.empty() || code.size() > 64) return InvalidArgument("code must be 1..64 characters");
  for (char c : code) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.')) {
      return InvalidArgument(fmt::format("code '{}' is not [a-z0-9_.]", code));
    }
  }
  if (summary.empty()) return InvalidArgument("summary is empty");
  if (resource.connector_id.is_nil()) return InvalidArgument("connector_id is required");
  if (resource.env_id.is_nil() || resource.team_id.is_nil()) {
    return InvalidArgument("env_id and team_id are required");
  }
  if (resource.connector_name.empty() || resource.connector_name.size() > 255) {
    return InvalidArgument("connector_name must be 1..255 characters");
  }
  if (resource.datamodel_name && resource.datamodel_name->size() > 255) {
    return InvalidArgument("datamodel_name is longer than 255 characters");
  }
  if (resource.subscription_name && resource.subscription_name->size() > 255) {
    return InvalidArgument("subscription_name is longer than 255 characters");
  }
  if (actor_email && actor_email->size() > 320) {
    return InvalidArgument("actor_email is longer than 320 characters");
  }
  if (pod && pod->size() > 255) return InvalidArgument("pod is longer than 255 characters");
  if (!details.is_object()) return InvalidArgument("details must be a JSON object");
  return common::Status::Ok();
}

std::string ResourceEvent::Fingerprint() const {
  auto id = [](const std::optional<common::Uuid>& u) { return u ? u->ToString() : std::string(); };
  // Unit separators keep field boundaries unambiguous.
  std::string material =
      fmt::format("v1\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", code, resource.connector_id.ToString(),
                  id(resource.datamodel_id), id(resource.subscription_id),
                  reason ? NormaliseReason(*reason) : std::string());
  return common::Sha256Hex(material).substr(0, 32);
}

std::string ResourceEvent::RenderMessage() const {
  std::string subject;
  if (resource.subscription_id) {
    subject = fmt::format("Subscription '{}' of connector '{}'",
                          resource.subscription_name.value_or(resource.subscription_id->ToString()),
                          resource.connector_name);
  } else if (resource.datamodel_id) {
    subject = fmt::format("Data model '{}' of connector '{}'",
                          resource.datamodel_name.value_or(resource.datamodel_id->ToString()),
                          resource.connector_name);
  } else {
    subject = fmt::format("Connector '{}'", resource.connector_name);
  }
  std::string msg = fmt::format("{}: {}", subject, summary);
  if (reason && !reason->empty()) msg += fmt::format(" — {}", *reason);
  if (actor_email) msg += fmt::format(" (by {})", *actor_email);
  return msg;
}

}  // namespace sluice::events
