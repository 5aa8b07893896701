#include "common/time.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

namespace sluice::common {

std::int64_t NowEpochMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
      .count();
}

std::string FormatUtc(TimePoint t) {
  auto micros = std::chrono::time_point_cast<std::chrono::microseconds>(t);
  return fmt::format("{:%Y-%m-%d %H:%M:%S}", micros);
}

std::string FormatIso8601(TimePoint t) {
  auto micros = std::chrono::time_point_cast<std::chrono::microseconds>(t);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", micros);
}

}  // namespace sluice::common

namespace sluice::common {

std::int64_t ToEpochMicros(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

TimePoint FromEpochMicros(std::int64_t micros) {
  return TimePoint(std::chrono::duration_cast<Clock::duration>(std::chrono::microseconds(micros)));
}

}  // namespace sluice::common
