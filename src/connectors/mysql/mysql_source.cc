#include "connectors/mysql/mysql_source.h"

#include <fmt/format.h>
#include <mysql.h>
// After mysql.h, which it needs.
#include <mariadb_rpl.h>
#include <poll.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <utility>

#include "connectors/mysql/table_reader.h"
#include "connectors/topic_naming.h"
#include "launch/source_launch.h"

namespace sluice::connectors::mysql {

using common::Result;
using common::Status;
using nlohmann::json;

namespace {

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

Lsn PositionLsn(const std::string& file, std::uint64_t pos) {
  return BinlogPosition{file, pos, ""}.ToLsn();
}

std::string KeylessRefused(const std::string& database, const std::string& table) {
  return fmt::format(
      "table {}.{} has no primary key (nor a UNIQUE key on NOT NULL columns) and "
      "tables_without_key is refuse: add a primary key, or set tables_without_key to full to "
      "replicate it keyed by all its columns (equal rows are then held once in the target)",
      database, table);
}

}  // namespace

MysqlSourceOptions MysqlSourceOptionsFromLaunch(const launch::MysqlSourceLaunch& s) {
  MysqlSourceOptions o;
  o.endpoint.host = s.host;
  o.endpoint.port = s.port;
  o.endpoint.user = s.user;
  o.endpoint.password = s.password;
  o.database = s.database;
  for (const auto& t : s.tables) o.tables.push_back(t.table);
  o.server_id = s.server_id;
  o.topic_prefix = s.topic_prefix;
  if (s.heartbeat_interval_ms)
    o.heartbeat_interval = std::chrono::milliseconds(*s.heartbeat_interval_ms);
  if (s.snapshot_chunk_size) o.snapshot_chunk_size = static_cast<int>(*s.snapshot_chunk_size);
  if (s.snapshot) o.snapshot = *s.snapshot;
  o.resnapshot_when_purged = s.resnapshot_when_purged;
  if (s.resume_by_gtid) o.resume_by_gtid = *s.resume_by_gtid;
  if (s.replica_name) o.replica_name = *s.replica_name;
  o.refuse_tables_without_key = s.tables_without_key.value_or("full") == "refuse";
  return o;
}

Result<MysqlSourceOptions> MysqlSourceOptionsFromJson(const json& s) {
  auto parsed = launch::MysqlSourceLaunch::FromJson(s);
  if (!parsed.ok()) return parsed.status();
  return MysqlSourceOptionsFromLaunch(*parsed);
}

json MysqlSourceOptionsToJson(const MysqlSourceOptions& o) {
  json tables = json::array();
  for (const auto& t : o.tables) tables.push_back({{"schema", o.database}, {"table", t}});
  return {{"type", "mysql"},
          {"host", o.endpoint.host},
          {"port", o.endpoint.port},
          {"user", o.endpoint.user},
          {"password", o.endpoint.password},
          {"database", o.database},
          {"server_id", o.server_id},
          {"replica_name", o.replica_name},
          {"topic_prefix", o.topic_prefix},
          {"tables", tables},
          {"heartbeat_interval_ms", o.heartbeat_interval.count()},
          {"snapshot", o.snapshot},
          {"snapshot_chunk_size", o.snapshot_chunk_size},
          {"resnapshot_when_purged", o.resnapshot_when_purged},
          {"resume_by_gtid", o.resume_by_gtid},
          {"tables_without_key", o.refuse_tables_without_key ? "refuse" : "full"}};
}

Status CheckSource(MysqlConnection& conn, const MysqlSourceOptions& options) {
  std::vector<std::string> problems;
  auto vars = conn.Query(
      "SELECT @@GLOBAL.log_bin, @@GLOBAL.binlog_format, @@GLOBAL.binlog_row_image, "
      "@@GLOBAL.binlog_row_metadata, @@GLOBAL.server_id, CURRENT_USER()");
  if (!vars.ok()) return vars.status();
  if (vars->empty()) return common::Unavailable("pre-flight: no answer to the settings query");
  const auto& v = vars->front();
  std::string log_bin = Upper(TextOrEmpty(v, 0)), format = Upper(TextOrEmpty(v, 1)),
              image = Upper(TextOrEmpty(v, 2)), metadata = Upper(TextOrEmpty(v, 3)),
              user = TextOrEmpty(v, 5);
  if (log_bin != "1" && log_bin != "ON")
    problems.push_back(
        "binary logging is off (log_bin): start the server with log_bin (e.g. log_bin = "
        "mysql-bin in its configuration)");
  if (format != "ROW")
    problems.push_back(fmt::format(
        "binlog_format is {}: set binlog_format = ROW (SET GLOBAL binlog_format = 'ROW', and in "
        "the server's configuration)",
        format));
  if (image != "FULL")
    problems.push_back(fmt::format(
        "binlog_row_image is {}: set binlog_row_image = FULL (SET GLOBAL binlog_row_image = "
        "'FULL', and in the server's configuration)",
        image));
  if (metadata != "FULL")
    problems.push_back(fmt::format(
        "binlog_row_metadata is {}: set binlog_row_metadata = FULL (SET GLOBAL "
        "binlog_row_metadata = 'FULL', and in the server's configuration), so row events name "
        "their columns",
        metadata.empty() ? "unknown" : metadata));
  if (options.server_id == 0)
    problems.push_back("server_id: the connector needs a replica server id of its own (not 0)");
  else if (TextOrEmpty(v, 4) == std::to_string(options.server_id))
    problems.push_back(fmt::format(
        "server_id {} is the source server's own @@server_id: choose another replica server id",
        options.server_id));

  auto privs = conn.Query("SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES");
  if (!privs.ok()) return privs.status();
  std::set<std::string> granted;
  for (const auto& r : *privs) granted.insert(Upper(TextOrEmpty(r, 0)));
  auto grant = [&](const std::string& what, const std::string& on) {
    return fmt::format("the user {} lacks {}: GRANT {} ON {} TO {}", user, what, what, on, user);
  };
  if (!granted.count("REPLICATION SLAVE")) problems.push_back(grant("REPLICATION SLAVE", "*.*"));
  // MariaDB 10.5 renamed REPLICATION CLIENT to BINLOG MONITOR (the old name
  // is an alias).
  if (!granted.count("REPLICATION CLIENT") && !granted.count("BINLOG MONITOR"))
    problems.push_back(grant("REPLICATION CLIENT", "*.*"));
  if (!granted.count("SELECT")) {
    auto schema = conn.Query(fmt::format(
        "SELECT 1 FROM information_schema.SCHEMA_PRIVILEGES WHERE TABLE_SCHEMA = {} AND "
        "PRIVILEGE_TYPE = 'SELECT'",
        conn.Quote(options.database)));
    if (!schema.ok()) return schema.status();
    if (schema->empty()) {
      for (const auto& t : options.tables) {
        auto table = conn.Query(fmt::format(
            "SELECT 1 FROM information_schema.TABLE_PRIVILEGES WHERE TABLE_SCHEMA = {} AND "
            "TABLE_NAME = {} AND PRIVILEGE_TYPE = 'SELECT'",
            conn.Quote(options.database), conn.Quote(t)));
        if (!table.ok()) return table.status();
        if (table->empty()) {
          problems.push_back(grant("SELECT", MysqlConnection::QuoteName(options.database) + ".*"));
          break;
        }
      }
    }
  }
  if (problems.empty()) {
    auto existing = conn.Query(
        fmt::format("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = {}",
                    conn.Quote(options.database)));
    if (!existing.ok()) return existing.status();
    std::set<std::string> names;
    for (const auto& r : *existing) names.insert(TextOrEmpty(r, 0));
    for (const auto& t : options.tables)
      if (!names.count(t))
        problems.push_back(fmt::format("table {}.{} does not exist (or the user cannot see it)",
                                       options.database, t));
  }
  if (problems.empty() && options.refuse_tables_without_key) {
    // PRI marks the primary key's columns, or those of the unique key the
    // server promotes in its place (ReadTableShape keys by the same).
    auto keyed = conn.Query(fmt::format(
        "SELECT DISTINCT TABLE_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND "
        "COLUMN_KEY = 'PRI'",
        conn.Quote(options.database)));
    if (!keyed.ok()) return keyed.status();
    std::set<std::string> names;
    for (const auto& r : *keyed) names.insert(TextOrEmpty(r, 0));
    for (const auto& t : options.tables)
      if (!names.count(t)) problems.push_back(KeylessRefused(options.database, t));
  }
  if (problems.empty()) return Status::Ok();
  std::string all;
  for (const auto& p : problems) all += (all.empty() ? "" : "; ") + p;
  return common::FailedPrecondition(all);
}

MysqlSource::MysqlSource(MysqlSourceOptions options, ChangeSink* sink, ProductionMetrics* metrics)
    : options_(std::move(options)), sink_(sink), metrics_(metrics) {
  chosen_.insert(options_.tables.begin(), options_.tables.end());
}

MysqlSource::~MysqlSource() {
  Stop();
  sink_->SetAckCallback(nullptr);
}

Result<MysqlSource::ColumnFacts> MysqlSource::Facts(const std::string& table) {
  auto it = column_facts_.find(table);
  if (it != column_facts_.end()) return it->second;
  auto json_columns = MariadbJsonColumns(*catalog_, options_.database, table);
  if (!json_columns.ok()) return json_columns.status();
  auto is_unsigned = MariadbGeneratedTableUnsigned(*catalog_, options_.database, table);
  if (!is_unsigned.ok()) return is_unsigned.status();
  auto text_form = MariadbTextFormColumns(*catalog_, options_.database, table);
  if (!text_form.ok()) return text_form.status();
  ColumnFacts facts{std::move(*json_columns), std::move(*is_unsigned), std::move(*text_form)};
  column_facts_[table] = facts;
  return facts;
}

Result<std::string> MysqlSource::CharsetOf(std::uint32_t collation) {
  if (charsets_.empty()) {
    // MariaDB 10.10+ also lists collations without an id of their own.
    auto rows = catalog_->Query(
        "SELECT ID, CHARACTER_SET_NAME FROM information_schema.COLLATIONS WHERE ID IS NOT NULL");
    if (!rows.ok()) return rows.status();
    for (const auto& r : *rows) {
      std::string id = TextOrEmpty(r, 0);
      std::uint32_t n = 0;
      auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
      if (ec == std::errc() && end == id.data() + id.size()) charsets_[n] = TextOrEmpty(r, 1);
    }
  }
  auto it = charsets_.find(collation);
  return it == charsets_.end() ? std::string() : it->second;
}

Status MysqlSource::Announce(TableSchema& schema) {
  auto known = schemas_.find(schema.table);
  if (known != schemas_.end() && known->second.SameShape(schema)) {
    schema.version = known->second.version;
    return Status::Ok();
  }
  schema.version = known == schemas_.end() ? 1 : known->second.version + 1;
  if (known != schemas_.end() && options_.on_column_changes) {
    auto changes = postgres::DiffRelation(known->second.columns, schema.columns);
    if (!changes.empty()) options_.on_column_changes(schema.table, changes);
  }
  schemas_[schema.table] = schema;
  return sink_->SchemaChanged(schema);
}

Status MysqlSource::Start() {
  if (options_.tables.empty()) return common::InvalidArgument("no tables chosen");
  if (options_.database.empty()) return common::InvalidArgument("no database given");
  auto conn = MysqlConnection::Connect(options_.endpoint);
  if (!conn.ok()) return conn.status();
  catalog_ = std::move(*conn);
  SLUICE_RETURN_IF_ERROR(CheckSource(*catalog_, options_));

  sink_->SetAckCallback([this](Lsn lsn) {
    Lsn cur = acked_.load();
    while (lsn > cur && !acked_.compare_exchange_weak(cur, lsn)) {
    }
  });

  // A saved position whose binlog the server purged: the changes after it
  // are gone. Fail loudly, or (when asked) start over with a new snapshot.
  for (auto* saved : {&options_.start_position, &options_.snapshot_position}) {
    if (!*saved) continue;
    bool purged = false;
    Status available = CheckPositionAvailable(**saved, &purged);
    if (available.ok()) continue;
    if (!purged || !options_.resnapshot_when_purged) return available;
    spdlog::warn(
        "mysql source: {}; resnapshot_when_purged is on: truncating each table in the targets "
        "and snapshotting afresh",
        available.message());
    if (options_.on_resnapshot) options_.on_resnapshot(available.message());
    ForgetPositionsForResnapshot();
  }
  return Begin();
}

Status MysqlSource::Begin() {
  BinlogPosition from;
  if (options_.start_position) {
    from = *options_.start_position;
    // Tables added since the rows were read: theirs are read now, and the
    // stream from the saved position replays their changes over them (in
    // order, so each ends as the source has it). A kill before the position
    // is next reported reads them again.
    if (options_.snapshot && options_.snapshotted_tables) {
      std::vector<std::string> added;
      for (const auto& t : options_.tables)
        if (std::find(options_.snapshotted_tables->begin(), options_.snapshotted_tables->end(),
                      t) == options_.snapshotted_tables->end())
          added.push_back(t);
      if (!added.empty()) {
        spdlog::info("mysql source: reading the rows of the tables added since: {}",
                     fmt::join(added, ", "));
        BinlogPosition unused;
        SLUICE_RETURN_IF_ERROR(Snapshot(&unused, added, /*report_progress=*/false));
      }
    }
    snapshot_done_ = true;
  } else if (options_.snapshot) {
    SLUICE_RETURN_IF_ERROR(Snapshot(&from, options_.tables, /*report_progress=*/true));
    snapshot_done_ = true;
  } else {
    auto status = catalog_->Query("SHOW MASTER STATUS");
    if (!status.ok()) return status.status();
    if (status->empty())
      return common::FailedPrecondition("SHOW MASTER STATUS: binary logging is off");
    from = {TextOrEmpty(status->front(), 0), 0};
    std::from_chars(TextOrEmpty(status->front(), 1).data(),
                    TextOrEmpty(status->front(), 1).data() + TextOrEmpty(status->front(), 1).size(),
                    from.pos);
    snapshot_done_ = true;
  }
  auto have_file = HasBinlog(from.file);
  if (!have_file.ok()) return have_file.status();
  // The GTID position of a position saved without one (an older state, or
  // a server that had no GTID yet), while its file is still there. Unknown
  // (not MariaDB, or the file is gone): positions carry none, and resume by
  // file:pos.
  bool gtid_known = !from.gtid.empty();
  if (!gtid_known && *have_file)
    if (auto at = GtidAt(from)) {
      from.gtid = *at;
      gtid_known = true;
    }
  auto gtids = ParseGtidSet(from.gtid);
  if (!gtids.ok()) {
    spdlog::warn("mysql source: ignoring the saved GTID position: {}", gtids.status().message());
    gtid_known = false;
    gtids = GtidSet{};
  }
  gtid_known_ = gtid_known && options_.resume_by_gtid;
  if (!gtid_known_) from.gtid.clear();
  gtid_confirmed_ = *gtids;
  // Nothing before `from` needs replaying: it is the first confirmed
  // position. Read by GTID from a file the server no longer names (the
  // availability check passed on the GTIDs), positions restart from the
  // stream's own.
  Lsn floor = *have_file ? from.ToLsn() : 0;
  confirmed_ = from;
  confirmed_floor_ = floor;
  if (options_.on_position) options_.on_position(from);
  acked_ = floor;
  last_checkpoint_ = floor;
  SLUICE_RETURN_IF_ERROR(CheckServerIdFree());
  SLUICE_RETURN_IF_ERROR(OpenStream(from));
  if (by_gtid_)
    spdlog::info("mysql source: resuming {} by GTID position {}", options_.database, from.gtid);
  spdlog::info("mysql source: streaming {} from {}", options_.database, from.ToString());
  return Status::Ok();
}

Status MysqlSource::CheckServerIdFree() {
  // Server_id, Host, Port, Master_id: registered replicas only.
  auto hosts = catalog_->Query("SHOW SLAVE HOSTS");
  if (!hosts.ok()) {
    // MariaDB 10.5+ lists replicas only to REPLICATION MASTER ADMIN, which
    // the documented grants do not include: go on unchecked rather than fail.
    if (hosts.status().message().find("Access denied") == std::string::npos) return hosts.status();
    spdlog::warn(
        "mysql source: cannot list the server's replicas ({}); server_id {} is not checked for "
        "another replica using it (GRANT REPLICATION MASTER ADMIN to check)",
        hosts.status().message(), options_.server_id);
    return Status::Ok();
  }
  // The other replica is not named: it may be another team's connector.
  for (const auto& r : *hosts)
    if (TextOrEmpty(r, 0) == std::to_string(options_.server_id) &&
        TextOrEmpty(r, 1) != options_.replica_name)
      return common::FailedPrecondition(fmt::format(
          "server_id {} is already used by another replica of this server: each connector "
          "shard needs a server id of its own; set the connector's server_id to another value",
          options_.server_id));
  return Status::Ok();
}

Result<bool> MysqlSource::HasBinlog(const std::string& file) {
  auto logs = catalog_->Query("SHOW BINARY LOGS");
  if (!logs.ok()) return logs.status();
  for (const auto& r : *logs)
    if (TextOrEmpty(r, 0) == file) return true;
  return false;
}

std::optional<std::string> MysqlSource::GtidAt(const BinlogPosition& at) {
  auto rows = catalog_->Query(
      fmt::format("SELECT BINLOG_GTID_POS({}, {})", catalog_->Quote(at.file), at.pos));
  if (!rows.ok() || rows->empty() || rows->front().empty() || !rows->front()[0])
    return std::nullopt;
  std::string gtid = *rows->front()[0];
  if (!ParseGtidSet(gtid).ok()) return std::nullopt;
  return gtid;
}

Status MysqlSource::Snapshot(BinlogPosition* position, const std::vector<std::string>& tables,
                             bool report_progress) {
  auto opened = MysqlConnection::Connect(options_.endpoint);
  if (!opened.ok()) return opened.status();
  auto& conn = **opened;
  SLUICE_RETURN_IF_ERROR(conn.Exec("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"));
  SLUICE_RETURN_IF_ERROR(conn.Exec("START TRANSACTION WITH CONSISTENT SNAPSHOT"));
  BinlogPosition at;
  if (options_.snapshot_position) {
    at = *options_.snapshot_position;
  } else {
    // MariaDB reports the binlog position its consistent snapshot matches,
    // with no lock taken.
    auto status = conn.Query("SHOW STATUS LIKE 'binlog_snapshot_%'");
    if (!status.ok()) return status.status();
    for (const auto& r : *status) {
      if (TextOrEmpty(r, 0) == "Binlog_snapshot_file") at.file = TextOrEmpty(r, 1);
      if (TextOrEmpty(r, 0) == "Binlog_snapshot_position") {
        auto s = TextOrEmpty(r, 1);
        std::from_chars(s.data(), s.data() + s.size(), at.pos);
      }
    }
    if (at.file.empty())
      return common::FailedPrecondition(
          "the server reports no binlog_snapshot_file: a consistent snapshot position needs "
          "MariaDB (MySQL sources are not supported yet)");
  }
  std::vector<TableId> ids;
  for (const auto& t : tables) ids.push_back({options_.database, t});
  // A re-snapshot after a purge: the target may hold rows deleted in the
  // changes that were lost, so each table starts empty. The progress keeps
  // which tables still need their truncate, so a run killed mid-way still
  // truncates the tables it had not reached.
  SnapshotProgress progress =
      truncate_before_snapshot_
          ? SnapshotProgress::Resnapshot(ids)
          : SnapshotProgress::For(ids, options_.snapshot_progress.value_or(SnapshotProgress{}));
  for (auto& tp : progress.tables) {
    if (tp.done) continue;
    const std::string& name = tp.table.name;
    auto shape = ReadTableShape(conn, options_.database, name);
    if (!shape.ok()) return shape.status();
    auto& columns = shape->columns;
    const auto& keys = shape->keys;
    bool any_key = !keys.empty();
    TableSchema schema;
    schema.table = tp.table;
    schema.topic = TopicForTable(options_.topic_prefix, schema.table);
    for (auto& c : columns) {
      if (!any_key) c.key = true;
      schema.columns.push_back({c.name, 0, -1, PostgresTypeName(c), c.key});
    }
    SLUICE_RETURN_IF_ERROR(Announce(schema));
    if (tp.truncate_first) {
      auto e = ChangeEvent::TruncateOf(schema);
      SLUICE_RETURN_IF_ERROR(sink_->Emit(e));
      if (metrics_) metrics_->Record(e.topic, e.op);
      // Reported (so not sent again) only with the first chunk's flush.
      tp.truncate_first = false;
    }
    std::string key_list;
    for (const auto& k : keys)
      key_list += (key_list.empty() ? "" : ", ") + MysqlConnection::QuoteName(k);
    auto emit = [&](const std::vector<MysqlRow>& rows) -> Status {
      for (const auto& row : rows) {
        ChangeEvent e;
        e.op = common::ChangeOp::kRead;
        e.table = schema.table;
        e.topic = schema.topic;
        e.schema_version = schema.version;
        e.after = json::object();
        e.key = json::object();
        for (std::size_t i = 0; i < columns.size(); ++i) {
          json value = row[i] ? TextValue(columns[i], *row[i]) : json(nullptr);
          if (CarriedAsText(columns[i]) && row[i]) e.text_columns.push_back(columns[i].name);
          if (columns[i].key) e.key[columns[i].name] = value;
          e.after[columns[i].name] = std::move(value);
        }
        SLUICE_RETURN_IF_ERROR(sink_->Emit(e));
        if (metrics_) metrics_->Record(e.topic, e.op);
      }
      tp.rows += static_cast<std::int64_t>(rows.size());
      return Status::Ok();
    };
    const std::string select =
        fmt::format("SELECT {} FROM {}", shape->select_list, shape->table_sql);
    if (keys.empty()) {
      // No key to resume from: one pass, read as the server sends it (never
      // the whole table in memory). A kill reads it all again, which changes
      // nothing: the target holds such a table's equal rows once.
      tp.rows = 0;
      auto emit_and_flush = [&](const std::vector<MysqlRow>& rows) {
        SLUICE_RETURN_IF_ERROR(emit(rows));
        return sink_->Flush();
      };
      SLUICE_RETURN_IF_ERROR(conn.QueryEach(
          select, static_cast<std::size_t>(options_.snapshot_chunk_size), emit_and_flush));
      tp.done = true;
      SLUICE_RETURN_IF_ERROR(sink_->Flush());
      if (report_progress && options_.on_snapshot_progress)
        options_.on_snapshot_progress(at, progress);
      continue;
    }
    while (!tp.done) {
      std::string sql = select;
      if (!tp.last_key.empty()) {
        if (tp.last_key.size() != keys.size())
          return common::InvalidArgument(
              fmt::format("snapshot progress of {} has {} key values, the key {} columns",
                          tp.table.Qualified(), tp.last_key.size(), keys.size()));
        std::string bound;
        for (const auto& k : tp.last_key) bound += (bound.empty() ? "" : ", ") + conn.Quote(k);
        sql += fmt::format(" WHERE ({}) > ({})", key_list, bound);
      }
      sql += fmt::format(" ORDER BY {} LIMIT {}", key_list, options_.snapshot_chunk_size);
      auto rows = conn.Query(sql);
      if (!rows.ok()) return rows.status();
      SLUICE_RETURN_IF_ERROR(emit(*rows));
      if (!rows->empty()) {
        tp.last_key.clear();
        for (const auto& k : keys)
          for (std::size_t i = 0; i < columns.size(); ++i)
            if (columns[i].name == k) tp.last_key.push_back(rows->back()[i].value_or(""));
      }
      if (rows->size() < static_cast<std::size_t>(options_.snapshot_chunk_size)) tp.done = true;
      // Durable first, then reported: a resume never skips rows the sink lost.
      SLUICE_RETURN_IF_ERROR(sink_->Flush());
      if (report_progress && options_.on_snapshot_progress)
        options_.on_snapshot_progress(at, progress);
    }
  }
  SLUICE_RETURN_IF_ERROR(conn.Exec("COMMIT"));
  *position = at;
  return Status::Ok();
}

Status MysqlSource::OpenStream(const BinlogPosition& from) {
  MysqlEndpoint endpoint = options_.endpoint;
  auto beat_seconds =
      static_cast<unsigned>(std::max<std::int64_t>(1, options_.heartbeat_interval.count() / 1000));
  endpoint.read_timeout_seconds = std::max(10u, beat_seconds * 3);
  auto conn = MysqlConnection::Connect(endpoint);
  if (!conn.ok()) return conn.status();
  stream_conn_ = std::move(*conn);
  SLUICE_RETURN_IF_ERROR(
      stream_conn_->Exec("SET @master_binlog_checksum = @@global.binlog_checksum"));
  // MariaDB-aware replica: GTID events instead of BEGIN queries.
  SLUICE_RETURN_IF_ERROR(stream_conn_->Exec("SET @mariadb_slave_capability = 4"));
  SLUICE_RETURN_IF_ERROR(stream_conn_->Exec(
      fmt::format("SET @master_heartbeat_period = {}",
                  std::max<std::int64_t>(100, options_.heartbeat_interval.count()) * 1000000)));
  rpl_ = mariadb_rpl_init(stream_conn_->handle());
  if (!rpl_) return common::Internal("mariadb_rpl_init failed");
  // An empty GTID position would ask for every transaction ever logged.
  by_gtid_ = gtid_known_ && !from.gtid.empty();
  if (by_gtid_) {
    // MariaDB's GTID resume: the server finds the transactions after these
    // itself (the file name and offset sent are then ignored).
    SLUICE_RETURN_IF_ERROR(stream_conn_->Exec(
        fmt::format("SET @slave_connect_state = {}", stream_conn_->Quote(from.gtid))));
    SLUICE_RETURN_IF_ERROR(stream_conn_->Exec("SET @slave_gtid_strict_mode = 0"));
    SLUICE_RETURN_IF_ERROR(stream_conn_->Exec("SET @slave_gtid_ignore_duplicates = 0"));
    mariadb_rpl_optionsv(rpl_, MARIADB_RPL_FILENAME, "", static_cast<std::size_t>(0));
    mariadb_rpl_optionsv(rpl_, MARIADB_RPL_START, 4ul);
  } else {
    mariadb_rpl_optionsv(rpl_, MARIADB_RPL_FILENAME, from.file.c_str(), from.file.size());
    mariadb_rpl_optionsv(rpl_, MARIADB_RPL_START, static_cast<unsigned long>(from.pos));
  }
  mariadb_rpl_optionsv(rpl_, MARIADB_RPL_SERVER_ID, static_cast<unsigned int>(options_.server_id));
  // Registered (COM_REGISTER_SLAVE) under our name, so SHOW SLAVE HOSTS
  // tells which replica holds which server id.
  mariadb_rpl_optionsv(rpl_, MARIADB_RPL_HOST, options_.replica_name.c_str());
  mariadb_rpl_optionsv(rpl_, MARIADB_RPL_PORT, 0u);
  mariadb_rpl_optionsv(rpl_, MARIADB_RPL_FLAGS, 0u);
  if (mariadb_rpl_open(rpl_) != 0) {
    std::string why = mysql_error(stream_conn_->handle());
    if (why.empty()) why = mariadb_rpl_error(rpl_);
    return common::Unavailable(fmt::format("opening the binlog at {}: {}", from.ToString(), why));
  }
  file_ = from.file;
  if (!from.file.empty()) previous_end_ = from.ToLsn();
  return Status::Ok();
}

Status MysqlSource::CheckPositionAvailable(const BinlogPosition& from, bool* purged) {
  *purged = false;
  auto logs = catalog_->Query("SHOW BINARY LOGS");
  if (!logs.ok()) return logs.status();
  for (const auto& r : *logs)
    if (TextOrEmpty(r, 0) == from.file) return Status::Ok();
  // A GTID position outlives its file name: it is still readable when the
  // oldest binlog starts at or before it in every domain (that file's
  // Gtid_list event is the state before its first transaction).
  if (auto saved = ParseGtidSet(from.gtid);
      options_.resume_by_gtid && saved.ok() && !saved->empty() && !logs->empty()) {
    auto events = catalog_->Query(fmt::format("SHOW BINLOG EVENTS IN {} LIMIT 4",
                                              catalog_->Quote(TextOrEmpty(logs->front(), 0))));
    if (!events.ok()) return events.status();
    for (const auto& e : *events) {
      if (TextOrEmpty(e, 2) != "Gtid_list") continue;
      std::string info = TextOrEmpty(e, 5);
      if (info.size() >= 2 && info.front() == '[' && info.back() == ']')
        info = info.substr(1, info.size() - 2);
      auto oldest = ParseGtidSet(info);
      if (!oldest.ok()) break;
      bool covered = std::all_of(oldest->begin(), oldest->end(), [&](const auto& d) {
        auto ours = saved->find(d.first);
        return ours != saved->end() && ours->second.seq >= d.second.seq;
      });
      if (covered) return Status::Ok();
      break;
    }
  }
  *purged = true;
  return common::FailedPrecondition(fmt::format(
      "binlog position {} was purged: the server no longer has {} (its oldest binlog is {}), so "
      "the changes after that position cannot be read. Re-snapshot: set the connector's "
      "on_purged_position to resnapshot (source.resnapshot_when_purged: true) and restart it; "
      "each table is truncated in the targets and read again. Keep binlogs longer "
      "(binlog_expire_logs_seconds) so a stopped "
      "source can catch up",
      from.ToString(), from.file, logs->empty() ? "none" : TextOrEmpty(logs->front(), 0)));
}

Status MysqlSource::StopForResnapshot(const std::string& what) {
  gets_past_by_resnapshot_ = true;
  return common::FailedPrecondition(fmt::format(
      "{}. Nothing after {} was published. To get past the event, set the connector's "
      "on_purged_position to resnapshot and restart it: the tables are then read again from a "
      "new snapshot",
      what, confirmed_.ToString()));
}

Status MysqlSource::Emit(ChangeEvent& e) {
  if (reading_xa_prepare_) {
    xa_being_prepared_.changes.push_back(e);
    return Status::Ok();
  }
  SLUICE_RETURN_IF_ERROR(sink_->Emit(e));
  if (metrics_) metrics_->Record(e.topic, e.op);
  return Status::Ok();
}

// XA COMMIT or XA ROLLBACK of a prepared transaction, in the group that
// completes it: its held changes go out at this position, or are dropped.
Status MysqlSource::OnXaEnd(bool commit, Lsn end, std::int64_t time_micros) {
  auto held = held_xa_.find(xa_id_);
  if (held == held_xa_.end()) {
    if (!commit) return EndGroup(end);
    return StopForResnapshot(fmt::format(
        "an XA COMMIT at {} of a transaction prepared before the position this connector started "
        "reading {} from: its changes are not in what was read",
        BinlogPosition::FromLsn(end, file_).ToString(), options_.database));
  }
  if (commit) {
    for (auto& e : held->second.changes) {
      e.lsn = end;
      e.commit_lsn = group_start_;
      e.commit_time_micros = time_micros;
      SLUICE_RETURN_IF_ERROR(Emit(e));  // the prepare is read: these go out
    }
  }
  held_xa_.erase(held);
  return EndGroup(end);
}

Status MysqlSource::EndGroup(Lsn end) {
  in_group_ = false;
  auto gtid = std::exchange(group_gtid_, std::nullopt);
  if (end == 0) return Status::Ok();
  if (gtid) gtid_pending_.emplace_back(end, *gtid);
  last_checkpoint_ = end;
  return sink_->Checkpoint(end);
}

Status MysqlSource::OnTableMap(st_mariadb_rpl_event* ev) {
  const auto& tm = ev->event.table_map;
  std::string_view types(tm.column_types.str, tm.column_types.length);
  std::size_t null_len = (tm.column_count + 7) / 8;
  std::string_view nulls(reinterpret_cast<const char*>(tm.null_indicator), null_len);
  // The optional metadata runs from after the nullability bitmap to the
  // event's end (before its checksum); libmariadb hands over its start only.
  const unsigned char* opt_start = tm.null_indicator + null_len;
  const unsigned char* end = ev->raw_data + ev->raw_data_size - (rpl_->use_checksum ? 4 : 0);
  std::string_view optional(reinterpret_cast<const char*>(opt_start),
                            end > opt_start ? static_cast<std::size_t>(end - opt_start) : 0);
  std::string database(tm.database.str, tm.database.length);
  std::string table(tm.table.str, tm.table.length);
  Table entry;
  entry.chosen = database == options_.database && chosen_.count(table) > 0;
  if (!entry.chosen) {
    tables_[tm.table_id] = std::move(entry);
    return Status::Ok();
  }
  auto map = ParseTableMap(tm.table_id, database, table, types,
                           std::string_view(tm.metadata.str, tm.metadata.length), nulls, optional);
  if (!map.ok()) return map.status();
  if (!map->has_names)
    return common::FailedPrecondition(
        fmt::format("the table map of {}.{} names no columns: set binlog_row_metadata = FULL",
                    database, table));
  auto facts = Facts(table);
  if (!facts.ok()) return facts.status();
  bool any_key = false;
  for (auto& c : map->columns) {
    c.json = facts->json.count(c.name) > 0 && (c.type == kBlob || c.type == kLongBlob);
    if (auto it = facts->is_unsigned.find(c.name); it != facts->is_unsigned.end())
      c.is_unsigned = it->second;
    if (auto it = facts->text_form.find(c.name); it != facts->text_form.end() && c.type == kString)
      c.text_form = it->second;
    // Characters are read as UTF-8 (utf8mb4, utf8mb3, ascii) or latin1;
    // any other set would be published as garbage, so the table stops here.
    if (HoldsCharacters(c) && c.collation != 0) {
      auto charset = CharsetOf(c.collation);
      if (!charset.ok()) return charset.status();
      static const std::set<std::string> kRead = {"utf8mb4", "utf8mb3", "utf8", "ascii", "latin1"};
      if (!charset->empty() && !kRead.count(*charset))
        return common::FailedPrecondition(fmt::format(
            "column {}.{}.{} is in character set {}, which the mysql source does not read "
            "(utf8mb4, utf8mb3, ascii and latin1 are): convert it (ALTER TABLE ... MODIFY ... "
            "CHARACTER SET utf8mb4) or leave the table out, then restart the connector",
            database, table, c.name, *charset));
    }
    any_key = any_key || c.key;
  }
  // A key dropped mid-stream.
  if (!any_key && options_.refuse_tables_without_key)
    return common::FailedPrecondition(KeylessRefused(database, table));
  entry.schema.table = {database, table};
  entry.schema.topic = TopicForTable(options_.topic_prefix, entry.schema.table);
  for (auto& c : map->columns) {
    if (!any_key) c.key = true;
    entry.schema.columns.push_back({c.name, 0, -1, PostgresTypeName(c), c.key});
  }
  entry.map = std::move(*map);
  const auto& cols = entry.map.columns;
  entry.name_order.resize(cols.size());
  for (std::size_t i = 0; i < cols.size(); ++i) entry.name_order[i] = i;
  std::sort(entry.name_order.begin(), entry.name_order.end(),
            [&](std::size_t a, std::size_t b) { return cols[a].name < cols[b].name; });
  for (std::size_t i : entry.name_order)
    entry.json_names.push_back(
        json(cols[i].name).dump(-1, ' ', false, json::error_handler_t::replace));
  SLUICE_RETURN_IF_ERROR(Announce(entry.schema));
  tables_[tm.table_id] = std::move(entry);
  return Status::Ok();
}

Status MysqlSource::OnRows(st_mariadb_rpl_event* ev) {
  const auto& rows = ev->event.rows;
  auto it = tables_.find(rows.table_id);
  if (it == tables_.end())
    return common::FailedPrecondition(
        fmt::format("rows event for table id {} before its table map", rows.table_id));
  if (!it->second.chosen) return Status::Ok();
  const Table& t = it->second;
  RowsKind kind = rows.type == WRITE_ROWS    ? RowsKind::kWrite
                  : rows.type == UPDATE_ROWS ? RowsKind::kUpdate
                                             : RowsKind::kDelete;
  std::size_t bitmap_len = (rows.column_count + 7) / 8;
  std::string_view present(reinterpret_cast<const char*>(rows.column_bitmap), bitmap_len);
  std::string_view present_after;
  if (rows.column_update_bitmap)
    present_after = {reinterpret_cast<const char*>(rows.column_update_bitmap), bitmap_len};
  bool after_in_data = ev->event_type == UPDATE_ROWS_EVENT && !rows.column_update_bitmap;
  // binlog_row_image was FULL at the start, but a session's own setting or a
  // later SET GLOBAL writes partial images (MINIMAL, NOBLOB): a row missing
  // columns cannot be applied as the source has it (an update without its
  // key would be refused or skipped, a delete miss its row), so stop here.
  if (!HasEveryColumn(present, rows.column_count) ||
      (!present_after.empty() && !HasEveryColumn(present_after, rows.column_count))) {
    return StopForResnapshot(fmt::format(
        "a row event for {}.{} at {} carries a partial row image: binlog_row_image is not FULL "
        "for the session that wrote it; set binlog_row_image = FULL (SET GLOBAL "
        "binlog_row_image = 'FULL' and in the server's configuration; a session may not set "
        "its own)",
        t.map.database, t.map.table, BinlogPosition{file_, ev->next_event_pos}.ToString()));
  }
  Lsn at = PositionLsn(file_, ev->next_event_pos);
  const auto& cols = t.map.columns;
  auto object = [&](const RowImage& image, ChangeEvent& e, bool is_key_image) {
    json out = json::object();
    for (std::size_t i = 0; i < cols.size(); ++i) {
      if (!image[i]) continue;
      out[cols[i].name] = *image[i];
      if (is_key_image) {
        if (cols[i].key) e.key[cols[i].name] = *image[i];
        if (CarriedAsText(cols[i]) && !image[i]->is_null()) e.text_columns.push_back(cols[i].name);
      }
    }
    return out;
  };
  // One event reused for the event's rows: its strings keep their buffers.
  ChangeEvent e;
  e.op = kind == RowsKind::kWrite    ? common::ChangeOp::kCreate
         : kind == RowsKind::kUpdate ? common::ChangeOp::kUpdate
                                     : common::ChangeOp::kDelete;
  e.table = t.schema.table;
  e.topic = t.schema.topic;
  e.schema_version = t.schema.version;
  e.lsn = at;
  e.commit_lsn = group_start_;
  e.commit_time_micros =
      group_time_micros_ ? group_time_micros_ : static_cast<std::int64_t>(ev->timestamp) * 1000000;
  const std::string_view row_data(static_cast<const char*>(rows.row_data), rows.row_data_size);
  if (kind == RowsKind::kWrite && sink_->TakesJsonText()) {
    // Inserts go out as text, decoded straight into it.
    thread_local TextRows text;
    SLUICE_RETURN_IF_ERROR(
        DecodeWriteRowsAsText(t.map, rows.column_count, present, row_data, text));
    for (std::size_t row = 0; row < text.rows(); ++row) {
      e.text_columns.clear();
      RenderInsert(t, text, row, e);
      SLUICE_RETURN_IF_ERROR(Emit(e));
    }
    return Status::Ok();
  }
  auto decoded =
      DecodeRows(t.map, kind, rows.column_count, present, present_after, row_data, after_in_data);
  if (!decoded.ok()) return decoded.status();
  for (const auto& row : *decoded) {
    e.text_columns.clear();
    e.key = json::object();
    e.before = row.before.empty() ? json() : object(row.before, e, kind == RowsKind::kDelete);
    e.after = row.after.empty() ? json() : object(row.after, e, true);
    SLUICE_RETURN_IF_ERROR(Emit(e));
  }
  return Status::Ok();
}

void MysqlSource::RenderInsert(const Table& t, const TextRows& rows, std::size_t row,
                               ChangeEvent& e) const {
  const auto& cols = t.map.columns;
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const TextCell& cell = rows.cell(row, i);
    if (cell.present && !cell.null && CarriedAsText(cols[i]))
      e.text_columns.push_back(cols[i].name);
  }
  auto layout = [&](std::string& out, bool key_only) {
    out.clear();
    out.push_back('{');
    bool first = true;
    for (std::size_t n = 0; n < t.name_order.size(); ++n) {
      std::size_t i = t.name_order[n];
      const TextCell& cell = rows.cell(row, i);
      if (!cell.present || (key_only && !cols[i].key)) continue;
      if (!first) out.push_back(',');
      first = false;
      out += t.json_names[n];
      out.push_back(':');
      out += rows.text(cell);
    }
    out.push_back('}');
  };
  layout(e.after_json, false);
  layout(e.key_json, true);
}

