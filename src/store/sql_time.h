// How timestamps cross the SQL boundary of the data-plane database: as
// integer epoch microseconds (common::ToEpochMicros / FromEpochMicros), so
// nothing depends on text formats, floating point or the session time zone.
// These are the SQL side of that: expressions turning a bigint parameter
// into a naive UTC TIMESTAMP or a DATE, and a TIMESTAMP column back into
// epoch microseconds; and UTC days for daily rollups.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/time.h"

namespace sluice::store::sql {

// Days since 1970-01-01 of the UTC day containing t.
inline std::int64_t EpochDay(common::TimePoint t) {
  return std::chrono::floor<std::chrono::days>(t).time_since_epoch().count();
}

inline common::TimePoint DayStart(std::int64_t epoch_day) {
  return common::TimePoint(std::chrono::days(epoch_day));
}

}  // namespace sluice::store::sql

#define SLUICE_SQL_TS(p) "(TIMESTAMP '1970-01-01' + (" p ")::bigint * INTERVAL '1 microsecond')"
#define SLUICE_SQL_DATE(p) "(DATE '1970-01-01' + (" p ")::int)"
#define SLUICE_SQL_MICROS(col) "(EXTRACT(EPOCH FROM " col ") * 1000000)::bigint"
// The database's own clock as naive UTC: writers and readers on different
// hosts compare against one clock.
#define SLUICE_SQL_DB_NOW "(clock_timestamp() AT TIME ZONE 'UTC')"
