// The PostgreSQL CDC source: publication + logical slot (pgoutput), an
// initial consistent snapshot on the slot's exported snapshot, then the
// replication stream. The WAL position confirmed to the server is only what
// the sink has acknowledged, so a crash or restart replays, never loses.
//
// Single-threaded by design: the caller drives Poll() (or Run()); the sink's
// ack callback may arrive on any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "common/status.h"
#include "connectors/change_sink.h"
#include "connectors/postgres/change_assembler.h"
#include "connectors/postgres/pgoutput_decoder.h"
#include "connectors/postgres/replication_connection.h"
#include "connectors/postgres/slot_health.h"
#include "connectors/postgres/snapshot_reader.h"
#include "connectors/production_metrics.h"

namespace sluice::connectors::postgres {

struct PostgresSourceOptions {
  std::string url;  // libpq URL of the source database
  std::string slot_name;
  std::string publication_name;
  std::vector<TableId> tables;
  std::string topic_prefix = "sluice";
  // A table without a primary key (nor a REPLICA IDENTITY USING INDEX) is
  // replicated with REPLICA IDENTITY FULL, every column its key; this
  // refuses to start with one instead. Either way a table whose updates and
  // deletes could not be replicated (identity DEFAULT without a key, or
  // NOTHING) is refused, and the error names the ALTER TABLE to run.
  bool refuse_tables_without_key = false;
  int proto_version = 2;  // 1, or 2 (streams large transactions on PostgreSQL >= 14)
  // A transaction the server streams before its commit (protocol 2, past
  // the server's logical_decoding_work_mem) is kept until it commits: up to
  // this many bytes in memory, the rest in an unlinked temporary file under
  // `spool_dir` (default: the system's temporary directory). Memory stays
  // bounded whatever the transaction's size; an aborted one emits nothing.
  std::size_t spool_memory_bytes = std::size_t{8} << 20;
  std::string spool_dir;
  bool snapshot = true;  // read the tables first when the slot is new
  int snapshot_chunk_size = 1000;
  // What a previous run reported through on_snapshot_progress (ignored for
  // a new slot). With an existing slot, unfinished tables are read again from
  // their last key on a fresh snapshot; the stream then replays everything
  // since the slot's consistent point, so the result converges. nullopt with
  // an existing slot means "unknown" (the run may have died mid-snapshot):
  // every table is read again, trading duplicates for never losing rows.
  std::optional<SnapshotProgress> snapshot_progress;
  std::function<void(const SnapshotProgress&)> on_snapshot_progress;
  int snapshot_max_chunks = 0;  // tests: interrupt the snapshot after N chunks
  std::chrono::milliseconds status_interval{1000};
  // How long Start waits for a slot still held by an earlier connection (a
  // stopped worker whose walsender has not yet noticed) before failing.
  std::chrono::milliseconds slot_wait{30000};
  // Every interval the source writes a non-transactional logical message
  // (prefix "sluice", pg_logical_emit_message) on its normal connection, so
  // a slot whose tables see no writes still receives WAL it may confirm, and
  // then reads its slot's health (slot_status()). 0: no heartbeats, the
  // health is still read every 10 s. Heartbeats never reach the sink.
  std::chrono::milliseconds heartbeat_interval{10000};
  // Called when the slot was lost (its WAL removed, e.g. past
  // max_slot_wal_keep_size) and has been dropped to be created again; every
  // table is then sent as a truncate event and read again (a re-snapshot,
  // persisted through on_snapshot_progress before the slot is dropped, so a
  // restarted source finishes it). `reason` is in the server's words.
  std::function<void(const std::string& slot, const std::string& reason)> on_slot_lost;
  // Called with a table's column changes seen in the stream (DDL at the
  // source: a column dropped, renamed, or of another type; see
  // relation_diff.h), before any row of the new shape reaches the sink.
  ChangeAssembler::ColumnChangesCallback on_column_changes;
};

class PostgresSource {
 public:
  PostgresSource(PostgresSourceOptions options, ChangeSink* sink,
                 ProductionMetrics* metrics = nullptr);
  // The sink must outlive the source (the destructor unhooks the ack callback).
  ~PostgresSource();

  // Publication, slot, snapshot (when due), then START_REPLICATION.
  common::Status Start();
  // Processes what arrives within `max_wait` and sends status updates as due.
  common::Status Poll(std::chrono::milliseconds max_wait);
  // Polls until `stop` becomes true or the stream fails.
  common::Status Run(const std::atomic<bool>& stop);
  // Closes the stream; only what was acknowledged is confirmed.
  void Stop();

  // Highest WAL position the sink acknowledged.
  Lsn acknowledged_lsn() const { return acked_.load(); }
  // Highest flush position sent to the server.
  Lsn confirmed_lsn() const { return confirmed_; }
  bool snapshot_done() const { return snapshot_done_; }
  const SnapshotProgress& snapshot_progress() const { return progress_; }
  // The slot's health as last read (every heartbeat interval), lag in
  // seconds included; nullopt before the first reading.
  const std::optional<SlotStatus>& slot_status() const { return slot_status_; }
  // Writes a heartbeat (when enabled) and reads the slot's health now.
  // Failures are logged, never fatal: the stream goes on without them.
  void Beat();

  // Drops a slot (waiting for its stream to end) through a replication connection.
  static common::Status DropSlot(const std::string& url, const std::string& slot);

 private:
  common::Status EnsurePublication();
  common::Status HandleCopyData(const std::string& data);
  common::Status SendStatus(bool reply_requested);
  Lsn FlushPosition() const;
  common::Status StartOnce(bool* slot_lost);
  common::Status AwaitSlotReleased();
  common::Status DropLostSlot(const std::string& reason);

  PostgresSourceOptions options_;
  ChangeSink* sink_;
  ProductionMetrics* metrics_;

  std::unique_ptr<pqxx::connection> catalog_;
  std::unique_ptr<ReplicationConnection> repl_;
  SchemaCache schemas_;
  PgOutputDecoder decoder_;
  std::unique_ptr<ChangeAssembler> assembler_;
  SnapshotProgress progress_;
  bool snapshot_done_ = false;

  std::atomic<Lsn> acked_{0};
  Lsn received_ = 0;       // highest WAL position seen on the stream
  Lsn idle_position_ = 0;  // keepalive position confirmed while nothing was in flight
  Lsn confirmed_ = 0;
  std::chrono::steady_clock::time_point last_status_{};
  std::chrono::steady_clock::time_point last_beat_{};
  WalClock wal_clock_;
  std::optional<SlotStatus> slot_status_;
  bool beat_failure_logged_ = false;
  bool heartbeat_failure_logged_ = false;
  bool lost_slot_dropped_ = false;  // every table is read again from the new slot
};

}  // namespace sluice::connectors::postgres
