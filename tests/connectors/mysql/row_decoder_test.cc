// Row-image decoding without a server: byte layouts from MySQL's own
// documentation and source comments (decimal.c, my_time.c).
#include "connectors/mysql/row_decoder.h"

#include <gtest/gtest.h>

#include "connectors/mysql/binlog_position.h"

namespace sluice::connectors::mysql {
namespace {

using nlohmann::json;

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int v : b) s.push_back(static_cast<char>(v));
  return s;
}

// One column of `type` with `metadata`, one row of `value` (not null).
json DecodeOne(std::uint8_t type, const std::string& metadata, const std::string& value,
               const std::string& optional = "") {
  auto map = ParseTableMap(7, "db", "t", std::string(1, static_cast<char>(type)), metadata,
                           Bytes({1}), optional);
  EXPECT_TRUE(map.ok()) << map.status().message();
  auto rows = DecodeRows(*map, RowsKind::kWrite, 1, Bytes({1}), "", Bytes({0}) + value);
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  if (!rows.ok() || rows->size() != 1 || !rows->front().after[0]) return "<none>";
  return *rows->front().after[0];
}

TEST(MysqlRowDecoder, DecimalIsExactText) {
  // decimal.c: 1234567890.1234 as DECIMAL(14,4) is 81 0D FB 38 D2 04 D2.
  EXPECT_EQ(
      DecodeOne(kNewDecimal, Bytes({14, 4}), Bytes({0x81, 0x0D, 0xFB, 0x38, 0xD2, 0x04, 0xD2})),
      "1234567890.1234");
  // ...and its negative, every byte inverted.
  EXPECT_EQ(
      DecodeOne(kNewDecimal, Bytes({14, 4}), Bytes({0x7E, 0xF2, 0x04, 0xC7, 0x2D, 0xFB, 0x2D})),
      "-1234567890.1234");
}

TEST(MysqlRowDecoder, NegativeTimeWithFraction) {
  // -00:00:01.5 as TIME(2): intpart -2 (0x7FFFFE) and frac -50 (0xCE).
  EXPECT_EQ(DecodeOne(kTime2, Bytes({2}), Bytes({0x7F, 0xFF, 0xFE, 0xCE})), "-00:00:01.5");
  EXPECT_EQ(DecodeOne(kTime2, Bytes({0}), Bytes({0x80, 0x10, 0x41})), "01:01:01");
}

TEST(MysqlRowDecoder, ZeroDateIsNull) {
  EXPECT_TRUE(DecodeOne(kDate, "", Bytes({0, 0, 0})).is_null());
}

TEST(MysqlRowDecoder, UnsignedFromTheSignednessMetadata) {
  // SIGNEDNESS (1), length 1, bit 7 set: the first numeric column is unsigned.
  EXPECT_EQ(DecodeOne(kTiny, "", Bytes({0xFF}), Bytes({1, 1, 0x80})), 255);
  EXPECT_EQ(DecodeOne(kTiny, "", Bytes({0xFF})), -1);
}

TEST(MysqlRowDecoder, TruncatedRowIsAnErrorNotACrash) {
  auto map =
      ParseTableMap(7, "db", "t", std::string(1, static_cast<char>(kLong)), "", Bytes({1}), "");
  ASSERT_TRUE(map.ok());
  auto rows = DecodeRows(*map, RowsKind::kWrite, 1, Bytes({1}), "", Bytes({0, 1, 2}));
  EXPECT_FALSE(rows.ok());
}

TEST(MysqlBinlogPosition, LsnOrderIsPositionOrder) {
  BinlogPosition a{"binlog.000001", 4000}, b{"binlog.000002", 4};
  EXPECT_LT(a.ToLsn(), b.ToLsn());
  EXPECT_EQ(BinlogPosition::FromLsn(b.ToLsn(), "binlog.000001"), b);
  auto parsed = BinlogPosition::Parse("binlog.000002:4");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, b);
}

TEST(MysqlGtid, ParsesAndFormatsMariaDbGtidPositions) {
  auto set = ParseGtidSet("0-1-100,2-7-5");
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_EQ(set->size(), 2u);
  EXPECT_EQ(set->at(2), (Gtid{2, 7, 5}));
  EXPECT_EQ(FormatGtidSet(*set), "0-1-100,2-7-5");
  EXPECT_TRUE(ParseGtidSet("").ok());
  EXPECT_TRUE(ParseGtidSet("").value().empty());
  for (const char* bad : {"0-1", "a-b-c", "0-1-2,0-1-3", "0-1-2-", "0-1-x"})
    EXPECT_FALSE(ParseGtidSet(bad).ok()) << bad;
  // A position's JSON carries it, and refuses a malformed one.
  BinlogPosition p{"binlog.000002", 4, "0-1-100"};
  auto back = BinlogPosition::FromJson(p.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, p);
  nlohmann::json bad = {{"file", "b.000001"}, {"pos", 4}, {"gtid", "x"}};
  EXPECT_FALSE(BinlogPosition::FromJson(bad).ok());
  BinlogPosition plain{"b.000001", 4};
  EXPECT_FALSE(plain.ToJson().contains("gtid"));
}

}  // namespace
}  // namespace sluice::connectors::mysql
