// The loader's API path (a Kubernetes Job has no database URL): it fetches
// its launch config from the back end and reports through the loader
// endpoints, with a token scoped to one item and one attempt
// (SLUICE_LOADER_TOKEN). A requeued attempt's old token is refused (409), an
// unknown one too (401): either way the loader is no longer ours.
//   GET  <api>/api/v1/loader/items/{id}/launch   -> {"config": LoaderConfig}
//   POST <api>/api/v1/loader/items/{id}/reports  {"kind", "rows", "at_micros", "reason"}
#pragma once

#include <string>

#include "backfill/loader.h"
#include "backfill/report.h"

namespace sluice::backfill {

std::string LoaderItemPath(const std::string& item_id);

// The item's launch config (connection details decrypted, this one response).
// FailedPrecondition when the token is refused.
common::Result<LoaderConfig> FetchLoaderConfig(const std::string& api_url, const std::string& token,
                                               const std::string& item_id);

class ApiItemReporter : public ItemReports {
 public:
  ApiItemReporter(std::string api_url, std::string token, std::string item_id);

  common::Status Report(ReportKind kind, const ReportArgs& args) override;

 private:
  std::string api_url_, token_, item_id_;
};

}  // namespace sluice::backfill
