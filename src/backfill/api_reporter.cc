#include "backfill/api_reporter.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "backfill/repository.h"
#include "common/bounded_json.h"
#include "common/http_client.h"

namespace sluice::backfill {

namespace {

std::string ErrorText(const common::HttpReply& reply) {
  auto j = common::ParseBoundedJson(reply.body, common::kReplyJsonLimits);
  if (j.ok() && j->is_object() && j->contains("error") && (*j)["error"].is_object())
    return (*j)["error"].value("message", std::string());
  return {};
}

// One call, retried while no answer comes or the back end answers 5xx: a
// back end restart must not cost a load its progress.
common::Result<common::HttpReply> Call(const std::string& method, const std::string& url,
                                       const std::string& token, const std::string& body) {
  common::HttpRequest request;
  request.method = method;
  request.url = url;
  request.body = body;
  request.headers = {"Accept: application/json", common::BearerHeader(token)};
  if (!body.empty()) request.headers.push_back("Content-Type: application/json");
  common::Status last = common::Unavailable("no answer");
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(500 << attempt));
    auto reply = common::SendHttp(request);
    if (!reply.ok()) {
      last = reply.status();
      continue;
    }
    if (reply->status >= 500) {
      last = common::Unavailable(fmt::format("back end answered HTTP {}", reply->status));
      continue;
    }
    return reply;
  }
  return common::Unavailable(fmt::format("{} {}: {}", method, url, last.message()));
}

// 401/403/404/409: the token or the attempt is not (or no longer) the item's.
common::Status Judge(const common::HttpReply& reply, const std::string& what,
                     const std::string& item_id) {
  if (reply.ok()) return common::Status::Ok();
  auto text = ErrorText(reply);
  if (reply.status == 401 || reply.status == 403 || reply.status == 404 || reply.status == 409)
    return common::FailedPrecondition(
        fmt::format("{}: item {} is no longer this attempt's ({}{}{})", what, item_id, reply.status,
                    text.empty() ? "" : ": ", text));
  return common::InvalidArgument(fmt::format("{}: back end refused the report (HTTP {}{}{})", what,
                                             reply.status, text.empty() ? "" : ": ", text));
}

}  // namespace

std::string LoaderItemPath(const std::string& item_id) { return "/api/v1/loader/items/" + item_id; }

common::Result<LoaderConfig> FetchLoaderConfig(const std::string& api_url, const std::string& token,
                                               const std::string& item_id) {
  auto reply = Call("GET", api_url + LoaderItemPath(item_id) + "/launch", token, "");
  if (!reply.ok()) return reply.status();
  SLUICE_RETURN_IF_ERROR(Judge(*reply, "launch", item_id));
  auto j = common::ParseBoundedJson(reply->body, common::kReplyJsonLimits);
  if (!j.ok() || !j->is_object() || !j->contains("config"))
    return common::Unavailable("the back end sent a launch without a config");
  return LoaderConfig::FromJson((*j)["config"]);
}

ApiItemReporter::ApiItemReporter(std::string api_url, std::string token, std::string item_id)
    : api_url_(std::move(api_url)), token_(std::move(token)), item_id_(std::move(item_id)) {}

common::Status ApiItemReporter::Report(ReportKind kind, const ReportArgs& args) {
  nlohmann::json body = {{"kind", ToString(kind)}};
  if (args.rows) body["rows"] = *args.rows;
  if (args.at) body["at_micros"] = Micros(*args.at);
  if (args.text) body["reason"] = *args.text;
  auto reply = Call("POST", api_url_ + LoaderItemPath(item_id_) + "/reports", token_, body.dump());
  if (!reply.ok()) return reply.status();
  return Judge(*reply, ToString(kind), item_id_);
}

}  // namespace sluice::backfill