namespace {

// Skips blanks and /* comments */ MariaDB leaves in logged statements.
void SkipBlanks(std::string_view s, std::size_t& at) {
  while (at < s.size()) {
    if (std::isspace(static_cast<unsigned char>(s[at]))) {
      ++at;
    } else if (s.compare(at, 2, "/*") == 0) {
      auto close = s.find("*/", at + 2);
      at = close == std::string_view::npos ? s.size() : close + 2;
    } else {
      return;
    }
  }
}

// The next word (upper-cased) or identifier (`quoted` or bare).
std::string NextWord(std::string_view s, std::size_t& at) {
  SkipBlanks(s, at);
  std::string out;
  if (at < s.size() && s[at] == '`') {
    for (++at; at < s.size(); ++at) {
      if (s[at] == '`') {
        if (at + 1 < s.size() && s[at + 1] == '`') {
          out += '`';
          ++at;
        } else {
          ++at;
          break;
        }
      } else {
        out += s[at];
      }
    }
    return out;
  }
  while (at < s.size() && (std::isalnum(static_cast<unsigned char>(s[at])) || s[at] == '_' ||
                           s[at] == '$' || static_cast<unsigned char>(s[at]) >= 0x80))
    out += s[at++];
  return out;
}

// "[db.]name" at `at`, or nullopt.
std::optional<TableId> NextTable(std::string_view statement, std::size_t& at,
                                 const std::string& default_db) {
  std::string name = NextWord(statement, at);
  if (name.empty()) return std::nullopt;
  SkipBlanks(statement, at);
  if (at < statement.size() && statement[at] == '.') {
    ++at;
    std::string table = NextWord(statement, at);
    if (table.empty()) return std::nullopt;
    return TableId{name, table};
  }
  return TableId{default_db, name};
}

// The tables a statement empties: "TRUNCATE [TABLE] t" and "DROP TABLE
// [IF EXISTS] t [, u ...]" (a table dropped has no rows; one created again
// under its name streams its new rows). Empty for other statements and for
// DROP TEMPORARY TABLE.
std::vector<TableId> EmptiedTables(std::string_view statement, const std::string& default_db) {
  std::size_t at = 0;
  std::string verb = Upper(NextWord(statement, at));
  std::vector<TableId> out;
  if (verb == "TRUNCATE") {
    std::size_t before = at;
    if (Upper(NextWord(statement, at)) != "TABLE") at = before;
    if (auto t = NextTable(statement, at, default_db)) out.push_back(*t);
    return out;
  }
  if (verb != "DROP" || Upper(NextWord(statement, at)) != "TABLE") return out;
  std::size_t before = at;
  if (Upper(NextWord(statement, at)) == "IF" && Upper(NextWord(statement, at)) == "EXISTS")
    before = at;
  at = before;
  while (auto t = NextTable(statement, at, default_db)) {
    out.push_back(*t);
    SkipBlanks(statement, at);
    if (at >= statement.size() || statement[at] != ',') break;
    ++at;
  }
  return out;
}

// "RENAME TABLE a TO b [, c TO d ...]" and "ALTER TABLE a RENAME [TO|AS] b":
// each (from, to).
std::vector<std::pair<TableId, TableId>> RenamedTables(std::string_view statement,
                                                       const std::string& default_db) {
  std::size_t at = 0;
  std::string verb = Upper(NextWord(statement, at));
  std::vector<std::pair<TableId, TableId>> out;
  if (Upper(NextWord(statement, at)) != "TABLE") return out;
  if (verb == "RENAME") {
    while (auto from = NextTable(statement, at, default_db)) {
      if (Upper(NextWord(statement, at)) != "TO") break;
      auto to = NextTable(statement, at, default_db);
      if (!to) break;
      out.emplace_back(*from, *to);
      SkipBlanks(statement, at);
      if (at >= statement.size() || statement[at] != ',') break;
      ++at;
    }
  } else if (verb == "ALTER") {
    auto from = NextTable(statement, at, default_db);
    if (!from || Upper(NextWord(statement, at)) != "RENAME") return out;
    std::size_t before = at;
    std::string next = Upper(NextWord(statement, at));
    if (next == "COLUMN" || next == "INDEX" || next == "KEY") return out;
    if (next != "TO" && next != "AS") at = before;
    if (auto to = NextTable(statement, at, default_db)) out.emplace_back(*from, *to);
  }
  return out;
}

// The chosen table a statement-based data change (a session with
// binlog_format STATEMENT or MIXED) writes, or nullopt. Its rows are not in
// the binlog, only the statement. Every identifier of the statement that
// names a chosen table counts (an alias or column of the same name too: a
// false stop is better than a silent loss); strings and comments are skipped.
std::optional<std::string> StatementChangesChosenTable(std::string_view statement,
                                                       const std::string& default_db,
                                                       const std::string& database,
                                                       const std::set<std::string>& chosen) {
  std::size_t at = 0;
  const std::string verb = Upper(NextWord(statement, at));
  if (verb != "INSERT" && verb != "REPLACE" && verb != "UPDATE" && verb != "DELETE" &&
      verb != "LOAD" && verb != "WITH")
    return std::nullopt;
  std::string previous;  // the identifier before a '.', if any
  bool qualified = false;
  while (at < statement.size()) {
    SkipBlanks(statement, at);
    if (at >= statement.size()) break;
    char c = statement[at];
    if (c == '\'' || c == '"') {  // a string: skipped, with its escapes
      for (++at; at < statement.size() && statement[at] != c; ++at)
        if (statement[at] == '\\') ++at;
      ++at;
      previous.clear();
      continue;
    }
    if (c == '#' || statement.compare(at, 3, "-- ") == 0) {
      auto eol = statement.find('\n', at);
      at = eol == std::string_view::npos ? statement.size() : eol + 1;
      continue;
    }
    if (c == '.') {
      qualified = !previous.empty();
      ++at;
      continue;
    }
    std::string word = NextWord(statement, at);
    if (word.empty()) {
      ++at;  // punctuation
      previous.clear();
      qualified = false;
      continue;
    }
    const std::string& db = qualified ? previous : default_db;
    if (db == database && chosen.count(word)) return word;
    previous = word;
    qualified = false;
  }
  return std::nullopt;
}

}  // namespace

