#include "connectors/postgres/lsn.h"

#include <fmt/format.h>

#include <charconv>

namespace sluice::connectors::postgres {

namespace {
// 946684800 s between 1970-01-01 and 2000-01-01.
constexpr std::int64_t kPgEpochOffsetMicros = 946'684'800LL * 1'000'000LL;
}  // namespace

common::Result<Lsn> ParseLsn(std::string_view text) {
  auto slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 >= text.size()) {
    return common::InvalidArgument(fmt::format("not an LSN: '{}'", text));
  }
  std::uint32_t hi = 0, lo = 0;
  auto hi_end = text.data() + slash;
  auto [p1, e1] = std::from_chars(text.data(), hi_end, hi, 16);
  auto [p2, e2] = std::from_chars(hi_end + 1, text.data() + text.size(), lo, 16);
  if (e1 != std::errc() || p1 != hi_end || e2 != std::errc() || p2 != text.data() + text.size()) {
    return common::InvalidArgument(fmt::format("not an LSN: '{}'", text));
  }
  return (static_cast<Lsn>(hi) << 32) | lo;
}

std::string FormatLsn(Lsn lsn) {
  return fmt::format("{:X}/{:X}", static_cast<std::uint32_t>(lsn >> 32),
                     static_cast<std::uint32_t>(lsn));
}

std::int64_t PgEpochToUnixMicros(std::int64_t pg_micros) {
  return pg_micros + kPgEpochOffsetMicros;
}
std::int64_t UnixToPgEpochMicros(std::int64_t unix_micros) {
  return unix_micros - kPgEpochOffsetMicros;
}

}  // namespace sluice::connectors::postgres
