#include "warehouse/schedule.h"

#include <gtest/gtest.h>

namespace sluice::warehouse {
namespace {

using nlohmann::json;

common::TimePoint At(const std::string& iso) { return *common::ParseIso8601(iso); }

TaskSchedule S(int every, ScheduleUnit unit, int offset) {
  return *TaskSchedule::Make(every, unit, offset);
}

TEST(TaskSchedule, EveryFifteenMinutesLandsOnQuarterHours) {
  auto s = S(15, ScheduleUnit::kMinutes, 0);
  EXPECT_EQ(s.NextAfter(At("2026-03-10T10:07:30Z")), At("2026-03-10T10:15:00Z"));
  // Strictly after: a slot time itself moves on to the next slot.
  EXPECT_EQ(s.NextAfter(At("2026-03-10T10:15:00Z")), At("2026-03-10T10:30:00Z"));
}

TEST(TaskSchedule, OffsetMinutesShiftEveryPeriod) {
  auto s = S(1, ScheduleUnit::kHours, 20);
  EXPECT_EQ(s.NextAfter(At("2026-03-10T10:19:59Z")), At("2026-03-10T10:20:00Z"));
  EXPECT_EQ(s.NextAfter(At("2026-03-10T10:20:00Z")), At("2026-03-10T11:20:00Z"));
}

TEST(TaskSchedule, DailyAtTwoUtcIgnoresDaylightSaving) {
  auto s = S(1, ScheduleUnit::kDays, 120);
  // 2026-03-29 is the EU's spring-forward day; UTC does not move.
  EXPECT_EQ(s.NextAfter(At("2026-03-28T23:00:00Z")), At("2026-03-29T02:00:00Z"));
  EXPECT_EQ(s.NextAfter(At("2026-03-29T02:00:00Z")), At("2026-03-30T02:00:00Z"));
}

TEST(TaskSchedule, WeeksCountFromMondayMidnight) {
  auto s = S(1, ScheduleUnit::kWeeks, 0);
  // 2026-03-11 is a Wednesday; the next Monday is 2026-03-16.
  EXPECT_EQ(s.NextAfter(At("2026-03-11T12:00:00Z")), At("2026-03-16T00:00:00Z"));
  // Tuesday 01:00: one day and one hour into the week.
  auto tue = S(1, ScheduleUnit::kWeeks, 24 * 60 + 60);
  EXPECT_EQ(tue.NextAfter(At("2026-03-11T12:00:00Z")), At("2026-03-17T01:00:00Z"));
  EXPECT_EQ(tue.NextAfter(At("2026-03-16T12:00:00Z")), At("2026-03-17T01:00:00Z"));
}

TEST(TaskSchedule, EveryTwoWeeksKeepsItsParityAcrossYears) {
  auto s = S(2, ScheduleUnit::kWeeks, 0);
  auto a = s.NextAfter(At("2026-03-11T12:00:00Z"));
  auto b = s.NextAfter(a);
  EXPECT_EQ(b - a, std::chrono::hours(24 * 14));
  EXPECT_EQ(s.NextAfter(b - std::chrono::seconds(1)), b);
}

TEST(TaskSchedule, MissedSlotsCollapseIntoOneNextSlot) {
  auto s = S(10, ScheduleUnit::kMinutes, 0);
  // Down from 08:00 to 11:03: eighteen slots were missed; the next one is
  // simply the first after now, not 08:10.
  EXPECT_EQ(s.NextAfter(At("2026-03-10T11:03:00Z")), At("2026-03-10T11:10:00Z"));
}

TEST(TaskSchedule, BeforeTheEpochStillAligns) {
  auto s = S(1, ScheduleUnit::kDays, 60);
  EXPECT_EQ(s.NextAfter(At("1969-12-31T05:00:00Z")), At("1970-01-01T01:00:00Z"));
}

TEST(TaskSchedule, ParsesJsonAndDefaultsOffsetToZero) {
  auto s = TaskSchedule::FromJson({{"every", 2}, {"unit", "hours"}});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->every(), 2);
  EXPECT_EQ(s->unit(), ScheduleUnit::kHours);
  EXPECT_EQ(s->offset_minutes(), 0);
  EXPECT_EQ(s->ToJson(), (json{{"every", 2}, {"unit", "hours"}, {"offset_minutes", 0}}));
  EXPECT_EQ(*TaskSchedule::FromJson(s->ToJson()), *s);
}

TEST(TaskSchedule, InvalidScheduleListsEveryProblem) {
  auto s = TaskSchedule::FromJson({{"every", 0}, {"unit", "fortnights"}, {"colour", "red"}});
  ASSERT_FALSE(s.ok());
  const auto& m = s.status().message();
  EXPECT_NE(m.find("unknown field colour"), std::string::npos) << m;
  EXPECT_NE(m.find("every must be between 1 and 1000"), std::string::npos) << m;
  EXPECT_NE(m.find("unit must be one of minutes, hours, days, weeks"), std::string::npos) << m;
}

TEST(TaskSchedule, OffsetMustFitInsideThePeriod) {
  EXPECT_FALSE(
      TaskSchedule::FromJson({{"every", 1}, {"unit", "hours"}, {"offset_minutes", 60}}).ok());
  EXPECT_FALSE(
      TaskSchedule::FromJson({{"every", 1}, {"unit", "hours"}, {"offset_minutes", -1}}).ok());
  EXPECT_TRUE(
      TaskSchedule::FromJson({{"every", 1}, {"unit", "hours"}, {"offset_minutes", 59}}).ok());
  EXPECT_TRUE(
      TaskSchedule::FromJson({{"every", 2}, {"unit", "hours"}, {"offset_minutes", 119}}).ok());
}

TEST(TaskSchedule, RequiredFieldsAndTypes) {
  auto missing = TaskSchedule::FromJson(json::object());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("every is required"), std::string::npos);
  EXPECT_NE(missing.status().message().find("unit is required"), std::string::npos);
  EXPECT_FALSE(TaskSchedule::FromJson({{"every", "5"}, {"unit", "minutes"}}).ok());
  EXPECT_FALSE(
      TaskSchedule::FromJson({{"every", 5}, {"unit", "minutes"}, {"offset_minutes", 1.5}}).ok());
  EXPECT_FALSE(TaskSchedule::FromJson(json::array()).ok());
}

}  // namespace
}  // namespace sluice::warehouse
