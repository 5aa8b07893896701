// Decoding of binlog row images. libmariadb's replication API frames the
// events (mariadb_rpl_fetch splits a TABLE_MAP or ROWS event into its parts);
// its own value extraction (mariadb_rpl_extract_rows) misreads CHAR, ENUM,
// SET, negative TIME and MySQL's JSON, so the values are decoded here, from
// those parts, into the JSON values the PostgreSQL source emits for the
// type each one maps to (PostgresTypeName), so targets compare them equal.
//
// Column names, signedness, character sets, ENUM/SET labels and the primary
// key come from the TABLE_MAP's optional metadata, written when the server
// runs with binlog_row_metadata=FULL (pre-flight requires it): a row is then
// always decoded with the schema in force where it was written.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::connectors::mysql {

// Binlog column type codes (MySQL's enum_field_types).
enum ColumnType : std::uint8_t {
  kDecimal = 0,
  kTiny = 1,
  kShort = 2,
  kLong = 3,
  kFloat = 4,
  kDouble = 5,
  kNull = 6,
  kTimestamp = 7,
  kLongLong = 8,
  kInt24 = 9,
  kDate = 10,
  kTime = 11,
  kDateTime = 12,
  kYear = 13,
  kNewDate = 14,
  kVarchar = 15,
  kBit = 16,
  kTimestamp2 = 17,
  kDateTime2 = 18,
  kTime2 = 19,
  kJson = 245,  // MySQL's binary JSON (MariaDB's JSON is a LONGTEXT)
  kNewDecimal = 246,
  kEnum = 247,
  kSet = 248,
  kTinyBlob = 249,
  kMediumBlob = 250,
  kLongBlob = 251,
  kBlob = 252,
  kVarString = 253,
  kString = 254,
  kGeometry = 255,
};

struct ColumnInfo {
  std::string name;
  std::uint8_t type = 0;  // the real type: ENUM/SET, not the STRING they travel as
  // Type metadata, decoded: precision/scale for DECIMAL, fractional digits
  // for temporal types, byte length for CHAR/VARCHAR/BINARY, length-prefix
  // bytes for BLOB/TEXT, bits for BIT, pack length for ENUM/SET and FLOAT.
  std::uint32_t length = 0;
  std::uint32_t precision = 0, scale = 0;
  bool is_unsigned = false;
  bool nullable = true;
  std::uint32_t collation = 0;      // character columns; 63 is binary
  std::vector<std::string> labels;  // ENUM/SET members, in order
  bool key = false;
  bool json = false;  // MariaDB JSON (a LONGTEXT with a json_valid check)
  // MariaDB's UUID, INET6 and INET4: fixed binary in the binlog (trailing
  // zero bytes cut), text in a SELECT; published as the text.
  enum class TextForm : std::uint8_t { kNone, kUuid, kInet6, kInet4 };
  TextForm text_form = TextForm::kNone;

  bool binary() const { return collation == 63; }
};

// The TextForm of an information_schema DATA_TYPE ('uuid', 'inet6',
// 'inet4'), kNone for any other.
ColumnInfo::TextForm TextFormOf(std::string_view data_type);
// Its width in bytes: 4 for INET4, 16 for UUID and INET6.
std::size_t TextFormBytes(ColumnInfo::TextForm form);
// The binlog bytes of such a column as MariaDB spells the value.
std::string TextFormValue(ColumnInfo::TextForm form, std::string_view bytes);

struct TableMap {
  std::uint64_t table_id = 0;
  std::string database;
  std::string table;
  std::vector<ColumnInfo> columns;
  bool has_names = false;  // binlog_row_metadata=FULL was in force
};

// A TABLE_MAP event from its parts: the type byte per column, the metadata
// block, the nullability bitmap and the optional metadata (may be empty).
common::Result<TableMap> ParseTableMap(std::uint64_t table_id, std::string_view database,
                                       std::string_view table, std::string_view column_types,
                                       std::string_view metadata, std::string_view null_bitmap,
                                       std::string_view optional_metadata);

enum class RowsKind { kWrite, kUpdate, kDelete };

// One row image: a value per table column, absent columns (not in the
// event's column bitmap) left as nullopt.
using RowImage = std::vector<std::optional<nlohmann::json>>;

struct RowChange {
  RowImage before;  // empty for writes
  RowImage after;   // empty for deletes
};

// The rows of one ROWS event. `present` is the event's column bitmap;
// `present_after` the after-image bitmap of an update (empty: the same).
// For a MySQL v2 update whose after bitmap libmariadb left in the row data,
// pass `after_bitmap_in_data`.
common::Result<std::vector<RowChange>> DecodeRows(
    const TableMap& map, RowsKind kind, std::uint32_t column_count, std::string_view present,
    std::string_view present_after, std::string_view row_data, bool after_bitmap_in_data = false);

// The rows of a WRITE_ROWS event as JSON text, for a source that sends an
// insert's image as text: each value spelt exactly as the dump of DecodeRows'
// value would spell it, without building it. `values` holds them all;
// `cells` has one per row and table column, row after row.
struct TextCell {
  std::size_t from = 0, size = 0;  // the value's text in TextRows::values
  bool present = false;            // in the event's column bitmap
  bool null = false;  // spelt null: NULL, or a value that maps to it (a zero date, NaN)
};
struct TextRows {
  std::string values;
  std::vector<TextCell> cells;
  std::size_t columns = 0;

  std::size_t rows() const { return columns ? cells.size() / columns : 0; }
  const TextCell& cell(std::size_t row, std::size_t column) const {
    return cells[row * columns + column];
  }
  std::string_view text(const TextCell& c) const {
    return std::string_view(values).substr(c.from, c.size);
  }
};
// Reuses `out`'s buffers; an error leaves it partly filled.
common::Status DecodeWriteRowsAsText(const TableMap& map, std::uint32_t column_count,
                                     std::string_view present, std::string_view row_data,
                                     TextRows& out);

// The PostgreSQL type name (pg_type.typname) a column maps to: what the
// envelope's `columns` carry and the PostgreSQL target creates.
std::string PostgresTypeName(const ColumnInfo& column);
// Whether values of the column travel as their text (the envelope's as_text).
bool CarriedAsText(const ColumnInfo& column);
// Whether a rows event's column bitmap has all `column_count` columns (a
// FULL row image).
bool HasEveryColumn(std::string_view bitmap, std::uint32_t column_count);
// Whether the column holds characters in its character set (not bytes).
bool HoldsCharacters(const ColumnInfo& column);

}  // namespace sluice::connectors::mysql
