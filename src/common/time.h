// Wall-clock helpers. The spec stores naive UTC DATETIMEs, so every timestamp
// Sluice writes is UTC; epoch milliseconds are the metric intervals' unit.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace sluice::common {

using Clock = std::chrono::system_clock;
using TimePoint = Clock::time_point;

std::int64_t NowEpochMillis();
// Milliseconds on the monotonic clock since `start`.
std::int64_t MillisSince(std::chrono::steady_clock::time_point start);
// "YYYY-MM-DD HH:MM:SS.ffffff" in UTC, the form PostgreSQL reads as a naive timestamp.
std::string FormatUtc(TimePoint t);
// ISO-8601 with a trailing Z, for JSON responses.
std::string FormatIso8601(TimePoint t);
// Reads "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+00:00)" (a space may replace the
// T); nullopt for anything else, including a non-UTC offset.
std::optional<TimePoint> ParseIso8601(const std::string& text);

}  // namespace sluice::common

namespace sluice::common {

// Microseconds since the epoch: how timestamps cross the SQL boundary
// (`to_timestamp($1 / 1e6) AT TIME ZONE 'UTC'` in, `extract(epoch ...)` out),
// so no text parsing and no session time zone is involved.
std::int64_t ToEpochMicros(TimePoint t);
TimePoint FromEpochMicros(std::int64_t micros);

}  // namespace sluice::common
