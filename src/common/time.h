// Wall-clock helpers. The spec stores naive UTC DATETIMEs, so every timestamp
// Sluice writes is UTC; epoch milliseconds are the metric intervals' unit.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace sluice::common {

using Clock = std::chrono::system_clock;
using TimePoint = Clock::time_point;

std::int64_t NowEpochMillis();
// "YYYY-MM-DD HH:MM:SS.ffffff" in UTC, the form PostgreSQL reads as a naive timestamp.
std::string FormatUtc(TimePoint t);
// ISO-8601 with a trailing Z, for JSON responses.
std::string FormatIso8601(TimePoint t);

}  // namespace sluice::common
