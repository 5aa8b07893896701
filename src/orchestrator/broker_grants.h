// What a worker may do on the broker, derived from its launch config: the
// topics its connector produces and consumes and the consumer groups it
// consumes with, nothing more. `sluice up` hands every worker its own
// SASL/PLAIN identity with this grant (the embedded broker enforces it);
// for an external Kafka the same grant is rendered as kafka-acls commands.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "runtime/worker.h"

namespace sluice::orchestrator {

struct BrokerGrant {
  std::set<std::string> produce, consume, groups;
};

// From a launch config (BuildLaunchConfig / BuildLaunch).
BrokerGrant GrantForLaunch(const nlohmann::json& launch);

// The SASL principal a worker authenticates as: one per worker row.
std::string WorkerPrincipal(const runtime::Worker& worker);

// `kafka-acls` invocations granting `principal` exactly `grant` (literal
// resources), one per line, against `bootstrap`.
std::vector<std::string> KafkaAclsCommands(const std::string& bootstrap,
                                           const std::string& principal, const BrokerGrant& grant);

// How BuildLaunch gives a worker its broker identity: given the env's broker
// settings and the worker's grant, the settings the worker connects with
// (unchanged for a broker this process does not run). Process-wide; unset,
// workers connect with the env's settings as they are.
using BrokerIdentityIssuer = std::function<common::Result<nlohmann::json>(
    const runtime::Worker&, const nlohmann::json& broker, const BrokerGrant&)>;
void SetBrokerIdentityIssuer(BrokerIdentityIssuer issuer);
const BrokerIdentityIssuer& GetBrokerIdentityIssuer();

}  // namespace sluice::orchestrator
