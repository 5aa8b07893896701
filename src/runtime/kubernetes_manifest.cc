#include "runtime/kubernetes_manifest.h"

#include <fmt/format.h>

namespace sluice::runtime {

using nlohmann::json;

namespace {

json Resources(const KubernetesOptions& o) {
  return {{"requests", o.resources_requests}, {"limits", o.resources_limits}};
}

json TokenEnv(const std::string& secret, const char* env = "SLUICE_WORKER_TOKEN") {
  return {{"name", env}, {"valueFrom", {{"secretKeyRef", {{"name", secret}, {"key", "token"}}}}}};
}

json PodSpec(const KubernetesOptions& o, json container, const std::string& restart_policy) {
  json spec = {{"containers", json::array({std::move(container)})},
               {"restartPolicy", restart_policy},
               {"terminationGracePeriodSeconds", 60}};
  if (!o.service_account.empty()) spec["serviceAccountName"] = o.service_account;
  return spec;
}

}  // namespace

std::string WorkerDeploymentName(const WorkerPodSpec& spec) {
  return fmt::format("sluice-worker-{}-{}", spec.connector_id.substr(0, 8), spec.shard_index);
}

std::string LoaderJobName(const LoaderJobSpec& spec) {
  return fmt::format("sluice-loader-{}", spec.backfill_item_id);
}

json RenderWorkerDeployment(const WorkerPodSpec& spec, const KubernetesOptions& o) {
  json labels = {{"app.kubernetes.io/name", "sluice-worker"},
                 {"sluice.dev/connector-id", spec.connector_id},
                 {"sluice.dev/shard-index", std::to_string(spec.shard_index)}};
  json container = {
      {"name", "worker"},
      {"image", o.image},
      {"args",
       {"worker", "--connector", spec.connector_id, "--shard", std::to_string(spec.shard_index),
        "--generation", spec.launch_generation, "--api", o.api_url}},
      // The pod's own name, which its reports (events' pod) carry.
      {"env", json::array({TokenEnv(spec.token_secret),
                           {{"name", "SLUICE_POD_NAME"},
                            {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}}})},
      {"resources", Resources(o)}};
  json annotations = {{"sluice.dev/connector-name", spec.connector_name},
                      {"sluice.dev/launch-generation", spec.launch_generation},
                      {"sluice.dev/config-hash", spec.config_hash}};
  if (!spec.worker_id.empty()) annotations["sluice.dev/worker-id"] = spec.worker_id;
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata",
           {{"name", WorkerDeploymentName(spec)},
            {"namespace", o.namespace_name},
            {"labels", labels},
            {"annotations", annotations}}},
          {"spec",
           {{"replicas", 1},
            // One pod per shard, never two: the old pod goes before the new one.
            {"strategy", {{"type", "Recreate"}}},
            {"selector", {{"matchLabels", labels}}},
            {"template",
             {{"metadata",
               {{"labels", labels},
                {"annotations", {{"sluice.dev/launch-generation", spec.launch_generation}}}}},
              {"spec", PodSpec(o, container, "Always")}}}}}};
}

json RenderLoaderJob(const LoaderJobSpec& spec, const KubernetesOptions& o) {
  json labels = {{"app.kubernetes.io/name", "sluice-loader"},
                 {"sluice.dev/backfill-run-id", spec.backfill_run_id},
                 {"sluice.dev/backfill-item-id", spec.backfill_item_id}};
  json container = {{"name", "loader"},
                    {"image", o.image},
                    {"args", {"loader", "--item", spec.backfill_item_id, "--api", o.api_url}},
                    {"env", json::array({TokenEnv(spec.token_secret, "SLUICE_LOADER_TOKEN")})},
                    {"resources", Resources(o)}};
  json metadata = {
      {"name", LoaderJobName(spec)}, {"namespace", o.namespace_name}, {"labels", labels}};
  // The attempt a listing maps back to: a Job of an older attempt is a stray.
  if (!spec.attempt.empty()) metadata["annotations"] = {{"sluice.dev/attempt", spec.attempt}};
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", metadata},
          {"spec",
           {// A failed load is retried by the orchestrator's requeue, not by the cluster.
            {"backoffLimit", 0},
            {"ttlSecondsAfterFinished", 86400},
            {"template",
             {{"metadata", {{"labels", labels}}}, {"spec", PodSpec(o, container, "Never")}}}}}};
}

}  // namespace sluice::runtime
