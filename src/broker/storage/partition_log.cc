#include "broker/storage/partition_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "broker/protocol/record_batch.h"
#include "broker/protocol/wire.h"
#include "broker/storage/durable_file.h"

namespace sluice::broker::storage {

namespace fs = std::filesystem;
using common::Internal;
using common::InvalidArgument;
using common::Result;
using common::Status;
namespace proto = sluice::broker::protocol;

namespace {

Status Errno(const std::string& what) {
  return Internal(fmt::format("{}: {}", what, std::strerror(errno)));
}

std::string SegmentName(std::int64_t base, const char* ext) {
  return fmt::format("{:020d}{}", base, ext);
}

bool PreadAll(int fd, char* buf, std::size_t n, std::int64_t at) {
  while (n > 0) {
    ssize_t r = ::pread(fd, buf, n, at);
    if (r <= 0) {
      if (r < 0 && errno == EINTR) continue;
      return false;
    }
    buf += r;
    n -= static_cast<std::size_t>(r);
    at += r;
  }
  return true;
}

bool WriteAll(int fd, const char* buf, std::size_t n) {
  while (n > 0) {
    ssize_t r = ::write(fd, buf, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    buf += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

// writev until every byte of `iov` is written (it is consumed on the way).
bool WritevAll(int fd, std::vector<iovec>& iov) {
  std::size_t first = 0;
  while (first < iov.size()) {
    ssize_t r = ::writev(fd, iov.data() + first, static_cast<int>(iov.size() - first));
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    auto done = static_cast<std::size_t>(r);
    while (first < iov.size() && done >= iov[first].iov_len) done -= iov[first++].iov_len;
    if (first < iov.size()) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + done;
      iov[first].iov_len -= done;
    }
  }
  return true;
}

}  // namespace

// OpenFile and SyncTarget are members of Segment, which the header declares,
// so they have the library's linkage rather than an anonymous namespace's.

// Closes the descriptor when the segment and every slice handed out of it
// are gone, so a fetch being sent survives retention deleting the segment.
class OpenFile {
 public:
  explicit OpenFile(int fd) : fd_(fd) {}
  ~OpenFile() { ::close(fd_); }
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// A segment's files to fsync, usable without the partition lock: they stay
// open while the sync runs, even if retention deletes the segment meanwhile.
struct SyncTarget {
  std::shared_ptr<const OpenFile> log, index;
  std::string log_path, index_path;

  std::int64_t base = 0;

  Status Sync() const {
    SLUICE_RETURN_IF_ERROR(SyncFile(log->fd(), log_path));
    return SyncFile(index->fd(), index_path);
  }
};

// One log file plus its sparse index. Not thread-safe; PartitionLog locks.
class Segment {
 public:
  struct IndexEntry {
    std::int64_t offset;  // base offset of the batch at `position`
    std::int64_t position;
  };

  ~Segment() = default;

  // `active` (the last segment) is verified batch by batch (CRC) and its
  // idempotent batches are kept for recovered_producers(); any segment's
  // torn tail is cut back and reported in `torn`. On return everything in
  // the segment is durable, and so is the file's name in `dir`.
  static Result<std::unique_ptr<Segment>> Open(const fs::path& dir, std::int64_t base, bool active,
                                               std::int64_t index_interval, std::int64_t* truncated,
                                               bool* torn) {
    auto seg = std::unique_ptr<Segment>(new Segment());
    seg->base_ = base;
    seg->next_offset_ = base;
    seg->index_interval_ = index_interval;
    seg->log_path_ = dir / SegmentName(base, ".log");
    seg->index_path_ = dir / SegmentName(base, ".index");
    std::error_code exists_ec;
    const bool created = !fs::exists(seg->log_path_, exists_ec);
    seg->log_fd_ = ::open(seg->log_path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (seg->log_fd_ < 0) return Errno("open " + seg->log_path_.string());
    seg->log_file_ = std::make_shared<const OpenFile>(seg->log_fd_);
    struct stat st {};
    if (::fstat(seg->log_fd_, &st) != 0) return Errno("stat " + seg->log_path_.string());
    seg->size_ = st.st_size;
    bool index_ok = !active && seg->LoadIndex();
    const std::int64_t truncated_before = *truncated;
    SLUICE_RETURN_IF_ERROR(seg->Scan(/*verify=*/active, index_ok, truncated));
    *torn = *truncated > truncated_before;
    seg->index_fd_ =
        ::open(seg->index_path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (seg->index_fd_ < 0) return Errno("open " + seg->index_path_.string());
    seg->index_file_ = std::make_shared<const OpenFile>(seg->index_fd_);
    if (!index_ok) SLUICE_RETURN_IF_ERROR(seg->RewriteIndex());
    // What recovery kept is made durable before anything is served from it:
    // a consumer must never read bytes a power cut could still take away.
    SLUICE_RETURN_IF_ERROR(SyncFile(seg->log_fd_, seg->log_path_.string()));
    SLUICE_RETURN_IF_ERROR(SyncFile(seg->index_fd_, seg->index_path_.string()));
    if (created) SLUICE_RETURN_IF_ERROR(SyncDirectory(dir));
    return seg;
  }

  Status Append(std::string_view records, std::int64_t* first_offset) {
    // Assign offsets batch by batch; the blob was validated by the handler.
    // The request buffer stays untouched: each batch's rewritten prefix is
    // written from `heads`, the rest straight from the request.
    std::size_t pos = 0;
    std::int64_t next = next_offset_;
    *first_offset = next;
    std::vector<IndexEntry> new_entries;
    std::vector<BatchHead> heads;
    std::int64_t since = bytes_since_index_;
    std::int64_t max_ts = max_timestamp_;
    while (pos < records.size()) {
      auto h = proto::ParseBatchHeader(records.substr(pos));
      if (!h.ok()) return h.status();
      heads.push_back(RewrittenHead(records.data() + pos, next));
      if (since >= index_interval_ || (index_.empty() && new_entries.empty())) {
        new_entries.push_back({next, size_ + static_cast<std::int64_t>(pos)});
        since = 0;
      }
      since += static_cast<std::int64_t>(h->total_size());
      max_ts = std::max(max_ts, h->max_timestamp);
      next += h->last_offset_delta + 1;
      pos += h->total_size();
    }
    if (SimulatedDiskFull()) {
      errno = ENOSPC;
      return Errno("write " + log_path_.string() + " (simulated by --test-disk-full-while-exists)");
    }
    if (!WriteBatches(records, heads)) {
      // Leave no half-written batch behind: cut the file back.
      if (::ftruncate(log_fd_, size_) != 0)
        spdlog::error("ftruncate {} failed", log_path_.string());
      return Errno("write " + log_path_.string());
    }
    const std::size_t indexed = index_.size();
    struct stat index_stat {};
    const off_t index_size = ::fstat(index_fd_, &index_stat) == 0 ? index_stat.st_size : -1;
    for (const auto& e : new_entries) {
      char b[8];
      proto::StoreBe32(b, static_cast<std::int32_t>(e.offset - base_));
      proto::StoreBe32(b + 4, static_cast<std::int32_t>(e.position));
      if (!WriteAll(index_fd_, b, 8)) {
        // The batches are in the log but could not be indexed: take them
        // back too, or the next append would be indexed at a stale size.
        auto failed = Errno("write " + index_path_.string());
        index_.resize(indexed);
        bool index_back = index_size >= 0 && ::ftruncate(index_fd_, index_size) == 0;
        bool log_back = ::ftruncate(log_fd_, size_) == 0;
        if (!index_back || !log_back)
          spdlog::error("taking back a failed append to {} failed", log_path_.string());
        return failed;
      }
      index_.push_back(e);
    }
    bytes_since_index_ = since;
    dirty_ = true;
    size_ += static_cast<std::int64_t>(records.size());
    next_offset_ = next;
    max_timestamp_ = max_ts;
    return {};
  }

  // A batch's first 16 bytes as stored: base offset, length, and partition
  // leader epoch (one leader forever, epoch 0). The CRC covers none of them.
  using BatchHead = std::array<char, 16>;

  static BatchHead RewrittenHead(const char* batch, std::int64_t base_offset) {
    BatchHead head;
    std::memcpy(head.data(), batch, head.size());
    proto::StoreBe64(head.data(), base_offset);
    proto::StoreBe32(head.data() + 12, 0);
    return head;
  }

  // One writev per up to kMaxIov/2 batches: head from `heads`, body from `records`.
  bool WriteBatches(std::string_view records, const std::vector<BatchHead>& heads) {
    constexpr std::size_t kMaxIov = 1024;
    std::vector<iovec> iov;
    std::size_t pos = 0;
    for (const auto& head : heads) {
      std::size_t total =
          proto::kBatchLogOverhead + static_cast<std::uint32_t>(proto::LoadBe32(head.data() + 8));
      iov.push_back({const_cast<char*>(head.data()), head.size()});
      iov.push_back({const_cast<char*>(records.data() + pos + head.size()), total - head.size()});
      pos += total;
      if (iov.size() == kMaxIov) {
        if (!WritevAll(log_fd_, iov)) return false;
        iov.clear();
      }
    }
    return iov.empty() || WritevAll(log_fd_, iov);
  }

  // Position of the batch holding `offset`, or size() when offset is past the end.
  std::int64_t Locate(std::int64_t offset) const {
    std::int64_t pos = 0;
    auto it = std::upper_bound(index_.begin(), index_.end(), offset,
                               [](std::int64_t o, const IndexEntry& e) { return o < e.offset; });
    if (it != index_.begin()) pos = std::prev(it)->position;
    while (pos < size_) {
      char hdr[proto::kBatchHeaderSize];
      if (!PreadAll(log_fd_, hdr, sizeof hdr, pos)) return size_;
      std::int64_t base = proto::LoadBe64(hdr);
      std::int32_t len = proto::LoadBe32(hdr + 8);
      std::int32_t delta = proto::LoadBe32(hdr + 23);
      if (base + delta >= offset) return pos;
      pos += static_cast<std::int64_t>(proto::kBatchLogOverhead) + len;
    }
    return size_;
  }

  // End position of whole batches starting at `pos` that fit in max_bytes
  // (at least one batch). Index entries are batch boundaries, so the walk
  // starts at the last one within reach: a few header reads per fetch, not
  // one per batch. Nothing at or past `limit` (a position) is included.
  std::int64_t Extent(std::int64_t pos, std::int64_t max_bytes, std::int64_t limit) const {
    std::int64_t end = pos;
    limit = std::min(limit, size_);
    auto reach = std::upper_bound(
        index_.begin(), index_.end(), pos + max_bytes,
        [](std::int64_t bound, const IndexEntry& e) { return bound < e.position; });
    if (reach != index_.begin() && std::prev(reach)->position > pos &&
        std::prev(reach)->position <= limit) {
      end = std::prev(reach)->position;
    }
    while (end < limit) {
      char hdr[proto::kBatchLogOverhead];
      if (!PreadAll(log_fd_, hdr, sizeof hdr, end)) break;
      std::int64_t next =
          end + static_cast<std::int64_t>(proto::kBatchLogOverhead) + proto::LoadBe32(hdr + 8);
      if (next > limit || (end > pos && next - pos > max_bytes)) break;
      end = next;
    }
    return end;
  }

  proto::FileSlice Slice(std::int64_t from, std::int64_t to) const {
    return {log_fd_, from, to - from, log_file_};
  }

  std::int64_t OffsetForTimestamp(std::int64_t ts) const {
    std::int64_t pos = 0;
    while (pos < size_) {
      char hdr[proto::kBatchHeaderSize];
      if (!PreadAll(log_fd_, hdr, sizeof hdr, pos)) break;
      if (proto::LoadBe64(hdr + 35) >= ts) return proto::LoadBe64(hdr);
      pos += static_cast<std::int64_t>(proto::kBatchLogOverhead) + proto::LoadBe32(hdr + 8);
    }
    return -1;
  }

  // The files to sync when anything was written since the last call.
  std::optional<SyncTarget> TakeDirty() {
    if (!dirty_) return std::nullopt;
    dirty_ = false;
    return SyncTarget{log_file_, index_file_, log_path_.string(), index_path_.string(), base_};
  }
  // A sync that failed: its bytes are not known to be durable; try again next time.
  void MarkDirty() { dirty_ = true; }

  const std::vector<RecoveredProducerBatch>& recovered_producers() const {
    return recovered_producers_;
  }

  void Remove() {
    std::error_code ec;
    fs::remove(log_path_, ec);
    fs::remove(index_path_, ec);
  }

  std::int64_t base() const { return base_; }
  std::int64_t next_offset() const { return next_offset_; }
  std::int64_t size() const { return size_; }
  std::int64_t max_timestamp() const { return max_timestamp_; }

 private:
  Segment() = default;

  bool LoadIndex() {
    std::error_code ec;
    auto n = fs::file_size(index_path_, ec);
    if (ec || n % 8 != 0) return false;
    int fd = ::open(index_path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    std::string buf(n, '\0');
    bool ok = PreadAll(fd, buf.data(), n, 0);
    ::close(fd);
    if (!ok) return false;
    for (std::size_t i = 0; i < n; i += 8) {
      IndexEntry e{base_ + proto::LoadBe32(buf.data() + i), proto::LoadBe32(buf.data() + i + 4)};
      if (e.position >= size_ || (!index_.empty() && e.position <= index_.back().position)) {
        index_.clear();
        return false;
      }
      index_.push_back(e);
    }
    return true;
  }

  // Walks batch headers from the last trusted index entry (or the start) to
  // the end. With verify, each batch's CRC is checked and the file is cut at
  // the first torn or corrupt batch.
  Status Scan(bool verify, bool index_ok, std::int64_t* truncated) {
    std::int64_t pos = 0;
    if (index_ok && !index_.empty()) {
      pos = index_.back().position;
      next_offset_ = index_.back().offset;
    } else {
      index_.clear();
    }
    bytes_since_index_ = index_interval_;
    std::string batch;
    while (pos < size_) {
      char hdr[proto::kBatchHeaderSize];
      bool good = size_ - pos >= static_cast<std::int64_t>(proto::kBatchHeaderSize) &&
                  PreadAll(log_fd_, hdr, sizeof hdr, pos);
      Result<proto::BatchHeader> h =
          good ? proto::ParseBatchHeader(std::string_view(hdr, sizeof hdr))
               : Result<proto::BatchHeader>(InvalidArgument("torn header"));
      good = h.ok() && static_cast<std::int64_t>(h->total_size()) <= size_ - pos &&
             (index_.empty() ? true : h->base_offset >= next_offset_);
      if (good && verify) {
        batch.resize(h->total_size());
        good = PreadAll(log_fd_, batch.data(), batch.size(), pos) &&
               proto::ValidateBatch(batch, *h).ok();
      }
      if (!good) {
        spdlog::warn("log {}: truncating torn tail at position {} ({} bytes)", log_path_.string(),
                     pos, size_ - pos);
        *truncated += size_ - pos;
        if (::ftruncate(log_fd_, pos) != 0) return Errno("ftruncate " + log_path_.string());
        size_ = pos;
        break;
      }
      if (index_.empty() || pos > index_.back().position) {
        if (bytes_since_index_ >= index_interval_) {
          index_.push_back({h->base_offset, pos});
          bytes_since_index_ = 0;
        }
      }
      bytes_since_index_ += static_cast<std::int64_t>(h->total_size());
      max_timestamp_ = std::max(max_timestamp_, h->max_timestamp);
      next_offset_ = h->last_offset() + 1;
      if (verify && h->producer_id >= 0) {
        recovered_producers_.push_back({h->producer_id, h->producer_epoch, h->base_sequence,
                                        h->base_sequence + h->last_offset_delta, h->base_offset});
      }
      pos += static_cast<std::int64_t>(h->total_size());
    }
    return {};
  }

  Status RewriteIndex() {
    if (::ftruncate(index_fd_, 0) != 0) return Errno("ftruncate " + index_path_.string());
    std::string buf;
    for (const auto& e : index_) {
      char b[8];
      proto::StoreBe32(b, static_cast<std::int32_t>(e.offset - base_));
      proto::StoreBe32(b + 4, static_cast<std::int32_t>(e.position));
      buf.append(b, 8);
    }
    if (!WriteAll(index_fd_, buf.data(), buf.size())) return Errno("write " + index_path_.string());
    return {};
  }

  std::int64_t base_ = 0;
  std::int64_t next_offset_ = 0;
  std::int64_t size_ = 0;
  std::int64_t max_timestamp_ = -1;
  std::int64_t index_interval_ = 4096;
  std::int64_t bytes_since_index_ = 0;
  fs::path log_path_;
  fs::path index_path_;
  int log_fd_ = -1;  // owned by log_file_
  std::shared_ptr<const OpenFile> log_file_;
  int index_fd_ = -1;  // owned by index_file_
  std::shared_ptr<const OpenFile> index_file_;
  bool dirty_ = false;  // written since the last TakeDirty
  std::vector<IndexEntry> index_;
  std::vector<RecoveredProducerBatch> recovered_producers_;
};

PartitionLog::PartitionLog(fs::path dir, LogOptions options)
    : dir_(std::move(dir)), options_(options) {}
PartitionLog::~PartitionLog() = default;

Result<std::unique_ptr<PartitionLog>> PartitionLog::Open(const fs::path& dir, LogOptions options) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal(fmt::format("create {}: {}", dir.string(), ec.message()));
  auto log = std::unique_ptr<PartitionLog>(new PartitionLog(dir, options));
  SLUICE_RETURN_IF_ERROR(log->Load());
  return log;
}

Status PartitionLog::Load() {
  std::vector<std::int64_t> bases;
  // The error_code form: out of descriptors (a broker asked for thousands of
  // partitions) is an error to answer with, not an exception to unwind.
  std::error_code ec;
  fs::directory_iterator files(dir_, ec);
  if (ec) return Internal(fmt::format("list {}: {}", dir_.string(), ec.message()));
  for (const auto& entry : files) {
    if (entry.path().extension() != ".log") continue;
    try {
      bases.push_back(std::stoll(entry.path().stem().string()));
    } catch (const std::exception&) {
      spdlog::warn("ignoring stray file {}", entry.path().string());
    }
  }
  std::sort(bases.begin(), bases.end());
  if (bases.empty()) bases.push_back(0);
  for (std::size_t i = 0; i < bases.size(); ++i) {
    bool active = i + 1 == bases.size();
    bool torn = false;
    auto seg = Segment::Open(dir_, bases[i], active, options_.index_interval_bytes,
                             &truncated_bytes_, &torn);
    if (!seg.ok()) return seg.status();
    segments_.push_back(std::move(seg).value());
    if (torn && !active) {
      // A power cut right after a roll: the previous segment's tail was not
      // yet durable, so nothing in the newer segment was acknowledged (an
      // acknowledgement syncs every segment written before it). Only that
      // one case is repaired; a torn tail further back is corruption.
      if (i + 2 != bases.size()) {
        return Internal(fmt::format("corrupt closed segment {} in {}", bases[i], dir_.string()));
      }
      std::error_code drop_ec;
      auto dropped = fs::file_size(dir_ / SegmentName(bases[i + 1], ".log"), drop_ec);
      if (!drop_ec) truncated_bytes_ += static_cast<std::int64_t>(dropped);
      for (const char* ext : {".log", ".index"})
        fs::remove(dir_ / SegmentName(bases[i + 1], ext), drop_ec);
      spdlog::warn("log {}: dropped segment {} written after the torn tail of segment {}",
                   dir_.string(), bases[i + 1], bases[i]);
      SLUICE_RETURN_IF_ERROR(SyncDirectory(dir_));
      break;
    }
  }
  next_offset_ = segments_.back()->next_offset();
  synced_offset_ = next_offset_;  // Open made everything it kept durable
  synced_base_ = segments_.back()->base();
  synced_size_ = segments_.back()->size();
  return {};
}

Status PartitionLog::Roll() {
  std::int64_t dummy = 0;
  bool torn = false;
  auto seg = Segment::Open(dir_, next_offset_, true, options_.index_interval_bytes, &dummy, &torn);
  if (!seg.ok()) return seg.status();
  segments_.push_back(std::move(seg).value());
  return {};
}

Result<std::int64_t> PartitionLog::Append(std::string_view records) {
  std::lock_guard lock(mu_);
  if (segments_.back()->size() > 0 &&
      segments_.back()->size() + static_cast<std::int64_t>(records.size()) >
          options_.segment_bytes) {
    SLUICE_RETURN_IF_ERROR(Roll());
  }
  std::int64_t first = 0;
  SLUICE_RETURN_IF_ERROR(segments_.back()->Append(records, &first));
  next_offset_ = segments_.back()->next_offset();
  return first;
}

std::int64_t PartitionLog::VisibleEndLocked() const {
  return options_.expose_only_synced ? synced_offset_ : next_offset_;
}

Result<ReadResult> PartitionLog::Read(std::int64_t offset, std::int64_t max_bytes) const {
  std::lock_guard lock(mu_);
  ReadResult r;
  const std::int64_t end = VisibleEndLocked();
  r.high_watermark = end;
  r.log_start_offset = segments_.front()->base();
  if (offset < r.log_start_offset || offset > next_offset_) {
    return InvalidArgument(
        fmt::format("offset {} out of range [{}, {}]", offset, r.log_start_offset, next_offset_));
  }
  // Between the durable end and the written end: in range, nothing to read yet.
  if (offset >= end) return r;
  auto it = std::upper_bound(
      segments_.begin(), segments_.end(), offset,
      [](std::int64_t o, const std::unique_ptr<Segment>& s) { return o < s->base(); });
  for (it = std::prev(it); it != segments_.end(); ++it) {
    // Bytes a power cut could still take away are not served.
    std::int64_t limit = (*it)->size();
    if (options_.expose_only_synced && (*it)->base() >= synced_base_)
      limit = (*it)->base() == synced_base_ ? std::min(limit, synced_size_) : 0;
    std::int64_t pos = (*it)->Locate(offset);
    if (pos >= (*it)->size()) continue;
    if (pos >= limit) break;
    r.records = (*it)->Slice(pos, (*it)->Extent(pos, max_bytes, limit));
    break;
  }
  return r;
}

std::int64_t PartitionLog::OffsetForTimestamp(std::int64_t ts) const {
  std::lock_guard lock(mu_);
  for (const auto& s : segments_) {
    if (s->max_timestamp() < ts) continue;
    std::int64_t o = s->OffsetForTimestamp(ts);
    if (o >= 0) return o;
  }
  return next_offset_;
}

int PartitionLog::EnforceRetention(std::int64_t now_ms, std::int64_t retention_ms,
                                   std::int64_t retention_bytes) {
  std::lock_guard lock(mu_);
  std::int64_t total = 0;
  for (const auto& s : segments_) total += s->size();
  int removed = 0;
  while (segments_.size() > 1) {
    const auto& s = segments_.front();
    bool too_old =
        retention_ms >= 0 && s->max_timestamp() >= 0 && s->max_timestamp() < now_ms - retention_ms;
    bool too_big = retention_bytes >= 0 && total - s->size() >= retention_bytes;
    if (!too_old && !too_big) break;
    total -= s->size();
    s->Remove();
    segments_.erase(segments_.begin());
    ++removed;
  }
  return removed;
}

Status PartitionLog::Sync() {
  std::lock_guard sync_lock(sync_mu_);
  return SyncLocked();
}

Status PartitionLog::SyncPast(std::int64_t offset) {
  // Group commit: writers queue here while one sync runs; the next to get
  // the lock syncs for all of them, and the rest find their offset covered.
  std::lock_guard sync_lock(sync_mu_);
  {
    std::lock_guard lock(mu_);
    if (synced_offset_ > offset) return {};
  }
  return SyncLocked();
}

Status PartitionLog::SyncLocked() {
  // fdatasync can take as long as the disk needs for everything written since
  // the last one; mu_ is held only to collect what to sync, so appends and
  // fetches go on meanwhile. Syncs run one at a time (sync_mu_), so a caller
  // returns only after the sync that covered its writes has finished.
  std::vector<SyncTarget> targets;
  std::int64_t end = 0, base = 0, size = 0;
  {
    std::lock_guard lock(mu_);
    for (auto& s : segments_) {
      if (auto t = s->TakeDirty()) targets.push_back(std::move(*t));
    }
    end = next_offset_;
    base = segments_.back()->base();
    size = segments_.back()->size();
  }
  for (std::size_t i = 0; i < targets.size(); ++i) {
    Status st = targets[i].Sync();
    if (st.ok()) continue;
    std::lock_guard lock(mu_);
    for (std::size_t j = i; j < targets.size(); ++j) {
      for (auto& s : segments_) {
        if (s->base() == targets[j].base) s->MarkDirty();
      }
    }
    return st;
  }
  std::lock_guard lock(mu_);
  if (end >= synced_offset_) {
    synced_offset_ = end;
    synced_base_ = base;
    synced_size_ = size;
  }
  return {};
}

std::int64_t PartitionLog::high_watermark() const {
  std::lock_guard lock(mu_);
  return VisibleEndLocked();
}

std::vector<RecoveredProducerBatch> PartitionLog::recovered_producers() const {
  std::lock_guard lock(mu_);
  return segments_.back()->recovered_producers();
}

std::int64_t PartitionLog::log_start_offset() const {
  std::lock_guard lock(mu_);
  return segments_.front()->base();
}

std::int64_t PartitionLog::log_end_offset() const {
  std::lock_guard lock(mu_);
  return next_offset_;
}

std::int64_t PartitionLog::size_bytes() const {
  std::lock_guard lock(mu_);
  std::int64_t total = 0;
  for (const auto& s : segments_) total += s->size();
  return total;
}

}  // namespace sluice::broker::storage
