#include "runtime/kubernetes_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/http_client.h"

namespace sluice::runtime {

namespace {

std::string Plural(const std::string& kind) {
  if (kind == "Deployment") return "deployments";
  if (kind == "Job") return "jobs";
  if (kind == "Secret") return "secrets";
  return "";
}

std::string UrlEncode(const std::string& s) {
  char* escaped = curl_easy_escape(nullptr, s.c_str(), static_cast<int>(s.size()));
  std::string out = escaped ? escaped : "";
  curl_free(escaped);
  return out;
}

// The API server's Status object carries the reason in its own words.
std::string ServerMessage(long status, const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string())
    return fmt::format("HTTP {}: {}", status, j["message"].get<std::string>());
  return fmt::format("HTTP {}", status);
}

}  // namespace

common::Result<std::string> KubernetesClient::ResourcePath(const std::string& api_version,
                                                           const std::string& kind,
                                                           const std::string& namespace_name,
                                                           const std::string& name) {
  auto plural = Plural(kind);
  if (plural.empty()) return common::InvalidArgument("the launcher does not manage kind " + kind);
  if (api_version.empty() || namespace_name.empty())
    return common::InvalidArgument("a manifest needs apiVersion and metadata.namespace");
  // The core group lives under /api, every named group under /apis.
  std::string root = api_version.find('/') == std::string::npos ? "/api/" : "/apis/";
  std::string path =
      fmt::format("{}{}/namespaces/{}/{}", root, api_version, namespace_name, plural);
  if (!name.empty()) path += "/" + name;
  return path;
}

common::Result<std::string> KubernetesClient::Call(const std::string& method,
                                                   const std::string& path,
                                                   const std::string& content_type,
                                                   const std::string& body, bool missing_ok) const {
  common::HttpRequest request;
  request.method = method;
  request.url = options_.server + path;
  request.body = body;
  request.headers = {"Accept: application/json"};
  if (!content_type.empty()) request.headers.push_back("Content-Type: " + content_type);
  // Re-read on every call: projected service-account tokens rotate.
  if (!options_.token_file.empty() && std::filesystem::exists(options_.token_file)) {
    std::ifstream in(options_.token_file);
    std::stringstream token;
    token << in.rdbuf();
    std::string t = token.str();
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
    request.headers.push_back(common::BearerHeader(t));
  }
  if (!options_.ca_file.empty() && std::filesystem::exists(options_.ca_file))
    request.ca_file = options_.ca_file;
  auto reply = common::SendHttp(request);
  if (!reply.ok()) return common::Unavailable("Kubernetes API server: " + reply.status().message());
  if (missing_ok && reply->status == 404) return std::string();
  if (!reply->ok())
    return common::Unavailable(fmt::format("Kubernetes API server refused {} {}: {}", method, path,
                                           ServerMessage(reply->status, reply->body)));
  return reply->body;
}

common::Status KubernetesClient::Apply(const nlohmann::json& manifest) const {
  auto path = ResourcePath(manifest.value("apiVersion", ""), manifest.value("kind", ""),
                           manifest["metadata"].value("namespace", ""),
                           manifest["metadata"].value("name", ""));
  if (!path.ok()) return path.status();
  // JSON is YAML, so the manifest goes as an apply patch unchanged.
  auto r =
      Call("PATCH", *path + "?fieldManager=" + UrlEncode(options_.field_manager) + "&force=true",
           "application/apply-patch+yaml", manifest.dump(), false);
  return r.status();
}

common::Status KubernetesClient::Delete(const std::string& api_version, const std::string& kind,
                                        const std::string& namespace_name,
                                        const std::string& name) const {
  auto path = ResourcePath(api_version, kind, namespace_name, name);
  if (!path.ok()) return path.status();
  // Background propagation: the Deployment's pods go with it.
  auto r =
      Call("DELETE", *path, "application/json",
           R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"})", true);
  return r.status();
}

common::Result<std::vector<nlohmann::json>> KubernetesClient::List(
    const std::string& api_version, const std::string& kind, const std::string& namespace_name,
    const std::string& label_selector) const {
  auto path = ResourcePath(api_version, kind, namespace_name, "");
  if (!path.ok()) return path.status();
  auto body = Call("GET", *path + "?labelSelector=" + UrlEncode(label_selector), "", "", false);
  if (!body.ok()) return body.status();
  auto j = nlohmann::json::parse(*body, nullptr, false);
  if (!j.is_object() || !j.contains("items") || !j["items"].is_array())
    return common::Unavailable("Kubernetes API server sent a list without items");
  return j["items"].get<std::vector<nlohmann::json>>();
}

}  // namespace sluice::runtime
