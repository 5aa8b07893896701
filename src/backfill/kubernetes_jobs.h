// Loader Jobs in a Kubernetes cluster (`sluice serve --launcher kubernetes`):
// one batch/v1 Job per item attempt, applied through the API server with
// server-side apply, beside a Secret holding the attempt's loader token. The
// Job runs `sluice loader --item ID --api URL`, so no connection detail goes
// into the cluster. Jobs are listed, not remembered: a back end restart
// adopts the Jobs that run instead of launching duplicates.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "backfill/model.h"
#include "common/status.h"
#include "runtime/kubernetes_client.h"
#include "runtime/kubernetes_pod_launcher.h"

namespace sluice::backfill {

struct LoaderJob {
  std::string name;
  std::optional<std::int64_t> attempt;  // annotation sluice.dev/attempt
  bool finished = false;                // its pod exited (succeeded or failed)
  bool succeeded = false;
};

class LoaderJobs {
 public:
  explicit LoaderJobs(runtime::KubernetesLauncherOptions options);

  // The loader Jobs the namespace holds, by item. Unavailable when the API
  // server cannot be asked (then nothing may be judged gone).
  common::Result<std::map<common::Uuid, LoaderJob>> List() const;
  // The token Secret first (the pod reads it at start), then the Job. A Job
  // of the same name from an older attempt is deleted first: a Job's pod
  // template cannot be changed in place.
  common::Status Launch(const BackfillItem& item, const common::Uuid& run_id,
                        std::int64_t attempt_micros, const std::string& token,
                        const std::optional<LoaderJob>& existing);
  // Deletes the Job (its pod goes with it) and its Secret; gone is success.
  common::Status Remove(const std::string& job_name);
  // Only the Secret: a finished Job stays for its logs (ttlSecondsAfterFinished).
  common::Status RemoveSecret(const std::string& job_name);

  static std::string JobName(const common::Uuid& item_id);
  static std::string SecretName(const std::string& job_name) { return job_name + "-token"; }

 private:
  runtime::KubernetesLauncherOptions options_;
  runtime::KubernetesClient client_;
};

}  // namespace sluice::backfill