Status MysqlSource::OnQuery(st_mariadb_rpl_event* ev, Lsn end) {
  std::string statement(ev->event.query.statement.str, ev->event.query.statement.length);
  std::string head = Upper(statement.substr(0, 12));
  if (!xa_id_.empty() && !reading_xa_prepare_ &&
      (head.rfind("XA COMMIT", 0) == 0 || head.rfind("XA ROLLBACK", 0) == 0))
    return OnXaEnd(head.rfind("XA COMMIT", 0) == 0, end,
                   static_cast<std::int64_t>(ev->timestamp) * 1000000);
  if (head.rfind("BEGIN", 0) == 0) {
    in_group_ = true;
    group_start_ = end;
    group_time_micros_ = static_cast<std::int64_t>(ev->timestamp) * 1000000;
    return Status::Ok();
  }
  if (head.rfind("COMMIT", 0) == 0 || head.rfind("ROLLBACK", 0) == 0) return EndGroup(end);
  // DDL: table maps after it carry the new columns (binlog_row_metadata =
  // FULL names them), so rows are decoded with the schema in force at their
  // position; JSON checks and virtual columns are read again.
  column_facts_.clear();
  std::string db(ev->event.query.database.str, ev->event.query.database.length);
  if (auto table = StatementChangesChosenTable(statement, db, options_.database, chosen_)) {
    return StopForResnapshot(fmt::format(
        "a statement-based change to {}.{} at {}: the session that wrote it had binlog_format "
        "STATEMENT or MIXED, so the binlog holds the statement, not its rows; set "
        "binlog_format = ROW (SET GLOBAL binlog_format = 'ROW' and in the server's "
        "configuration, and in the sessions and tools that set their own)",
        options_.database, *table, BinlogPosition{file_, ev->next_event_pos}.ToString()));
  }
  for (const auto& [from, to] : RenamedTables(statement, db)) {
    bool from_chosen = from.schema == options_.database && chosen_.count(from.name);
    bool to_chosen = to.schema == options_.database && chosen_.count(to.name);
    if (to_chosen)
      spdlog::warn(
          "mysql source: {}.{} was replaced by RENAME TABLE from {}.{}: the rows it held before "
          "are not in the binlog and are not read again; unless it was a copy of the table "
          "(as gh-ost and pt-online-schema-change make), run a backfill of it",
          to.schema, to.name, from.schema, from.name);
    else if (from_chosen)
      spdlog::warn(
          "mysql source: {}.{} was renamed to {}.{}, which the connector does not list: its "
          "changes are not captured until it is listed or renamed back",
          from.schema, from.name, to.schema, to.name);
  }
  for (const auto& table : EmptiedTables(statement, db)) {
    if (table.schema != options_.database || !chosen_.count(table.name)) continue;
    ChangeEvent e;
    e.op = common::ChangeOp::kTruncate;
    e.table = table;
    e.topic = TopicForTable(options_.topic_prefix, table);
    auto known = schemas_.find(table);
    e.schema_version = known == schemas_.end() ? 1 : known->second.version;
    e.lsn = end;
    e.commit_lsn = group_start_ ? group_start_ : end;
    e.commit_time_micros = static_cast<std::int64_t>(ev->timestamp) * 1000000;
    SLUICE_RETURN_IF_ERROR(Emit(e));
  }
  if (in_group_) return Status::Ok();
  return EndGroup(end);
}

