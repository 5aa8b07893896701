// When a task runs: every N minutes/hours/days/weeks, offset_minutes into
// each period, evaluated in UTC (no daylight saving). Periods count from the
// Unix epoch, weeks from Monday 00:00, so "every 1 days, offset 120" is 02:00
// UTC each day and "every 1 weeks, offset 1500" is Tuesday 01:00 UTC.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace sluice::warehouse {

enum class ScheduleUnit { kMinutes, kHours, kDays, kWeeks };
const char* ScheduleUnitName(ScheduleUnit unit);

class TaskSchedule {
 public:
  static constexpr int kMaxEvery = 1000;

  // Every day at 00:00 UTC; a placeholder until a parsed one replaces it.
  TaskSchedule() = default;

  // InvalidArgument listing every problem ("every must be ...; unit must be ...").
  static common::Result<TaskSchedule> FromJson(const nlohmann::json& json);
  static common::Result<TaskSchedule> Make(int every, ScheduleUnit unit, int offset_minutes);

  nlohmann::json ToJson() const;

  // The first slot strictly after `t`. The scheduler sets next_run_at to
  // NextAfter(now) on every firing, so slots missed while nothing ran
  // collapse into the one run that fires now.
  common::TimePoint NextAfter(common::TimePoint t) const;

  int every() const { return every_; }
  ScheduleUnit unit() const { return unit_; }
  int offset_minutes() const { return offset_minutes_; }
  // every × the unit's length, in minutes.
  std::int64_t period_minutes() const;

  bool operator==(const TaskSchedule&) const = default;

 private:
  TaskSchedule(int every, ScheduleUnit unit, int offset_minutes)
      : every_(every), unit_(unit), offset_minutes_(offset_minutes) {}
  static std::vector<std::string> Problems(std::int64_t every, ScheduleUnit unit,
                                           std::int64_t offset_minutes);

  int every_ = 1;
  ScheduleUnit unit_ = ScheduleUnit::kDays;
  int offset_minutes_ = 0;
};

}  // namespace sluice::warehouse
