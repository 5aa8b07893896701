// The MariaDB/MySQL CDC source (connector type mysql-source): pre-flight,
// an initial snapshot in one consistent-snapshot transaction whose binlog
// position MariaDB reports (binlog_snapshot_file/position), then the binlog
// read as a replica through libmariadb's replication API, decoded into the
// same change events as the PostgreSQL source (row_decoder.h).
//
// MySQL has no slot: the position is the source's own state. It reaches
// on_position only once the sink acknowledged every change before it, so
// the caller persists only what is durable and a restart (start_position)
// replays rather than loses.
//
// Single-threaded like PostgresSource: the caller drives Poll()/Run(); the
// sink's ack callback may come from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "connectors/change_sink.h"
#include "connectors/mysql/binlog_position.h"
#include "connectors/mysql/mysql_connection.h"
#include "connectors/mysql/row_decoder.h"
#include "connectors/postgres/relation_diff.h"
#include "connectors/postgres/snapshot_reader.h"
#include "connectors/production_metrics.h"
#include "launch/source_launch.h"

struct st_mariadb_rpl;
struct st_mariadb_rpl_event;

namespace sluice::connectors::mysql {

using SnapshotProgress = postgres::SnapshotProgress;
using TableProgress = postgres::TableProgress;

// Everything a mysql-source worker runs with: one typed struct, which the
// launch contract carries as its `source` (dataflow/worker_launch.h).
struct MysqlSourceOptions {
  MysqlEndpoint endpoint;  // host, port, user, password (database unused)
  // The database the chosen tables live in: the events' namespace
  // (TableId.schema, the topic's middle part). datamodel.source_schema
  // stays NULL for MySQL, as the spec says.
  std::string database;
  std::vector<std::string> tables;
  // Our replica server id: unique among the server's replicas and unlike
  // the server's own @@server_id (pre-flight checks the latter).
  std::uint32_t server_id = 0;
  // The name this replica registers under (SHOW SLAVE HOSTS' Host): one per
  // connector shard, so a replica of another name holding our server_id is
  // a collision (refused in Start) while our own previous connection is not.
  std::string replica_name = "sluice";
  std::string topic_prefix = "sluice";
  bool snapshot = true;  // read the tables first when there is no start_position
  int snapshot_chunk_size = 1000;
  // Where a previous run's acknowledged changes end (its last on_position);
  // nullopt: a new source (snapshot, or the server's current position).
  std::optional<BinlogPosition> start_position;
  // A snapshot a previous run left unfinished: its binlog position and its
  // progress. The unfinished tables are read again from their last key
  // (on a fresh snapshot) and the stream starts at the old position, so the
  // result converges as with PostgreSQL.
  std::optional<BinlogPosition> snapshot_position;
  std::optional<SnapshotProgress> snapshot_progress;
  // With start_position: the tables whose rows were read by then (the
  // tables of the run that reported it). Any other table of `tables` was
  // added since, and its rows are read before streaming. nullopt: unknown
  // (an older state), taken as all of them.
  std::optional<std::vector<std::string>> snapshotted_tables;
  // When the server purged the binlog file holding start_position (or
  // snapshot_position): false (the default) fails Start with
  // FailedPrecondition naming the purge and the way out, so nothing is lost
  // silently; true drops the old position and snapshots the tables afresh,
  // each table's rows preceded by a truncate event (rows deleted in the lost
  // changes must not survive in the targets).
  bool resnapshot_when_purged = false;
  // Called when the source starts over from a new snapshot (a purged
  // position, or a partial row image, with resnapshot_when_purged), with
  // why: the targets' tables are about to be truncated and read again.
  std::function<void(const std::string& why)> on_resnapshot;
  // Resume by MariaDB GTID position when the saved position has one (it
  // names transactions, not a file, so it survives binlog files renamed or
  // reset); false: by file:pos only, as on servers without MariaDB GTIDs.
  bool resume_by_gtid = true;
  // A table without a primary key (nor a UNIQUE key on NOT NULL columns):
  // false keys it by all its columns (the target then holds equal rows
  // once); true refuses it, at the start and when the stream meets one.
  bool refuse_tables_without_key = false;
  // Called after each durable snapshot chunk, with the snapshot's position.
  std::function<void(const BinlogPosition&, const SnapshotProgress&)> on_snapshot_progress;
  // Called when a table's columns change mid-stream (a DDL seen through the
  // table maps), as the PostgreSQL source reports them: added, dropped,
  // renamed (told by position, as relation_diff.h does), widened or retyped.
  std::function<void(const TableId&, const std::vector<postgres::ColumnChange>&)> on_column_changes;
  // Called with each newly acknowledged position (to persist it).
  std::function<void(const BinlogPosition&)> on_position;
  // Server heartbeats on an idle stream (and the longest a Poll blocks).
  std::chrono::milliseconds heartbeat_interval{1000};
};

// The runtime options of the launch contract's mysql source
// (launch/source_launch.h, which checks it); the state (positions) is not
// part of it.
MysqlSourceOptions MysqlSourceOptionsFromLaunch(const launch::MysqlSourceLaunch& source);
// The same from the `source` JSON object: every problem in one InvalidArgument.
common::Result<MysqlSourceOptions> MysqlSourceOptionsFromJson(const nlohmann::json& source);
nlohmann::json MysqlSourceOptionsToJson(const MysqlSourceOptions& options);

// Pre-flight: every server setting and grant the source needs, each missing
// one named with what to set, in one FailedPrecondition.
common::Status CheckSource(MysqlConnection& conn, const MysqlSourceOptions& options);

class MysqlSource {
 public:
  MysqlSource(MysqlSourceOptions options, ChangeSink* sink, ProductionMetrics* metrics = nullptr);
  ~MysqlSource();

