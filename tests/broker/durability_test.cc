// Durability of the real broker over TCP: what it acknowledges survives a
// power cut (simulated: SIGKILL, then every file cut back to the length the
// broker last fdatasynced, see BrokerProcess::PowerCut), recovery cuts a torn
// tail and rebuilds indexes, committed offsets never point past the
// recovered log, and an idempotent producer's retry after a crash is
// answered as before it. A full disk is simulated by the broker's test hook.
// A second broker on the same data dir is refused before it touches a file.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "batch_builder.h"
#include "broker/protocol/api.h"
#include "broker/protocol/wire.h"
#include "broker_harness.h"
#include "raw_client.h"

namespace sluice::testing {
namespace {

namespace p = sluice::broker::protocol;
namespace fs = std::filesystem;

constexpr auto kProduce = static_cast<std::int16_t>(p::ApiKey::kProduce);
constexpr auto kFetch = static_cast<std::int16_t>(p::ApiKey::kFetch);

// A cursor over one batch's records.
struct Cursor {
  std::string_view data;
  std::size_t pos = 0;

  std::int64_t Varint() {
    std::uint64_t u = 0;
    for (int shift = 0; pos < data.size(); shift += 7) {
      auto b = static_cast<std::uint8_t>(data[pos++]);
      u |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    return static_cast<std::int64_t>(u >> 1) ^ -static_cast<std::int64_t>(u & 1);
  }
  std::string Take(std::int64_t n) {
    if (n <= 0) return "";
    std::string out(data.substr(pos, static_cast<std::size_t>(n)));
    pos += static_cast<std::size_t>(n);
    return out;
  }
};

// (offset, value) of every record in a blob of uncompressed batches.
std::vector<std::pair<std::int64_t, std::string>> DecodeRecords(const std::string& blob) {
  std::vector<std::pair<std::int64_t, std::string>> out;
  std::size_t pos = 0;
  while (pos + 61 <= blob.size()) {
    std::int64_t base = p::LoadBe64(blob.data() + pos);
    std::size_t total = 12 + static_cast<std::uint32_t>(p::LoadBe32(blob.data() + pos + 8));
    if (pos + total > blob.size()) break;  // a partial batch at the end of a fetch
    std::int32_t count = p::LoadBe32(blob.data() + pos + 57);
    Cursor in{std::string_view(blob).substr(pos + 61, total - 61)};
    for (std::int32_t i = 0; i < count; ++i) {
      in.Varint();  // length
      in.Take(1);   // attributes
      in.Varint();  // timestamp delta
      std::int64_t delta = in.Varint();
      in.Take(in.Varint());  // key
      std::string value = in.Take(in.Varint());
      EXPECT_EQ(in.Varint(), 0);  // headers
      out.emplace_back(base + delta, value);
    }
    pos += total;
  }
  return out;
}

class Durability : public ::testing::Test {
 protected:
  // Produces one record; returns (error, base offset).
  static std::pair<std::int16_t, std::int64_t> Produce(Conn& c, const std::string& topic,
                                                       const BatchSpec& spec,
                                                       std::int16_t acks = -1) {
    c.Send(kProduce, 7, ProduceBody(topic, BuildBatch(spec), acks));
    if (acks == 0) return {0, -1};
    auto r = c.Receive();
    if (!r) return {-999, -1};
    return ProduceResult(*r);
  }
  static std::pair<std::int16_t, std::int64_t> Produce(Conn& c, const std::string& topic,
                                                       const std::string& value,
                                                       std::int16_t acks = -1) {
    return Produce(c, topic, BatchSpec{{value}}, acks);
  }

