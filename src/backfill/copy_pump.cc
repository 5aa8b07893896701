#include "backfill/copy_pump.h"

#include <fmt/format.h>

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

std::vector<std::optional<std::string>> SplitCopyLine(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  std::vector<std::optional<std::string>> fields;
  std::size_t start = 0;
  while (true) {
    auto tab = line.find('\t', start);
    auto raw =
        line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start);
    if (raw == "\\N") {
      fields.emplace_back(std::nullopt);
    } else {
      std::string v;
      for (std::size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] != '\\' || i + 1 == raw.size()) {
          v.push_back(raw[i]);
          continue;
        }
        char c = raw[++i];
        switch (c) {
          case 'b':
            v.push_back('\b');
            break;
          case 'f':
            v.push_back('\f');
            break;
          case 'n':
            v.push_back('\n');
            break;
          case 'r':
            v.push_back('\r');
            break;
          case 't':
            v.push_back('\t');
            break;
          case 'v':
            v.push_back('\v');
            break;
          default:
            if (c >= '0' && c <= '7') {  // up to three octal digits
              int n = c - '0';
              for (int k = 0; k < 2 && i + 1 < raw.size() && raw[i + 1] >= '0' && raw[i + 1] <= '7';
                   ++k)
                n = n * 8 + (raw[++i] - '0');
              v.push_back(static_cast<char>(n));
            } else {
              v.push_back(c);  // \\ and any other escaped character
            }
        }
      }
      fields.emplace_back(std::move(v));
    }
    if (tab == std::string_view::npos) break;
    start = tab + 1;
  }
  return fields;
}

common::Result<Pumped> Pump(PGconn* source, const std::string& copy_out, PGconn* destination,
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
  Pumped pumped;
  std::string last;
  char* buf = nullptr;
  int n;
  while ((n = PQgetCopyData(source, &buf, 0)) > 0) {
    if (PQputCopyData(destination, buf, n) != 1) {
      PQfreemem(buf);
      Drain(source);
      return common::Unavailable("destination: " + Error(destination));
    }
    last.assign(buf, static_cast<std::size_t>(n));
    PQfreemem(buf);
    ++pumped.rows;
  }
  std::string source_err;
  while (PGresult* r = PQgetResult(source)) {
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
      source_err = common::FirstLine(PQresultErrorMessage(r));
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
  if (!last.empty()) pumped.last = SplitCopyLine(last);
  return pumped;
}

}  // namespace sluice::backfill
