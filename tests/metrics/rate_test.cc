#include <gtest/gtest.h>

#include "metrics/rate.h"

namespace sluice::metrics {
namespace {

RateInputs Row(std::int64_t from, std::int64_t to) {
  return RateInputs{std::max<std::int64_t>(to - from, 0), from, to, 1};
}

TEST(EffectiveDuration, NoRowsHaveNoDurationAndNoRate) {
  RateInputs none;
  EXPECT_EQ(EffectiveDurationMs(none), 0);
  EXPECT_EQ(PerSecond(100, none), 0.0);
}

TEST(EffectiveDuration, ContiguousSnapshotsSpanTheirWallClock) {
  RateInputs in = Row(0, 10'000);
  in.Merge(Row(10'000, 20'000));
  EXPECT_EQ(EffectiveDurationMs(in), 20'000);
  EXPECT_DOUBLE_EQ(PerSecond(400, in), 20.0);
}

TEST(EffectiveDuration, ParallelTopicsDoNotStretchTime) {
  // Two topics measured over the same 10 s: 10 s, not 20 s.
  RateInputs in = Row(0, 10'000);
  in.Merge(Row(0, 10'000));
  EXPECT_EQ(EffectiveDurationMs(in), 10'000);
}

TEST(EffectiveDuration, AGapWhileAWorkerWasDownDoesNotDiluteTheRate) {
  RateInputs in = Row(0, 10'000);
  in.Merge(Row(3'600'000, 3'610'000));
  EXPECT_EQ(EffectiveDurationMs(in), 20'000);
}

TEST(EffectiveDuration, ZeroLengthSnapshotsFallBackToWallThenRowCount) {
  RateInputs in = Row(5'000, 5'000);
  EXPECT_EQ(EffectiveDurationMs(in), 1'000);  // one nominal second
  in.Merge(Row(9'000, 9'000));
  EXPECT_EQ(EffectiveDurationMs(in), 4'000);  // wall coverage
}

TEST(EffectiveDuration, MergeOrderDoesNotChangeTheResult) {
  RateInputs a = Row(0, 7'000), b = Row(2'000, 30'000), c = Row(50'000, 51'000);
  RateInputs x = a, y = c;
  x.Merge(b);
  x.Merge(c);
  y.Merge(a);
  y.Merge(b);
  EXPECT_EQ(x, y);
  EXPECT_EQ(EffectiveDurationMs(x), EffectiveDurationMs(y));
}

}  // namespace
}  // namespace sluice::metrics