  // Every record from `offset` to the high watermark, fetched in turns.
  static std::vector<std::pair<std::int64_t, std::string>> ReadAll(int port,
                                                                   const std::string& topic,
                                                                   std::int64_t offset = 0) {
    Conn c(port);
    std::vector<std::pair<std::int64_t, std::string>> all;
    for (int guard = 0; guard < 10000; ++guard) {
      c.Send(kFetch, 4, FetchBody(topic, offset, 0, 1, 64 << 10));
      auto r = c.Receive();
      if (!r) break;
      auto f = ParseFetchV4(*r);
      EXPECT_EQ(f.error, p::error::kNone) << "fetch at " << offset;
      auto records = DecodeRecords(f.records);
      for (auto& rec : records) {
        if (rec.first >= offset) all.push_back(rec);
      }
      if (records.empty() || f.error != p::error::kNone) break;
      offset = records.back().first + 1;
      if (offset >= f.high_watermark) break;
    }
    return all;
  }

  static std::vector<fs::path> Segments(const BrokerProcess& b, const std::string& topic) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(b.data_dir() / "topics" / topic / "0"))
      if (e.path().extension() == ".log") out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }
};

TEST_F(Durability, EveryAcknowledgedProduceSurvivesAPowerCutDuringProduction) {
  BrokerProcess broker;
  broker.RecordSyncedLengths();
  broker.Start();
  // Eight producers at once, as group commit sees them, cut off mid-stream.
  std::vector<std::thread> producers;
  std::vector<std::vector<std::string>> acked(8);
  std::atomic<int> acks{0};
  for (int t = 0; t < 8; ++t) {
    producers.emplace_back([&, t] {
      Conn c(broker.port());
      for (int i = 0; i < 2000; ++i) {
        std::string v = "p" + std::to_string(t) + "-" + std::to_string(i);
        auto [error, offset] = Produce(c, "cut", v);
        if (error != p::error::kNone) break;  // the power went
        acked[t].push_back(v);
        ++acks;
      }
    });
  }
  while (acks < 400) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  broker.PowerCut(/*torn=*/true);
  for (auto& th : producers) th.join();
  broker.Start();
  std::set<std::string> recovered;
  for (auto& [offset, value] : ReadAll(broker.port(), "cut")) recovered.insert(value);
  int checked = 0;
  for (const auto& a : acked) {
    for (const auto& v : a) {
      EXPECT_TRUE(recovered.count(v)) << v << " was acknowledged";
      ++checked;
    }
  }
  EXPECT_GE(checked, 400);
  // And the log takes new records after the recovered end.
  Conn c(broker.port());
  EXPECT_EQ(Produce(c, "cut", "after").first, p::error::kNone);
}

// The control: with an interval flush nothing has been synced yet when the
// power goes, so the same cut loses acknowledged records. This is what the
// durable default prevents, and it shows the cut is real.
TEST_F(Durability, IntervalFlushMayLoseAcknowledgedDataOnPowerLoss) {
  BrokerProcess broker({"--flush", "interval:600000"});
  broker.RecordSyncedLengths();
  broker.Start();
  Conn c(broker.port());
  for (int i = 0; i < 20; ++i) ASSERT_EQ(Produce(c, "lossy", "m" + std::to_string(i)).first, 0);
  EXPECT_GT(broker.PowerCut(), 0);
  broker.Start();
  EXPECT_LT(ReadAll(broker.port(), "lossy").size(), 20u);
}

TEST_F(Durability, AcksZeroDataBecomesReadableOnceTheBackgroundSyncRuns) {
  BrokerProcess broker({"--fsync-interval-ms", "100"});
  broker.Start();
  Conn c(broker.port());
  // An acknowledged record first, so the topic exists before any fetch (an
  // acks=0 produce may still be queued when the first fetch arrives).
  ASSERT_EQ(Produce(c, "fire", "acked").first, p::error::kNone);
  Produce(c, "fire", "x", /*acks=*/0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::size_t seen = 0;
  while (seen < 2 && std::chrono::steady_clock::now() < deadline) {
    seen = ReadAll(broker.port(), "fire").size();
    if (seen < 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(seen, 2u);
}

TEST_F(Durability, TornTailIsCutBackAndTheLogGoesOnFromTheLastGoodBatch) {
  BrokerProcess broker;
  broker.Start();
  {
    Conn c(broker.port());
    for (int i = 0; i < 10; ++i) ASSERT_EQ(Produce(c, "torn", "m" + std::to_string(i)).second, i);
  }
  broker.Stop();
  auto segment = Segments(broker, "torn").back();
  auto good = fs::file_size(segment);
  {
    // Half of a valid batch, then a whole batch whose CRC does not match.
    std::ofstream out(segment, std::ios::app | std::ios::binary);
    std::string half = BuildBatch({{"half"}});
    out << half.substr(0, half.size() / 2);
  }
  broker.Start();
  EXPECT_NE(broker.log().find("truncating torn tail"), std::string::npos) << broker.log();
  EXPECT_EQ(fs::file_size(segment), good);
  broker.Stop();
  {
    std::string bad = BuildBatch({{"bad crc"}});
    bad[bad.size() - 1] ^= 0x20;
    std::ofstream out(segment, std::ios::app | std::ios::binary);
    out << bad;
  }
  broker.Start();
  EXPECT_EQ(fs::file_size(segment), good);
  Conn c(broker.port());
  EXPECT_EQ(Produce(c, "torn", "after").second, 10);
  auto all = ReadAll(broker.port(), "torn");
  ASSERT_EQ(all.size(), 11u);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(all[i], std::make_pair(std::int64_t{i}, "m" + std::to_string(i)));
  EXPECT_EQ(all[10], std::make_pair(std::int64_t{10}, std::string("after")));
}

TEST_F(Durability, DamagedIndexesAreRebuiltFromTheLog) {
  // Small segments, several index entries each (one per 4 KiB).
  BrokerProcess broker({"--segment-bytes", "20000"});
  broker.Start();
  std::string pad(300, '.');
  {
    Conn c(broker.port());
    for (int i = 0; i < 200; ++i)
      ASSERT_EQ(Produce(c, "idx", std::to_string(i) + pad).first, p::error::kNone);
  }
  broker.Stop();
  auto segments = Segments(broker, "idx");
  ASSERT_GE(segments.size(), 3u);
  // A closed segment's index with entries out of order, and the active
  // one's cut mid-entry with a stale entry beyond the log.
  auto closed = fs::path(segments[1]).replace_extension(".index");
  {
    std::fstream f(closed, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4);
    f.write("\x7f\x00\x00\x00", 4);
  }
  auto active = fs::path(segments.back()).replace_extension(".index");
  {
    std::ofstream out(active, std::ios::app | std::ios::binary);
    out.write("\x00\x00\x01\x00\x00\x7f\x00\x00\x00\x01", 10);
  }
  broker.Start();
  Conn c(broker.port());
  // Every offset reads as itself, from any starting point.
  for (int offset : {0, 1, 37, 38, 61, 99, 100, 150, 198, 199}) {
    c.Send(kFetch, 4, FetchBody("idx", offset, 0, 1, 1));
    auto r = c.Receive();
    ASSERT_TRUE(r.has_value());
    auto records = DecodeRecords(ParseFetchV4(*r).records);
    auto it = std::find_if(records.begin(), records.end(),
                           [&](const auto& rec) { return rec.first == offset; });
    ASSERT_NE(it, records.end()) << "offset " << offset;
    EXPECT_EQ(it->second, std::to_string(offset) + pad);
  }
  EXPECT_EQ(Produce(c, "idx", "next").second, 200);
  EXPECT_EQ(ReadAll(broker.port(), "idx").size(), 201u);
}

std::string OffsetCommitV2(const std::string& group, const std::string& topic,
                           std::int64_t offset) {
  p::Writer w;
  w.String(group);
  w.Int32(-1);   // generation: a standalone commit
  w.String("");  // member
  w.Int64(-1);   // retention
  w.ArrayLength(1);
  w.String(topic);
  w.ArrayLength(1);
  w.Int32(0);
  w.Int64(offset);
  w.NullableString(std::string());
  return w.Take();
}

std::int64_t CommittedOffset(Conn& c, const std::string& group, const std::string& topic) {
  p::Writer w;
  w.String(group);
  w.ArrayLength(1);
  w.String(topic);
  w.ArrayLength(1);
  w.Int32(0);
  c.Send(static_cast<std::int16_t>(p::ApiKey::kOffsetFetch), 1, w.Take());
  auto r = c.Receive();
  if (!r) return -999;
  p::Reader in(*r);
  in.ArrayLength();
  in.String();
  in.ArrayLength();
  in.Int32();
  return in.Int64();
}

TEST_F(Durability, CommittedOffsetPastTheRecoveredEndIsClampedAndNewMessagesAreRead) {
  // No background sync during the test: only acknowledgements sync.
  BrokerProcess broker({"--fsync-interval-ms", "600000"});
  broker.RecordSyncedLengths();
  broker.Start();
  {
    Conn c(broker.port());
    for (int i = 0; i < 10; ++i) ASSERT_EQ(Produce(c, "clamp", "old" + std::to_string(i)).first, 0);
    // Five more that are never acknowledged, hence never synced.
    for (int i = 10; i < 15; ++i) Produce(c, "clamp", "lost" + std::to_string(i), /*acks=*/0);
    // A group that committed past them (a consumer may commit any offset;
    // in interval mode it could also have read them).
    c.Send(static_cast<std::int16_t>(p::ApiKey::kOffsetCommit), 2,
           OffsetCommitV2("readers", "clamp", 15));
    auto r = c.Receive();
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(CommittedOffset(c, "readers", "clamp"), 15);
  }
  broker.PowerCut(/*torn=*/true);
  broker.Start();
  EXPECT_NE(broker.log().find("broker.offset_clamped group=readers topic=clamp partition=0 "
                              "committed=15 log_end=10"),
            std::string::npos)
      << broker.log();
  Conn c(broker.port());
  std::int64_t resume = CommittedOffset(c, "readers", "clamp");
  EXPECT_EQ(resume, 10);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(Produce(c, "clamp", "new" + std::to_string(i)).second, 10 + i);
  auto next = ReadAll(broker.port(), "clamp", resume);
  ASSERT_EQ(next.size(), 3u) << "the group's next consume starts at the clamped offset";
  EXPECT_EQ(next[0].second, "new0");
  EXPECT_EQ(next[2].second, "new2");
}

TEST_F(Durability, IdempotentRetryAfterACrashIsNeitherDuplicatedNorRefused) {
  BrokerProcess broker;
  broker.RecordSyncedLengths();
  broker.Start();
  BatchSpec s{{"a"}};
  s.producer_id = 4242;
  s.producer_epoch = 0;
  {
    Conn c(broker.port());
    for (int seq = 0; seq < 3; ++seq) {
      s.base_sequence = seq;
      s.values = {"v" + std::to_string(seq)};
      ASSERT_EQ(Produce(c, "idem", s), std::make_pair(std::int16_t{0}, std::int64_t{seq}));
    }
  }
  broker.PowerCut();
  broker.Start();
  Conn c(broker.port());
  // The producer never saw the last acknowledgement and retries it.
  s.base_sequence = 2;
  s.values = {"v2"};
  EXPECT_EQ(Produce(c, "idem", s), std::make_pair(std::int16_t{0}, std::int64_t{2}))
      << "answered with the original offset";
  s.base_sequence = 3;
  s.values = {"v3"};
  EXPECT_EQ(Produce(c, "idem", s), std::make_pair(std::int16_t{0}, std::int64_t{3}));
  s.base_sequence = 9;
  EXPECT_EQ(Produce(c, "idem", s).first, p::error::kOutOfOrderSequence) << "a gap is still one";
  EXPECT_EQ(ReadAll(broker.port(), "idem").size(), 4u);
}

// The disk filling up is simulated (the broker's --test-disk-full-while-exists
// hook fails appends with ENOSPC while a marker file exists): a real full
// file system needs a mount this test cannot make.
TEST_F(Durability, FullDiskIsAStorageErrorTheLogStaysReadableAndProducingResumes) {
  char tmpl[] = "/tmp/sluice-disk-full-XXXXXX";
  fs::path marker = fs::path(::mkdtemp(tmpl)) / "full";
  BrokerProcess broker({"--test-disk-full-while-exists", marker.string()});
  broker.Start();
  Conn c(broker.port());
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Produce(c, "full", "m" + std::to_string(i)).second, i);
  std::ofstream(marker).put('x');
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(Produce(c, "full", "refused").first, p::error::kKafkaStorageError);
  EXPECT_NE(broker.log().find("No space left on device"), std::string::npos) << broker.log();
  EXPECT_EQ(ReadAll(broker.port(), "full").size(), 3u) << "readable while full";
  fs::remove(marker);
  EXPECT_EQ(Produce(c, "full", "m3"), std::make_pair(std::int16_t{0}, std::int64_t{3}))
      << "producing resumes at the next offset, nothing of the refused appends stored";
  auto all = ReadAll(broker.port(), "full");
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[3].second, "m3");
  fs::remove_all(marker.parent_path());
}

// Every file of a data dir: its inode and its bytes.
std::map<std::string, std::pair<std::uintmax_t, std::string>> Snapshot(const fs::path& dir) {
  std::map<std::string, std::pair<std::uintmax_t, std::string>> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    struct stat st {};
    ::stat(e.path().c_str(), &st);
    std::ifstream in(e.path(), std::ios::binary);
    files[e.path().string()] = {st.st_ino, std::string(std::istreambuf_iterator<char>(in), {})};
  }
  return files;
}

// Found from outside: a `sluice up` restarted after a kill -9 started a
// second broker on the orphaned one's data dir; before failing to bind, it
// compacted groups/offsets.log into a new file (the orphan went on
// committing into the unlinked one) and cut tails as torn. The second
// broker must refuse the directory before reading or writing anything.
TEST_F(Durability, ASecondBrokerOnTheSameDataDirExitsAtOnceAndChangesNoFile) {
  BrokerProcess broker;
  broker.Start();
  Conn c(broker.port());
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Produce(c, "locked", "m" + std::to_string(i)).second, i);
  auto commit = [&](std::int64_t offset) {
    c.Send(static_cast<std::int16_t>(p::ApiKey::kOffsetCommit), 2,
           OffsetCommitV2("readers", "locked", offset));
    ASSERT_TRUE(c.Receive().has_value());
  };
  commit(3);
  const auto offsets_log = broker.data_dir() / "groups" / "offsets.log";
  ASSERT_TRUE(fs::exists(offsets_log));
  const auto before = Snapshot(broker.data_dir());

