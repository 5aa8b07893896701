// The HTTP worker protocol, pod side: every report is one JSON request to
// the back end's /api/v1/worker/* endpoints with the pod's scoped token. The
// back end answers a refused report with 409, which the worker loop reads
// as "replaced or told to stop" exactly as with the database transport.
#include <fmt/format.h>

#include "common/bounded_json.h"
#include "common/http_client.h"
#include "dataflow/pod_reports.h"
#include "dataflow/worker_reporter.h"

namespace sluice::dataflow {

namespace {

using nlohmann::json;

using common::HttpReply;

common::Result<HttpReply> Call(const std::string& method, const std::string& url,
                               const std::string& token, const std::string* payload,
                               const std::string& ca_file) {
  common::HttpRequest request;
  request.ca_file = ca_file;
  request.method = method;
  request.url = url;
  request.headers = {"Content-Type: application/json", common::BearerHeader(token)};
  // Who is reporting, for the events' pod column.
  static const std::string pod = ThisPodName();
  if (!pod.empty()) request.headers.push_back(std::string(kPodNameHeader) + ": " + pod);
  if (payload) request.body = *payload;
  auto reply = common::SendHttp(request);
  if (!reply.ok())
    return common::Unavailable(
        fmt::format("cannot reach the back end: {}", reply.status().message()));
  return reply;
}

// The back end's error body {"error":{"code","message"}} as a Status.
common::Status StatusOf(const HttpReply& reply) {
  if (reply.status >= 200 && reply.status < 300) return {};
  auto body = common::ParseBoundedJson(reply.body, common::kReplyJsonLimits);
  std::string message = fmt::format("back end answered HTTP {}", reply.status);
  if (body.ok() && body->is_object() && body->contains("error") && (*body)["error"].is_object())
    message = (*body)["error"].value("message", message);
  if (reply.status == 409) return common::Conflict(message);
  if (reply.status == 404) return common::NotFound(message);
  if (reply.status == 401 || reply.status == 403) return common::Unauthenticated(message);
  if (reply.status == 422 || reply.status == 400) return common::InvalidArgument(message);
  return common::Unavailable(message);
}

class BackendReporter : public WorkerReporter {
 public:
  BackendReporter(std::string api_url, std::string token, std::string ca_file)
      : base_(std::move(api_url) + "/api/v1/worker"),
        token_(std::move(token)),
        ca_file_(std::move(ca_file)) {}

  common::Status ReportState(runtime::WorkerState state,
                             std::optional<std::string> reason) override {
    observed_.Remember(state);
    return Post("/state", {{"state", runtime::ToString(state)},
                           {"reason", reason ? json(*reason) : json(nullptr)}});
  }
  common::Status Heartbeat() override {
    json body = json::object();
    if (auto state = observed_.state()) body["state"] = runtime::ToString(*state);
    return Post("/heartbeat", body);
  }
  common::Status Production(const std::vector<connectors::TopicInterval>& intervals) override {
    if (intervals.empty()) return {};
    return Post("/metrics/production", {{"intervals", IntervalsToJson(intervals)}});
  }
  common::Status Consumption(const SubscriptionSpec& sub, const DeliveryCounters& c) override {
    if (c.to_ms <= c.from_ms) return {};
    return Post(
        "/metrics/consumption",
        {{"subscription_id", sub.id}, {"topic", sub.topic}, {"counters", CountersToJson(c)}});
  }
  common::Status Rejected(const SubscriptionSpec& sub,
                          const std::vector<RejectedRecord>& records) override {
    if (records.empty()) return {};
    return Post("/rejected",
                {{"subscription_id", sub.id}, {"records", RejectedToJson(ToRefs(records))}});
  }
  common::Status Slot(const SlotReport& report) override {
    return Post("/slot", SlotReportToJson(report));
  }
  common::Status ColumnChanges(const std::vector<ColumnChangeReport>& changes) override {
    if (changes.empty()) return {};
    return Post("/column_changes", {{"changes", ColumnChangesToJson(changes)}});
  }
  common::Status Skipped(const std::vector<dataflow::SkippedRecords>& tallies) override {
    if (tallies.empty()) return {};
    return Post("/skipped_records", {{"skipped", SkippedToJson(tallies)}});
  }
  common::Result<nlohmann::json> LoadSourcePosition() override {
    auto reply = Call("GET", base_ + "/source_position", token_, nullptr, ca_file_);
    if (!reply.ok()) return reply.status();
    SLUICE_RETURN_IF_ERROR(StatusOf(*reply));
    auto body = common::ParseBoundedJson(reply->body, common::kReplyJsonLimits);
    if (!body.ok() || !body->is_object())
      return common::Unavailable("the back end sent a source position that is not a JSON object");
    return body->value("state", json(nullptr));
  }
  common::Status SaveSourcePosition(const nlohmann::json& state) override {
    return Post("/source_position", {{"state", state}});
  }

 private:
  common::Status Post(const std::string& path, const json& body) {
    std::string payload = body.dump();
    auto reply = Call("POST", base_ + path, token_, &payload, ca_file_);
    if (!reply.ok()) return reply.status();
    return StatusOf(*reply);
  }

  std::string base_;
  std::string token_;
  std::string ca_file_;
  ObservedState observed_;
};

}  // namespace

std::unique_ptr<WorkerReporter> MakeBackendReporter(const WorkerLaunch&, const std::string& api_url,
                                                    const std::string& token,
                                                    const std::string& ca_file) {
  return std::make_unique<BackendReporter>(api_url, token, ca_file);
}

common::Result<nlohmann::json> FetchLaunchFromBackend(const std::string& api_url,
                                                      const std::string& token,
                                                      const std::string& ca_file) {
  auto reply = Call("GET", api_url + "/api/v1/worker/launch", token, nullptr, ca_file);
  if (!reply.ok()) return reply.status();
  SLUICE_RETURN_IF_ERROR(StatusOf(*reply));
  auto launch = common::ParseBoundedJson(reply->body, common::kReplyJsonLimits);
  if (!launch.ok())
    return common::Unavailable("the back end sent a launch: " + launch.status().message());
  if (!launch->is_object())
    return common::Unavailable("the back end sent a launch that is not a JSON object");
  return std::move(launch).value();
}

}  // namespace sluice::dataflow
