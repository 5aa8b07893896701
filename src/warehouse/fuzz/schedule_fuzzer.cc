// libFuzzer target for task schedules: any JSON either is refused with an
// InvalidArgument or gives a schedule whose next slot, after any instant, is
// strictly later, at most one period later, and offset_minutes into a period.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "warehouse/schedule.h"

namespace {

[[noreturn]] void Bug(const char* what) {
  std::fprintf(stderr, "schedule fuzzer: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The first 8 bytes pick an instant (within ±10 000 years), the rest is JSON.
  std::int64_t raw = 0;
  if (size >= 8) std::memcpy(&raw, data, 8);
  std::int64_t micros = raw % (315'576'000'000LL * 1'000'000LL);
  std::string_view text(reinterpret_cast<const char*>(data) + std::min<std::size_t>(size, 8),
                        size - std::min<std::size_t>(size, 8));
  auto json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded()) return 0;
  auto schedule = sluice::warehouse::TaskSchedule::FromJson(json);
  if (!schedule.ok()) {
    if (schedule.status().code() != sluice::common::Code::kInvalidArgument)
      Bug("a refused schedule must be InvalidArgument");
    return 0;
  }
  auto t = sluice::common::FromEpochMicros(micros);
  auto next = schedule->NextAfter(t);
  auto period = std::chrono::minutes(schedule->period_minutes());
  if (!(next > t)) Bug("next slot is not after the instant");
  if (next - t > period) Bug("next slot is more than one period away");
  if (schedule->NextAfter(next) - next != period) Bug("slots are not one period apart");
  return 0;
}
