// Keeps license_state current. With a control-plane URL the back end asks it
// for a verdict (GET, JSON {"license_active": bool, "license_expires_at":
// ISO-8601 | null}); a failed fetch leaves the last verdict in place so the
// grace window, not one network blip, decides. Without a control-plane (the
// self-hosted community edition) it is the community verdict, renewed at
// every refresh (license::CommunityVerdict).
#pragma once

#include <optional>
#include <string>

#include "common/status.h"
#include "common/time.h"
#include "license/license.h"
#include "store/database.h"

namespace sluice::license {

struct LicenseSource {
  std::optional<std::string> control_plane_url;  // nullopt: community verdict
  std::string bearer_token;                      // sent as Authorization when set
  std::chrono::milliseconds timeout{5000};
};

// A verdict parsed from the control-plane's JSON body, stamped seen at `now`.
common::Result<license::LicenseVerdict> ParseVerdict(const std::string& body,
                                                     common::TimePoint now);

// Fetches one verdict (HTTP for a control-plane, immediate for community).
common::Result<license::LicenseVerdict> FetchVerdict(const LicenseSource& source,
                                                     common::TimePoint now);

// Fetch + store; the stored row is untouched when the fetch fails.
common::Status RefreshLicense(store::Database& db, const LicenseSource& source);

}  // namespace sluice::license
