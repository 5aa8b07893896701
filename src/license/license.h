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

namespace sluice::license {

struct LicenseVerdict {
  bool active = false;
  std::optional<common::TimePoint> expires_at;
  common::TimePoint seen_at;
};

// The community license a deployment without a control-plane runs under. It
// permits everything this binary does, on this deployment, and ends
// kCommunityTerm after it was issued; the back end issues it anew at every
// license refresh, so a running deployment never lapses, while the stored
// verdict always says when it ends (never an active verdict with no expiry).
inline constexpr std::chrono::hours kCommunityTerm{24 * 30};
LicenseVerdict CommunityVerdict(common::TimePoint now);

class License {
 public:
  // nullopt: no row yet (never heard from the control-plane).
  License(std::optional<LicenseVerdict> last, std::chrono::seconds grace)
      : last_(last), grace_(grace) {}

  // Ok, or FailedPrecondition with the words the API returns.
  common::Status AllowsStart(common::TimePoint now) const;
  // True once running workers must be paused.
  bool RequiresPause(common::TimePoint now) const { return !AllowsStart(now).ok(); }

  const std::optional<LicenseVerdict>& last() const { return last_; }
  // When running workers will be paused if no new verdict arrives.
  std::optional<common::TimePoint> GraceEndsAt() const {
    if (!last_) return std::nullopt;
    return last_->seen_at + grace_;
  }

  // The reason a worker paused by the license carries, so that only those
  // workers (and not ones an operator paused) resume with a valid verdict.
  static std::string PauseReason(const common::Status& refusal) {
    return std::string(kPausePrefix) + refusal.message();
  }
  static bool IsLicensePause(const std::optional<std::string>& reason) {
    return reason && reason->rfind(kPausePrefix, 0) == 0;
  }

 private:
  static constexpr const char* kPausePrefix = "paused by license: ";
  std::optional<LicenseVerdict> last_;
  std::chrono::seconds grace_;
};

}  // namespace sluice::license
