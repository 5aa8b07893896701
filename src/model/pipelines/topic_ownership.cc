#include "model/pipelines/topic_ownership.h"

#include <algorithm>

#include "connectors/types/config_validation.h"
#include "events/events_topic.h"
#include "model/config_keys.h"
#include "model/sql_util.h"

namespace sluice::model {
namespace {

// What connectors were created with before prefixes carried an owner part;
// a stored configuration without topic_prefix still publishes under it.
constexpr const char* kLegacyPrefix = "sluice";

// The prefix as it appears in topic names (characters Kafka refuses replaced).
std::string TopicSpelling(const std::string& prefix) {
  std::string topic = connectors::types::TopicForTable(prefix, "s", "t");
  return topic.substr(0, topic.size() - 3 - (prefix.empty() ? 0 : 1));
}

std::string PrefixOf(const ConnectorRow& c) {
  auto it = c.configuration.find("topic_prefix");
  if (it == c.configuration.end() || !it->is_string()) return kLegacyPrefix;
  return it->get<std::string>();
}

// "<prefix>.<schema>.<table>": schema and table never hold a dot.
bool UnderPrefix(const std::string& topic, const std::string& spelled_prefix) {
  std::string_view rest(topic);
  if (!spelled_prefix.empty()) {
    if (rest.size() <= spelled_prefix.size() + 1 ||
        rest.substr(0, spelled_prefix.size()) != spelled_prefix ||
        rest[spelled_prefix.size()] != '.')
      return false;
    rest.remove_prefix(spelled_prefix.size() + 1);
  }
  auto dot = rest.find('.');
  return dot != std::string_view::npos && dot > 0 && dot + 1 < rest.size() &&
         rest.find('.', dot + 1) == std::string_view::npos;
}

std::vector<std::string> SharedWith(const ConnectorRow& c) {
  std::vector<std::string> out;
  auto it = c.configuration.find("share_topics_with");
  if (it == c.configuration.end() || !it->is_string()) return out;
  std::string_view rest = it->get_ref<const std::string&>();
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view part = rest.substr(0, comma);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (!part.empty()) out.emplace_back(part);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

std::vector<ConnectorRow> EnvSources(pqxx::work& tx, const secrets::KeyRing& keys,
                                     const common::Uuid& env) {
  std::vector<ConnectorRow> out;
  for (const auto& r :
       tx.exec_params("SELECT id FROM connector WHERE env_id = $1 AND way = 'source' ORDER BY id",
                      env.ToString())) {
    if (auto c = FindConnector(tx, keys, sql::GetUuid(r[0]))) out.push_back(std::move(*c));
  }
  return out;
}

bool Produces(pqxx::work& tx, const ConnectorRow& c, const std::string& topic) {
  if ((c.connector_type == "postgresql" || c.connector_type == "mysql") &&
      UnderPrefix(topic, TopicSpelling(PrefixOf(c))))
    return true;
  if (c.connector_type == "kafka" &&
      topic == c.configuration.value("topic", std::string()) + ".sluice")
    return true;
  for (const auto& r :
       tx.exec_params("SELECT coalesce(source_topic, ''), target_topic FROM datamodel "
                      "WHERE source_connector_id = $1",
                      c.id.ToString())) {
    auto republished =
        RepublishedTopic(c.connector_type, r[0].c_str(),
                         r[1].is_null() ? std::nullopt : std::optional<std::string>(r[1].c_str()));
    if (republished && *republished == topic) return true;
  }
  return false;
}

[[noreturn]] void Refuse(const std::string& code, const std::string& message) {
  throw ApiError(403, code, message);
}

}  // namespace

std::vector<SubjectTopicProducer> SubjectTopicProducers(pqxx::work& tx,
                                                        const secrets::KeyRing& keys,
                                                        const std::string& topic) {
  std::vector<SubjectTopicProducer> out;
  auto add = [&](const pqxx::row& r) {
    out.push_back({sql::GetUuid(r[0]), sql::GetOptUuid(r[1])});
  };
  for (const auto& r : tx.exec_params(
           "SELECT DISTINCT c.id::text, c.team_id::text FROM connector c JOIN datamodel d ON "
           "d.source_connector_id = c.id WHERE $1 IN (d.source_topic, d.target_topic)",
           topic))
    add(r);
  // Configurations are stored encrypted: the topic of each source is read
  // from its decrypted configuration.
  for (const auto& r :
       tx.exec("SELECT id::text, team_id::text, connector_type, json_configuration::text FROM "
               "connector WHERE way = 'source' AND connector_type IN ('postgresql', 'kafka')")) {
    nlohmann::json config;
    try {
      config = DecryptStored(nlohmann::json::parse(r[3].as<std::string>()), keys);
    } catch (const std::exception&) {
      continue;  // a key this process lacks: not this caller's to prove
    }
    if (!config.is_object()) continue;
    bool produces = false;
    if (r[2].as<std::string>() == "kafka") {
      produces = config.value("topic", std::string()) == topic;
    } else {
      produces = topic.starts_with(config.value("topic_prefix", std::string("sluice")) + ".");
    }
    if (produces) add(r);
  }
  return out;
}

std::string DefaultTopicPrefix(const common::Uuid& connector_id) {
  std::string hex = connector_id.ToString();
  hex.erase(std::remove(hex.begin(), hex.end(), '-'), hex.end());
  return std::string(kLegacyPrefix) + "." + hex.substr(0, 12);
}

std::vector<TopicProducer> TopicProducers(pqxx::work& tx, const secrets::KeyRing& keys,
                                          const common::Uuid& env, const std::string& topic) {
  std::vector<TopicProducer> out;
  for (const auto& c : EnvSources(tx, keys, env)) {
    if (Produces(tx, c, topic)) out.push_back({c.id, c.team_id, SharedWith(c)});
  }
  return out;
}

void RequireReadableTopic(pqxx::work& tx, const secrets::KeyRing& keys, const common::Uuid& env,
                          const common::Uuid& team, const std::string& topic,
                          const std::string& field) {
  if (auto events_env = events::EventsTopicEnv(topic)) {
    if (*events_env == env) return;  // every team's, each seeing only its own events
    Refuse("topic_of_another_env",
           field + ": topic " + topic +
               " carries another environment's resource events (each env's connector_events "
               "topic is read from that env only)");
  }
  auto producers = TopicProducers(tx, keys, env, topic);
  if (producers.empty()) return;  // nobody in Sluice produces it: readable by name
  for (const auto& p : producers) {
    if (p.team_id == team) return;
    const auto& shared = p.shared_with;
    if (std::find(shared.begin(), shared.end(), team.ToString()) != shared.end()) return;
  }
  Refuse("topic_not_shared",
         field + ": topic " + topic +
             " is produced by another team's connector, which does not share it with this team "
             "(a topic belongs to the team producing it; the owner lists the teams it shares "
             "with in its configuration's share_topics_with)");
}

void RequireWritableTopic(pqxx::work& tx, const secrets::KeyRing& keys, const common::Uuid& env,
                          const common::Uuid& team, const std::string& topic,
                          const std::string& field) {
  if (events::ReservedForEvents(topic)) {
    Refuse("topic_reserved_for_events",
           field + ": topic " + topic +
               " is spelled like an environment's connector_events topic, which only the "
               "events outbox writes");
  }
  for (const auto& p : TopicProducers(tx, keys, env, topic)) {
    if (p.team_id != team) {
      Refuse("topic_owned_by_another_team",
             field + ": topic " + topic +
                 " is produced by another team's connector (a topic belongs to the team "
                 "producing it; sharing lets a team read it, never write it)");
    }
  }
}

bool TeamProducesTopic(pqxx::work& tx, const secrets::KeyRing& keys, const common::Uuid& env,
                       const common::Uuid& team, const std::string& topic) {
  for (const auto& p : TopicProducers(tx, keys, env, topic))
    if (p.team_id == team) return true;
  return false;
}

std::vector<GroupUser> GroupUsers(pqxx::work& tx, const common::Uuid& env,
                                  const std::string& group) {
  std::vector<GroupUser> out;
  for (const auto& r : tx.exec_params(
           "SELECT 'subscription', s.id FROM subscription s "
           "LEFT JOIN connector c ON c.id = s.target_connector_id "
           "LEFT JOIN pipeline p ON p.id = s.pipeline_id "
           "WHERE coalesce(c.env_id, p.env_id) = $1 AND coalesce(s.consumer_id, s.id::text) = $2 "
           "UNION ALL "
           "SELECT 'datamodel', d.id FROM datamodel d "
           "JOIN connector c ON c.id = d.source_connector_id "
           "WHERE c.env_id = $1 AND coalesce(d.consumer_id, 'datamodel-' || d.id::text) = $2",
           env.ToString(), group)) {
    out.push_back({r[0].c_str(), sql::GetUuid(r[1])});
  }
  return out;
}

void RequireOwnGroup(pqxx::work& tx, const common::Uuid& env, const std::string& group,
                     const common::Uuid& self, const std::string& field) {
  for (const auto& u : GroupUsers(tx, env, group)) {
    if (u.id == self) continue;
    throw ApiError(422, "consumer_group_taken",
                   field + ": consumer group " + group + " is used by another " + u.kind +
                       " of this env (a consumer group belongs to the one subscription or "
                       "datamodel consuming with it)");
  }
}

std::optional<common::Uuid> TeamEnv(pqxx::work& tx, const common::Uuid& team) {
  auto r = tx.exec_params("SELECT env_id FROM team WHERE id = $1", team.ToString());
  if (r.empty()) return std::nullopt;
  return sql::GetOptUuid(r[0][0]);
}

void CheckConnectorTopics(pqxx::work& tx, const secrets::KeyRing& keys, ConnectorRow& c,
                          const ConnectorRow* before) {
  if (c.way != "source") return;
  auto& config = c.configuration;
  if (auto it = config.find("share_topics_with"); it != config.end() && it->is_string()) {
    for (const auto& id : SharedWith(c)) {
      if (!common::Uuid::Parse(id))
        throw ApiError(422, "invalid_configuration",
                       "invalid configuration: share_topics_with: '" + id +
                           "' is not a team id (a comma-separated list of team ids)");
    }
  }
  if (c.connector_type == "postgresql" || c.connector_type == "mysql") {
    if (!config.contains("topic_prefix") || config["topic_prefix"].is_null()) {
      // Replacing a configuration never renames the topics it publishes.
      if (before && before->configuration.contains("topic_prefix")) {
        config["topic_prefix"] = before->configuration["topic_prefix"];
      } else if (!before) {
        config["topic_prefix"] = DefaultTopicPrefix(c.id);
      }
    }
    std::string spelled = TopicSpelling(PrefixOf(c));
    bool changed = !before || TopicSpelling(PrefixOf(*before)) != spelled;
    if (!changed || !c.env_id) return;
    for (const auto& other : EnvSources(tx, keys, *c.env_id)) {
      if (other.id == c.id ||
          (other.connector_type != "postgresql" && other.connector_type != "mysql") ||
          other.team_id == c.team_id)
        continue;
      if (TopicSpelling(PrefixOf(other)) == spelled) {
        Refuse("topic_prefix_taken",
               "configuration.topic_prefix: another team's connector publishes under " + spelled +
                   " (the topics a connector produces belong to its team; leave topic_prefix "
                   "unset for one of its own)");
      }
    }
    return;
  }
  if (c.connector_type == "kafka" && c.env_id && c.team_id) {
    std::string topic = config.value("topic", std::string());
    bool changed = !before || before->configuration.value("topic", std::string()) != topic;
    if (changed)
      RequireReadableTopic(tx, keys, *c.env_id, *c.team_id, topic, "configuration.topic");
  }
}

std::optional<std::string> RepublishedTopic(const std::string& source_type,
                                            const std::string& source_topic,
                                            const std::optional<std::string>& target_topic) {
  if (target_topic && !target_topic->empty() && *target_topic != source_topic) return target_topic;
  // An existing topic holds plain JSON values, never the change envelope
  // subscriptions read: it is always republished.
  if (source_type == "kafka" && !source_topic.empty()) return source_topic + ".sluice";
  return std::nullopt;
}

}  // namespace sluice::model
