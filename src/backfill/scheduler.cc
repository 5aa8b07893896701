#include "backfill/scheduler.h"

#include <algorithm>

namespace sluice::backfill {

std::vector<common::Uuid> PlanLaunches(std::vector<Candidate> queued, Occupancy running,
                                       const Caps& caps) {
  std::stable_sort(queued.begin(), queued.end(), [](const Candidate& a, const Candidate& b) {
    if (a.run_created_at != b.run_created_at) return a.run_created_at < b.run_created_at;
    if (a.source_connector_id != b.source_connector_id)
      return a.source_connector_id < b.source_connector_id;
    return a.position < b.position;
  });
  std::vector<common::Uuid> out;
  for (const auto& c : queued) {
    if (!c.checked) continue;
    int& source = running.by_source[c.source_connector_id];
    int& destination = running.by_destination[c.target_connector_id];
    if (source >= caps.per_source || destination >= caps.per_destination) continue;
    ++source;
    ++destination;
    out.push_back(c.item_id);
  }
  return out;
}

}  // namespace sluice::backfill