  // Pre-flight, snapshot (when due), then the binlog stream.
  common::Status Start();
  // Processes events for up to about `max_wait` (a fetch may block until
  // the next server heartbeat) and reports acknowledged positions.
  common::Status Poll(std::chrono::milliseconds max_wait);
  common::Status Run(const std::atomic<bool>& stop);
  void Stop();

  // The last position reported through on_position (empty before any).
  const BinlogPosition& confirmed_position() const { return confirmed_; }
  bool snapshot_done() const { return snapshot_done_; }
  // Whether the stream was opened by GTID position rather than file:pos.
  bool opened_by_gtid() const { return by_gtid_; }

 private:
  struct Table {
    TableMap map;
    TableSchema schema;
    bool chosen = false;
    // For a sink that takes JSON text: the columns in name order (a JSON
    // object's member order) and their names as JSON strings.
    std::vector<std::size_t> name_order;
    std::vector<std::string> json_names;
  };
  // Reads `tables` in one consistent snapshot; its position in `position`.
  // Progress goes to on_snapshot_progress when `report_progress`.
  common::Status Snapshot(BinlogPosition* position, const std::vector<std::string>& tables,
                          bool report_progress);
  common::Status OpenStream(const BinlogPosition& from);
  // FailedPrecondition when another replica of the server holds our server_id.
  common::Status CheckServerIdFree();
  // Ok when the server still holds `from`'s binlog file (or, for a GTID
  // position, every transaction after it); FailedPrecondition naming the
  // purge and the re-snapshot path otherwise (*purged set).
  common::Status CheckPositionAvailable(const BinlogPosition& from, bool* purged);
  // Whether the server still has `file` among its binlogs.
  common::Result<bool> HasBinlog(const std::string& file);
  // The GTID position of file:pos (BINLOG_GTID_POS; empty before the
  // server's first GTID); nullopt when unknown (not MariaDB, or the server
  // no longer has the file).
  std::optional<std::string> GtidAt(const BinlogPosition& at);
  // Start's second half: the snapshot (or the saved position), then the
  // stream opened where it ends.
  common::Status Begin();
  // A partial row image met with resnapshot_when_purged on: the stream
  // closed, each table truncated and read again from a new snapshot, and
  // the stream reopened past the event (which cannot be read as the
  // source has it).
  common::Status ResnapshotPast(const common::Status& why);
  // The saved positions dropped: Begin then snapshots afresh, each table's
  // rows preceded by a truncate.
  void ForgetPositionsForResnapshot();
  common::Status OnQuery(st_mariadb_rpl_event* event, Lsn end);
  common::Status HandleEvent(st_mariadb_rpl_event* event);
  common::Status OnTableMap(st_mariadb_rpl_event* event);
  common::Status OnRows(st_mariadb_rpl_event* event);
  // An insert's key and after image as JSON text (ChangeSink::TakesJsonText).
  void RenderInsert(const Table& table, const TextRows& rows, std::size_t row,
                    ChangeEvent& event) const;
  common::Status EndGroup(Lsn end);
  common::Status SendIfCaughtUp();
  common::Status Announce(TableSchema& schema);
  void ReportPosition();
  // What the table map does not say right, from information_schema (the
  // current schema), cached per table until the next DDL.
  struct ColumnFacts {
    std::set<std::string> json;                             // MariaDB JSON (a LONGTEXT)
    std::map<std::string, bool> is_unsigned;                // a table with generated columns
    std::map<std::string, ColumnInfo::TextForm> text_form;  // UUID, INET6, INET4
  };
  common::Result<ColumnFacts> Facts(const std::string& table);
  // The character set of a collation id (information_schema.COLLATIONS,
  // read once); empty when the server does not know it.
  common::Result<std::string> CharsetOf(std::uint32_t collation);
  std::map<std::uint32_t, std::string> charsets_;

