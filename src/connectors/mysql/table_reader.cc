#include "connectors/mysql/table_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "common/base64.h"

namespace sluice::connectors::mysql {

using common::Result;
using nlohmann::json;

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// "12:00:00.500000" -> "12:00:00.5": the fraction as the binlog decoder
// (and PostgreSQL) spells it.
std::string TrimFraction(std::string s) {
  auto dot = s.find('.');
  if (dot == std::string::npos) return s;
  while (s.size() > dot + 1 && s.back() == '0') s.pop_back();
  if (s.size() == dot + 1) s.pop_back();
  return s;
}

bool ZeroDate(const std::string& s) {
  return s.size() >= 10 && (s.compare(5, 2, "00") == 0 || s.compare(8, 2, "00") == 0);
}

// A column as information_schema describes it, in the decoder's terms, so
// the snapshot's schema and values match the stream's.
ColumnInfo InfoSchemaColumn(const MysqlRow& r, const std::set<std::string>& json_columns) {
  // name, data_type, column_type, character_set_name, numeric_precision,
  // numeric_scale, datetime_precision, column_key
  ColumnInfo c;
  c.name = TextOrEmpty(r, 0);
  std::string t = Lower(TextOrEmpty(r, 1));
  std::string column_type = Lower(TextOrEmpty(r, 2));
  bool has_charset = r.size() > 3 && r[3].has_value();
  c.collation = has_charset ? 45 : 63;
  c.is_unsigned = column_type.find("unsigned") != std::string::npos;
  auto num = [&](std::size_t i) {
    std::uint32_t v = 0;
    auto s = TextOrEmpty(r, i);
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
  };
  c.precision = num(4);
  c.scale = num(5);
  if (t == "tinyint")
    c.type = kTiny;
  else if (t == "smallint")
    c.type = kShort;
  else if (t == "mediumint")
    c.type = kInt24;
  else if (t == "int" || t == "integer")
    c.type = kLong;
  else if (t == "bigint")
    c.type = kLongLong;
  else if (t == "decimal" || t == "numeric")
    c.type = kNewDecimal;
  else if (t == "float")
    c.type = kFloat;
  else if (t == "double" || t == "real")
    c.type = kDouble;
  else if (t == "date")
    c.type = kDate;
  else if (t == "datetime")
    c.type = kDateTime2;
  else if (t == "timestamp")
    c.type = kTimestamp2;
  else if (t == "time")
    c.type = kTime2;
  else if (t == "year")
    c.type = kYear;
  else if (t == "bit") {
    c.type = kBit;
    c.length = c.precision;
  } else if (t == "enum")
    c.type = kEnum;
  else if (t == "set")
    c.type = kSet;
  else if (t == "char" || t == "binary")
    c.type = kString;
  else if (t == "varchar" || t == "varbinary")
    c.type = kVarchar;
  else if (t.find("text") != std::string::npos || t.find("blob") != std::string::npos)
    c.type = kBlob;
  else if (t == "json")
    c.type = has_charset ? kBlob : kJson;
  else if (auto form = TextFormOf(t); form != ColumnInfo::TextForm::kNone) {
    c.type = kString;  // as the binlog has it
    c.length = static_cast<std::uint32_t>(TextFormBytes(form));
    c.text_form = form;
  } else
    c.type = kGeometry;
  if (t == "datetime" || t == "timestamp" || t == "time") c.precision = num(6);
  c.key = TextOrEmpty(r, 7) == "PRI";
  c.json = json_columns.count(c.name) > 0 || (t == "json" && has_charset);
  return c;
}

}  // namespace

std::string SelectExpr(const ColumnInfo& c, const std::string& sql) {
  if (c.type == kBit) return fmt::format("LPAD(BIN({}), {}, '0')", sql, c.length);
  if (c.type == kFloat) return fmt::format("CAST({} AS DOUBLE)", sql);
  return sql;
}

json TextValue(const ColumnInfo& c, const std::string& text) {
  switch (c.type) {
    case kTiny:
    case kShort:
    case kInt24:
    case kLong:
    case kLongLong:
    case kYear: {
      if (c.is_unsigned) {
        std::uint64_t v = 0;
        std::from_chars(text.data(), text.data() + text.size(), v);
        return v;
      }
      std::int64_t v = 0;
      std::from_chars(text.data(), text.data() + text.size(), v);
      return v;
    }
    case kFloat: {
      // Read widened to DOUBLE (SelectExpr); spelled as the stream spells
      // it, the float's shortest form.
      double d = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
      if (ec != std::errc() || end != text.data() + text.size()) return text;
      auto j = json::parse(fmt::format("{}", static_cast<float>(d)), nullptr, false);
      return j.is_discarded() ? json(text) : j;
    }
    case kDouble: {
      auto j = json::parse(text, nullptr, false);
      return j.is_discarded() ? json(text) : j;
    }
    case kDate:
      return ZeroDate(text) ? json(nullptr) : json(text);
    case kDateTime2:
    case kTimestamp2: {
      if (ZeroDate(text)) return nullptr;
      std::string s = TrimFraction(text);
      if (s.size() > 10 && s[10] == ' ') s[10] = 'T';
      if (c.type == kTimestamp2) s += 'Z';
      return s;
    }
    case kTime2:
      return TrimFraction(text);
    case kString:
    case kVarchar:
    case kBlob:
    case kGeometry:
      if (c.text_form != ColumnInfo::TextForm::kNone) return text;  // read as MariaDB spells it
      if (c.binary()) return common::Base64Encode(text);
      return text;
    default:
      return text;
  }
}

