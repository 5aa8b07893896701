// Which queued items may launch now, under the per-source and the
// per-destination concurrency caps (#3970). Pure: the launcher feeds it the
// rows and launches what it returns. Items are considered run by run (oldest
// run first) in `position` order; an item whose destination is full is
// skipped for this pass and the next one may go, so one busy destination
// does not hold up a whole queue. Only checked items launch.
#pragma once

#include <map>
#include <vector>

#include "backfill/model.h"

namespace sluice::backfill {

struct Caps {
  int per_source = 2;       // running items of one source connector
  int per_destination = 2;  // running items writing into one destination connector
};

struct Candidate {
  common::Uuid item_id;
  common::Uuid source_connector_id;
  common::Uuid target_connector_id;
  common::TimePoint run_created_at;
  int position = 0;
  bool checked = false;
};

struct Occupancy {
  std::map<common::Uuid, int> by_source;       // running items now
  std::map<common::Uuid, int> by_destination;  // running items now
};

std::vector<common::Uuid> PlanLaunches(std::vector<Candidate> queued, Occupancy running,
                                       const Caps& caps);

}  // namespace sluice::backfill
