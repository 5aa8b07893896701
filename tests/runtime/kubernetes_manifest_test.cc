// Rendered manifests compared with golden files. Set SLUICE_UPDATE_GOLDEN=1
// to rewrite them after an intended change (and review the diff).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "runtime/kubernetes_manifest.h"

namespace sluice::runtime {
namespace {

void ExpectGolden(const nlohmann::json& manifest, const std::string& name) {
  std::string path =
      std::string(std::getenv("SLUICE_SOURCE_DIR")) + "/tests/runtime/golden/" + name;
  std::string rendered = manifest.dump(2) + "\n";
  if (std::getenv("SLUICE_UPDATE_GOLDEN")) std::ofstream(path) << rendered;
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path;
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(rendered, golden.str()) << name;
}

WorkerPodSpec Shard(int index) {
  return {"6f1c2a9e-0b7d-4c1e-9a55-2f3d4e5f6a7b", "orders-source", index,
          "0d9c8b7a-6f5e-4d3c-8b2a-1f0e9d8c7b6a", "3b4c5d",        "sluice-worker-token"};
}

TEST(KubernetesManifest, WorkerDeploymentPerShardMatchesGolden) {
  KubernetesOptions options;
  ExpectGolden(RenderWorkerDeployment(Shard(0), options), "worker_deployment_shard0.json");
  ExpectGolden(RenderWorkerDeployment(Shard(1), options), "worker_deployment_shard1.json");
}

TEST(KubernetesManifest, DeploymentNameIsStablePerShard) {
  auto a = Shard(2);
  auto b = Shard(2);
  b.launch_generation = "another-generation";
  EXPECT_EQ(WorkerDeploymentName(a), WorkerDeploymentName(b));
  EXPECT_NE(WorkerDeploymentName(Shard(1)), WorkerDeploymentName(Shard(2)));
  EXPECT_LE(WorkerDeploymentName(a).size(), 63u);
}

TEST(KubernetesManifest, LoaderJobMatchesGolden) {
  KubernetesOptions options;
  options.namespace_name = "data";
  ExpectGolden(RenderLoaderJob({"a1b2c3d4-0000-4000-8000-000000000001",
                                "a1b2c3d4-0000-4000-8000-0000000000aa", "sluice-loader-token"},
                               options),
               "loader_job.json");
}

TEST(KubernetesManifest, LoaderJobNameFitsTheDnsSubdomainLimit) {
  EXPECT_LE(LoaderJobName({"a1b2c3d4-0000-4000-8000-000000000001", "r", "t"}).size(), 253u);
}

}  // namespace
}  // namespace sluice::runtime
