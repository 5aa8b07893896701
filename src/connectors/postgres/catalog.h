// What the source reads from the PostgreSQL catalog: a table's published
// columns and its primary key, so snapshot rows and streamed rows agree on
// the schema and the event key.
#pragma once

#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "common/status.h"
#include "connectors/change_event.h"

namespace sluice::connectors::postgres {

// "schema.table" (unquoted) -> TableId; a bare name means schema public.
common::Result<TableId> ParseTableName(const std::string& qualified);
// The table as an SQL identifier: "schema"."table".
std::string QuoteTable(pqxx::transaction_base& tx, const TableId& table);

// Primary-key column names in index order; without a primary key, those of
// the REPLICA IDENTITY USING INDEX index (unique, not null: a key as good);
// empty when the table has neither.
common::Result<std::vector<std::string>> PrimaryKeyColumns(pqxx::transaction_base& tx,
                                                           const TableId& table);

struct CatalogColumn {
  ColumnSchema column;
  std::string sql_type;  // format_type(), for casts in keyset predicates
};
// The columns pgoutput publishes (no dropped or generated ones), in order,
// with key = primary-key membership.
common::Result<std::vector<CatalogColumn>> TableColumns(pqxx::transaction_base& tx,
                                                        const TableId& table);

// Partitioned tables: `tables` without those a partitioned table also in
// `tables` already covers (a partition of it, at any depth). Publishing via
// the partition root, the parent's changes include its partitions', and
// reading the parent reads them: naming both would read them twice.
// `dropped` (when given) receives the tables left out.
common::Result<std::vector<TableId>> WithoutCoveredPartitions(pqxx::transaction_base& tx,
                                                              const std::vector<TableId>& tables,
                                                              std::vector<TableId>* dropped);
// The leaf partitions of a partitioned table (empty for a plain table).
common::Result<std::vector<TableId>> LeafPartitions(pqxx::transaction_base& tx,
                                                    const TableId& table);

// Applies the session settings the type mapping relies on.
void ApplySessionSettings(pqxx::connection& conn);

}  // namespace sluice::connectors::postgres
