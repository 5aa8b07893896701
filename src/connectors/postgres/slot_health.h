// A replication slot's health as the source database reports it
// (pg_replication_slots), how loud it is against the connector's
// thresholds, and the source-side clean-up a deleted connector owes.
//
// Lag in bytes is the WAL the slot still holds (pg_current_wal_insert_lsn() minus
// confirmed_flush_lsn); lag in seconds is the age of the oldest WAL position
// the slot has not confirmed, from the positions the source sampled (its
// heartbeats), so its resolution is one heartbeat interval.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "common/status.h"
#include "connectors/change_event.h"

namespace sluice::connectors::postgres {

struct SlotStatus {
  std::string slot;
  // reserved | extended | unreserved | lost (PostgreSQL >= 13; empty before).
  std::string wal_status;
  // Bytes of WAL that can still be written before the slot is in danger of
  // being lost; nullopt when max_slot_wal_keep_size is -1 (unlimited).
  std::optional<std::int64_t> safe_wal_size;
  std::int64_t lag_bytes = 0;
  double lag_seconds = 0;
  Lsn confirmed_flush_lsn = 0;
};

enum class SlotLevel { kOk, kWarn, kCritical };
const char* SlotLevelName(SlotLevel level);

struct SlotThresholds {
  std::int64_t warn_bytes = std::int64_t{1} << 30;       // 1 GiB
  std::int64_t critical_bytes = std::int64_t{10} << 30;  // 10 GiB
};

// Critical at or past critical_bytes, or when the server says the WAL is no
// longer reserved for the slot (unreserved, lost); warn at or past warn_bytes.
SlotLevel ClassifySlot(const SlotStatus& status, const SlotThresholds& thresholds);

// WAL positions and when they were current: the age of the oldest one the
// slot has not confirmed is its lag in seconds.
class WalClock {
 public:
  void Sample(Lsn position, std::chrono::steady_clock::time_point at);
  // 0 when everything sampled is confirmed.
  double SecondsBehind(Lsn confirmed, std::chrono::steady_clock::time_point now);

 private:
  std::deque<std::pair<Lsn, std::chrono::steady_clock::time_point>> samples_;
};

// The slot's row of pg_replication_slots with lag in bytes (lag_seconds is
// left 0 for the caller); NotFound when there is no such slot.
common::Result<SlotStatus> ReadSlotStatus(pqxx::transaction_base& tx, const std::string& slot);

// The server's words when a slot's WAL is gone, in pg_replication_slots
// (wal_status = 'lost') or from START_REPLICATION.
bool IsSlotLostError(const std::string& message);

// Drops `slot` and `publication` on the source at `url` (either may be
// absent already). A slot some connection still streams from is not
// dropped: FailedPrecondition names the holder's PID.
common::Status DropSlotAndPublication(const std::string& url, const std::string& slot,
                                      const std::string& publication);

}  // namespace sluice::connectors::postgres
