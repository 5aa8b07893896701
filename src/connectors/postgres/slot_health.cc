#include "connectors/postgres/slot_health.h"

#include <fmt/format.h>

#include "connectors/postgres/lsn.h"
#include "guard/postgres_conninfo.h"

namespace sluice::connectors::postgres {

const char* SlotLevelName(SlotLevel level) {
  switch (level) {
    case SlotLevel::kOk:
      return "ok";
    case SlotLevel::kWarn:
      return "warn";
    case SlotLevel::kCritical:
      return "critical";
  }
  return "ok";
}

SlotLevel ClassifySlot(const SlotStatus& s, const SlotThresholds& t) {
  if (s.wal_status == "unreserved" || s.wal_status == "lost") return SlotLevel::kCritical;
  if (t.critical_bytes > 0 && s.lag_bytes >= t.critical_bytes) return SlotLevel::kCritical;
  if (t.warn_bytes > 0 && s.lag_bytes >= t.warn_bytes) return SlotLevel::kWarn;
  return SlotLevel::kOk;
}

void WalClock::Sample(Lsn position, std::chrono::steady_clock::time_point at) {
  if (!samples_.empty() && samples_.back().first >= position) return;
  samples_.emplace_back(position, at);
  // Bounded: a day of 10 s heartbeats; older samples only matter to a slot
  // that far behind, whose lag is then reported as at least that old.
  if (samples_.size() > 10000) samples_.pop_front();
}

double WalClock::SecondsBehind(Lsn confirmed, std::chrono::steady_clock::time_point now) {
  // Samples at or before the confirmed position are history; the first one
  // after it is the oldest WAL still held.
  while (samples_.size() > 1 && samples_[1].first <= confirmed) samples_.pop_front();
  for (const auto& [lsn, at] : samples_) {
    if (lsn > confirmed) return std::chrono::duration<double>(now - at).count();
  }
  return 0;
}

common::Result<SlotStatus> ReadSlotStatus(pqxx::transaction_base& tx, const std::string& slot) {
  bool has_wal_status =
      tx.exec("SELECT current_setting('server_version_num')::int >= 130000")[0][0].as<bool>();
  auto rows = tx.exec_params(
      fmt::format("SELECT {}, {}, coalesce(pg_wal_lsn_diff(pg_current_wal_insert_lsn(), "
                  "confirmed_flush_lsn), 0)::bigint, coalesce(confirmed_flush_lsn, '0/0')::text "
                  "FROM pg_replication_slots WHERE slot_name = $1",
                  has_wal_status ? "wal_status" : "''::text",
                  has_wal_status ? "safe_wal_size" : "NULL::bigint"),
      slot);
  if (rows.empty()) return common::NotFound(fmt::format("no replication slot {}", slot));
  SlotStatus s;
  s.slot = slot;
  if (!rows[0][0].is_null()) s.wal_status = rows[0][0].c_str();
  if (!rows[0][1].is_null()) s.safe_wal_size = rows[0][1].as<std::int64_t>();
  s.lag_bytes = std::max<std::int64_t>(0, rows[0][2].as<std::int64_t>());
  auto lsn = ParseLsn(rows[0][3].c_str());
  if (lsn.ok()) s.confirmed_flush_lsn = *lsn;
  return s;
}

bool IsSlotLostError(const std::string& message) {
  return message.find("can no longer get changes from replication slot") != std::string::npos ||
         message.find("This slot has been invalidated") != std::string::npos;
}

common::Status DropSlotAndPublication(const std::string& url, const std::string& slot,
                                      const std::string& publication) {
  auto pinned = guard::PinPostgres(url);
  if (!pinned.ok()) {
    if (guard::IsRefusal(pinned.status())) return pinned.status();
    return common::Unavailable("source database: " + pinned.status().message());
  }
  try {
    pqxx::connection conn(*pinned);
    pqxx::nontransaction tx(conn);
    auto held = tx.exec_params(
        "SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1 AND active", slot);
    if (!held.empty())
      return common::FailedPrecondition(
          fmt::format("replication slot {} is in use by PID {}; stop the connector first", slot,
                      held[0][0].c_str()));
    tx.exec_params(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1",
        slot);
    if (!publication.empty()) tx.exec("DROP PUBLICATION IF EXISTS " + tx.quote_name(publication));
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("source database: {}", e.what()));
  }
  return common::Status::Ok();
}

}  // namespace sluice::connectors::postgres
