#include "connectors/postgres/catalog.h"

#include <fmt/format.h>

#include <algorithm>

namespace sluice::connectors::postgres {

using common::Result;

Result<TableId> ParseTableName(const std::string& qualified) {
  auto dot = qualified.find('.');
  if (qualified.empty() || dot == 0 || (dot != std::string::npos && dot + 1 == qualified.size())) {
    return common::InvalidArgument(fmt::format("not a table name: '{}'", qualified));
  }
  if (dot == std::string::npos) return TableId{"public", qualified};
  return TableId{qualified.substr(0, dot), qualified.substr(dot + 1)};
}

std::string QuoteTable(pqxx::transaction_base& tx, const TableId& table) {
  return tx.quote_name(table.schema) + "." + tx.quote_name(table.name);
}

namespace {
std::string RegClass(pqxx::transaction_base& tx, const TableId& table) {
  return tx.quote(QuoteTable(tx, table)) + "::regclass";
}
}  // namespace

Result<std::vector<std::string>> PrimaryKeyColumns(pqxx::transaction_base& tx,
                                                   const TableId& table) {
  try {
    auto rows = tx.exec(
        "SELECT a.attname FROM pg_index i "
        "CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) "
        "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
        "WHERE i.indrelid = " +
        RegClass(tx, table) +
        " AND (i.indisprimary OR (i.indisreplident AND NOT EXISTS (SELECT 1 FROM pg_index p "
        "WHERE p.indrelid = i.indrelid AND p.indisprimary))) ORDER BY k.ord");
    std::vector<std::string> out;
    for (const auto& row : rows) out.push_back(row[0].as<std::string>());
    return out;
  } catch (const std::exception& e) {
    return common::NotFound(fmt::format("primary key of {}: {}", table.Qualified(), e.what()));
  }
}

Result<std::vector<CatalogColumn>> TableColumns(pqxx::transaction_base& tx, const TableId& table) {
  auto pk = PrimaryKeyColumns(tx, table);
  if (!pk.ok()) return pk.status();
  try {
    auto rows = tx.exec(
        "SELECT a.attname, a.atttypid, a.atttypmod, t.typname, "
        "format_type(a.atttypid, a.atttypmod) "
        "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
        "WHERE a.attrelid = " +
        RegClass(tx, table) +
        " AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '' ORDER BY a.attnum");
    std::vector<CatalogColumn> out;
    for (const auto& row : rows) {
      CatalogColumn c;
      c.column.name = row[0].as<std::string>();
      c.column.type_oid = row[1].as<std::uint32_t>();
      c.column.type_modifier = row[2].as<std::int32_t>();
      c.column.type_name = row[3].as<std::string>();
      c.column.key = std::find(pk->begin(), pk->end(), c.column.name) != pk->end();
      c.sql_type = row[4].as<std::string>();
      out.push_back(std::move(c));
    }
    if (out.empty())
      return common::NotFound(fmt::format("table {} has no columns", table.Qualified()));
    return out;
  } catch (const std::exception& e) {
    return common::NotFound(fmt::format("columns of {}: {}", table.Qualified(), e.what()));
  }
}

Result<std::vector<TableId>> WithoutCoveredPartitions(pqxx::transaction_base& tx,
                                                      const std::vector<TableId>& tables,
                                                      std::vector<TableId>* dropped) {
  std::vector<TableId> out;
  try {
    for (const auto& t : tables) {
      // pg_partition_ancestors lists the table itself first, then its parents.
      auto rows = tx.exec(
          "SELECT n.nspname, c.relname FROM pg_partition_ancestors(" + RegClass(tx, t) +
          ") a JOIN pg_class c ON c.oid = a.relid JOIN pg_namespace n ON n.oid = c.relnamespace "
          "WHERE a.relid <> " +
          RegClass(tx, t));
      bool covered = false;
      for (const auto& row : rows) {
        TableId ancestor{row[0].as<std::string>(), row[1].as<std::string>()};
        if (std::find(tables.begin(), tables.end(), ancestor) != tables.end()) covered = true;
      }
      if (covered) {
        if (dropped) dropped->push_back(t);
      } else if (std::find(out.begin(), out.end(), t) == out.end()) {
        out.push_back(t);
      }
    }
  } catch (const std::exception& e) {
    return common::NotFound(fmt::format("partitions of the chosen tables: {}", e.what()));
  }
  return out;
}

Result<std::vector<TableId>> LeafPartitions(pqxx::transaction_base& tx, const TableId& table) {
  try {
    auto rows = tx.exec(
        "SELECT n.nspname, c.relname FROM pg_partition_tree(" + RegClass(tx, table) +
        ") p JOIN pg_class c ON c.oid = p.relid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE p.isleaf AND p.relid <> " +
        RegClass(tx, table) + " ORDER BY 1, 2");
    std::vector<TableId> out;
    for (const auto& row : rows)
      out.push_back({row[0].as<std::string>(), row[1].as<std::string>()});
    return out;
  } catch (const std::exception& e) {
    return common::NotFound(fmt::format("partitions of {}: {}", table.Qualified(), e.what()));
  }
}

void ApplySessionSettings(pqxx::connection& conn) {
  pqxx::nontransaction tx(conn);
  tx.exec(
      "SET DateStyle = 'ISO, YMD'; SET TimeZone = 'UTC'; SET IntervalStyle = 'iso_8601'; "
      "SET bytea_output = 'hex'; SET extra_float_digits = 3");
}

}  // namespace sluice::connectors::postgres
