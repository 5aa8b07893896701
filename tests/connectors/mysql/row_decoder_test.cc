// Row-image decoding without a server: byte layouts from MySQL's own
// documentation and source comments (decimal.c, my_time.c).
#include "connectors/mysql/row_decoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

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

// An insert decoded straight into text (DecodeWriteRowsAsText) spells each
// value as the dump of its decoded tree: doubles in nlohmann's shortest
// form (1.0, -0.0, 1e+21), integers at their limits, escapes, a zero date.
TEST(MysqlRowDecoder, InsertTextIsTheTreesDump) {
  auto le = [](std::uint64_t v, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return s;
  };
  auto dbl = [&](double d) {
    std::uint64_t bits;
    std::memcpy(&bits, &d, sizeof d);
    return le(bits, 8);
  };
  // DOUBLE, BIGINT, BIGINT UNSIGNED, VARCHAR(255 bytes), DATE.
  const std::string types = Bytes({kDouble, kLongLong, kLongLong, kVarchar, kDate});
  const std::string metadata = Bytes({8, 255, 0});  // DOUBLE: 8 bytes; VARCHAR: 255
  const std::string unsigned_third = Bytes({1, 1, 0x20});
  auto map = ParseTableMap(7, "db", "t", types, metadata, Bytes({0x1f}), unsigned_third);
  ASSERT_TRUE(map.ok()) << map.status().message();
  std::string rows;
  auto row = [&](double d, std::int64_t s, std::uint64_t u, const std::string& text,
                 std::uint32_t date) {
    rows += Bytes({0});  // no NULLs
    rows += dbl(d) + le(static_cast<std::uint64_t>(s), 8) + le(u, 8);
    rows += std::string(1, static_cast<char>(text.size())) + text + le(date, 3);
  };
  row(1.0, INT64_MIN, UINT64_MAX, "quote \" back\\ tab\t \x01 \xff", 0);
  row(-0.0, INT64_MAX, 0, "caf\xc3\xa9 \xf0\x9f\x98\x80", (2026 << 9) | (12 << 5) | 7);
  row(1e21, -1, 1, "", (1 << 9) | (1 << 5) | 1);
  row(5e-324, 0, 42, "0.1", 0);
  row(0.1, 7, 7, "null", 0);
  row(std::nan(""), 1, 1, "x", 0);  // NaN is spelt null, as the tree dumps it (the fuzzer's find)
  auto trees = DecodeRows(*map, RowsKind::kWrite, 5, Bytes({0x1f}), "", rows);
  ASSERT_TRUE(trees.ok()) << trees.status().message();
  TextRows text;
  ASSERT_TRUE(DecodeWriteRowsAsText(*map, 5, Bytes({0x1f}), rows, text).ok());
  ASSERT_EQ(text.rows(), trees->size());
  ASSERT_EQ(text.rows(), 6u);
  for (std::size_t r = 0; r < trees->size(); ++r) {
    for (std::size_t c = 0; c < 5; ++c) {
      const json& tree = *(*trees)[r].after[c];
      const std::string dump = tree.dump(-1, ' ', false, json::error_handler_t::replace);
      EXPECT_EQ(text.text(text.cell(r, c)), dump) << "row " << r << " column " << c;
      EXPECT_EQ(text.cell(r, c).null, dump == "null") << "row " << r << " column " << c;
    }
  }
  EXPECT_EQ(text.text(text.cell(0, 0)), "1.0");
  EXPECT_EQ(text.text(text.cell(1, 0)), "-0.0");
  EXPECT_EQ(text.text(text.cell(0, 2)), "18446744073709551615");
  EXPECT_TRUE(text.cell(0, 4).null);  // the zero date
  EXPECT_EQ(text.text(text.cell(4, 3)), "\"null\"");
  EXPECT_TRUE(text.cell(5, 0).null);
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
