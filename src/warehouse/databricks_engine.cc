#include "warehouse/databricks_engine.h"

#include <curl/curl.h>

#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "guard/http_destination.h"

namespace sluice::warehouse {
namespace {

using nlohmann::json;

size_t Collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string Text(const json& config, const char* key) {
  if (!config.contains(key) || !config[key].is_string()) return "";
  return config[key].get<std::string>();
}

class DatabricksEngine final : public Engine {
 public:
  DatabricksEngine(std::string base_url, std::string token, std::string warehouse_id,
                   std::string catalog, std::string schema, DatabricksOptions options)
      : base_url_(std::move(base_url)),
        token_(std::move(token)),
        warehouse_id_(std::move(warehouse_id)),
        catalog_(std::move(catalog)),
        schema_(std::move(schema)),
        options_(options),
        curl_(curl_easy_init()) {}
  ~DatabricksEngine() override { curl_easy_cleanup(curl_); }

  common::Result<std::string> Test() override {
    auto id = Submit("SELECT 1");
    if (!id.ok()) return id.status();
    // The warehouse may need to start; give it the request timeout.
    auto deadline = std::chrono::steady_clock::now() + options_.request_timeout;
    while (true) {
      auto st = Poll(*id);
      if (!st.ok()) return st.status();
      if (st->phase == StatementPhase::kSucceeded)
        return "connected: SQL warehouse " + warehouse_id_ + " answered SELECT 1";
      if (st->phase != StatementPhase::kRunning) return common::Unavailable(st->error);
      if (std::chrono::steady_clock::now() > deadline) {
        (void)Cancel(*id);
        return common::Unavailable("SQL warehouse " + warehouse_id_ +
                                   " did not answer SELECT 1 in time (is it stopped?)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }

  common::Result<std::string> Submit(const std::string& sql) override {
    json body = {{"statement", sql},           {"warehouse_id", warehouse_id_},
                 {"wait_timeout", "0s"},       {"on_wait_timeout", "CONTINUE"},
                 {"disposition", "INLINE"},    {"format", "JSON_ARRAY"},
                 {"row_limit", kMaxResultRows}};
    if (!catalog_.empty()) body["catalog"] = catalog_;
    if (!schema_.empty()) body["schema"] = schema_;
    auto resp = Call("POST", "/api/2.0/sql/statements", body);
    if (!resp.ok()) return resp.status();
    if (!resp->contains("statement_id") || !(*resp)["statement_id"].is_string())
      return common::Unavailable("Databricks answered without a statement_id: " + resp->dump());
    std::string id = (*resp)["statement_id"];
    last_[id] = *resp;
    return id;
  }

  common::Result<StatementState> Poll(const std::string& id) override {
    auto it = last_.find(id);
    if (it != last_.end() && IsTerminal(it->second)) return StateOf(it->second);
    auto resp = Call("GET", "/api/2.0/sql/statements/" + id, nullptr);
    if (!resp.ok()) return resp.status();
    last_[id] = *resp;
    return StateOf(*resp);
  }

  common::Status Cancel(const std::string& id) override {
    auto resp = Call("POST", "/api/2.0/sql/statements/" + id + "/cancel", json::object());
    last_.erase(id);  // the next Poll asks again
    return resp.status();
  }

  common::Result<ResultSet> FetchResult(const std::string& id, size_t max_rows) override {
    auto it = last_.find(id);
    if (it == last_.end() || StateOf(it->second).phase != StatementPhase::kSucceeded)
      return common::FailedPrecondition("the statement has not succeeded");
    const json& s = it->second;
    ResultSet out;
    const json manifest = s.value("manifest", json::object());
    for (const auto& c : manifest.value("schema", json::object()).value("columns", json::array())) {
      out.columns.push_back({c.value("name", ""), c.value("type_name", c.value("type_text", ""))});
    }
    out.truncated = manifest.value("truncated", false);
    json chunk = s.value("result", json::object());
    while (true) {
      for (const auto& row : chunk.value("data_array", json::array())) {
        if (out.rows.size() >= max_rows) {
          out.truncated = true;
          break;
        }
        out.rows.push_back(row.get<std::vector<json>>());
      }
      if (out.rows.size() >= max_rows) {
        if (chunk.contains("next_chunk_index")) out.truncated = true;
        break;
      }
      std::string next;
      if (chunk.contains("next_chunk_internal_link") &&
          chunk["next_chunk_internal_link"].is_string())
        next = chunk["next_chunk_internal_link"];
      else if (chunk.contains("next_chunk_index") && chunk["next_chunk_index"].is_number_integer())
        next = "/api/2.0/sql/statements/" + id + "/result/chunks/" +
               std::to_string(chunk["next_chunk_index"].get<int>());
      if (next.empty()) break;
      auto resp = Call("GET", next, nullptr);
      if (!resp.ok()) return resp.status();
      chunk = *resp;
    }
    return out;
  }

 private:
  static bool IsTerminal(const json& s) {
    std::string state = s.value("status", json::object()).value("state", "");
    return state == "SUCCEEDED" || state == "FAILED" || state == "CANCELED" || state == "CLOSED";
  }

  static StatementState StateOf(const json& s) {
    json status = s.value("status", json::object());
    std::string state = status.value("state", "");
    if (state == "SUCCEEDED") return {StatementPhase::kSucceeded, ""};
    if (state == "FAILED") {
      json error = status.value("error", json::object());
      std::string message = error.value("message", "statement failed");
      if (error.contains("error_code"))
        message = error["error_code"].get<std::string>() + ": " + message;
      return {StatementPhase::kFailed, message};
    }
    if (state == "CANCELED") return {StatementPhase::kCancelled, "cancelled"};
    if (state == "CLOSED")
      return {StatementPhase::kFailed, "the statement was closed before its result was read"};
    return {StatementPhase::kRunning, ""};
  }

  common::Result<json> Call(const std::string& method, const std::string& path, const json& body) {
    if (!curl_) return common::Internal("libcurl unavailable");
    curl_easy_reset(curl_);
    std::string url = base_url_ + path, payload = body.is_null() ? "" : body.dump(), response;
    // The connect policy, at connect time: http(s) only, to the checked
    // address only, no redirect, no proxy.
    auto pinned = guard::PinHttp(*guard::ProcessPolicy(), url);
    if (!pinned.ok()) return pinned.status();
    std::unique_ptr<curl_slist, void (*)(curl_slist*)> resolve(
        curl_slist_append(nullptr, pinned->resolve.c_str()), curl_slist_free_all);
    curl_easy_setopt(curl_, CURLOPT_RESOLVE, resolve.get());
    curl_easy_setopt(curl_, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl_, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl_, CURLOPT_PROXY, "");
    struct curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, ("Authorization: Bearer " + token_).c_str());
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Accept: application/json");
    curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, &Collect);
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &response);
    curl_easy_setopt(curl_, CURLOPT_TIMEOUT, static_cast<long>(options_.request_timeout.count()));
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    if (method == "POST") {
      curl_easy_setopt(curl_, CURLOPT_POST, 1L);
      curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, payload.c_str());
      curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE, static_cast<long>(payload.size()));
    }
    CURLcode rc = curl_easy_perform(curl_);
    long status = 0;
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    if (rc != CURLE_OK)
      return common::Unavailable("Databricks " + base_url_ + ": " + curl_easy_strerror(rc));
    json parsed = json::parse(response, nullptr, false);
    if (status < 200 || status >= 300) {
      std::string message = parsed.is_object() ? parsed.value("message", response) : response;
      if (parsed.is_object() && parsed.contains("error_code") && parsed["error_code"].is_string())
        message = parsed["error_code"].get<std::string>() + ": " + message;
      std::string text = "Databricks HTTP " + std::to_string(status) + ": " + message;
      if (status == 401 || status == 403) return common::PermissionDenied(text);
      if (status == 404) return common::NotFound(text);
      return common::Unavailable(text);
    }
    if (parsed.is_discarded())
      return common::Unavailable("Databricks answered non-JSON: " + response);
    return parsed;
  }

  std::string base_url_, token_, warehouse_id_, catalog_, schema_;
  DatabricksOptions options_;
  CURL* curl_;
  std::map<std::string, json> last_;  // latest response per statement
};

}  // namespace

common::Result<std::unique_ptr<Engine>> ConnectDatabricks(const json& config,
                                                          DatabricksOptions options) {
  GlobalInit();
  std::string host = Text(config, "host"), http_path = Text(config, "http_path"),
              token = Text(config, "token");
  if (host.empty()) return common::InvalidArgument("databricks: host is required");
  if (token.empty()) return common::InvalidArgument("databricks: token is required");
  while (!http_path.empty() && http_path.back() == '/') http_path.pop_back();
  auto slash = http_path.rfind('/');
  std::string warehouse_id = slash == std::string::npos ? http_path : http_path.substr(slash + 1);
  if (warehouse_id.empty())
    return common::InvalidArgument("databricks: http_path must end with the warehouse id");
  std::string base = host.find("://") == std::string::npos ? "https://" + host : host;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return std::unique_ptr<Engine>(new DatabricksEngine(
      base, token, warehouse_id, Text(config, "catalog"), Text(config, "schema"), options));
}

}  // namespace sluice::warehouse
