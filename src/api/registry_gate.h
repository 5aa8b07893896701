// The schema registry's gate (registry/gate.h) over the API's credentials.
//
// Credentials: the API's bearer tokens, sent as "Authorization: Bearer <t>"
// or as HTTP Basic, which is what Confluent clients send
// (basic.auth.user.info = "<user>:<password>"): the password is a Sluice
// token (a service account's token, a user's access token, or a worker's
// token) and the user name is not checked (by convention "token", or the
// service account's name). Email and password are not accepted: each
// request would cost an Argon2 check and bypass the login limiter.
//
// Reads: any active user, service account or live worker. Writes (register,
// delete, configure) of subject "<topic>-value" or "<topic>-key": a caller
// who may write a connector that produces <topic> (its team's resources), or
// the worker of such a connector; the topic of a connector is its tables'
// "<topic_prefix>.<schema>.<table>", a datamodel's source or target topic, or
// a Kafka source's topic. Subjects no connector produces, and the global
// compatibility level, are a superuser's.
#pragma once

#include <optional>
#include <string>

#include "api/context.h"
#include "api/http.h"
#include "registry/gate.h"

namespace sluice::api {

class ApiRegistryGate : public registry::RegistryGate {
 public:
  explicit ApiRegistryGate(ApiContext& ctx) : ctx_(ctx) {}

  common::Status MayRead(const std::string& authorization) override;
  common::Status MayWrite(const std::string& authorization,
                          const std::optional<std::string>& subject) override;

 private:
  struct Caller {
    std::optional<Principal> user;
    std::optional<PodPrincipal> pod;
  };
  common::Result<Caller> Identify(const std::string& authorization);

  ApiContext& ctx_;
};

// The token an Authorization header carries: Bearer <token>, or HTTP Basic
// whose password is the token. Empty when there is none.
std::string RegistryToken(const std::string& authorization);

}  // namespace sluice::api
