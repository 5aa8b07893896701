// The request/response types every API handler sees. The error they throw
// is model::ApiError (model/error.h): throwing inside Database::Transact
// rolls the write back, so a rejected request changes nothing.
#pragma once

#include <httplib.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "common/status.h"
#include "common/uuid.h"
#include "model/access/principal.h"
#include "model/error.h"

namespace sluice::api {

// Handlers parse, authorize, call the control-plane model (src/model: its
// rows, repositories, access rules and ApiError) by its names, and render.
using namespace ::sluice::model;

// A worker pod, from its scoped token: one worker row of one connector, one
// launch generation. It may use the worker endpoints and nothing else.
struct PodPrincipal {
  common::Uuid worker_id;
  common::Uuid connector_id;
  common::Uuid generation;
  int shard_index = -1;  // from the worker row, once an endpoint resolved it
};

struct Request {
  const httplib::Request& raw;
  std::map<std::string, std::string> params;  // from {name} segments of the route
  std::optional<Principal> principal;
  std::optional<PodPrincipal> pod;  // set on Access::kWorker routes

  // The path parameter as a UUID; 404 when it is not one (it names nothing).
  common::Uuid PathUuid(const std::string& name) const;
  std::optional<std::string> Query(const std::string& name) const;
  // The body as a JSON object; 400 invalid_json otherwise.
  Json Body() const;
  const Principal& caller() const { return *principal; }
};

struct Response {
  int status = 200;
  Json body;
  // A non-JSON body (e.g. the Prometheus text page) when content_type is set.
  std::string text;
  std::string content_type;

  static Response Ok(Json body) { return {200, std::move(body)}; }
  static Response Created(Json body) { return {201, std::move(body)}; }
  static Response NoContent() { return {204, nullptr}; }
  static Response Text(std::string text, std::string content_type) {
    return {200, nullptr, std::move(text), std::move(content_type)};
  }
};

using Handler = std::function<Response(Request&)>;

Json ErrorBody(const std::string& code, const std::string& message);

}  // namespace sluice::api
