// Checks that list every problem they find, not only the first.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::common {

// Ok when `problems` is empty, else one InvalidArgument naming them all
// ("a; b; c").
inline Status AllProblems(const std::vector<std::string>& problems) {
  if (problems.empty()) return Status::Ok();
  std::string all;
  for (const auto& p : problems) all += (all.empty() ? "" : "; ") + p;
  return InvalidArgument(std::move(all));
}

}  // namespace sluice::common
