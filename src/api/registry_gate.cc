#include "api/registry_gate.h"

#include <sodium.h>

#include <ctime>
#include <utility>
#include <vector>

#include "api/authenticate.h"
#include "model/access/access.h"
#include "model/pipelines/topic_ownership.h"
#include "runtime/worker_repository.h"

namespace sluice::api {

namespace {

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// Confluent's TopicNameStrategy: "<topic>-value" and "<topic>-key".
std::optional<std::string> TopicOfSubject(const std::string& subject) {
  for (const std::string suffix : {"-value", "-key"}) {
    if (subject.size() > suffix.size() &&
        subject.compare(subject.size() - suffix.size(), suffix.size(), suffix) == 0)
      return subject.substr(0, subject.size() - suffix.size());
  }
  return std::nullopt;
}

}  // namespace

std::string RegistryToken(const std::string& authorization) {
  if (StartsWith(authorization, "Bearer ")) return authorization.substr(7);
  if (!StartsWith(authorization, "Basic ")) return "";
  std::string encoded = authorization.substr(6);
  if (encoded.size() > 16384) return "";
  std::string decoded(encoded.size(), '\0');
  std::size_t len = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(decoded.data()), decoded.size(),
                        encoded.data(), encoded.size(), nullptr, &len, nullptr,
                        sodium_base64_VARIANT_ORIGINAL) != 0)
    return "";
  decoded.resize(len);
  auto colon = decoded.find(':');
  if (colon == std::string::npos) return "";
  return decoded.substr(colon + 1);
}

common::Result<ApiRegistryGate::Caller> ApiRegistryGate::Identify(
    const std::string& authorization) {
  std::string token = RegistryToken(authorization);
  if (token.empty())
    return common::Unauthenticated(
        "the schema registry needs credentials: Bearer <token>, or Basic with a Sluice token "
        "as the password");
  auto claims = ctx_.signer.Verify(token, std::time(nullptr));
  if (!claims.ok()) return common::Unauthenticated("invalid or expired token");
  Caller caller;
  if (claims->kind == auth::TokenKind::kWorker) {
    auto pod = AuthenticatePod(ctx_, "Bearer " + token);
    if (!pod.ok()) return pod.status();
    // Valid only while its worker row stands (deleting the connector revokes it).
    bool live = ctx_.db.Transact([&](pqxx::work& tx) {
      auto worker = runtime::WorkerRepository::Find(tx, pod->worker_id);
      return worker && worker->connector_id == pod->connector_id;
    });
    if (!live) return common::Unauthenticated("invalid or expired token");
    caller.pod = *pod;
    return caller;
  }
  auto principal = Authenticate(ctx_, "Bearer " + token);
  if (!principal.ok()) return principal.status();
  caller.user = std::move(*principal);
  return caller;
}

common::Status ApiRegistryGate::MayRead(const std::string& authorization) {
  auto caller = Identify(authorization);
  return caller.ok() ? common::Status::Ok() : caller.status();
}

common::Status ApiRegistryGate::MayWrite(const std::string& authorization,
                                         const std::optional<std::string>& subject) {
  auto caller = Identify(authorization);
  if (!caller.ok()) return caller.status();
  if (caller->user && caller->user->is_superuser) return common::Status::Ok();
  if (!subject)
    return common::PermissionDenied("only a superuser may change the global compatibility level");
  auto topic = TopicOfSubject(*subject);
  if (!topic)
    return common::PermissionDenied("subject " + *subject +
                                    " names no topic (<topic>-value or <topic>-key); only a "
                                    "superuser may write it");
  return ctx_.db.Transact([&](pqxx::work& tx) -> common::Status {
    auto producers = model::SubjectTopicProducers(tx, ctx_.keys, *topic);
    for (const auto& [connector, team] : producers) {
      if (caller->pod) {
        if (connector == caller->pod->connector_id) return common::Status::Ok();
        continue;
      }
      if (!team) continue;  // no team: a superuser's
      try {
        RequireTeam(tx, *caller->user, *team, auth::Action::kTeamResourceWrite);
        return common::Status::Ok();
      } catch (const ApiError&) {
        // Not this one's team; another producer may be.
      }
    }
    if (producers.empty())
      return common::PermissionDenied("no connector produces topic " + *topic +
                                      "; only a superuser may write subject " + *subject);
    return common::PermissionDenied("writing subject " + *subject +
                                    " needs write access to a connector that produces topic " +
                                    *topic);
  });
}

}  // namespace sluice::api
