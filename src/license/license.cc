#include "license/license.h"

#include <fmt/format.h>

namespace sluice::license {

LicenseVerdict CommunityVerdict(common::TimePoint now) {
  return LicenseVerdict{true, now + kCommunityTerm, now};
}

common::Status License::AllowsStart(common::TimePoint now) const {
  if (!last_) {
    return common::FailedPrecondition("no license verdict received from the control-plane yet");
  }
  if (!last_->active) return common::FailedPrecondition("the license is inactive");
  if (last_->expires_at && now > *last_->expires_at) {
    return common::FailedPrecondition(
        fmt::format("the license expired at {}", common::FormatIso8601(*last_->expires_at)));
  }
  if (now - last_->seen_at > grace_) {
    return common::FailedPrecondition(
        fmt::format("no license verdict for more than {}s (grace window over); last verdict at {}",
                    grace_.count(), common::FormatIso8601(last_->seen_at)));
  }
  return common::Status::Ok();
}

}  // namespace sluice::license
