// A MariaDB/MySQL table as the text protocol reads it: its columns in the
// row decoder's terms (from information_schema), its primary key, and each
// value as the binlog stream would decode it. The source's snapshot and the
// backfill loader (backfill/loader.cc) both read tables through this, so a
// row read either way reaches the targets as the stream's would.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "connectors/change_event.h"
#include "connectors/mysql/mysql_connection.h"
#include "connectors/mysql/row_decoder.h"

namespace sluice::connectors::mysql {

struct MysqlTableShape {
  TableId table;                    // {database, table}
  std::vector<ColumnInfo> columns;  // in ordinal order; `key` marks the key's
  std::vector<std::string> keys;    // the primary key's (or the promoted unique key's, as the
                                    // binlog names it) columns, in index order
  // The columns as a SELECT list that reads each in the form TextValue
  // takes (SelectExpr), and the table, both quoted.
  std::string select_list;
  std::string table_sql;
};

// MariaDB's JSON columns of a table (LONGTEXT with a json_valid() check
// named after the column).
common::Result<std::set<std::string>> MariadbJsonColumns(MysqlConnection& conn,
                                                         const std::string& database,
                                                         const std::string& table);

// Which integer columns are UNSIGNED, for a table with generated columns:
// MariaDB 10.11's table map then misplaces its signedness bits (a signed
// VIRTUAL or STORED column read as unsigned, -206 as 4294967090, and an
// unsigned one as signed), so such a table's are read from
// information_schema (its current schema). Empty for any other table.
common::Result<std::map<std::string, bool>> MariadbGeneratedTableUnsigned(
    MysqlConnection& conn, const std::string& database, const std::string& table);

// The columns of MariaDB's UUID, INET6 and INET4 types, which the table
// map shows only as BINARY(16) or BINARY(4).
common::Result<std::map<std::string, ColumnInfo::TextForm>> MariadbTextFormColumns(
    MysqlConnection& conn, const std::string& database, const std::string& table);

// How select_list reads a column whose SQL is `sql`: a BIT as its string of
// bits; a FLOAT widened to DOUBLE, whose text is exact (a FLOAT's own text
// has 6 digits, so distinct keys would read alike and resume points would
// skip or repeat rows); anything else as it is.
std::string SelectExpr(const ColumnInfo& column, const std::string& sql);

// NotFound when the table does not exist (or the user cannot see it).
common::Result<MysqlTableShape> ReadTableShape(MysqlConnection& conn, const std::string& database,
                                               const std::string& table);

// A value of the text protocol (as read through select_list) as the stream
// decodes it; zero dates are NULL, binary strings base64.
nlohmann::json TextValue(const ColumnInfo& column, const std::string& text);

}  // namespace sluice::connectors::mysql
