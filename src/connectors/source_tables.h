// The tables a source connector could capture, for the wizard's table
// picker (GET /api/v1/connectors/{id}/tables): PostgreSQL tables named
// schema.table, MySQL/MariaDB tables named database.table, each with
// whether it has a primary key (a table without one is captured whole-row,
// or refused, as tables_without_key says).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "connectors/change_event.h"
#include "connectors/mysql/mysql_connection.h"

namespace sluice::connectors {

struct ListedTable {
  TableId table;  // {schema or database, name}
  bool has_primary_key = false;
};

// The ordinary and partitioned tables of the database `conninfo` opens
// (a connection string already checked against the connect policy), system
// schemas and partitions left out (a partition is read through its root),
// by schema then name. Unavailable with the server's words when the
// database cannot be reached or answered with an error.
common::Result<std::vector<ListedTable>> ListPostgresTables(const std::string& conninfo);

// The base tables of `database` (every database but the server's own when
// empty) that the endpoint's user can see, by database then name.
common::Result<std::vector<ListedTable>> ListMysqlTables(const mysql::MysqlEndpoint& endpoint,
                                                         const std::string& database);

}  // namespace sluice::connectors
