#include "common/time.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <cctype>
#include <cstdio>
#include <ctime>

namespace sluice::common {

std::int64_t MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

std::int64_t NowEpochMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
      .count();
}

std::string FormatUtc(TimePoint t) {
  auto micros = std::chrono::time_point_cast<std::chrono::microseconds>(t);
  return fmt::format("{:%Y-%m-%d %H:%M:%S}", micros);
}

std::string FormatIso8601(TimePoint t) {
  auto micros = std::chrono::time_point_cast<std::chrono::microseconds>(t);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", micros);
}

std::optional<TimePoint> ParseIso8601(const std::string& text) {
  int year, month, day, hour, minute, second, consumed = 0;
  char sep;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &year, &month, &day, &sep, &hour,
                  &minute, &second, &consumed) != 7 ||
      (sep != 'T' && sep != ' ') || consumed != 19)
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60)
    return std::nullopt;
  std::size_t i = 19;
  long long micros = 0;
  if (i < text.size() && text[i] == '.') {
    int digits = 0;
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++digits)
      if (digits < 6) micros = micros * 10 + (text[i] - '0');
    if (digits == 0) return std::nullopt;
    for (; digits < 6; ++digits) micros *= 10;
  }
  std::string zone = text.substr(i);
  if (zone != "Z" && zone != "+00:00" && !zone.empty()) return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  auto seconds = timegm(&tm);
  return FromEpochMicros(static_cast<std::int64_t>(seconds) * 1'000'000 + micros);
}

}  // namespace sluice::common

namespace sluice::common {

std::int64_t ToEpochMicros(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

TimePoint FromEpochMicros(std::int64_t micros) {
  return TimePoint(std::chrono::duration_cast<Clock::duration>(std::chrono::microseconds(micros)));
}

}  // namespace sluice::common