  // The same listener and directory, as the restarted `up` gave it.
  const char* bin = std::getenv("SLUICE_BIN");
  ASSERT_NE(bin, nullptr);
  auto started = std::chrono::steady_clock::now();
  auto second =
      RunShell(std::string("timeout 30 ") + bin + " broker --listen " + broker.bootstrap() +
               " --data-dir " + broker.data_dir().string() + " 2>&1");
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_NE(second.exit_code, 0) << second.out;
  EXPECT_NE(second.exit_code, 124) << "it did not exit at once";
  EXPECT_LT(took, std::chrono::seconds(10));
  EXPECT_NE(second.out.find("another broker"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find(broker.data_dir().string()), std::string::npos) << second.out;

  const auto after = Snapshot(broker.data_dir());
  ASSERT_EQ(after.size(), before.size());
  for (const auto& [path, file] : before) {
    auto it = after.find(path);
    ASSERT_NE(it, after.end()) << path << " is gone";
    EXPECT_EQ(it->second.first, file.first) << path << " was replaced (another inode)";
    EXPECT_EQ(it->second.second, file.second) << path << " changed";
  }
  // The first broker's commits still land in the file a restart reads.
  commit(5);
  EXPECT_EQ(CommittedOffset(c, "readers", "locked"), 5);
  std::ifstream in(offsets_log);
  std::string text(std::istreambuf_iterator<char>(in), {});
  EXPECT_NE(text.find("\"o\":5"), std::string::npos) << text;
}

}  // namespace
}  // namespace sluice::testing
