#include "backfill/copy_pump.h"

#include <fmt/format.h>

#include <cstdlib>

namespace sluice::backfill {

namespace {
std::string Error(PGconn* conn) { return common::FirstLine(PQerrorMessage(conn)); }

// Ends a COPY OUT that is abandoned half way, so the connection stays usable.
void Drain(PGconn* conn) {
  char* buf = nullptr;
  while (PQgetCopyData(conn, &buf, 0) > 0) PQfreemem(buf);
  while (PGresult* r = PQgetResult(conn)) PQclear(r);
}
}  // namespace

common::Result<PgConn> ConnectPg(const std::string& url) {
  PgConn conn(PQconnectdb(url.c_str()));
  if (!conn || PQstatus(conn.get()) != CONNECTION_OK)
    return common::Unavailable(
        fmt::format("cannot connect: {}", conn ? Error(conn.get()) : std::string("out of memory")));
  return conn;
}

common::Status ExecPg(PGconn* conn, const std::string& sql) {
  PGresult* r = PQexec(conn, sql.c_str());
  auto st = PQresultStatus(r);
  std::string err = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK
                        ? std::string()
                        : common::FirstLine(PQresultErrorMessage(r));
  PQclear(r);
  if (PQstatus(conn) != CONNECTION_OK)
    return common::Unavailable("connection lost: " + Error(conn));
  if (!err.empty()) return common::FailedPrecondition(err);
  return common::Status::Ok();
}

common::Result<std::vector<std::vector<std::optional<std::string>>>> QueryPg(
    PGconn* conn, const std::string& sql) {
  PGresult* r = PQexec(conn, sql.c_str());
  if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    std::string err = common::FirstLine(PQresultErrorMessage(r));
    PQclear(r);
    if (PQstatus(conn) != CONNECTION_OK)
      return common::Unavailable("connection lost: " + Error(conn));
    return common::FailedPrecondition(err);
  }
  std::vector<std::vector<std::optional<std::string>>> out;
  for (int i = 0; i < PQntuples(r); ++i) {
    auto& row = out.emplace_back();
    for (int j = 0; j < PQnfields(r); ++j)
      row.push_back(PQgetisnull(r, i, j) ? std::nullopt
                                         : std::optional<std::string>(PQgetvalue(r, i, j)));
  }
  PQclear(r);
  return out;
}

common::Result<std::size_t> Pump(PGconn* source, const std::string& copy_out, PGconn* destination,
                                 const std::string& copy_in) {
  PGresult* in = PQexec(destination, copy_in.c_str());
  bool in_ok = PQresultStatus(in) == PGRES_COPY_IN;
  std::string in_err = in_ok ? "" : common::FirstLine(PQresultErrorMessage(in));
  PQclear(in);
  if (!in_ok) return common::FailedPrecondition(in_err);
  PGresult* out = PQexec(source, copy_out.c_str());
  bool out_ok = PQresultStatus(out) == PGRES_COPY_OUT;
  std::string out_err = out_ok ? "" : common::FirstLine(PQresultErrorMessage(out));
  PQclear(out);
  if (!out_ok) {
    PQputCopyEnd(destination, "source query failed");
    while (PGresult* r = PQgetResult(destination)) PQclear(r);
    return common::Unavailable(out_err);
  }
  char* buf = nullptr;
  int n;
  while ((n = PQgetCopyData(source, &buf, 0)) > 0) {
    if (PQputCopyData(destination, buf, n) != 1) {
      PQfreemem(buf);
      Drain(source);
      return common::Unavailable("destination: " + Error(destination));
    }
    PQfreemem(buf);
  }
  std::string source_err;
  std::size_t rows = 0;
  while (PGresult* r = PQgetResult(source)) {
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
      source_err = common::FirstLine(PQresultErrorMessage(r));
    else
      rows = std::strtoull(PQcmdTuples(r), nullptr, 10);  // "COPY n"
    PQclear(r);
  }
  if (n == -2 || !source_err.empty()) {
    PQputCopyEnd(destination, "source read failed");
    while (PGresult* r = PQgetResult(destination)) PQclear(r);
    return common::Unavailable("source: " + (source_err.empty() ? Error(source) : source_err));
  }
  if (PQputCopyEnd(destination, nullptr) != 1)
    return common::Unavailable("destination: " + Error(destination));
  std::string dest_err;
  while (PGresult* r = PQgetResult(destination)) {
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
      dest_err = common::FirstLine(PQresultErrorMessage(r));
    PQclear(r);
  }
  if (!dest_err.empty()) return common::FailedPrecondition(dest_err);
  return rows;
}

}  // namespace sluice::backfill
