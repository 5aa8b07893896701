#include "backfill/kubernetes_jobs.h"

#include <spdlog/spdlog.h>

#include "runtime/kubernetes_manifest.h"

namespace sluice::backfill {

namespace {
constexpr const char* kLoaderSelector = "app.kubernetes.io/name=sluice-loader";

bool ConditionTrue(const nlohmann::json& status, const char* type) {
  for (const auto& c : status.value("conditions", nlohmann::json::array()))
    if (c.value("type", "") == type && c.value("status", "") == "True") return true;
  return false;
}
}  // namespace

LoaderJobs::LoaderJobs(runtime::KubernetesLauncherOptions options)
    : options_(std::move(options)), client_(options_.api) {}

std::string LoaderJobs::JobName(const common::Uuid& item_id) {
  return runtime::LoaderJobName({item_id.ToString(), "", "", ""});
}

common::Result<std::map<common::Uuid, LoaderJob>> LoaderJobs::List() const {
  auto items = client_.List("batch/v1", "Job", options_.manifests.namespace_name, kLoaderSelector);
  if (!items.ok()) return items.status();
  std::map<common::Uuid, LoaderJob> out;
  for (const auto& j : *items) {
    const auto& meta = j.value("metadata", nlohmann::json::object());
    auto item = common::Uuid::Parse(
        meta.value("labels", nlohmann::json::object()).value("sluice.dev/backfill-item-id", ""));
    if (!item) continue;  // not one this launcher made
    LoaderJob job;
    job.name = meta.value("name", "");
    auto attempt =
        meta.value("annotations", nlohmann::json::object()).value("sluice.dev/attempt", "");
    if (!attempt.empty()) {
      try {
        job.attempt = std::stoll(attempt);
      } catch (const std::exception&) {
      }
    }
    auto status = j.value("status", nlohmann::json::object());
    job.succeeded = status.value("succeeded", 0) > 0 || ConditionTrue(status, "Complete");
    job.finished =
        job.succeeded || status.value("failed", 0) > 0 || ConditionTrue(status, "Failed");
    out[*item] = job;
  }
  return out;
}

common::Status LoaderJobs::Launch(const BackfillItem& item, const common::Uuid& run_id,
                                  std::int64_t attempt_micros, const std::string& token,
                                  const std::optional<LoaderJob>& existing) {
  const auto& ns = options_.manifests.namespace_name;
  runtime::LoaderJobSpec spec{item.id.ToString(), run_id.ToString(), "",
                              std::to_string(attempt_micros)};
  auto name = runtime::LoaderJobName(spec);
  spec.token_secret = SecretName(name);
  if (existing && existing->attempt != attempt_micros)
    SLUICE_RETURN_IF_ERROR(client_.Delete("batch/v1", "Job", ns, existing->name));
  nlohmann::json secret = {{"apiVersion", "v1"},
                           {"kind", "Secret"},
                           {"type", "Opaque"},
                           {"metadata",
                            {{"name", spec.token_secret},
                             {"namespace", ns},
                             {"labels",
                              {{"app.kubernetes.io/name", "sluice-loader-token"},
                               {"sluice.dev/backfill-item-id", spec.backfill_item_id}}}}},
                           {"stringData", {{"token", token}}}};
  SLUICE_RETURN_IF_ERROR(client_.Apply(secret));
  return client_.Apply(runtime::RenderLoaderJob(spec, options_.manifests));
}

common::Status LoaderJobs::Remove(const std::string& job_name) {
  const auto& ns = options_.manifests.namespace_name;
  SLUICE_RETURN_IF_ERROR(client_.Delete("batch/v1", "Job", ns, job_name));
  return RemoveSecret(job_name);
}

common::Status LoaderJobs::RemoveSecret(const std::string& job_name) {
  return client_.Delete("v1", "Secret", options_.manifests.namespace_name, SecretName(job_name));
}

}  // namespace sluice::backfill
