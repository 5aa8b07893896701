#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "batch_builder.h"
#include "broker/protocol/record_batch.h"
#include "broker/storage/log_manager.h"
#include "broker/storage/partition_log.h"

namespace sluice::broker::storage {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/sluice-log-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The bytes a fetch would send for this read.
std::string Records(const common::Result<ReadResult>& r) {
  if (!r.ok()) return "<error>";
  return protocol::ReadSlice(r->records).value_or("<short file>");
}

std::vector<std::int64_t> BaseOffsets(const std::string& records) {
  std::vector<std::int64_t> out;
  auto batches = protocol::SplitBatches(records);
  if (!batches.ok()) return out;
  for (const auto& b : *batches) out.push_back(b.base_offset);
  return out;
}

TEST(PartitionLog, AppendAssignsConsecutiveOffsetsAndReadReturnsStoredBytes) {
  TempDir dir;
  auto log = PartitionLog::Open(dir.path(), {});
  ASSERT_TRUE(log.ok());
  std::string b1 = testing::BuildBatch({{"a", "b", "c"}});
  std::string b2 = testing::BuildBatch({{"d"}});
  EXPECT_EQ(*(*log)->Append(b1), 0);
  EXPECT_EQ(*(*log)->Append(b2), 3);
  EXPECT_EQ((*log)->log_end_offset(), 4);
  auto r = (*log)->Read(0, 1 << 20);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(BaseOffsets(Records(r)), (std::vector<std::int64_t>{0, 3}));
  EXPECT_EQ(Records(r).size(), b1.size() + b2.size());
  // Bytes after the base offset and leader epoch are exactly as received.
  EXPECT_EQ(Records(r).substr(16, b1.size() - 16), b1.substr(16));
  // Reading from inside a batch starts at that batch.
  EXPECT_EQ(BaseOffsets(Records((*log)->Read(2, 1 << 20))), (std::vector<std::int64_t>{0, 3}));
  EXPECT_EQ(BaseOffsets(Records((*log)->Read(3, 1 << 20))), (std::vector<std::int64_t>{3}));
  EXPECT_TRUE(Records((*log)->Read(4, 1 << 20)).empty());
}

TEST(PartitionLog, AppendOfMoreBatchesThanOneWritevTakesStoresEveryByte) {
  TempDir dir;
  auto log = PartitionLog::Open(dir.path(), {});
  ASSERT_TRUE(log.ok());
  (*log)->Append(testing::BuildBatch({{"before"}}));
  std::string blob, want;
  for (int i = 0; i < 1500; ++i) {
    std::string b = testing::BuildBatch({{"v" + std::to_string(i), std::string(i % 50, 'p')}});
    blob += b;
    protocol::StoreBe64(b.data(), 1 + 2 * i);  // as stored: offsets after "before"
    want += b;
  }
  const std::string sent = blob;
  EXPECT_EQ(*(*log)->Append(blob), 1);
  EXPECT_EQ(blob, sent) << "the request's bytes are written from, not rewritten";
  EXPECT_EQ((*log)->log_end_offset(), 3001);
  auto r = (*log)->Read(1, 1 << 30);
  EXPECT_TRUE(Records(r) == want);
}

// This process's descriptor of the first open file whose name ends in `suffix`.
int OpenFdOf(const fs::path& dir, const std::string& suffix) {
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    auto target = fs::read_symlink(entry.path(), ec);
    if (ec) continue;
    const std::string t = target.string();
    if (t.rfind(dir.string(), 0) == 0 && t.size() >= suffix.size() &&
        t.compare(t.size() - suffix.size(), suffix.size(), suffix) == 0)
      return std::stoi(entry.path().filename().string());
  }
  return -1;
}

