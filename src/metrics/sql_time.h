// How metrics code moves timestamps in and out of SQL: as integer epoch
// microseconds, so nothing depends on text formats or floating point.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/time.h"

namespace sluice::metrics {

inline std::int64_t EpochMicros(common::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

inline common::TimePoint FromEpochMicros(std::int64_t us) {
  return common::TimePoint(
      std::chrono::duration_cast<common::Clock::duration>(std::chrono::microseconds(us)));
}

// Days since 1970-01-01 of the UTC day containing t.
inline std::int64_t EpochDay(common::TimePoint t) {
  return std::chrono::floor<std::chrono::days>(t).time_since_epoch().count();
}

inline common::TimePoint DayStart(std::int64_t epoch_day) {
  return common::TimePoint(std::chrono::days(epoch_day));
}

// SQL expressions turning a bigint parameter into a naive UTC TIMESTAMP or a
// DATE, and a TIMESTAMP column back into epoch microseconds.
#define SLUICE_SQL_TS(p) "(TIMESTAMP '1970-01-01' + (" p ")::bigint * INTERVAL '1 microsecond')"
#define SLUICE_SQL_DATE(p) "(DATE '1970-01-01' + (" p ")::int)"
#define SLUICE_SQL_MICROS(col) "(EXTRACT(EPOCH FROM " col ") * 1000000)::bigint"

}  // namespace sluice::metrics
