// `sluice serve --launcher kubernetes`: the backfill launcher applies loader
// Jobs through the (stand-in, see protocol_fixture.h) Kubernetes API server,
// and the Jobs' loaders, run by the stand-in's kubelet as real processes,
// load their items through serve's own API with the tokens serve issued.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "protocol_fixture.h"

namespace sluice::backfill {
namespace {

using namespace std::chrono_literals;

class ServeKubernetes : public ::testing::Test, public testing::BackfillHarness {};

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

TEST_F(ServeKubernetes, ServeRunsBackfillItemsAsJobsWhoseLoadersUseItsApi) {
  testing::KubeStandIn kube(/*run_jobs=*/true);
  CreateSourceTable("kv", 3000);
  auto runs = Trigger({AddPair("kv", "kv_copy")});
  auto item_id = runs[0].items[0].id;
  auto listen = "127.0.0.1:" + std::to_string(FreePort());
  auto backend = "http://" + listen;
  auto absent = (dir() / "absent").string();  // no cluster credentials here
  pid_t pid = StartServe({"--listen", listen, "--launcher", "kubernetes", "--backend-url", backend,
                          "--k8s-api-server", kube.url(), "--k8s-token-file", absent,
                          "--k8s-ca-file", absent, "--k8s-namespace", "data"});
  ASSERT_GT(pid, 0);
  WaitForRun(runs[0].run.id, 90s);
  StopServe(pid);
  ASSERT_EQ(RunRow(runs[0].run.id).status, RunStatus::kDone) << kube.PodLogs();
  auto item = Item(item_id);
  EXPECT_EQ(item.status, ItemStatus::kCompleted) << kube.PodLogs();
  EXPECT_EQ(item.job_name, "sluice-loader-" + item_id.ToString());
  EXPECT_EQ(Digest(target_url(), "kv_copy"), Digest(source_url(), "kv"));
  auto job = kube.Object("/apis/batch/v1/namespaces/data/jobs/sluice-loader-" + item_id.ToString());
  ASSERT_TRUE(job.has_value());
  auto args = (*job)["spec"]["template"]["spec"]["containers"][0]["args"];
  EXPECT_EQ(args.back(), backend) << "the loader reaches serve at --backend-url";
  EXPECT_FALSE(
      std::filesystem::exists(dir() / "data" / "run" / ("loader-" + item_id.ToString() + ".json")))
      << "no launch file with decrypted details for a Job";
}

}  // namespace
}  // namespace sluice::backfill