TEST(PartitionLog, AnAppendWhoseIndexWriteFailsIsTakenBackWhole) {
  TempDir dir;
  LogOptions o;
  o.index_interval_bytes = 1;  // every batch is indexed
  std::string b1 = testing::BuildBatch({{"a", "b", "c"}});
  std::string b2 = testing::BuildBatch({{"lost-1", "lost-2"}});
  std::string b3 = testing::BuildBatch({{"d"}});
  {
    auto log = PartitionLog::Open(dir.path(), o);
    ASSERT_TRUE(log.ok());
    EXPECT_EQ(*(*log)->Append(b1), 0);
    // The index file stops taking writes (a full disk, an I/O error): its
    // descriptor is pointed at a read-only one for one append.
    int index_fd = OpenFdOf(dir.path(), ".index");
    ASSERT_GE(index_fd, 0);
    int saved = ::dup(index_fd);
    int read_only = ::open("/dev/null", O_RDONLY);
    ASSERT_GE(::dup2(read_only, index_fd), 0);
    EXPECT_FALSE((*log)->Append(b2).ok());
    ASSERT_GE(::dup2(saved, index_fd), 0);
    ::close(saved);
    ::close(read_only);
    EXPECT_EQ((*log)->log_end_offset(), 3);
    EXPECT_EQ(*(*log)->Append(b3), 3);
    EXPECT_EQ(BaseOffsets(Records((*log)->Read(3, 1 << 20))), (std::vector<std::int64_t>{3}));
    EXPECT_EQ(Records((*log)->Read(3, 1 << 20)).substr(16), b3.substr(16));
    EXPECT_EQ(Records((*log)->Read(0, 1 << 20)).size(), b1.size() + b3.size());
  }
  // The files agree with each other after a restart too.
  auto log = PartitionLog::Open(dir.path(), o);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)->log_end_offset(), 4);
  EXPECT_EQ(BaseOffsets(Records((*log)->Read(0, 1 << 20))), (std::vector<std::int64_t>{0, 3}));
  EXPECT_EQ(Records((*log)->Read(3, 1 << 20)).substr(16), b3.substr(16));
}

TEST(PartitionLog, OutOfDescriptorsIsAnErrorToAnswerNotAnException) {
  TempDir dir;
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit low = old;
  low.rlim_cur = 128;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> held;  // every descriptor left, as thousands of partitions would
  for (int fd; (fd = ::open("/dev/null", O_RDONLY)) >= 0;) held.push_back(fd);
  bool opened = true;
  EXPECT_NO_THROW(opened = PartitionLog::Open(dir.path() / "p0", {}).ok());
  for (int fd : held) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  EXPECT_FALSE(opened);
  EXPECT_TRUE(PartitionLog::Open(dir.path() / "p0", {}).ok());  // and fine once there are some
}

TEST(PartitionLog, ReadOutsideTheLogIsOutOfRange) {
  TempDir dir;
  auto log = PartitionLog::Open(dir.path(), {});
  (*log)->Append(testing::BuildBatch({{"a"}}));
  EXPECT_FALSE((*log)->Read(2, 100).ok());
  EXPECT_FALSE((*log)->Read(-1, 100).ok());
}

TEST(PartitionLog, MaxBytesStopsAtBatchBoundaryButReturnsAtLeastOneBatch) {
  TempDir dir;
  auto log = PartitionLog::Open(dir.path(), {});
  for (int i = 0; i < 5; ++i) (*log)->Append(testing::BuildBatch({{std::string(100, 'x')}}));
  EXPECT_EQ(BaseOffsets(Records((*log)->Read(0, 1))).size(), 1u);
  auto one = testing::BuildBatch({{std::string(100, 'x')}}).size();
  EXPECT_EQ(BaseOffsets(Records((*log)->Read(0, static_cast<std::int64_t>(2 * one + 1)))).size(),
            2u);
}

TEST(PartitionLog, MaxBytesIsExactWhenTheIndexSkipsAheadOverSmallBatches) {
  TempDir dir;
  LogOptions o;
  o.index_interval_bytes = 256;  // an index entry every few batches
  auto log = PartitionLog::Open(dir.path(), o);
  ASSERT_TRUE(log.ok());
  std::vector<std::int64_t> sizes;  // one record per batch, offset i
  for (int i = 0; i < 200; ++i) {
    std::string b = testing::BuildBatch({{std::string(10 + (i * 53) % 140, 'q')}});
    sizes.push_back(static_cast<std::int64_t>(b.size()));
    (*log)->Append(b);
  }
  // Whole batches from `from` while they fit in max_bytes, at least one.
  auto expected = [&](std::size_t from, std::int64_t max_bytes) {
    std::vector<std::int64_t> offsets{static_cast<std::int64_t>(from)};
    std::int64_t total = sizes[from];
    for (std::size_t i = from + 1; i < sizes.size() && total + sizes[i] <= max_bytes; ++i) {
      total += sizes[i];
      offsets.push_back(static_cast<std::int64_t>(i));
    }
    return offsets;
  };
  for (std::size_t from : {0, 1, 7, 50, 123, 199}) {
    for (std::int64_t max_bytes : {1, 100, 257, 1000, 4095, 4096, 20000, 1 << 20}) {
      EXPECT_EQ(BaseOffsets(Records((*log)->Read(static_cast<std::int64_t>(from), max_bytes))),
                expected(from, max_bytes))
          << "from " << from << " max_bytes " << max_bytes;
    }
  }
}

