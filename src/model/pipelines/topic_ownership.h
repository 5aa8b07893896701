// Who a topic and a consumer group belong to, in one env. Nothing stores
// ownership: it follows from the connector rows. A topic belongs to the team
// whose source connector produces it (a PostgreSQL source's
// "<topic_prefix>.<schema>.<table>", a datamodel's republished topic); a
// consumer group to the one subscription or datamodel that consumes with it.
// A producing connector may list, in its configuration's
// "share_topics_with", the teams that may read its topics. A topic nobody in
// Sluice produces belongs to nobody and stays readable by name (that is what
// a Kafka source is for). An env's connector_events topic (events/events_topic.h)
// is readable by every team of that env through a `kafka` source, whose worker
// keeps only the team's own events; no one writes it but the outbox.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "common/uuid.h"
#include "model/pipelines/connectors_repository.h"
#include "secrets/key_ring.h"

namespace sluice::model {

// The topic a datamodel's stage republishes onto, or nullopt when the
// datamodel is read raw (no distinct target_topic): subscriptions read this.
std::optional<std::string> RepublishedTopic(const std::string& source_type,
                                            const std::string& source_topic,
                                            const std::optional<std::string>& target_topic);

// A source connector of the env that produces the topic asked about.
struct TopicProducer {
  common::Uuid connector_id;
  std::optional<common::Uuid> team_id;
  std::vector<std::string> shared_with;  // team ids, as configured
};

std::vector<TopicProducer> TopicProducers(pqxx::work& tx, const secrets::KeyRing& keys,
                                          const common::Uuid& env, const std::string& topic);

// The source connectors, of any env (the schema registry is global), that
// may write the registry subjects of `topic`: those with a datamodel whose
// source or target topic it is, a kafka source reading it, and PostgreSQL
// sources whose "<topic_prefix>." starts it. A configuration `keys` cannot
// open proves nothing and is left out. May name a connector twice.
struct SubjectTopicProducer {
  common::Uuid connector_id;
  std::optional<common::Uuid> team_id;  // none: a superuser's
};
std::vector<SubjectTopicProducer> SubjectTopicProducers(pqxx::work& tx,
                                                        const secrets::KeyRing& keys,
                                                        const std::string& topic);

// The prefix a new PostgreSQL source gets when it names none: the owner-
// unique part is the connector's id.
std::string DefaultTopicPrefix(const common::Uuid& connector_id);

// What a source connector's configuration names, checked before it is
// stored (`before`: the stored row on an update). A new PostgreSQL source
// without topic_prefix gets DefaultTopicPrefix; a prefix another team's
// source already publishes under is a 403; a kafka-source's topic must be
// readable by the team (RequireReadableTopic); share_topics_with must list
// team ids (422).
void CheckConnectorTopics(pqxx::work& tx, const secrets::KeyRing& keys, ConnectorRow& c,
                          const ConnectorRow* before);

// 403 "topic_not_shared" when `topic` is produced by another team's
// connector of the env and none of its producers shares it with `team`;
// 403 "topic_of_another_env" for another env's connector_events topic.
void RequireReadableTopic(pqxx::work& tx, const secrets::KeyRing& keys, const common::Uuid& env,
                          const common::Uuid& team, const std::string& topic,
                          const std::string& field);

// 403 "topic_owned_by_another_team" when any producer of `topic` is another
// team's: sharing lets a team read, never write; 403
// "topic_reserved_for_events" for a connector_events topic.
void RequireWritableTopic(pqxx::work& tx, const secrets::KeyRing& keys, const common::Uuid& env,
                          const common::Uuid& team, const std::string& topic,
                          const std::string& field);

// Whether `team` produces `topic` (production metrics are read only there).
bool TeamProducesTopic(pqxx::work& tx, const secrets::KeyRing& keys, const common::Uuid& env,
                       const common::Uuid& team, const std::string& topic);

// The consumer groups in use in the env, other than the one of the
// subscription or datamodel `self` (either may be nullopt).
struct GroupUser {
  std::string kind;  // "subscription" | "datamodel"
  common::Uuid id;
};
std::vector<GroupUser> GroupUsers(pqxx::work& tx, const common::Uuid& env,
                                  const std::string& group);

// 422 "consumer_group_taken" when another subscription or datamodel of the
// env consumes with `group`: a group is owned by the one that names it.
void RequireOwnGroup(pqxx::work& tx, const common::Uuid& env, const std::string& group,
                     const common::Uuid& self, const std::string& field);

// The env a team belongs to, when it has one.
std::optional<common::Uuid> TeamEnv(pqxx::work& tx, const common::Uuid& team);

}  // namespace sluice::model
