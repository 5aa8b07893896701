#include "connectors/source_tables.h"

#include <fmt/format.h>

#include <pqxx/pqxx>

#include "common/status.h"

namespace sluice::connectors {

common::Result<std::vector<ListedTable>> ListPostgresTables(const std::string& conninfo) {
  try {
    pqxx::connection conn(conninfo + " connect_timeout=10");
    pqxx::nontransaction tx(conn);
    tx.exec("SET statement_timeout = '30s'");
    std::vector<ListedTable> out;
    for (const auto& r : tx.exec(
             "SELECT n.nspname, c.relname, EXISTS (SELECT 1 FROM pg_constraint k WHERE "
             "k.conrelid = c.oid AND k.contype = 'p') FROM pg_class c JOIN pg_namespace n ON "
             "n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND "
             "n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%' ORDER BY 1, 2"))
      out.push_back({{r[0].c_str(), r[1].c_str()}, r[2].as<bool>()});
    return out;
  } catch (const std::exception& e) {
    std::string why = e.what();
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    return common::Unavailable(why);
  }
}

common::Result<std::vector<ListedTable>> ListMysqlTables(const mysql::MysqlEndpoint& endpoint,
                                                         const std::string& database) {
  mysql::MysqlEndpoint e = endpoint;
  e.database.clear();
  e.read_timeout_seconds = 30;
  auto conn = mysql::MysqlConnection::Connect(e);
  if (!conn.ok()) return conn.status();
  std::string where =
      database.empty()
          ? "t.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')"
          : "t.TABLE_SCHEMA = " + (*conn)->Quote(database);
  auto rows = (*conn)->Query(fmt::format(
      // COLUMN_KEY, not TABLE_CONSTRAINTS: MariaDB shows a user with only
      // SELECT on the tables no constraints, so every table read as keyless.
      // PRI also marks the UNIQUE NOT NULL key InnoDB promotes in a table
      // without a primary key, which the source keys the table by.
      "SELECT t.TABLE_SCHEMA, t.TABLE_NAME, EXISTS (SELECT 1 FROM "
      "information_schema.COLUMNS k WHERE k.TABLE_SCHEMA = t.TABLE_SCHEMA AND "
      "k.TABLE_NAME = t.TABLE_NAME AND k.COLUMN_KEY = 'PRI') FROM "
      "information_schema.TABLES t WHERE t.TABLE_TYPE = 'BASE TABLE' AND {} ORDER BY 1, 2",
      where));
  if (!rows.ok()) return rows.status();
  std::vector<ListedTable> out;
  for (const auto& r : *rows)
    out.push_back({{r[0].value_or(""), r[1].value_or("")}, r[2].value_or("0") == "1"});
  return out;
}

}  // namespace sluice::connectors
