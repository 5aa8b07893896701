// One partition's log: append-only segment files "<base offset>.log", each
// with a sparse offset index "<base offset>.index" of (relative offset,
// position) pairs. Batches are stored exactly as received. Recovery scans the
// active segment and truncates a torn or corrupt tail.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "broker/protocol/wire.h"
#include "common/status.h"

namespace sluice::broker::storage {

struct LogOptions {
  std::int64_t segment_bytes = 64 << 20;
  std::int64_t index_interval_bytes = 4096;
  // Reads (and the high watermark) stop at the last durable offset, so no
  // consumer sees, and commits past, what a power cut could take back.
  bool expose_only_synced = false;
};

// An idempotent producer's batch found by recovery in the active segment.
struct RecoveredProducerBatch {
  std::int64_t producer_id;
  std::int16_t epoch;
  std::int32_t first_seq, last_seq;
  std::int64_t base_offset;
};

struct ReadResult {
  // Whole batches, possibly starting before the fetch offset, as a range of
  // one segment file (which the slice keeps open, even past retention).
  protocol::FileSlice records;
  std::int64_t high_watermark = 0;
  std::int64_t log_start_offset = 0;
};

class Segment;

class PartitionLog {
 public:
  static common::Result<std::unique_ptr<PartitionLog>> Open(const std::filesystem::path& dir,
                                                            LogOptions options);
  ~PartitionLog();
  PartitionLog(const PartitionLog&) = delete;
  PartitionLog& operator=(const PartitionLog&) = delete;

  // Appends already-validated batches (one produce partition's records blob),
  // assigning offsets from the log end. Returns the first assigned offset.
  common::Result<std::int64_t> Append(std::string_view records);

  // Locates whole batches from the one containing `offset`, up to max_bytes
  // (always at least one batch when there is data) and within one segment;
  // the bytes are not read here but sent from the file. OutOfRange as
  // InvalidArgument when offset is outside [log start, log end].
  common::Result<ReadResult> Read(std::int64_t offset, std::int64_t max_bytes) const;

  // First offset whose batch max timestamp >= ts, or log end when none.
  std::int64_t OffsetForTimestamp(std::int64_t ts) const;

  // Deletes whole non-active segments that are older than retention_ms (by
  // their newest timestamp) or that push the log over retention_bytes. -1 = off.
  int EnforceRetention(std::int64_t now_ms, std::int64_t retention_ms,
                       std::int64_t retention_bytes);

  // fdatasyncs every segment written since the last Sync (a roll can leave
  // the previous segment's tail unsynced), without blocking appends or reads.
  common::Status Sync();
  // Returns once `offset` is durable, sharing one Sync with every caller
  // that waits at the same time (group commit).
  common::Status SyncPast(std::int64_t offset);

  std::int64_t log_start_offset() const;
  // Where the next append goes.
  std::int64_t log_end_offset() const;
  // Where reads end: log_end_offset(), or with expose_only_synced the durable end.
  std::int64_t high_watermark() const;
  std::int64_t size_bytes() const;
  // How many bytes recovery cut off the tail when the log was opened.
  std::int64_t truncated_bytes() const { return truncated_bytes_; }
  // Idempotent batches of the active segment as found when the log was opened.
  std::vector<RecoveredProducerBatch> recovered_producers() const;

 private:
  PartitionLog(std::filesystem::path dir, LogOptions options);
  common::Status Load();
  common::Status Roll();
  common::Status SyncLocked();            // holds sync_mu_
  std::int64_t VisibleEndLocked() const;  // holds mu_

  std::filesystem::path dir_;
  LogOptions options_;
  mutable std::mutex mu_;
  std::mutex sync_mu_;  // taken before mu_, never inside it
  std::vector<std::unique_ptr<Segment>> segments_;
  std::int64_t next_offset_ = 0;
  // The durable end: every offset below synced_offset_ is on disk, which is
  // the segment synced_base_ up to synced_size_ and everything before it.
  std::int64_t synced_offset_ = 0;
  std::int64_t synced_base_ = 0;
  std::int64_t synced_size_ = 0;
  std::int64_t truncated_bytes_ = 0;
};

}  // namespace sluice::broker::storage