Status MysqlSource::HandleEvent(st_mariadb_rpl_event* ev) {
  Lsn end = ev->next_event_pos ? PositionLsn(file_, ev->next_event_pos) : 0;
  auto idle = [&](Lsn position) {
    // Nothing half-read and every checkpoint acknowledged: the position
    // after this event loses nothing when confirmed.
    if (!in_group_ && position && acked_.load() >= last_checkpoint_)
      idle_position_ = std::max(idle_position_, position);
  };
  switch (ev->event_type) {
    case ROTATE_EVENT: {
      file_ = std::string(ev->event.rotate.filename.str, ev->event.rotate.filename.length);
      idle(PositionLsn(file_, ev->event.rotate.position));
      return Status::Ok();
    }
    case HEARTBEAT_LOG_EVENT:
      idle(end);
      return Status::Ok();
    case GTID_EVENT:
      in_group_ = !(ev->event.gtid.flags & FL_STANDALONE);
      xa_id_.clear();
      if (ev->event.gtid.flags & (FL_PREPARED_XA | FL_COMPLETED_XA)) {
        xa_id_ = fmt::format("{}:{}", ev->event.gtid.format_id,
                             std::string_view(ev->event.gtid.xid.str, ev->event.gtid.xid.length));
        reading_xa_prepare_ = (ev->event.gtid.flags & FL_PREPARED_XA) != 0;
        xa_being_prepared_ = HeldXa{{}, previous_end_};
      }
      group_gtid_ = Gtid{ev->event.gtid.domain_id, ev->server_id, ev->event.gtid.sequence_nr};
      group_start_ = end;
      group_time_micros_ = static_cast<std::int64_t>(ev->timestamp) * 1000000;
      return Status::Ok();
    case QUERY_EVENT:
      return OnQuery(ev, end);
    case XID_EVENT:
      return EndGroup(end);
    case XA_PREPARE_LOG_EVENT:
      if (reading_xa_prepare_) {
        reading_xa_prepare_ = false;
        held_xa_[xa_id_] = std::move(xa_being_prepared_);
        xa_being_prepared_ = {};
      }
      return EndGroup(end);
    case TABLE_MAP_EVENT:
      return OnTableMap(ev);
    case WRITE_ROWS_EVENT_V1:
    case UPDATE_ROWS_EVENT_V1:
    case DELETE_ROWS_EVENT_V1:
    case WRITE_ROWS_EVENT:
    case UPDATE_ROWS_EVENT:
    case DELETE_ROWS_EVENT:
      return OnRows(ev);
    case WRITE_ROWS_COMPRESSED_EVENT_V1:
    case UPDATE_ROWS_COMPRESSED_EVENT_V1:
    case DELETE_ROWS_COMPRESSED_EVENT_V1:
    case WRITE_ROWS_COMPRESSED_EVENT:
    case UPDATE_ROWS_COMPRESSED_EVENT:
    case DELETE_ROWS_COMPRESSED_EVENT:
      return common::FailedPrecondition(
          "compressed row events are not supported: set log_bin_compress = OFF");
    default:
      idle(end);
      return Status::Ok();
  }
}

