// The message-rate inputs a set of raw snapshots reduces to, and the one
// function that turns them into a duration. Raw rows and daily rollups both
// reduce to RateInputs and merge associatively, so msg/s over a range is the
// same whichever side of the rollup boundary its rows sit on.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

namespace sluice::metrics {

struct RateInputs {
  std::int64_t span_ms = 0;                                          // SUM(max(to_ts - from_ts, 0))
  std::int64_t min_from = std::numeric_limits<std::int64_t>::max();  // MIN(from_ts)
  std::int64_t max_to = std::numeric_limits<std::int64_t>::min();    // MAX(to_ts)
  std::int64_t row_count = 0;                                        // COUNT(*)

  void Merge(const RateInputs& o) {
    span_ms += o.span_ms;
    min_from = std::min(min_from, o.min_from);
    max_to = std::max(max_to, o.max_to);
    row_count += o.row_count;
  }
  friend bool operator==(const RateInputs&, const RateInputs&) = default;
};

// The duration a rate is taken over, in ms:
//  - the measured time (span_ms) capped by the wall-clock coverage
//    (max_to - min_from): several topics or overlapping snapshots must not
//    stretch time, and a gap while a worker was down must not dilute it;
//  - with no measured span (zero-length snapshots), the wall coverage;
//  - with neither, one nominal second per snapshot, so a rate stays finite.
// 0 only when there are no rows.
std::int64_t EffectiveDurationMs(const RateInputs& in);

// count per second over EffectiveDurationMs; 0 when there are no rows.
double PerSecond(std::int64_t count, const RateInputs& in);

}  // namespace sluice::metrics