TEST(PartitionLog, RecoveryTruncatesATornTail) {
  TempDir dir;
  std::string good = testing::BuildBatch({{"kept-1", "kept-2"}});
  {
    auto log = PartitionLog::Open(dir.path(), {});
    (*log)->Append(good);
    (*log)->Append(testing::BuildBatch({{"kept-3"}}));
  }
  // A crash mid-write: half a batch at the end of the active segment.
  fs::path seg = dir.path() / "00000000000000000000.log";
  auto size_before = fs::file_size(seg);
  std::string torn = testing::BuildBatch({{"lost"}});
  {
    std::ofstream out(seg, std::ios::app | std::ios::binary);
    out.write(torn.data(), static_cast<std::streamsize>(torn.size() / 2));
  }
  auto log = PartitionLog::Open(dir.path(), {});
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)->truncated_bytes(), static_cast<std::int64_t>(torn.size() / 2));
  EXPECT_EQ(fs::file_size(seg), size_before);
  EXPECT_EQ((*log)->log_end_offset(), 3);
  EXPECT_EQ(*(*log)->Append(testing::BuildBatch({{"after"}})), 3);
}

TEST(PartitionLog, RecoveryTruncatesACorruptBatchAndEverythingAfterIt) {
  TempDir dir;
  {
    auto log = PartitionLog::Open(dir.path(), {});
    (*log)->Append(testing::BuildBatch({{"ok"}}));
    (*log)->Append(testing::BuildBatch({{"bitrot"}}));
    (*log)->Append(testing::BuildBatch({{"after"}}));
  }
  fs::path seg = dir.path() / "00000000000000000000.log";
  auto first = testing::BuildBatch({{"ok"}}).size();
  {
    std::fstream f(seg, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(first + 70));
    f.put('Z');
  }
  auto log = PartitionLog::Open(dir.path(), {});
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)->log_end_offset(), 1);
}

TEST(PartitionLog, SegmentsRollAndReopenWithTheirIndexes) {
  TempDir dir;
  LogOptions o;
  o.segment_bytes = 2048;
  o.index_interval_bytes = 256;
  {
    auto log = PartitionLog::Open(dir.path(), o);
    for (int i = 0; i < 60; ++i)
      (*log)->Append(testing::BuildBatch({{std::string(100, 'a' + i % 26)}}));
  }
  int logs = 0, indexes = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    logs += e.path().extension() == ".log";
    indexes += e.path().extension() == ".index" && fs::file_size(e.path()) > 0;
  }
  EXPECT_GT(logs, 3);
  EXPECT_EQ(indexes, logs);
  auto log = PartitionLog::Open(dir.path(), o);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)->log_end_offset(), 60);
  for (std::int64_t off : {0, 17, 33, 59}) {
    auto r = (*log)->Read(off, 1);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(BaseOffsets(Records(r)), (std::vector<std::int64_t>{off}));
  }
}

TEST(PartitionLog, WithExposeOnlySyncedReadsStopAtTheDurableEnd) {
  TempDir dir;
  LogOptions o;
  o.expose_only_synced = true;
  auto log = PartitionLog::Open(dir.path(), o);
  ASSERT_TRUE(log.ok());
  PartitionLog& l = **log;
  ASSERT_EQ(*l.Append(testing::BuildBatch({{"a"}})), 0);
  ASSERT_EQ(*l.Append(testing::BuildBatch({{"b"}})), 1);
  EXPECT_EQ(l.log_end_offset(), 2);
  EXPECT_EQ(l.high_watermark(), 0) << "nothing synced yet";
  auto r = l.Read(0, 1 << 20);
  ASSERT_TRUE(r.ok()) << "between the durable and the written end is in range";
  EXPECT_EQ(r->records.length, 0);
  ASSERT_TRUE(l.SyncPast(0).ok());
  EXPECT_EQ(l.high_watermark(), 2) << "one sync covered both appends";
  ASSERT_EQ(*l.Append(testing::BuildBatch({{"c"}})), 2);
  EXPECT_EQ(BaseOffsets(Records(l.Read(0, 1 << 20))), (std::vector<std::int64_t>{0, 1}))
      << "the unsynced third batch is not served";
  ASSERT_TRUE(l.SyncPast(2).ok());
  EXPECT_EQ(BaseOffsets(Records(l.Read(0, 1 << 20))), (std::vector<std::int64_t>{0, 1, 2}));
}

