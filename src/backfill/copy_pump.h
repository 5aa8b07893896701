// The loader's fast path into a PostgreSQL destination: a chunk's rows move
// as raw bytes from the source's COPY TO STDOUT into the destination's COPY
// FROM STDIN, in binary when both sides' column types are the same, else as
// text. Plain libpq, since that is where the COPY protocol lives.
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::backfill {

struct PgConnCloser {
  void operator()(PGconn* c) const { PQfinish(c); }
};
using PgConn = std::unique_ptr<PGconn, PgConnCloser>;

common::Result<PgConn> ConnectPg(const std::string& url);
// Runs a command; the server's words on failure.
common::Status ExecPg(PGconn* conn, const std::string& sql);
// The rows of a query as text (NULL as nullopt), one parameter-less call.
common::Result<std::vector<std::vector<std::optional<std::string>>>> QueryPg(
    PGconn* conn, const std::string& sql);

// `copy_out` is "COPY (SELECT ...) TO STDOUT" on `source`; `copy_in` is
// "COPY table (...) FROM STDIN" on `destination` (inside its transaction),
// both in the same format. Returns the rows moved.
common::Result<std::size_t> Pump(PGconn* source, const std::string& copy_out, PGconn* destination,
                                 const std::string& copy_in);

}  // namespace sluice::backfill
