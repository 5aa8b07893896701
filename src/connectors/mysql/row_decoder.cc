#include "connectors/mysql/row_decoder.h"

#include <arpa/inet.h>

#include <fmt/compile.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <ctime>
#include <iterator>

#include "common/base64.h"
#include "common/json_text.h"

namespace sluice::connectors::mysql {

using common::Result;
using common::Status;
using nlohmann::json;

namespace {

// A bounds-checked reader over one event's bytes.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool empty() const { return pos_ >= data_.size(); }
  std::size_t left() const { return data_.size() - pos_; }
  Result<std::string_view> Take(std::size_t n) {
    if (n > left())
      return common::InvalidArgument(fmt::format(
          "truncated binlog data: {} bytes wanted at offset {}, {} left", n, pos_, left()));
    auto out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  Result<std::uint64_t> Le(std::size_t n) {
    auto bytes = Take(n);
    if (!bytes.ok()) return bytes.status();
    std::uint64_t v = 0;
    for (std::size_t i = n; i-- > 0;) v = (v << 8) | static_cast<std::uint8_t>((*bytes)[i]);
    return v;
  }
  Result<std::uint64_t> Be(std::size_t n) {
    auto bytes = Take(n);
    if (!bytes.ok()) return bytes.status();
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<std::uint8_t>((*bytes)[i]);
    return v;
  }
  // A length-encoded integer (the client protocol's lenenc).
  Result<std::uint64_t> LenEnc() {
    auto first = Le(1);
    if (!first.ok()) return first;
    if (*first < 251) return *first;
    if (*first == 252) return Le(2);
    if (*first == 253) return Le(3);
    if (*first == 254) return Le(8);
    return common::InvalidArgument("bad length-encoded integer");
  }
  Result<std::string_view> LenEncString() {
    auto n = LenEnc();
    if (!n.ok()) return n.status();
    return Take(*n);
  }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
};

#define SLUICE_ASSIGN(var, expr)                        \
  auto var##_result = (expr);                           \
  if (!var##_result.ok()) return var##_result.status(); \
  auto var = *var##_result

bool BitLsb(std::string_view bitmap, std::size_t i) {
  return i / 8 < bitmap.size() && ((static_cast<std::uint8_t>(bitmap[i / 8]) >> (i % 8)) & 1);
}
bool BitMsb(std::string_view bitmap, std::size_t i) {
  return i / 8 < bitmap.size() && ((static_cast<std::uint8_t>(bitmap[i / 8]) >> (7 - i % 8)) & 1);
}

bool IsBlob(std::uint8_t t) {
  return t == kBlob || t == kTinyBlob || t == kMediumBlob || t == kLongBlob;
}
// The columns the table map's SIGNEDNESS bits are for. MariaDB counts YEAR
// (its Field_year is a Field_tiny) with them: left out, every integer after
// a YEAR read the signedness of the one before it.
bool IsNumeric(std::uint8_t t) {
  switch (t) {
    case kYear:
    case kTiny:
    case kShort:
    case kInt24:
    case kLong:
    case kLongLong:
    case kNewDecimal:
    case kDecimal:
    case kFloat:
    case kDouble:
      return true;
    default:
      return false;
  }
}
bool IsCharacter(std::uint8_t t) {
  return t == kString || t == kVarchar || t == kVarString || IsBlob(t) || t == kGeometry;
}
bool IsLatin1(std::uint32_t collation) {
  switch (collation) {
    case 5:
    case 8:
    case 15:
    case 31:
    case 47:
    case 48:
    case 49:
    case 94:
      return true;
    default:
      return false;
  }
}

// MySQL's latin1 is Windows-1252: 0x80-0x9F are the cp1252 characters.
constexpr std::uint16_t kCp1252High[32] = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};

std::string Latin1ToUtf8(std::string_view in) {
  std::string out;
  out.reserve(in.size() * 2);
  for (char ch : in) {
    std::uint32_t c = static_cast<std::uint8_t>(ch);
    if (c >= 0x80 && c < 0xA0) c = kCp1252High[c - 0x80];
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

// Where a decoded value goes: into a tree (JsonTree), or onto JSON text
// spelt as that tree's dump spells it (JsonText: U+FFFD for bytes that are
// not UTF-8, nlohmann's shortest doubles), for a source that sends an
// insert's image as text without building the tree.
class JsonTree {
 public:
  explicit JsonTree(json& value) : value_(value) {}
  void Null() { value_ = nullptr; }
  void Signed(std::int64_t v) { value_ = v; }
  void Unsigned(std::uint64_t v) { value_ = v; }
  void Double(double v) { value_ = v; }
  void String(std::string_view v) { value_ = std::string(v); }
  void Tree(json&& v) { value_ = std::move(v); }

 private:
  json& value_;
};

class JsonText {
 public:
  explicit JsonText(std::string& out) : out_(out) {}
  void Null() { out_ += "null"; }
  void Signed(std::int64_t v) { fmt::format_to(std::back_inserter(out_), FMT_COMPILE("{}"), v); }
  void Unsigned(std::uint64_t v) { fmt::format_to(std::back_inserter(out_), FMT_COMPILE("{}"), v); }
  void Double(double v) { common::AppendJsonDouble(out_, v); }
  void String(std::string_view v) { common::AppendJsonString(out_, v); }
  void Tree(json&& v) { out_ += v.dump(-1, ' ', false, json::error_handler_t::replace); }

 private:
  std::string& out_;
};

template <class Out>
void Text(const ColumnInfo& c, std::string_view bytes, Out& out) {
  if (c.binary()) {
    out.String(common::Base64Encode(bytes));
  } else if (IsLatin1(c.collation)) {
    out.String(Latin1ToUtf8(bytes));
  } else {
    out.String(bytes);
  }
}

// Fractional seconds: (fsp + 1) / 2 big-endian bytes, scaled to microseconds.
Result<std::int64_t> Fraction(Reader& r, std::uint32_t fsp) {
  switch (fsp) {
    case 0:
      return std::int64_t{0};
    case 1:
    case 2: {
      SLUICE_ASSIGN(v, r.Be(1));
      return static_cast<std::int64_t>(v) * 10000;
    }
    case 3:
    case 4: {
      SLUICE_ASSIGN(v, r.Be(2));
      return static_cast<std::int64_t>(v) * 100;
    }
    case 5:
    case 6: {
      SLUICE_ASSIGN(v, r.Be(3));
      return static_cast<std::int64_t>(v);
    }
    default:
      return common::InvalidArgument(fmt::format("fractional precision {} out of range", fsp));
  }
}

// ".5", ".000123": microseconds with the trailing zeros dropped, as
// PostgreSQL prints them; "" for none.
std::string Micros(std::int64_t micros) {
  if (micros == 0) return "";
  std::string s = fmt::format(FMT_COMPILE(".{:06}"), micros);
  while (s.back() == '0') s.pop_back();
  return s;
}

// MySQL's binary DECIMAL (decimal2bin): groups of nine digits in four
// big-endian bytes, a shorter group at each end, the sign in the top bit.
Result<std::string> Decimal(Reader& r, std::uint32_t precision, std::uint32_t scale) {
  static constexpr int kDigBytes[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
  if (precision == 0 || precision > 65 || scale > 38 || scale > precision)
    return common::InvalidArgument(fmt::format("bad DECIMAL({},{})", precision, scale));
  int intg = static_cast<int>(precision - scale);
  int intg0 = intg / 9, intg0x = intg % 9;
  int frac0 = static_cast<int>(scale) / 9, frac0x = static_cast<int>(scale) % 9;
  std::size_t size = intg0 * 4 + kDigBytes[intg0x] + frac0 * 4 + kDigBytes[frac0x];
  SLUICE_ASSIGN(raw, r.Take(size));
  std::string buf(raw);
  bool negative = (static_cast<std::uint8_t>(buf[0]) & 0x80) == 0;
  buf[0] = static_cast<char>(buf[0] ^ 0x80);
  if (negative)
    for (auto& b : buf) b = static_cast<char>(~b);
  std::size_t at = 0;
  auto group = [&](int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<std::uint8_t>(buf[at++]);
    return v;
  };
  std::string int_part;
  if (intg0x > 0) int_part += fmt::format(FMT_COMPILE("{}"), group(kDigBytes[intg0x]));
  for (int i = 0; i < intg0; ++i) int_part += fmt::format(FMT_COMPILE("{:09}"), group(4));
  std::size_t nz = int_part.find_first_not_of('0');
  int_part = nz == std::string::npos ? "0" : int_part.substr(nz);
  std::string frac_part;
  for (int i = 0; i < frac0; ++i) frac_part += fmt::format(FMT_COMPILE("{:09}"), group(4));
  if (frac0x > 0) frac_part += fmt::format("{:0{}}", group(kDigBytes[frac0x]), frac0x);
  bool zero = int_part == "0" && frac_part.find_first_not_of('0') == std::string::npos;
  std::string out = (negative && !zero ? "-" : "") + int_part;
  if (!frac_part.empty()) out += "." + frac_part;
  return out;
}

template <class Out>
Status Value(const ColumnInfo& c, Reader& r, Out& out) {
  switch (c.type) {
    case kTiny: {
      SLUICE_ASSIGN(v, r.Le(1));
      c.is_unsigned ? out.Unsigned(v) : out.Signed(static_cast<std::int8_t>(v));
      return Status::Ok();
    }
    case kShort: {
      SLUICE_ASSIGN(v, r.Le(2));
      c.is_unsigned ? out.Unsigned(v) : out.Signed(static_cast<std::int16_t>(v));
      return Status::Ok();
    }
    case kInt24: {
      SLUICE_ASSIGN(v, r.Le(3));
      c.is_unsigned ? out.Unsigned(v) : out.Signed(static_cast<std::int32_t>(v << 8) >> 8);
      return Status::Ok();
    }
    case kLong: {
      SLUICE_ASSIGN(v, r.Le(4));
      c.is_unsigned ? out.Unsigned(v) : out.Signed(static_cast<std::int32_t>(v));
      return Status::Ok();
    }
    case kLongLong: {
      SLUICE_ASSIGN(v, r.Le(8));
      c.is_unsigned ? out.Unsigned(v) : out.Signed(static_cast<std::int64_t>(v));
      return Status::Ok();
    }
    case kYear: {
      SLUICE_ASSIGN(v, r.Le(1));
      out.Signed(v == 0 ? 0 : static_cast<int>(v) + 1900);
      return Status::Ok();
    }
    case kFloat: {
      SLUICE_ASSIGN(v, r.Le(4));
      float f;
      std::uint32_t bits = static_cast<std::uint32_t>(v);
      std::memcpy(&f, &bits, sizeof f);
      // The float's shortest spelling, so 1.1 stays 1.1 rather than the
      // double nearest the float (1.100000023841858).
      out.Tree(json::parse(fmt::format("{}", f), nullptr, false));
      return Status::Ok();
    }
    case kDouble: {
      SLUICE_ASSIGN(v, r.Le(8));
      double d;
      std::memcpy(&d, &v, sizeof d);
      out.Double(d);
      return Status::Ok();
    }
    case kNewDecimal: {
      SLUICE_ASSIGN(text, Decimal(r, c.precision, c.scale));
      out.String(text);
      return Status::Ok();
    }
    case kDate:
    case kNewDate: {
      SLUICE_ASSIGN(v, r.Le(3));
      unsigned day = v & 31, month = (v >> 5) & 15, year = static_cast<unsigned>(v >> 9);
      // Zero dates (and zero parts) have no PostgreSQL value: NULL, as documented.
      if (day == 0 || month == 0) {
        out.Null();
        return Status::Ok();
      }
      out.String(fmt::format(FMT_COMPILE("{:04}-{:02}-{:02}"), year, month, day));
      return Status::Ok();
    }
    case kTimestamp:
    case kTimestamp2: {
      std::uint64_t seconds;
      std::int64_t micros = 0;
      if (c.type == kTimestamp) {
        SLUICE_ASSIGN(v, r.Le(4));
        seconds = v;
      } else {
        SLUICE_ASSIGN(v, r.Be(4));
        seconds = v;
        SLUICE_ASSIGN(f, Fraction(r, c.precision));
        micros = f;
      }
      if (seconds == 0 && micros == 0) {
        out.Null();  // the zero timestamp
        return Status::Ok();
      }
      std::time_t t = static_cast<std::time_t>(seconds);
      std::tm tm{};
      gmtime_r(&t, &tm);
      out.String(fmt::format(FMT_COMPILE("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}Z"),
                             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                             tm.tm_sec, Micros(micros)));
      return Status::Ok();
    }
    case kDateTime2: {
      SLUICE_ASSIGN(v, r.Be(5));
      std::int64_t packed = static_cast<std::int64_t>(v) - 0x8000000000LL;
      SLUICE_ASSIGN(micros, Fraction(r, c.precision));
      if (packed < 0) return common::InvalidArgument("negative DATETIME");
      std::uint64_t ymd = static_cast<std::uint64_t>(packed) >> 17;
      std::uint64_t hms = static_cast<std::uint64_t>(packed) % (1 << 17);
      std::uint64_t ym = ymd >> 5;
      unsigned day = ymd % 32, month = ym % 13, year = static_cast<unsigned>(ym / 13);
      if (day == 0 || month == 0) {
        out.Null();
        return Status::Ok();
      }
      out.String(fmt::format(FMT_COMPILE("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}"), year, month, day,
                             hms >> 12, (hms >> 6) % 64, hms % 64, Micros(micros)));
      return Status::Ok();
    }
    case kDateTime: {
      SLUICE_ASSIGN(v, r.Le(8));
      std::uint64_t d = v / 1000000, t = v % 1000000;
      unsigned year = static_cast<unsigned>(d / 10000), month = (d / 100) % 100, day = d % 100;
      if (day == 0 || month == 0) {
        out.Null();
        return Status::Ok();
      }
      out.String(fmt::format(FMT_COMPILE("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}"), year, month, day,
                             t / 10000, (t / 100) % 100, t % 100));
      return Status::Ok();
    }
    case kTime2: {
      // my_time_packed_from_binary: the integer part and the fraction are
      // one signed number (hms << 24 | microseconds), offset to be unsigned.
      SLUICE_ASSIGN(raw_int, r.Be(3));
      std::int64_t intpart = static_cast<std::int64_t>(raw_int) - 0x800000LL;
      std::int64_t frac = 0;
      switch (c.precision) {
        case 0:
          break;
        case 1:
        case 2: {
          SLUICE_ASSIGN(f, r.Be(1));
          frac = static_cast<std::int64_t>(f);
          if (intpart < 0 && frac) {
            intpart++;
            frac -= 0x100;
          }
          frac *= 10000;
          break;
        }
        case 3:
        case 4: {
          SLUICE_ASSIGN(f, r.Be(2));
          frac = static_cast<std::int64_t>(f);
          if (intpart < 0 && frac) {
            intpart++;
            frac -= 0x10000;
          }
          frac *= 100;
          break;
        }
        case 5:
        case 6: {
          SLUICE_ASSIGN(f, r.Be(3));
          // The six bytes together are the packed value plus 0x800000000000.
          std::int64_t all =
              (static_cast<std::int64_t>(raw_int) << 24 | static_cast<std::int64_t>(f)) -
              0x800000000000LL;
          intpart = all >> 24;  // arithmetic: the sign stays
          frac = all - (intpart << 24);
          if (intpart < 0 && frac) {
            // Normalize as the shorter forms do: frac carries the sign.
            intpart++;
            frac -= (1 << 24);
          }
          break;
        }
        default:
          return common::InvalidArgument(fmt::format("TIME precision {}", c.precision));
      }
      std::int64_t packed = intpart * (std::int64_t{1} << 24) + frac;
      bool neg = packed < 0;
      if (neg) packed = -packed;
      std::int64_t hms = packed >> 24, micros = packed % (1 << 24);
      out.String(fmt::format("{}{:02}:{:02}:{:02}{}", neg ? "-" : "", (hms >> 12) % (1 << 10),
                             (hms >> 6) % 64, hms % 64, Micros(micros)));
      return Status::Ok();
    }
    case kTime: {
      SLUICE_ASSIGN(v, r.Le(3));
      std::int32_t s = static_cast<std::int32_t>(v << 8) >> 8;
      bool neg = s < 0;
      if (neg) s = -s;
      out.String(
          fmt::format("{}{:02}:{:02}:{:02}", neg ? "-" : "", s / 10000, (s / 100) % 100, s % 100));
      return Status::Ok();
    }
    case kBit: {
      std::uint32_t bits = c.length;
      SLUICE_ASSIGN(v, r.Take((bits + 7) / 8));
      std::string text;
      std::size_t total = v.size() * 8;
      for (std::size_t i = total - bits; i < total; ++i)
        text.push_back(((static_cast<std::uint8_t>(v[i / 8]) >> (7 - i % 8)) & 1) ? '1' : '0');
      out.String(text);
      return Status::Ok();
    }
    case kEnum: {
      SLUICE_ASSIGN(v, r.Le(c.length));
      if (v == 0) {
        out.String("");  // the error value of an invalid ENUM
        return Status::Ok();
      }
      if (v > c.labels.size())
        return common::InvalidArgument(fmt::format(
            "ENUM index {} of {} labels (binlog_row_metadata=FULL?)", v, c.labels.size()));
      out.String(c.labels[v - 1]);
      return Status::Ok();
    }
    case kSet: {
      SLUICE_ASSIGN(v, r.Le(c.length));
      std::string text;
      for (std::size_t i = 0; i < 64 && i < c.labels.size(); ++i) {
        if (!((v >> i) & 1)) continue;
        if (!text.empty()) text += ',';
        text += c.labels[i];
      }
      out.String(text);
      return Status::Ok();
    }
    case kString: {
      SLUICE_ASSIGN(n, r.Le(c.length > 255 ? 2 : 1));
      SLUICE_ASSIGN(bytes, r.Take(n));
      if (c.text_form != ColumnInfo::TextForm::kNone) {
        out.String(TextFormValue(c.text_form, bytes));
        return Status::Ok();
      }
      if (c.binary() && bytes.size() < c.length) {
        // BINARY(n) is stored without its trailing zero padding.
        std::string padded(bytes);
        padded.resize(c.length, '\0');
        out.String(common::Base64Encode(padded));
        return Status::Ok();
      }
      Text(c, bytes, out);
      return Status::Ok();
    }
    case kVarchar:
    case kVarString: {
      SLUICE_ASSIGN(n, r.Le(c.length > 255 ? 2 : 1));
      SLUICE_ASSIGN(bytes, r.Take(n));
      Text(c, bytes, out);
      return Status::Ok();
    }
    case kBlob:
    case kTinyBlob:
    case kMediumBlob:
    case kLongBlob:
    case kGeometry: {
      if (c.length < 1 || c.length > 4)
        return common::InvalidArgument(fmt::format("BLOB length prefix of {} bytes", c.length));
      SLUICE_ASSIGN(n, r.Le(c.length));
      SLUICE_ASSIGN(bytes, r.Take(n));
      if (c.type == kGeometry) {
        out.String(common::Base64Encode(bytes));
        return Status::Ok();
      }
      Text(c, bytes, out);
      return Status::Ok();
    }
    case kJson:
      return common::FailedPrecondition(
          fmt::format("column {}: MySQL's binary JSON is not decoded yet", c.name));
    default:
      return common::FailedPrecondition(
          fmt::format("column {}: binlog column type {} is not supported", c.name, c.type));
  }
}

// Reads one row image: its null bitmap, then each present column's value,
// handed to `put(column, is_null)` (which reads it from `r` unless null).
template <class Put>
Status ReadImage(const TableMap& map, std::string_view present, Reader& r, Put&& put) {
  std::size_t n = map.columns.size();
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i) count += BitLsb(present, i);
  SLUICE_ASSIGN(nulls, r.Take((count + 7) / 8));
  std::size_t j = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!BitLsb(present, i)) continue;
    Status st = put(i, BitLsb(nulls, j++));
    if (!st.ok())
      return Status(st.code(), fmt::format("{}.{}.{}: {}", map.database, map.table,
                                           map.columns[i].name, st.message()));
  }
  return Status::Ok();
}

Result<RowImage> Image(const TableMap& map, std::string_view present, Reader& r) {
  RowImage image(map.columns.size());
  SLUICE_RETURN_IF_ERROR(ReadImage(map, present, r, [&](std::size_t i, bool is_null) {
    JsonTree out(image[i].emplace());
    if (is_null) {
      out.Null();
      return Status::Ok();
    }
    return Value(map.columns[i], r, out);
  }));
  return image;
}

// What every rows event must satisfy before its rows are read.
Status CheckRowsEvent(const TableMap& map, std::uint32_t column_count, std::string_view present,
                      std::string_view present_after) {
  if (column_count != map.columns.size())
    return common::InvalidArgument(
        fmt::format("rows event for {}.{} has {} columns, its table map {}", map.database,
                    map.table, column_count, map.columns.size()));
  const std::size_t bitmap_len = (column_count + 7) / 8;
  if (present.size() < bitmap_len || present_after.size() < bitmap_len)
    return common::InvalidArgument(fmt::format(
        "rows event for {}.{}: a column bitmap of {} bytes for {} columns", map.database, map.table,
        std::min(present.size(), present_after.size()), column_count));
  return Status::Ok();
}

// Calls `read_row()` until the event's bytes are used up.
template <class ReadRow>
Status ForEachRow(const TableMap& map, Reader& r, ReadRow&& read_row) {
  while (!r.empty()) {
    // A row of no bytes (no column present) would never end the event.
    const std::size_t left = r.left();
    SLUICE_RETURN_IF_ERROR(read_row());
    if (r.left() == left)
      return common::InvalidArgument(
          fmt::format("rows event for {}.{}: a row image of no bytes (no column present)",
                      map.database, map.table));
  }
  return Status::Ok();
}

}  // namespace

Result<TableMap> ParseTableMap(std::uint64_t table_id, std::string_view database,
                               std::string_view table, std::string_view column_types,
                               std::string_view metadata, std::string_view null_bitmap,
                               std::string_view optional_metadata) {
  TableMap map;
  map.table_id = table_id;
  map.database = std::string(database);
  map.table = std::string(table);
  Reader meta(metadata);
  for (std::size_t i = 0; i < column_types.size(); ++i) {
    ColumnInfo c;
    c.type = static_cast<std::uint8_t>(column_types[i]);
    c.nullable = BitLsb(null_bitmap, i);
    c.name = fmt::format("col{}", i + 1);
    switch (c.type) {
      case kFloat:
      case kDouble:
      case kBlob:
      case kTinyBlob:
      case kMediumBlob:
      case kLongBlob:
      case kGeometry:
      case kJson: {
        SLUICE_ASSIGN(v, meta.Le(1));
        c.length = static_cast<std::uint32_t>(v);
        break;
      }
      case kTimestamp2:
      case kDateTime2:
      case kTime2: {
        SLUICE_ASSIGN(v, meta.Le(1));
        c.precision = static_cast<std::uint32_t>(v);
        break;
      }
      case kVarchar:
      case kVarString: {
        SLUICE_ASSIGN(v, meta.Le(2));
        c.length = static_cast<std::uint32_t>(v);
        break;
      }
      case kBit: {
        SLUICE_ASSIGN(bits, meta.Le(1));
        SLUICE_ASSIGN(bytes, meta.Le(1));
        c.length = static_cast<std::uint32_t>(bytes * 8 + bits);
        break;
      }
      case kNewDecimal: {
        SLUICE_ASSIGN(p, meta.Le(1));
        SLUICE_ASSIGN(s, meta.Le(1));
        c.precision = static_cast<std::uint32_t>(p);
        c.scale = static_cast<std::uint32_t>(s);
        break;
      }
      case kString:
      case kEnum:
      case kSet: {
        SLUICE_ASSIGN(b0, meta.Le(1));
        SLUICE_ASSIGN(b1, meta.Le(1));
        if (c.type == kString && (b0 & 0x30) != 0x30) {
          // A CHAR longer than 255 bytes: two length bits hide in the type byte.
          c.length = static_cast<std::uint32_t>(b1 | (((b0 & 0x30) ^ 0x30) << 4));
        } else {
          if (b0 == kEnum || b0 == kSet) c.type = static_cast<std::uint8_t>(b0);
          c.length = static_cast<std::uint32_t>(b1);
        }
        break;
      }
      default:
        break;
    }
    map.columns.push_back(std::move(c));
  }

  // Optional metadata: type, length, value (binlog_row_metadata).
  std::vector<std::size_t> numeric, character, enums, sets;
  for (std::size_t i = 0; i < map.columns.size(); ++i) {
    auto t = map.columns[i].type;
    if (IsNumeric(t)) numeric.push_back(i);
    if (IsCharacter(t)) character.push_back(i);
    if (t == kEnum) enums.push_back(i);
    if (t == kSet) sets.push_back(i);
  }
  Reader opt(optional_metadata);
  while (!opt.empty()) {
    SLUICE_ASSIGN(kind, opt.Le(1));
    SLUICE_ASSIGN(value, opt.LenEncString());
    Reader v(value);
    switch (kind) {
      case 1:  // SIGNEDNESS: one bit per numeric column, most significant first
        for (std::size_t k = 0; k < numeric.size(); ++k)
          map.columns[numeric[k]].is_unsigned = BitMsb(value, k);
        break;
      case 2: {  // DEFAULT_CHARSET: the default, then (character column, collation) pairs
        SLUICE_ASSIGN(def, v.LenEnc());
        for (auto i : character) map.columns[i].collation = static_cast<std::uint32_t>(def);
        while (!v.empty()) {
          SLUICE_ASSIGN(idx, v.LenEnc());
          SLUICE_ASSIGN(coll, v.LenEnc());
          if (idx < character.size())
            map.columns[character[idx]].collation = static_cast<std::uint32_t>(coll);
        }
        break;
      }
      case 3:  // COLUMN_CHARSET: a collation per character column
        for (auto i : character) {
          SLUICE_ASSIGN(coll, v.LenEnc());
          map.columns[i].collation = static_cast<std::uint32_t>(coll);
        }
        break;
      case 4:  // COLUMN_NAME
        for (auto& c : map.columns) {
          SLUICE_ASSIGN(name, v.LenEncString());
          c.name = std::string(name);
        }
        map.has_names = true;
        break;
      case 5:    // SET_STR_VALUE
      case 6: {  // ENUM_STR_VALUE
        for (auto i : kind == 5 ? sets : enums) {
          SLUICE_ASSIGN(count, v.LenEnc());
          for (std::uint64_t k = 0; k < count; ++k) {
            SLUICE_ASSIGN(label, v.LenEncString());
            map.columns[i].labels.emplace_back(label);
          }
        }
        break;
      }
      case 8:  // SIMPLE_PRIMARY_KEY: column indexes
        while (!v.empty()) {
          SLUICE_ASSIGN(idx, v.LenEnc());
          if (idx < map.columns.size()) map.columns[idx].key = true;
        }
        break;
      case 9:  // PRIMARY_KEY_WITH_PREFIX: (index, prefix length) pairs
        while (!v.empty()) {
          SLUICE_ASSIGN(idx, v.LenEnc());
          SLUICE_ASSIGN(prefix, v.LenEnc());
          (void)prefix;
          if (idx < map.columns.size()) map.columns[idx].key = true;
        }
        break;
      default:  // geometry types, ENUM/SET charsets: not needed
        break;
    }
  }
  return map;
}

Result<std::vector<RowChange>> DecodeRows(const TableMap& map, RowsKind kind,
                                          std::uint32_t column_count, std::string_view present,
                                          std::string_view present_after, std::string_view row_data,
                                          bool after_bitmap_in_data) {
  Reader r(row_data);
  if (kind == RowsKind::kUpdate && after_bitmap_in_data && column_count == map.columns.size()) {
    SLUICE_ASSIGN(bitmap, r.Take((column_count + 7) / 8));
    present_after = bitmap;
  }
  // Only an update has a second image with a bitmap of its own.
  if (present_after.empty() || kind != RowsKind::kUpdate) present_after = present;
  SLUICE_RETURN_IF_ERROR(CheckRowsEvent(map, column_count, present, present_after));
  std::vector<RowChange> rows;
  SLUICE_RETURN_IF_ERROR(ForEachRow(map, r, [&]() -> Status {
    RowChange row;
    if (kind == RowsKind::kWrite) {
      SLUICE_ASSIGN(after, Image(map, present, r));
      row.after = std::move(after);
    } else if (kind == RowsKind::kDelete) {
      SLUICE_ASSIGN(before, Image(map, present, r));
      row.before = std::move(before);
    } else {
      SLUICE_ASSIGN(before, Image(map, present, r));
      SLUICE_ASSIGN(after, Image(map, present_after, r));
      row.before = std::move(before);
      row.after = std::move(after);
    }
    rows.push_back(std::move(row));
    return Status::Ok();
  }));
  return rows;
}

Status DecodeWriteRowsAsText(const TableMap& map, std::uint32_t column_count,
                             std::string_view present, std::string_view row_data, TextRows& out) {
  out.values.clear();
  out.cells.clear();
  out.columns = map.columns.size();
  SLUICE_RETURN_IF_ERROR(CheckRowsEvent(map, column_count, present, present));
  Reader r(row_data);
  return ForEachRow(map, r, [&]() -> Status {
    const std::size_t row = out.cells.size();
    out.cells.resize(row + out.columns);
    return ReadImage(map, present, r, [&](std::size_t i, bool is_null) {
      TextCell& cell = out.cells[row + i];
      cell.present = true;
      cell.from = out.values.size();
      JsonText text(out.values);
      Status st = Status::Ok();
      if (is_null) {
        text.Null();
      } else {
        st = Value(map.columns[i], r, text);  // a zero date is null too
      }
      cell.size = out.values.size() - cell.from;
      cell.null = out.values.compare(cell.from, cell.size, "null") == 0;
      return st;
    });
  });
}

ColumnInfo::TextForm TextFormOf(std::string_view data_type) {
  if (data_type == "uuid") return ColumnInfo::TextForm::kUuid;
  if (data_type == "inet6") return ColumnInfo::TextForm::kInet6;
  if (data_type == "inet4") return ColumnInfo::TextForm::kInet4;
  return ColumnInfo::TextForm::kNone;
}

std::size_t TextFormBytes(ColumnInfo::TextForm form) {
  return form == ColumnInfo::TextForm::kInet4 ? 4 : 16;
}

std::string TextFormValue(ColumnInfo::TextForm form, std::string_view bytes) {
  const std::size_t width = TextFormBytes(form);
  unsigned char v[16] = {};
  std::memcpy(v, bytes.data(), std::min(bytes.size(), width));  // cut zeros stay zero
  if (form == ColumnInfo::TextForm::kUuid) {
    // The binlog holds the natural order, whatever the row format stores.
    std::string out;
    for (std::size_t i = 0; i < 16; ++i) {
      if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
      fmt::format_to(std::back_inserter(out), "{:02x}", v[i]);
    }
    return out;
  }
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(form == ColumnInfo::TextForm::kInet4 ? AF_INET : AF_INET6, v, text, sizeof text);
  return text;
}

std::string PostgresTypeName(const ColumnInfo& c) {
  if (c.text_form == ColumnInfo::TextForm::kUuid) return "uuid";
  if (c.text_form != ColumnInfo::TextForm::kNone) return "inet";
  switch (c.type) {
    case kTiny:
      return "int2";
    case kShort:
      return c.is_unsigned ? "int4" : "int2";
    case kInt24:
      return "int4";
    case kLong:
      return c.is_unsigned ? "int8" : "int4";
    case kLongLong:
      return c.is_unsigned ? "numeric" : "int8";
    case kYear:
      return "int2";
    case kFloat:
      return "float4";
    case kDouble:
      return "float8";
    case kNewDecimal:
    case kDecimal:
      return "numeric";
    case kDate:
    case kNewDate:
      return "date";
    case kTimestamp:
    case kTimestamp2:
      return "timestamptz";
    case kDateTime:
    case kDateTime2:
      return "timestamp";
    case kTime:
    case kTime2:
      return "interval";  // TIME spans -838:59:59 to 838:59:59
    case kBit:
      return "varbit";
    case kGeometry:
      return "bytea";
    case kJson:
      return "json";
    case kString:
    case kVarchar:
    case kVarString:
    case kBlob:
    case kTinyBlob:
    case kMediumBlob:
    case kLongBlob:
      if (c.json) return "json";
      return c.binary() ? "bytea" : "text";
    default:
      return "text";  // ENUM, SET
  }
}

bool CarriedAsText(const ColumnInfo& c) { return c.json || c.type == kJson; }

bool HasEveryColumn(std::string_view bitmap, std::uint32_t column_count) {
  if (bitmap.size() < (column_count + 7) / 8) return false;
  for (std::uint32_t i = 0; i < column_count; ++i)
    if (!BitLsb(bitmap, i)) return false;
  return true;
}

bool HoldsCharacters(const ColumnInfo& c) {
  return IsCharacter(c.type) && c.type != kGeometry && !c.binary();
}

}  // namespace sluice::connectors::mysql