TEST(PartitionLog, TornTailOfTheSegmentBeforeTheActiveOneDropsWhatFollowsIt) {
  // A power cut right after a roll: the closed segment's tail never reached
  // the disk, the new one holds a few (unacknowledged) batches.
  TempDir dir;
  LogOptions o;
  o.segment_bytes = 400;
  {
    auto log = PartitionLog::Open(dir.path(), o);
    for (int i = 0; i < 12; ++i) (*log)->Append(testing::BuildBatch({{std::string(100, 'a' + i)}}));
  }
  std::vector<fs::path> segments;
  for (const auto& e : fs::directory_iterator(dir.path()))
    if (e.path().extension() == ".log") segments.push_back(e.path());
  std::sort(segments.begin(), segments.end());
  ASSERT_GE(segments.size(), 4u);
  fs::path closed = segments[segments.size() - 2];
  fs::resize_file(closed, fs::file_size(closed) - 30);
  auto log = PartitionLog::Open(dir.path(), o);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_FALSE(fs::exists(segments.back()));
  std::int64_t end = (*log)->log_end_offset();
  EXPECT_LT(end, 12);
  EXPECT_EQ(*(*log)->Append(testing::BuildBatch({{"next"}})), end) << "offsets go on, no gap";
  // A torn tail further back is corruption, not a power cut.
  fs::path first = segments.front();
  fs::resize_file(first, fs::file_size(first) - 30);
  EXPECT_FALSE(PartitionLog::Open(dir.path(), o).ok());
}

// Sync works outside the partition lock on files it keeps open itself:
// appends, rolls and retention deleting segments go on around it.
TEST(PartitionLog, SyncAlongsideAppendsRollsAndRetentionKeepsEverythingConsistent) {
  TempDir dir;
  LogOptions o;
  o.segment_bytes = 4096;
  auto log = PartitionLog::Open(dir.path(), o);
  ASSERT_TRUE(log.ok());
  PartitionLog& l = **log;
  std::atomic<bool> done{false};
  std::atomic<int> sync_errors{0}, read_errors{0};
  std::thread syncer([&] {
    while (!done) sync_errors += l.Sync().ok() ? 0 : 1;
  });
  std::thread cleaner([&] {
    while (!done) {
      l.EnforceRetention(0, -1, 16384);
      // Only synced batches are served: with nothing synced past the start
      // yet (a slow sync under load), an empty read is right.
      const std::int64_t start = l.log_start_offset();
      const bool nothing_synced = l.high_watermark() <= start;
      auto r = l.Read(start, 1 << 20);
      read_errors += r.ok() && (nothing_synced || !Records(r).empty()) ? 0 : 1;
    }
  });
  const std::string batch = testing::BuildBatch({{std::string(200, 'r')}});
  for (int i = 0; i < 1500; ++i) ASSERT_EQ(*l.Append(batch), i);
  done = true;
  syncer.join();
  cleaner.join();
  EXPECT_EQ(sync_errors, 0);
  EXPECT_EQ(read_errors, 0);
  EXPECT_TRUE(l.Sync().ok());
  EXPECT_EQ(BaseOffsets(Records(l.Read(1499, 1))), (std::vector<std::int64_t>{1499}));
  EXPECT_GT(l.log_start_offset(), 0) << "retention deleted segments during the run";
}

