#include "backfill/progress.h"

#include <algorithm>
#include <cmath>

namespace sluice::backfill {

RunProgress EstimateProgress(const std::vector<BackfillItem>& items, common::TimePoint now) {
  RunProgress p;
  std::optional<common::TimePoint> first_start, last_finish;
  bool unfinished = false;
  std::int64_t remaining = 0;
  bool remaining_known = true;
  for (const auto& i : items) {
    ItemProgress ip;
    if (i.rows_written) p.rows_written = p.rows_written.value_or(0) + *i.rows_written;
    if (i.approximate_row_count)
      p.approximate_row_count = p.approximate_row_count.value_or(0) + *i.approximate_row_count;
    if (i.status == ItemStatus::kCompleted) {
      ip.percent = 100.0;
    } else if (i.rows_written && i.approximate_row_count && *i.approximate_row_count > 0) {
      ip.percent = std::min(100.0, 100.0 * static_cast<double>(*i.rows_written) /
                                       static_cast<double>(*i.approximate_row_count));
    }
    if (i.status == ItemStatus::kQueued || i.status == ItemStatus::kRunning) {
      if (!i.approximate_row_count)
        remaining_known = false;
      else
        remaining +=
            std::max<std::int64_t>(0, *i.approximate_row_count - i.rows_written.value_or(0));
    }
    if (i.started_at)
      first_start = first_start ? std::min(*first_start, *i.started_at) : *i.started_at;
    if (i.status == ItemStatus::kQueued || i.status == ItemStatus::kRunning)
      unfinished = true;
    else if (i.finished_at)
      last_finish = last_finish ? std::max(*last_finish, *i.finished_at) : *i.finished_at;
    p.items.push_back(ip);
  }
  if (p.rows_written && p.approximate_row_count && *p.approximate_row_count > 0)
    p.percent = std::min(100.0, 100.0 * static_cast<double>(*p.rows_written) /
                                    static_cast<double>(*p.approximate_row_count));
  // The rate of the time the run worked: up to now while any item is
  // unfinished, else up to its last finish (it fell toward 0 after the end).
  const common::TimePoint until = unfinished || !last_finish ? now : *last_finish;
  if (p.rows_written && *p.rows_written > 0 && first_start && until > *first_start) {
    double seconds = std::chrono::duration<double>(until - *first_start).count();
    p.rows_per_second = static_cast<double>(*p.rows_written) / seconds;
    if (remaining_known)
      p.eta_seconds =
          static_cast<std::int64_t>(std::ceil(static_cast<double>(remaining) / *p.rows_per_second));
  }
  return p;
}

}  // namespace sluice::backfill
