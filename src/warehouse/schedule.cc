#include "warehouse/schedule.h"

namespace sluice::warehouse {
namespace {

std::int64_t UnitMinutes(ScheduleUnit unit) {
  switch (unit) {
    case ScheduleUnit::kMinutes:
      return 1;
    case ScheduleUnit::kHours:
      return 60;
    case ScheduleUnit::kDays:
      return 24 * 60;
    case ScheduleUnit::kWeeks:
      return 7 * 24 * 60;
  }
  return 1;
}

// 1970-01-01 was a Thursday; the first Monday 00:00 UTC is 1970-01-05.
constexpr std::int64_t kFirstMondayMinutes = 4 * 24 * 60;

std::int64_t FloorDiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace

const char* ScheduleUnitName(ScheduleUnit unit) {
  switch (unit) {
    case ScheduleUnit::kMinutes:
      return "minutes";
    case ScheduleUnit::kHours:
      return "hours";
    case ScheduleUnit::kDays:
      return "days";
    case ScheduleUnit::kWeeks:
      return "weeks";
  }
  return "minutes";
}

std::vector<std::string> TaskSchedule::Problems(std::int64_t every, ScheduleUnit unit,
                                                std::int64_t offset_minutes) {
  std::vector<std::string> problems;
  if (every < 1 || every > kMaxEvery) {
    problems.push_back("every must be between 1 and " + std::to_string(kMaxEvery));
  } else {
    std::int64_t period = every * UnitMinutes(unit);
    if (offset_minutes < 0 || offset_minutes >= period) {
      problems.push_back("offset_minutes must be at least 0 and less than " +
                         std::to_string(period) + " (every " + std::to_string(every) + " " +
                         ScheduleUnitName(unit) + ")");
    }
  }
  return problems;
}

common::Result<TaskSchedule> TaskSchedule::Make(int every, ScheduleUnit unit, int offset_minutes) {
  auto problems = Problems(every, unit, offset_minutes);
  if (!problems.empty()) return common::InvalidArgument(Join(problems));
  return TaskSchedule(every, unit, offset_minutes);
}

common::Result<TaskSchedule> TaskSchedule::FromJson(const nlohmann::json& json) {
  if (!json.is_object())
    return common::InvalidArgument("must be an object {every, unit, offset_minutes}");
  std::vector<std::string> problems;
  for (const auto& item : json.items()) {
    const std::string& key = item.key();
    if (key != "every" && key != "unit" && key != "offset_minutes")
      problems.push_back("unknown field " + key);
  }
  std::int64_t every = 0, offset = 0;
  bool every_ok = false, unit_ok = false, offset_ok = true;
  ScheduleUnit unit = ScheduleUnit::kMinutes;
  if (!json.contains("every")) {
    problems.push_back("every is required");
  } else if (!json["every"].is_number_integer()) {
    problems.push_back("every must be an integer");
  } else {
    every = json["every"].get<std::int64_t>();
    every_ok = true;
  }
  if (!json.contains("unit")) {
    problems.push_back("unit is required");
  } else {
    const auto& u = json["unit"];
    std::string name = u.is_string() ? u.get<std::string>() : "";
    bool found = false;
    for (auto candidate : {ScheduleUnit::kMinutes, ScheduleUnit::kHours, ScheduleUnit::kDays,
                           ScheduleUnit::kWeeks}) {
      if (name == ScheduleUnitName(candidate)) {
        unit = candidate;
        found = true;
      }
    }
    if (!found) problems.push_back("unit must be one of minutes, hours, days, weeks");
    unit_ok = found;
  }
  if (json.contains("offset_minutes")) {
    if (!json["offset_minutes"].is_number_integer()) {
      problems.push_back("offset_minutes must be an integer");
      offset_ok = false;
    } else {
      offset = json["offset_minutes"].get<std::int64_t>();
    }
  }
  if (every_ok && unit_ok && offset_ok) {
    for (auto& p : Problems(every, unit, offset)) problems.push_back(std::move(p));
  } else if (every_ok && (every < 1 || every > kMaxEvery)) {
    problems.push_back("every must be between 1 and " + std::to_string(kMaxEvery));
  }
  if (!problems.empty()) return common::InvalidArgument(Join(problems));
  return TaskSchedule(static_cast<int>(every), unit, static_cast<int>(offset));
}

nlohmann::json TaskSchedule::ToJson() const {
  return {
      {"every", every_}, {"unit", ScheduleUnitName(unit_)}, {"offset_minutes", offset_minutes_}};
}

std::int64_t TaskSchedule::period_minutes() const { return every_ * UnitMinutes(unit_); }

common::TimePoint TaskSchedule::NextAfter(common::TimePoint t) const {
  const std::int64_t period_us = period_minutes() * 60'000'000;
  std::int64_t origin_min =
      (unit_ == ScheduleUnit::kWeeks ? kFirstMondayMinutes : 0) + offset_minutes_;
  std::int64_t origin_us = origin_min * 60'000'000;
  std::int64_t now_us = common::ToEpochMicros(t);
  std::int64_t k = FloorDiv(now_us - origin_us, period_us) + 1;
  return common::FromEpochMicros(origin_us + k * period_us);
}

}  // namespace sluice::warehouse
