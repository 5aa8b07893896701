#include "connectors/mysql/mysql_connection.h"

#include <fmt/format.h>
#include <mysql.h>

#include "guard/connect_policy.h"

namespace sluice::connectors::mysql {

using common::Result;
using common::Status;

namespace {

MysqlRow RowOf(MYSQL_RES* res, MYSQL_ROW row, unsigned n) {
  unsigned long* lengths = mysql_fetch_lengths(res);
  MysqlRow out(n);
  for (unsigned i = 0; i < n; ++i)
    if (row[i]) out[i] = std::string(row[i], lengths[i]);
  return out;
}

}  // namespace

Result<std::unique_ptr<MysqlConnection>> MysqlConnection::Connect(const MysqlEndpoint& e) {
  // The connect policy, at connect time: to the checked address only.
  auto addresses = guard::ResolveChecked(*guard::ProcessPolicy(), {e.host, e.port, std::nullopt});
  if (!addresses.ok()) {
    if (guard::IsRefusal(addresses.status())) return addresses.status();
    return common::Unavailable(
        fmt::format("source database {}:{}: {}", e.host, e.port, addresses.status().message()));
  }
  const std::string address = addresses->front().ToString();
  MYSQL* mysql = mysql_init(nullptr);
  if (!mysql) return common::Internal("mysql_init failed");
  mysql_optionsv(mysql, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  unsigned connect_timeout = 10;
  mysql_optionsv(mysql, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
  if (e.read_timeout_seconds > 0) {
    unsigned t = e.read_timeout_seconds;
    mysql_optionsv(mysql, MYSQL_OPT_READ_TIMEOUT, &t);
  }
  if (!mysql_real_connect(mysql, address.c_str(), e.user.c_str(), e.password.c_str(),
                          e.database.empty() ? nullptr : e.database.c_str(),
                          static_cast<unsigned>(e.port), nullptr, 0)) {
    std::string why = mysql_error(mysql);
    const unsigned code = mysql_errno(mysql);
    mysql_close(mysql);
    // Refused credentials (ER_DBACCESS_DENIED_ERROR, ER_ACCESS_DENIED_ERROR,
    // ER_ACCESS_DENIED_NO_PASSWORD_ERROR) give the same answer on every
    // retry: a configuration problem, which a worker parks on rather than
    // restarting in a loop.
    if (code == 1044 || code == 1045 || code == 1698)
      return common::FailedPrecondition(
          fmt::format("source database {}:{}: {} (check the connector's user and password)", e.host,
                      e.port, why));
    return common::Unavailable(fmt::format("source database {}:{}: {}", e.host, e.port, why));
  }
  std::unique_ptr<MysqlConnection> conn(new MysqlConnection(mysql));
  SLUICE_RETURN_IF_ERROR(conn->Exec("SET time_zone = '+00:00', sql_mode = ''"));
  return conn;
}

MysqlConnection::~MysqlConnection() {
  if (mysql_) mysql_close(mysql_);
}

Status MysqlConnection::Error(const std::string& what) {
  return common::Unavailable(fmt::format("{}: {}", what, mysql_error(mysql_)));
}

Status MysqlConnection::Exec(const std::string& sql) {
  if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) return Error(sql);
  // Drain any result so the connection stays usable.
  if (MYSQL_RES* res = mysql_store_result(mysql_)) mysql_free_result(res);
  return Status::Ok();
}

Result<std::vector<MysqlRow>> MysqlConnection::Query(const std::string& sql) {
  if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) return Error(sql);
  MYSQL_RES* res = mysql_store_result(mysql_);
  std::vector<MysqlRow> rows;
  if (!res) {
    if (mysql_field_count(mysql_) != 0) return Error(sql);
    return rows;
  }
  unsigned n = mysql_num_fields(res);
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    rows.push_back(RowOf(res, row, n));
  }
  mysql_free_result(res);
  return rows;
}

Status MysqlConnection::QueryEach(const std::string& sql, std::size_t batch_rows,
                                  const std::function<Status(const std::vector<MysqlRow>&)>& each) {
  if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) return Error(sql);
  MYSQL_RES* res = mysql_use_result(mysql_);
  if (!res) return mysql_field_count(mysql_) != 0 ? Error(sql) : Status::Ok();
  // Freeing the result reads (and drops) whatever the server still sends.
  std::unique_ptr<MYSQL_RES, void (*)(MYSQL_RES*)> owned(res, mysql_free_result);
  unsigned n = mysql_num_fields(res);
  std::vector<MysqlRow> rows;
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    rows.push_back(RowOf(res, row, n));
    if (rows.size() >= batch_rows) {
      SLUICE_RETURN_IF_ERROR(each(rows));
      rows.clear();
    }
  }
  // A NULL row ends the result or reports a lost connection.
  if (mysql_errno(mysql_) != 0) return Error(sql);
  if (!rows.empty()) return each(rows);
  return Status::Ok();
}

std::string MysqlConnection::Quote(std::string_view value) {
  std::string out(value.size() * 2 + 1, '\0');
  unsigned long n = mysql_real_escape_string(mysql_, out.data(), value.data(), value.size());
  out.resize(n);
  return "'" + out + "'";
}

std::string MysqlConnection::QuoteName(std::string_view name) {
  std::string out = "`";
  for (char c : name) {
    if (c == '`') out.push_back('`');
    out.push_back(c);
  }
  return out + "`";
}

}  // namespace sluice::connectors::mysql
