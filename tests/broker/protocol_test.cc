#include <gtest/gtest.h>

#include "batch_builder.h"
#include "broker/protocol/api.h"
#include "broker/protocol/crc32c.h"
#include "broker/protocol/record_batch.h"
#include "broker/protocol/wire.h"

namespace sluice::broker::protocol {
namespace {

TEST(Crc32c, MatchesTheCastagnoliCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
  // Incremental equals one-shot.
  EXPECT_EQ(Crc32c("6789", Crc32c("12345")), 0xE3069283u);
  EXPECT_EQ(Crc32cSoftware("123456789"), 0xE3069283u);
}

TEST(Crc32c, HardwareAndTableVersionsAgreeOnEveryLengthAndAlignment) {
  std::string data;
  for (int i = 0; i < 100000; ++i) data.push_back(static_cast<char>((i * 131 + 7) % 251));
  // Up to and past the three-stream rounds of 3 x 8 KiB.
  for (std::size_t start = 0; start < 9; ++start) {
    for (std::size_t len : {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4096, 24575, 24576, 24577,
                            49152, 60001, 99000}) {
      std::string_view piece = std::string_view(data).substr(start, len);
      ASSERT_EQ(Crc32c(piece), Crc32cSoftware(piece)) << start << "+" << len;
      ASSERT_EQ(Crc32c(piece, 0x12345678u), Crc32cSoftware(piece, 0x12345678u));
    }
  }
}

TEST(Wire, RoundTripsEveryPrimitive) {
  Writer w;
  w.Int8(-3);
  w.Int16(-2);
  w.Int32(123456789);
  w.Int64(-9876543210);
  w.String("hello");
  w.NullableString(std::nullopt);
  w.Bytes("xy");
  w.NullBytes();
  w.Int32Array({1, 2, 3});
  std::string buf = w.Take();
  Reader r(buf);
  EXPECT_EQ(r.Int8(), -3);
  EXPECT_EQ(r.Int16(), -2);
  EXPECT_EQ(r.Int32(), 123456789);
  EXPECT_EQ(r.Int64(), -9876543210);
  EXPECT_EQ(r.String(), "hello");
  EXPECT_FALSE(r.NullableString().has_value());
  EXPECT_EQ(r.Bytes(), "xy");
  EXPECT_FALSE(r.NullableBytes().has_value());
  EXPECT_EQ(r.Int32Array(), (std::vector<std::int32_t>{1, 2, 3}));
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(Wire, TruncatedStringThrowsDecodeError) {
  Writer w;
  w.Int16(10);
  w.Raw("abc");
  std::string buf = w.Take();
  Reader r(buf);
  EXPECT_THROW(r.String(), DecodeError);
}

TEST(Wire, ArrayLongerThanTheRequestThrowsDecodeError) {
  Writer w;
  w.Int32(1'000'000'000);
  std::string buf = w.Take();
  Reader r(buf);
  EXPECT_THROW(r.ArrayLength(), DecodeError);
}

TEST(Wire, NegativeLengthsOtherThanNullAreRejected) {
  Writer w;
  w.Int16(-5);
  std::string buf = w.Take();
  Reader r(buf);
  EXPECT_THROW(r.NullableString(), DecodeError);
}

TEST(RecordBatch, ValidBatchSplitsIntoItsHeader) {
  std::string b = testing::BuildBatch({{"a", "bb", "ccc"}});
  auto batches = SplitBatches(b);
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  ASSERT_EQ(batches->size(), 1u);
  EXPECT_EQ((*batches)[0].record_count, 3);
  EXPECT_EQ((*batches)[0].last_offset_delta, 2);
  EXPECT_EQ((*batches)[0].total_size(), b.size());
}

TEST(RecordBatch, FlippedByteFailsTheCrc) {
  std::string b = testing::BuildBatch({{"payload"}});
  b[b.size() - 3] ^= 0x01;
  auto batches = SplitBatches(b);
  ASSERT_FALSE(batches.ok());
  EXPECT_NE(batches.status().message().find("CRC"), std::string::npos);
}

TEST(RecordBatch, BaseOffsetIsOutsideTheCrc) {
  std::string b = testing::BuildBatch({{"payload"}});
  SetBaseOffset(b, 0, 42);
  auto batches = SplitBatches(b);
  ASSERT_TRUE(batches.ok());
  EXPECT_EQ((*batches)[0].base_offset, 42);
}

TEST(RecordBatch, OldMagicIsRejected) {
  std::string b = testing::BuildBatch({{"payload"}});
  b[16] = 1;
  EXPECT_FALSE(SplitBatches(b).ok());
}

TEST(RecordBatch, TruncatedBatchIsRejected) {
  std::string b = testing::BuildBatch({{"payload"}});
  EXPECT_FALSE(SplitBatches(b.substr(0, b.size() - 1)).ok());
  EXPECT_FALSE(SplitBatches(b.substr(0, 30)).ok());
  EXPECT_FALSE(SplitBatches("").ok());
}

TEST(Api, OnlyNonFlexibleVersionsAreAdvertised) {
  // First flexible version of each API (KIP-482); advertising it would oblige
  // us to compact encodings and tagged fields.
  const std::map<ApiKey, int> first_flexible = {
      {ApiKey::kProduce, 9},          {ApiKey::kFetch, 12},          {ApiKey::kListOffsets, 6},
      {ApiKey::kMetadata, 9},         {ApiKey::kOffsetCommit, 8},    {ApiKey::kOffsetFetch, 6},
      {ApiKey::kFindCoordinator, 3},  {ApiKey::kJoinGroup, 6},       {ApiKey::kHeartbeat, 4},
      {ApiKey::kLeaveGroup, 4},       {ApiKey::kSyncGroup, 4},       {ApiKey::kDescribeGroups, 5},
      {ApiKey::kListGroups, 3},       {ApiKey::kApiVersions, 3},     {ApiKey::kCreateTopics, 5},
      {ApiKey::kDeleteTopics, 4},     {ApiKey::kInitProducerId, 2},  {ApiKey::kDescribeConfigs, 4},
      {ApiKey::kSaslAuthenticate, 2}, {ApiKey::kCreatePartitions, 2}};
  for (const auto& a : SupportedApis()) {
    auto it = first_flexible.find(a.key);
    if (it == first_flexible.end()) continue;  // SaslHandshake has no flexible version
    EXPECT_LT(a.max_version, it->second) << "api " << static_cast<int>(a.key);
  }
}

}  // namespace
}  // namespace sluice::broker::protocol
