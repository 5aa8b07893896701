// Timestamps cross into SQL as integer epoch microseconds: exact, and free of
// text formats. (Same scheme as metrics/sql_time.h; kept private to events.)
#pragma once

#include <chrono>
#include <cstdint>

#include "common/time.h"

namespace sluice::events::internal {

inline std::int64_t EpochMicros(common::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

inline common::TimePoint FromEpochMicros(std::int64_t us) {
  return common::TimePoint(
      std::chrono::duration_cast<common::Clock::duration>(std::chrono::microseconds(us)));
}

}  // namespace sluice::events::internal

#define SLUICE_EV_TS(p) "(TIMESTAMP '1970-01-01' + (" p ")::bigint * INTERVAL '1 microsecond')"
#define SLUICE_EV_MICROS(col) "(EXTRACT(EPOCH FROM " col ") * 1000000)::bigint"
// The database's own clock as naive UTC: writer and outbox reader compare
// against one clock, whatever host they run on.
#define SLUICE_EV_DB_NOW "(clock_timestamp() AT TIME ZONE 'UTC')"
