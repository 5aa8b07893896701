// A libpq connection in logical replication mode (libpqxx does not speak
// the replication protocol): replication commands, and the CopyBoth stream
// of START_REPLICATION with its standby status updates.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "connectors/change_event.h"

namespace sluice::connectors::postgres {

struct CreatedSlot {
  std::string slot_name;
  Lsn consistent_point = 0;
  std::string snapshot_name;  // empty unless the snapshot was exported
};

class ReplicationConnection {
 public:
  // `url` is any libpq connection string; replication=database and the
  // session settings of the type mapping are added.
  static common::Result<std::unique_ptr<ReplicationConnection>> Connect(const std::string& url);
  ~ReplicationConnection();
  ReplicationConnection(const ReplicationConnection&) = delete;
  ReplicationConnection& operator=(const ReplicationConnection&) = delete;

  int server_version() const { return PQserverVersion(conn_); }

  // The exported snapshot stays valid until the next command on this connection.
  common::Result<CreatedSlot> CreateSlot(const std::string& slot, bool export_snapshot);
  // Waits for the slot to be released by whoever still streams from it.
  common::Status DropSlot(const std::string& slot);
  // `options` is the plugin option list, e.g. "proto_version '2', ...".
  common::Status StartReplication(const std::string& slot, Lsn start, const std::string& options);

  // One CopyData message of the stream, or nullopt when none arrived in time.
  common::Result<std::optional<std::string>> Read(std::chrono::milliseconds timeout);
  // Standby status update: positions are "last byte + 1" processed.
  common::Status SendStatus(Lsn written, Lsn flushed, Lsn applied, bool reply_requested);

 private:
  explicit ReplicationConnection(PGconn* conn) : conn_(conn) {}
  common::Status Command(const std::string& sql, PGresult** result_out);

  PGconn* conn_;
};

// Current time in the protocol's unit: microseconds since 2000-01-01.
std::int64_t PgNowMicros();

}  // namespace sluice::connectors::postgres
