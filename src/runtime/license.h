// The license verdict cached in license_state. Default-deny: with no verdict
// nothing starts. Within the grace window after the last verdict, pipelines
// keep running even if the control-plane cannot be reached; past it, new
// starts are refused and running workers are paused until a valid verdict.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/status.h"
#include "common/time.h"

namespace sluice::runtime {

struct LicenseVerdict {
  bool active = false;
  std::optional<common::TimePoint> expires_at;
  common::TimePoint seen_at;
};

class License {
 public:
  // nullopt: no row yet (never heard from the control-plane).
  License(std::optional<LicenseVerdict> last, std::chrono::seconds grace)
      : last_(last), grace_(grace) {}

  // Ok, or FailedPrecondition with the words the API returns.
  common::Status AllowsStart(common::TimePoint now) const;
  // True once running workers must be paused.
  bool RequiresPause(common::TimePoint now) const { return !AllowsStart(now).ok(); }

 private:
  std::optional<LicenseVerdict> last_;
  std::chrono::seconds grace_;
};

}  // namespace sluice::runtime
