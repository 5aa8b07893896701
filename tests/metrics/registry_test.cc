#include "metrics/registry.h"

#include <gtest/gtest.h>

#include <thread>

#include "common/periodic_task.h"

namespace sluice::metrics {
namespace {

using namespace std::chrono_literals;

TEST(MetricRegistry, CountersAddUpAcrossThreadsAndRender) {
  MetricRegistry reg;
  auto& rows = reg.GetCounter("sluice_rows_total", "Rows moved.", {{"topic", "a"}});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i)
        reg.GetCounter("sluice_rows_total", "", {{"topic", "a"}}).Increment();
    });
  }
  for (auto& th : threads) th.join();
  rows.Increment(-5);  // ignored: counters only go up
  EXPECT_EQ(rows.Value(), 4000);
  reg.GetGauge("sluice_lag_records", "Lag.").Set(12);
  auto text = RenderPrometheus(reg.Collect());
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text,
            "# HELP sluice_lag_records Lag.\n# TYPE sluice_lag_records gauge\n"
            "sluice_lag_records 12\n"
            "# HELP sluice_rows_total Rows moved.\n# TYPE sluice_rows_total counter\n"
            "sluice_rows_total{topic=\"a\"} 4000\n");
}

TEST(MetricRegistry, ANameKeepsOneType) {
  MetricRegistry reg;
  reg.GetCounter("m", "h");
  EXPECT_THROW(reg.GetGauge("m", "h"), std::logic_error);
}

TEST(PeriodicTask, RunsRightAwayThenEveryIntervalUntilStopped) {
  std::atomic<int> runs = 0;
  {
    common::PeriodicTask task(10ms, [&] {
      ++runs;
      if (runs == 2) throw std::runtime_error("a failing cycle does not stop the loop");
    });
    for (int i = 0; i < 300 && runs < 4; ++i) std::this_thread::sleep_for(5ms);
  }
  int after_stop = runs.load();
  EXPECT_GE(after_stop, 4);
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(runs.load(), after_stop);
}

}  // namespace
}  // namespace sluice::metrics
