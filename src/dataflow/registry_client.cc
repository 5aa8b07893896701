#include "dataflow/registry_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "common/bounded_json.h"

namespace sluice::dataflow {

using nlohmann::json;

namespace {

constexpr const char* kContentType = "application/vnd.schemaregistry.v1+json";

std::string PathEscape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
      out.push_back(static_cast<char>(c));
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

common::Status StatusOf(const httplib::Result& r, const std::string& what) {
  if (!r) {
    return common::Unavailable(
        fmt::format("schema registry unreachable ({}): {}", what, httplib::to_string(r.error())));
  }
  if (r->status >= 200 && r->status < 300) return common::Status::Ok();
  auto body = common::ParseBoundedJson(r->body, common::kReplyJsonLimits);
  std::string message = body.ok() && body->is_object() ? body->value("message", r->body) : r->body;
  message = fmt::format("schema registry answered {} to {}: {}", r->status, what, message);
  if (r->status == 404) return common::NotFound(message);
  if (r->status >= 500) return common::Unavailable(message);
  return common::FailedPrecondition(message);
}

}  // namespace

common::Result<int> RegistryClient::Register(const std::string& subject,
                                             const std::string& schema_text) {
  httplib::Client http(url_);
  http.set_connection_timeout(5);
  http.set_read_timeout(15);
  if (!token_.empty()) http.set_bearer_token_auth(token_.c_str());
  if (!ca_file_.empty()) http.set_ca_cert_path(ca_file_.c_str());
  std::string what = "register " + subject;
  auto r = http.Post(("/subjects/" + PathEscape(subject) + "/versions").c_str(),
                     json{{"schema", schema_text}}.dump(), kContentType);
  SLUICE_RETURN_IF_ERROR(StatusOf(r, what));
  auto body = common::ParseBoundedJson(r->body, common::kReplyJsonLimits);
  if (!body.ok() || !body->is_object() || !body->contains("id") ||
      !(*body)["id"].is_number_integer())
    return common::Unavailable("schema registry: no id in " + r->body.substr(0, 200));
  int id = (*body)["id"].get<int>();
  std::lock_guard lock(mu_);
  by_id_[id] = schema_text;
  return id;
}

common::Result<std::string> RegistryClient::SchemaText(int id) {
  {
    std::lock_guard lock(mu_);
    if (auto it = by_id_.find(id); it != by_id_.end()) return it->second;
  }
  httplib::Client http(url_);
  http.set_connection_timeout(5);
  http.set_read_timeout(15);
  if (!token_.empty()) http.set_bearer_token_auth(token_.c_str());
  if (!ca_file_.empty()) http.set_ca_cert_path(ca_file_.c_str());
  auto r = http.Get(fmt::format("/schemas/ids/{}", id).c_str());
  SLUICE_RETURN_IF_ERROR(StatusOf(r, fmt::format("schema {}", id)));
  auto body = common::ParseBoundedJson(r->body, common::kReplyJsonLimits);
  if (!body.ok() || !body->is_object() || !body->contains("schema") ||
      !(*body)["schema"].is_string())
    return common::Unavailable("schema registry: no schema in " + r->body.substr(0, 200));
  std::string text = (*body)["schema"].get<std::string>();
  std::lock_guard lock(mu_);
  by_id_[id] = text;
  return text;
}

}  // namespace sluice::dataflow