void MysqlSource::ReportPosition() {
  Lsn flush = std::max(acked_.load(), idle_position_);
  for (const auto& [xid, held] : held_xa_) flush = std::min(flush, held.before);
  if (flush <= confirmed_floor_ || file_.empty()) return;
  confirmed_floor_ = flush;
  while (!gtid_pending_.empty() && gtid_pending_.front().first <= flush) {
    const Gtid& g = gtid_pending_.front().second;
    gtid_confirmed_[g.domain] = g;
    gtid_pending_.pop_front();
  }
  confirmed_ = BinlogPosition::FromLsn(flush, file_);
  if (gtid_known_) confirmed_.gtid = FormatGtidSet(gtid_confirmed_);
  if (options_.on_position) options_.on_position(confirmed_);
}

// After a commit, with nothing more on the socket, the changes read so far
// go out now (the fetch below blocks). Checked once per commit: a poll per
// row event would cost more than it saves.
Status MysqlSource::SendIfCaughtUp() {
  if (last_checkpoint_ == caught_up_at_) return Status::Ok();
  caught_up_at_ = last_checkpoint_;
  pollfd pfd{static_cast<int>(mysql_get_socket(stream_conn_->handle())), POLLIN, 0};
  if (poll(&pfd, 1, 0) != 0) return Status::Ok();
  return sink_->CaughtUp();
}

