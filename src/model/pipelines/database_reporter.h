// A worker that reports straight into the data-plane database (its launch
// config names one: a local worker under `sluice up` or `serve`) does it
// through the back end's own code, model/pipelines/pod_reports, as the API's worker
// endpoints do. `sluice worker` injects it; dataflow knows only the
// WorkerReporter interface.
#pragma once

#include <memory>
#include <string>

#include "dataflow/worker_launch.h"
#include "dataflow/worker_reporter.h"

namespace sluice::model {

// Reports into the data-plane database at `url`.
std::unique_ptr<dataflow::WorkerReporter> MakeDatabaseReporter(const dataflow::WorkerLaunch& launch,
                                                               const std::string& url);

}  // namespace sluice::model
