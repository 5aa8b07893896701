// The data path's side of the schema registry: Confluent's REST API over
// HTTP (serve's --registry-listen), as any Confluent client would use it.
// Schemas fetched by id are cached: an id's content never changes.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"

namespace sluice::dataflow {

class RegistryClient {
 public:
  // `url`: http(s)://host:port of the registry; `token`, when not empty, is
  // sent as a bearer token (the worker's own, see api/registry_gate.h);
  // `ca_file`, when not empty, is what an https registry is verified with.
  explicit RegistryClient(std::string url, std::string token = "", std::string ca_file = "")
      : url_(std::move(url)), token_(std::move(token)), ca_file_(std::move(ca_file)) {}

  // Registers an Avro schema under `subject`; its id (the same id when the
  // content is already registered). Unavailable when the registry cannot be
  // reached; FailedPrecondition when it refuses the schema (incompatible).
  common::Result<int> Register(const std::string& subject, const std::string& schema_text);
  // The schema text of `id`; NotFound when the registry does not know it.
  common::Result<std::string> SchemaText(int id);

  const std::string& url() const { return url_; }

 private:
  std::string url_;
  std::string token_;
  std::string ca_file_;
  std::mutex mu_;
  std::map<int, std::string> by_id_;
};

}  // namespace sluice::dataflow