Status MysqlSource::Poll(std::chrono::milliseconds max_wait) {
  if (!rpl_) return common::FailedPrecondition("source not started");
  auto deadline = std::chrono::steady_clock::now() + max_wait;
  while (true) {
    ReportPosition();
    if (std::chrono::steady_clock::now() >= deadline) return Status::Ok();
    SLUICE_RETURN_IF_ERROR(SendIfCaughtUp());
    MARIADB_RPL_EVENT* ev = mariadb_rpl_fetch(rpl_, event_);
    if (!ev) {
      event_ = nullptr;  // freed by the failed fetch
      std::string why = mysql_error(stream_conn_->handle());
      if (why.empty()) why = mariadb_rpl_error(rpl_);
      // A server shut down mid-stream leaves both empty (found from outside).
      if (why.empty())
        why = fmt::format("the server closed the replication connection (error {})",
                          mysql_errno(stream_conn_->handle()));
      // ER_MASTER_FATAL_ERROR_READING_BINLOG: the server cannot serve our
      // position (purged, or past a binlog's end): retrying will not help.
      if (mysql_errno(stream_conn_->handle()) == 1236)
        return common::FailedPrecondition(
            fmt::format("binlog stream ({} after {}): the server cannot serve our position: {}. "
                        "Re-snapshot: set the connector's on_purged_position to resnapshot "
                        "(source.resnapshot_when_purged: true) and restart it",
                        options_.database, file_, why));
      return common::Unavailable(
          fmt::format("binlog stream ({} after {}): {}", options_.database, file_, why));
    }
    event_ = ev;
    auto handled = HandleEvent(ev);
    if (handled.ok()) {
      if (ev->event_type == ROTATE_EVENT)
        previous_end_ = PositionLsn(file_, ev->event.rotate.position);
      else if (ev->next_event_pos)
        previous_end_ = PositionLsn(file_, ev->next_event_pos);
      continue;
    }
    if (std::exchange(gets_past_by_resnapshot_, false) && options_.resnapshot_when_purged) {
      SLUICE_RETURN_IF_ERROR(ResnapshotPast(handled));
      continue;
    }
    return handled;
  }
}

