#include "connectors/postgres/replication_connection.h"

#include <fmt/format.h>
#include <poll.h>

#include <algorithm>
#include <cstdint>

#include "common/time.h"
#include "connectors/postgres/lsn.h"
#include "connectors/postgres/type_mapping.h"
#include "guard/postgres_conninfo.h"

namespace sluice::connectors::postgres {

using common::Result;
using common::Status;

namespace {
std::string ErrorOf(PGconn* conn) {
  std::string m = PQerrorMessage(conn);
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

void PutU64(std::string& out, std::uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
}  // namespace

std::int64_t PgNowMicros() { return UnixToPgEpochMicros(common::NowEpochMillis() * 1000); }

Result<std::unique_ptr<ReplicationConnection>> ReplicationConnection::Connect(
    const std::string& url) {
  // The connect policy, at connect time: to the checked address only.
  auto pinned = guard::PinPostgres(url);
  if (!pinned.ok()) {
    if (guard::IsRefusal(pinned.status())) return pinned.status();
    return common::Unavailable("replication connection failed: " + pinned.status().message());
  }
  const char* keys[] = {"dbname", "replication", "options", nullptr};
  const char* values[] = {pinned->c_str(), "database", SessionOptions(), nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn == nullptr) return common::Unavailable("out of memory connecting to PostgreSQL");
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string why = ErrorOf(conn);
    PQfinish(conn);
    return common::Unavailable(fmt::format("replication connection failed: {}", why));
  }
  return std::unique_ptr<ReplicationConnection>(new ReplicationConnection(conn));
}

ReplicationConnection::~ReplicationConnection() { PQfinish(conn_); }

Status ReplicationConnection::Command(const std::string& sql, PGresult** result_out) {
  PGresult* res = PQexec(conn_, sql.c_str());
  auto status = PQresultStatus(res);
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK && status != PGRES_COPY_BOTH) {
    std::string why = PQresultErrorMessage(res);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    PQclear(res);
    return common::Unavailable(fmt::format("{} failed: {}", sql, why));
  }
  if (result_out) {
    *result_out = res;
  } else {
    PQclear(res);
  }
  return Status::Ok();
}

Result<CreatedSlot> ReplicationConnection::CreateSlot(const std::string& slot,
                                                      bool export_snapshot) {
  PGresult* res = nullptr;
  SLUICE_RETURN_IF_ERROR(
      Command(fmt::format("CREATE_REPLICATION_SLOT \"{}\" LOGICAL pgoutput {}", slot,
                          export_snapshot ? "EXPORT_SNAPSHOT" : "NOEXPORT_SNAPSHOT"),
              &res));
  CreatedSlot out;
  if (PQntuples(res) != 1 || PQnfields(res) < 3) {
    PQclear(res);
    return common::Internal("CREATE_REPLICATION_SLOT returned an unexpected result");
  }
  out.slot_name = PQgetvalue(res, 0, 0);
  auto lsn = ParseLsn(PQgetvalue(res, 0, 1));
  if (!PQgetisnull(res, 0, 2)) out.snapshot_name = PQgetvalue(res, 0, 2);
  PQclear(res);
  if (!lsn.ok()) return lsn.status();
  out.consistent_point = *lsn;
  return out;
}

Status ReplicationConnection::DropSlot(const std::string& slot) {
  return Command(fmt::format("DROP_REPLICATION_SLOT \"{}\" WAIT", slot), nullptr);
}

Status ReplicationConnection::StartReplication(const std::string& slot, Lsn start,
                                               const std::string& options) {
  PGresult* res = nullptr;
  SLUICE_RETURN_IF_ERROR(Command(
      fmt::format("START_REPLICATION SLOT \"{}\" LOGICAL {} ({})", slot, FormatLsn(start), options),
      &res));
  bool copy_both = PQresultStatus(res) == PGRES_COPY_BOTH;
  PQclear(res);
  if (!copy_both) return common::Internal("START_REPLICATION did not enter CopyBoth mode");
  return Status::Ok();
}

Result<std::optional<std::string>> ReplicationConnection::Read(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    char* buf = nullptr;
    int n = PQgetCopyData(conn_, &buf, /*async=*/1);
    if (n > 0) {
      std::string out(buf, static_cast<std::size_t>(n));
      PQfreemem(buf);
      return std::optional<std::string>(std::move(out));
    }
    if (n == -1) {
      PGresult* res = PQgetResult(conn_);
      std::string why = res ? PQresultErrorMessage(res) : "";
      PQclear(res);
      return common::Unavailable(fmt::format("replication stream ended: {}", why));
    }
    if (n == -2) {
      return common::Unavailable(fmt::format("replication stream failed: {}", ErrorOf(conn_)));
    }
    auto left = std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(
                                              deadline - std::chrono::steady_clock::now())
                                              .count());
    // Looked at even with no time left: a zero timeout asks "is there data now?".
    pollfd pfd{PQsocket(conn_), POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) {
      return common::Unavailable(fmt::format("poll on the replication socket: {}", errno));
    }
    if (ready > 0) {
      if (PQconsumeInput(conn_) == 0)
        return common::Unavailable(fmt::format("replication stream failed: {}", ErrorOf(conn_)));
      continue;
    }
    if (ready == 0 && left == 0) return std::optional<std::string>();
  }
}

Status ReplicationConnection::SendStatus(Lsn written, Lsn flushed, Lsn applied,
                                         bool reply_requested) {
  std::string msg = "r";
  PutU64(msg, written);
  PutU64(msg, flushed);
  PutU64(msg, applied);
  PutU64(msg, static_cast<std::uint64_t>(PgNowMicros()));
  msg.push_back(reply_requested ? 1 : 0);
  if (PQputCopyData(conn_, msg.data(), static_cast<int>(msg.size())) != 1 || PQflush(conn_) != 0) {
    return common::Unavailable(fmt::format("standby status update failed: {}", ErrorOf(conn_)));
  }
  return Status::Ok();
}

}  // namespace sluice::connectors::postgres
