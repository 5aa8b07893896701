// SQL for license_state, the single cached row of the control-plane's last
// verdict. Writers lock the row so two back ends refreshing at once leave one
// row, never two.
#pragma once

#include <optional>
#include <pqxx/pqxx>

#include "license/license.h"

namespace sluice::license {

class LicenseRepository {
 public:
  // nullopt until a verdict was ever stored (default-deny).
  static std::optional<LicenseVerdict> Load(pqxx::transaction_base& tx);
  // Replaces the verdict; seen_at becomes last_seen_at, which opens the
  // grace window again.
  static void Store(pqxx::transaction_base& tx, const LicenseVerdict& verdict);
};

}  // namespace sluice::license