TEST(PartitionLog, RetentionBytesDeletesOldestSegmentsOnly) {
  TempDir dir;
  LogOptions o;
  o.segment_bytes = 1024;
  auto log = PartitionLog::Open(dir.path(), o);
  for (int i = 0; i < 40; ++i) (*log)->Append(testing::BuildBatch({{std::string(100, 'x')}}));
  std::int64_t before = (*log)->size_bytes();
  int removed = (*log)->EnforceRetention(0, -1, 2048);
  EXPECT_GT(removed, 0);
  EXPECT_LT((*log)->size_bytes(), before);
  EXPECT_GE((*log)->size_bytes(), 1024);  // never below the limit by more than a segment
  EXPECT_GT((*log)->log_start_offset(), 0);
  EXPECT_EQ((*log)->log_end_offset(), 40);
  EXPECT_FALSE((*log)->Read(0, 100).ok());
  EXPECT_TRUE((*log)->Read((*log)->log_start_offset(), 100).ok());
}

TEST(PartitionLog, RetentionMsDeletesSegmentsOlderThanTheLimit) {
  TempDir dir;
  LogOptions o;
  o.segment_bytes = 1024;
  auto log = PartitionLog::Open(dir.path(), o);
  testing::BatchSpec old{{std::string(300, 'o')}};
  old.timestamp = 1000;
  for (int i = 0; i < 8; ++i) (*log)->Append(testing::BuildBatch(old));
  testing::BatchSpec fresh{{std::string(300, 'f')}};
  fresh.timestamp = 1'000'000;
  for (int i = 0; i < 8; ++i) (*log)->Append(testing::BuildBatch(fresh));
  (*log)->EnforceRetention(1'000'500, 10'000, -1);
  EXPECT_EQ((*log)->log_start_offset(), 8) << "only the segments holding old batches go";
}

TEST(PartitionLog, OffsetForTimestampFindsFirstBatchAtOrAfter) {
  TempDir dir;
  auto log = PartitionLog::Open(dir.path(), {});
  for (int i = 0; i < 5; ++i) {
    testing::BatchSpec s{{"v"}};
    s.timestamp = 1000 * (i + 1);
    (*log)->Append(testing::BuildBatch(s));
  }
  EXPECT_EQ((*log)->OffsetForTimestamp(0), 0);
  EXPECT_EQ((*log)->OffsetForTimestamp(2500), 2);
  EXPECT_EQ((*log)->OffsetForTimestamp(5000), 4);
  EXPECT_EQ((*log)->OffsetForTimestamp(9999), 5);
}

TEST(LogManager, TopicsAndConfigsPersistAcrossReopen) {
  TempDir dir;
  LogManagerOptions o;
  o.data_dir = dir.path();
  {
    auto m = LogManager::Open(o);
    ASSERT_TRUE(m.ok());
    ASSERT_TRUE((*m)->CreateTopic("orders", 3, {{"retention.ms", "60000"}}).ok());
    EXPECT_EQ((*m)->CreateTopic("orders", 3, {}).code(), common::Code::kAlreadyExists);
    EXPECT_EQ((*m)->CreateTopic("bad/name", 1, {}).code(), common::Code::kInvalidArgument);
    EXPECT_EQ((*m)->CreateTopic("cfg", 1, {{"cleanup.policy", "compact"}}).code(),
              common::Code::kInvalidArgument);
    EXPECT_EQ((*m)->CreateTopic("cfg", 1, {{"no.such.config", "1"}}).code(),
              common::Code::kInvalidArgument);
    ASSERT_TRUE((*m)->CreateTopic("passive", 1,
                                  {{"min.insync.replicas", "1"}, {"cleanup.policy", "delete"}})
                    .ok());
    EXPECT_EQ((*m)->Config("passive")->AsMap().at("min.insync.replicas"), "1");
    ASSERT_TRUE((*m)->AddPartitions("orders", 4).ok());
    (*m)->Append((*m)->Partition("orders", 3), testing::BuildBatch({{"x"}}));
  }
  auto m = LogManager::Open(o);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->PartitionCount("orders"), 4);
  EXPECT_EQ((*m)->Config("orders")->retention_ms, 60000);
  EXPECT_EQ((*m)->Partition("orders", 3)->log_end_offset(), 1);
  ASSERT_TRUE((*m)->DeleteTopic("orders").ok());
  EXPECT_FALSE((*m)->PartitionCount("orders").has_value());
  EXPECT_FALSE(fs::exists(dir.path() / "topics" / "orders"));
}

}  // namespace
}  // namespace sluice::broker::storage