Result<std::set<std::string>> MariadbJsonColumns(MysqlConnection& conn, const std::string& database,
                                                 const std::string& table) {
  auto rows = conn.Query(fmt::format(
      "SELECT CONSTRAINT_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE "
      "CONSTRAINT_SCHEMA = {} AND TABLE_NAME = {}",
      conn.Quote(database), conn.Quote(table)));
  if (!rows.ok()) return rows.status();
  std::set<std::string> out;
  for (const auto& r : *rows) {
    std::string clause = Lower(TextOrEmpty(r, 1));
    if (clause.rfind("json_valid(", 0) == 0) out.insert(TextOrEmpty(r, 0));
  }
  return out;
}

Result<std::map<std::string, bool>> MariadbGeneratedTableUnsigned(MysqlConnection& conn,
                                                                  const std::string& database,
                                                                  const std::string& table) {
  auto rows = conn.Query(fmt::format(
      "SELECT COLUMN_NAME, DATA_TYPE IN ('tinyint', 'smallint', 'mediumint', 'int', 'bigint'), "
      "COLUMN_TYPE LIKE '%unsigned%', EXTRA LIKE '%GENERATED%' FROM information_schema.COLUMNS "
      "WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
      conn.Quote(database), conn.Quote(table)));
  if (!rows.ok()) return rows.status();
  std::map<std::string, bool> is_unsigned;
  bool generated = false;
  for (const auto& r : *rows) {
    if (TextOrEmpty(r, 1) == "1") is_unsigned[TextOrEmpty(r, 0)] = TextOrEmpty(r, 2) == "1";
    generated = generated || TextOrEmpty(r, 3) == "1";
  }
  if (!generated) is_unsigned.clear();
  return is_unsigned;
}

Result<std::map<std::string, ColumnInfo::TextForm>> MariadbTextFormColumns(
    MysqlConnection& conn, const std::string& database, const std::string& table) {
  auto rows = conn.Query(fmt::format(
      "SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND "
      "TABLE_NAME = {} AND DATA_TYPE IN ('uuid', 'inet6', 'inet4')",
      conn.Quote(database), conn.Quote(table)));
  if (!rows.ok()) return rows.status();
  std::map<std::string, ColumnInfo::TextForm> out;
  for (const auto& r : *rows) out[TextOrEmpty(r, 0)] = TextFormOf(Lower(TextOrEmpty(r, 1)));
  return out;
}

namespace {

// The key the server keys the table by, in index order: its PRIMARY KEY or,
// without one, the first UNIQUE index whose columns are all NOT NULL, which
// InnoDB promotes and the binlog's table map names as the primary key. The
// columns information_schema marks PRI (ColumnInfo::key) are that key's, so
// it is the unique index on exactly those columns. (STATISTICS, not
// TABLE_CONSTRAINTS: MariaDB shows a user with only SELECT no constraints.)
Result<std::vector<std::string>> ServerKey(MysqlConnection& conn, const std::string& database,
                                           const std::string& table,
                                           const std::vector<ColumnInfo>& columns) {
  std::vector<std::string> in_table_order;
  for (const auto& c : columns)
    if (c.key) in_table_order.push_back(c.name);
  if (in_table_order.empty()) return in_table_order;
  const std::set<std::string> marked(in_table_order.begin(), in_table_order.end());
  auto rows = conn.Query(fmt::format(
      "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = "
      "{} AND TABLE_NAME = {} AND NON_UNIQUE = 0 ORDER BY INDEX_NAME <> 'PRIMARY', INDEX_NAME, "
      "SEQ_IN_INDEX",
      conn.Quote(database), conn.Quote(table)));
  if (!rows.ok()) return rows.status();
  std::vector<std::pair<std::string, std::vector<std::string>>> indexes;
  for (const auto& r : *rows) {
    if (indexes.empty() || indexes.back().first != TextOrEmpty(r, 0))
      indexes.push_back({TextOrEmpty(r, 0), {}});
    indexes.back().second.push_back(TextOrEmpty(r, 1));
  }
  for (const auto& [name, parts] : indexes)
    if (std::set<std::string>(parts.begin(), parts.end()) == marked) return parts;
  // Not expected; the marked columns in table order still key it as the stream does.
  return in_table_order;
}

}  // namespace

Result<MysqlTableShape> ReadTableShape(MysqlConnection& conn, const std::string& database,
                                       const std::string& table) {
  MysqlTableShape shape;
  shape.table = {database, table};
  auto json_cols = MariadbJsonColumns(conn, database, table);
  if (!json_cols.ok()) return json_cols.status();
  auto cols = conn.Query(fmt::format(
      "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, CHARACTER_SET_NAME, NUMERIC_PRECISION, "
      "NUMERIC_SCALE, DATETIME_PRECISION, COLUMN_KEY FROM information_schema.COLUMNS WHERE "
      "TABLE_SCHEMA = {} AND TABLE_NAME = {} ORDER BY ORDINAL_POSITION",
      conn.Quote(database), conn.Quote(table)));
  if (!cols.ok()) return cols.status();
  if (cols->empty())
    return common::NotFound(fmt::format("source table {}.{} does not exist", database, table));
  for (const auto& r : *cols) shape.columns.push_back(InfoSchemaColumn(r, *json_cols));
  auto keys = ServerKey(conn, database, table, shape.columns);
  if (!keys.ok()) return keys.status();
  shape.keys = std::move(*keys);
  for (const auto& c : shape.columns) {
    if (!shape.select_list.empty()) shape.select_list += ", ";
    shape.select_list += SelectExpr(c, MysqlConnection::QuoteName(c.name));
  }
  shape.table_sql = MysqlConnection::QuoteName(database) + "." + MysqlConnection::QuoteName(table);
  return shape;
}

}  // namespace sluice::connectors::mysql
