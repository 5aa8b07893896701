#include <gtest/gtest.h>

#include <cmath>

#include "metrics/prometheus.h"

namespace sluice::metrics {
namespace {

TEST(Prometheus, RendersHelpTypeAndSamplesInTextFormat) {
  std::vector<MetricFamily> fams = {
      {"sluice_rows_total",
       "Rows moved.",
       MetricType::kCounter,
       {{{{"topic", "a"}}, 42}, {{{"topic", "b"}}, 1.5}}},
      {"sluice_up", "Whether up.", MetricType::kGauge, {{{}, 1}}},
  };
  auto text = RenderPrometheus(fams);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text,
            "# HELP sluice_rows_total Rows moved.\n"
            "# TYPE sluice_rows_total counter\n"
            "sluice_rows_total{topic=\"a\"} 42\n"
            "sluice_rows_total{topic=\"b\"} 1.5\n"
            "# HELP sluice_up Whether up.\n"
            "# TYPE sluice_up gauge\n"
            "sluice_up 1\n");
}

TEST(Prometheus, LabelValuesAndHelpAreEscaped) {
  std::vector<MetricFamily> fams = {
      {"m", "line\\one\ntwo", MetricType::kGauge, {{{{"l", "a\"b\\c\nd"}, {"k", "v"}}, 0}}}};
  auto text = RenderPrometheus(fams);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text,
            "# HELP m line\\\\one\\ntwo\n# TYPE m gauge\nm{l=\"a\\\"b\\\\c\\nd\",k=\"v\"} 0\n");
}

TEST(Prometheus, SpecialValuesUseTheFormatsSpelling) {
  std::vector<MetricFamily> fams = {
      {"m",
       "h",
       MetricType::kGauge,
       {{{{"v", "nan"}}, std::nan("")}, {{{"v", "inf"}}, INFINITY}, {{{"v", "ninf"}}, -INFINITY}}}};
  auto text = RenderPrometheus(fams);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("m{v=\"nan\"} NaN\n"), std::string::npos);
  EXPECT_NE(text->find("m{v=\"inf\"} +Inf\n"), std::string::npos);
  EXPECT_NE(text->find("m{v=\"ninf\"} -Inf\n"), std::string::npos);
}

TEST(Prometheus, InvalidMetricOrLabelNameIsRefused) {
  EXPECT_FALSE(RenderPrometheus({{"9lives", "h", MetricType::kGauge, {}}}).ok());
  EXPECT_FALSE(RenderPrometheus({{"a-b", "h", MetricType::kGauge, {}}}).ok());
  EXPECT_FALSE(
      RenderPrometheus({{"ok", "h", MetricType::kGauge, {{{{"bad-label", "x"}}, 1}}}}).ok());
  EXPECT_FALSE(
      RenderPrometheus({{"ok", "h", MetricType::kGauge, {{{{"__reserved", "x"}}, 1}}}}).ok());
  EXPECT_TRUE(RenderPrometheus({{"ns:sub_total", "h", MetricType::kCounter, {}}}).ok());
}

TEST(Prometheus, AFamilyNamedTwiceIsRefused) {
  EXPECT_FALSE(
      RenderPrometheus({{"m", "h", MetricType::kGauge, {}}, {"m", "h", MetricType::kGauge, {}}})
          .ok());
}

}  // namespace
}  // namespace sluice::metrics
