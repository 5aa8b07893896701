#include "orchestrator/broker_grants.h"

#include <fmt/format.h>

#include "connectors/topic_naming.h"

namespace sluice::orchestrator {

using nlohmann::json;

namespace {

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

void Add(std::set<std::string>& to, const std::string& name) {
  if (!name.empty()) to.insert(name);
}

BrokerIdentityIssuer& Issuer() {
  static BrokerIdentityIssuer issuer;
  return issuer;
}

// Shell-quoted for the rendered commands: names are Kafka-legal, principals ours.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

BrokerGrant GrantForLaunch(const json& launch) {
  BrokerGrant g;
  if (auto source = launch.find("source"); source != launch.end() && source->is_object()) {
    if (Str(*source, "type") == "kafka") {
      Add(g.consume, Str(*source, "topic"));
    } else if (auto tables = source->find("tables"); tables != source->end()) {
      std::string prefix = source->value("topic_prefix", std::string("sluice"));
      for (const auto& t : *tables)
        Add(g.produce, connectors::TopicForTable(prefix, {Str(t, "schema"), Str(t, "table")}));
    }
  }
  if (auto models = launch.find("datamodels"); models != launch.end() && models->is_array()) {
    for (const auto& m : *models) {
      Add(g.consume, Str(m, "source_topic"));
      Add(g.produce, Str(m, "target_topic"));
      std::string group = Str(m, "consumer_group");
      Add(g.groups, group.empty() ? "datamodel-" + Str(m, "id") : group);
    }
  }
  if (auto subs = launch.find("subscriptions"); subs != launch.end() && subs->is_array()) {
    for (const auto& s : *subs) {
      Add(g.consume, Str(s, "topic"));
      std::string group = Str(s, "consumer_group");
      Add(g.groups, group.empty() ? Str(s, "id") : group);
    }
  }
  return g;
}

std::string WorkerPrincipal(const runtime::Worker& worker) {
  return "sluice-worker-" + worker.id.ToString();
}

std::vector<std::string> KafkaAclsCommands(const std::string& bootstrap,
                                           const std::string& principal, const BrokerGrant& grant) {
  std::vector<std::string> out;
  std::string head = fmt::format("kafka-acls --bootstrap-server {} --add --allow-principal {}",
                                 Quote(bootstrap), Quote("User:" + principal));
  for (const auto& t : grant.produce)
    out.push_back(
        fmt::format("{} --operation Write --operation Describe --topic {}", head, Quote(t)));
  for (const auto& t : grant.consume)
    out.push_back(
        fmt::format("{} --operation Read --operation Describe --topic {}", head, Quote(t)));
  for (const auto& g : grant.groups)
    out.push_back(fmt::format("{} --operation Read --group {}", head, Quote(g)));
  return out;
}

void SetBrokerIdentityIssuer(BrokerIdentityIssuer issuer) { Issuer() = std::move(issuer); }
const BrokerIdentityIssuer& GetBrokerIdentityIssuer() { return Issuer(); }

}  // namespace sluice::orchestrator
