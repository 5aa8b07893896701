#include "metrics/rate.h"

namespace sluice::metrics {

namespace {
constexpr std::int64_t kNominalSnapshotMs = 1000;
}

std::int64_t EffectiveDurationMs(const RateInputs& in) {
  if (in.row_count <= 0) return 0;
  const std::int64_t wall = in.max_to > in.min_from ? in.max_to - in.min_from : 0;
  if (in.span_ms > 0) return wall > 0 ? std::min(in.span_ms, wall) : in.span_ms;
  if (wall > 0) return wall;
  return in.row_count * kNominalSnapshotMs;
}

double PerSecond(std::int64_t count, const RateInputs& in) {
  const std::int64_t ms = EffectiveDurationMs(in);
  if (ms <= 0) return 0.0;
  return static_cast<double>(count) * 1000.0 / static_cast<double>(ms);
}

}  // namespace sluice::metrics
