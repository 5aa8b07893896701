// Production launcher output: one Deployment per worker shard and one Job per
// backfill item, rendered as JSON manifests (the Kubernetes API accepts JSON
// as well as YAML). Names are DNS-1123 labels derived from stable ids.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace sluice::runtime {

struct KubernetesOptions {
  std::string namespace_name = "sluice";
  std::string image = "sluice:latest";
  std::string api_url = "http://sluice-api:8080";  // where pods reach the back end
  std::string service_account;                     // empty: the namespace default
  std::map<std::string, std::string> resources_requests = {{"cpu", "250m"}, {"memory", "256Mi"}};
  std::map<std::string, std::string> resources_limits = {{"memory", "1Gi"}};
};

struct WorkerPodSpec {
  std::string connector_id;
  std::string connector_name;
  int shard_index = 0;
  std::string launch_generation;
  std::string config_hash;   // stamped as an annotation too
  std::string token_secret;  // name of the Secret holding the worker token
  std::string worker_id;     // annotated when set, so a listing maps back to the row
};

struct LoaderJobSpec {
  std::string backfill_item_id;
  std::string backfill_run_id;
  std::string token_secret;  // holds SLUICE_LOADER_TOKEN
  std::string attempt;       // the item's started_at micros, annotated when set
};

// "sluice-worker-<first 8 of connector id>-<shard>": stable across launches,
// so a re-plan updates the Deployment instead of creating a second one.
std::string WorkerDeploymentName(const WorkerPodSpec& spec);
std::string LoaderJobName(const LoaderJobSpec& spec);

nlohmann::json RenderWorkerDeployment(const WorkerPodSpec& spec, const KubernetesOptions& options);
nlohmann::json RenderLoaderJob(const LoaderJobSpec& spec, const KubernetesOptions& options);

}  // namespace sluice::runtime