Status MysqlSource::ResnapshotPast(const Status& why) {
  spdlog::warn(
      "mysql source: {}; resnapshot_when_purged is on: truncating each table in the targets and "
      "snapshotting afresh, past the event",
      why.message());
  if (options_.on_resnapshot) options_.on_resnapshot(why.message());
  if (event_) mariadb_free_rpl_event(event_);
  event_ = nullptr;
  mariadb_rpl_close(rpl_);
  rpl_ = nullptr;
  stream_conn_.reset();
  // The unfinished transaction's state goes with the stream; its rows
  // published so far are overwritten by the snapshot.
  tables_.clear();
  in_group_ = false;
  group_gtid_.reset();
  gtid_pending_.clear();
  ForgetPositionsForResnapshot();
  return Begin();
}

void MysqlSource::ForgetPositionsForResnapshot() {
  options_.start_position.reset();
  options_.snapshot_position.reset();
  options_.snapshot_progress.reset();
  options_.snapshot = true;
  truncate_before_snapshot_ = true;
}

Status MysqlSource::Run(const std::atomic<bool>& stop) {
  while (!stop.load()) SLUICE_RETURN_IF_ERROR(Poll(std::chrono::milliseconds(200)));
  return Status::Ok();
}

void MysqlSource::Stop() {
  if (rpl_) ReportPosition();
  if (event_) mariadb_free_rpl_event(event_);
  event_ = nullptr;
  if (rpl_) mariadb_rpl_close(rpl_);
  rpl_ = nullptr;
  stream_conn_.reset();
}

}  // namespace sluice::connectors::mysql