  MysqlSourceOptions options_;
  ChangeSink* sink_;
  ProductionMetrics* metrics_;
  std::unique_ptr<MysqlConnection> catalog_;
  std::unique_ptr<MysqlConnection> stream_conn_;
  st_mariadb_rpl* rpl_ = nullptr;
  st_mariadb_rpl_event* event_ = nullptr;
  std::set<std::string> chosen_;

  std::map<std::uint64_t, Table> tables_;  // by binlog table id
  std::map<TableId, TableSchema> schemas_;
  std::map<std::string, ColumnFacts> column_facts_;  // by table name

  std::string file_;  // current binlog file
  // The stream was opened by GTID (@slave_connect_state), not file:pos.
  bool by_gtid_ = false;
  // gtid_confirmed_ is the whole GTID position (every domain): positions
  // carry it. False when the start's was unknown or resume_by_gtid is off.
  bool gtid_known_ = false;
  // The GTID position of confirmed_, and the transactions read since, each
  // with the position after its commit: folded in once acknowledged.
  GtidSet gtid_confirmed_;
  std::optional<Gtid> group_gtid_;
  std::deque<std::pair<Lsn, Gtid>> gtid_pending_;
  // Positions at or before this are not reported again (the start's).
  Lsn confirmed_floor_ = 0;
  bool in_group_ = false;
  Lsn group_start_ = 0;
  std::int64_t group_time_micros_ = 0;
  Lsn last_checkpoint_ = 0;
  Lsn caught_up_at_ = 0;  // the last checkpoint SendIfCaughtUp looked at
  Lsn idle_position_ = 0;
  std::atomic<Lsn> acked_{0};
  BinlogPosition confirmed_;
  bool snapshot_done_ = false;
  // A re-snapshot after a purged position: each table's rows are preceded by
  // a truncate, so rows deleted in the lost changes do not survive.
  bool truncate_before_snapshot_ = false;
  // The last failure was an event only a new snapshot gets past: a partial
  // row image, or a statement-based change to a chosen table.
  bool gets_past_by_resnapshot_ = false;

  // XA: a prepared transaction's changes are held until its XA COMMIT
  // (published then, in commit order) or XA ROLLBACK (dropped), and the
  // position reported stays before its GTID event, so a restart reads the
  // prepare again. Held in memory, by XID.
  struct HeldXa {
    std::vector<ChangeEvent> changes;
    Lsn before = 0;  // where its GTID event began
  };
  // Publishes `e`, or holds it while an XA prepare is being read.
  common::Status Emit(ChangeEvent& e);
  // A stop only a new snapshot gets past (`what` happened at an event),
  // saying how to get past it.
  common::Status StopForResnapshot(const std::string& what);
  common::Status OnXaEnd(bool commit, Lsn end, std::int64_t time_micros);
  std::map<std::string, HeldXa> held_xa_;
  bool reading_xa_prepare_ = false;
  std::string xa_id_;  // the XID of the group being read, if an XA one
  HeldXa xa_being_prepared_;
  Lsn previous_end_ = 0;  // where the event being handled began
};

}  // namespace sluice::connectors::mysql
