// A plain client connection to MariaDB/MySQL (libmariadb), for the catalog,
// pre-flight and snapshot queries, and the handle the replication stream is
// opened on. Always utf8mb4, UTC.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

struct st_mysql;

namespace sluice::connectors::mysql {

struct MysqlEndpoint {
  std::string host = "127.0.0.1";
  int port = 3306;
  std::string user;
  std::string password;
  std::string database;  // may be empty
  // Seconds a read may wait before the connection counts as dead (0: none).
  unsigned read_timeout_seconds = 0;
};

// A result row: each field's bytes, nullopt for NULL.
using MysqlRow = std::vector<std::optional<std::string>>;

// Column i of a row as text: empty for NULL or past the row's end.
inline std::string TextOrEmpty(const MysqlRow& row, std::size_t i) {
  return i < row.size() && row[i] ? *row[i] : std::string();
}

class MysqlConnection {
 public:
  static common::Result<std::unique_ptr<MysqlConnection>> Connect(const MysqlEndpoint& endpoint);
  ~MysqlConnection();
  MysqlConnection(const MysqlConnection&) = delete;
  MysqlConnection& operator=(const MysqlConnection&) = delete;

  common::Status Exec(const std::string& sql);
  common::Result<std::vector<MysqlRow>> Query(const std::string& sql);
  // The rows of `sql` streamed from the server (not held whole), handed to
  // `each` up to `batch_rows` at a time; an error from `each` stops it.
  common::Status QueryEach(const std::string& sql, std::size_t batch_rows,
                           const std::function<common::Status(const std::vector<MysqlRow>&)>& each);
  // A string literal, quoted and escaped for this connection.
  std::string Quote(std::string_view value);
  // `name` as an identifier: backquoted, backquotes doubled.
  static std::string QuoteName(std::string_view name);

  st_mysql* handle() { return mysql_; }

 private:
  explicit MysqlConnection(st_mysql* mysql) : mysql_(mysql) {}
  common::Status Error(const std::string& what);
  st_mysql* mysql_;
};

}  // namespace sluice::connectors::mysql
