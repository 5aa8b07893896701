#include "connectors/postgres/postgres_source.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <thread>

#include "connectors/postgres/catalog.h"
#include "connectors/postgres/lsn.h"
#include "guard/postgres_conninfo.h"

namespace sluice::connectors::postgres {

using common::Result;
using common::Status;

namespace {

// Slot and publication names go into replication commands verbatim.
bool SimpleIdentifier(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::uint64_t GetU64(const std::string& s, std::size_t at) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) v = (v << 8) | static_cast<std::uint8_t>(s[at + i]);
  return v;
}

}  // namespace

PostgresSource::PostgresSource(PostgresSourceOptions options, ChangeSink* sink,
                               ProductionMetrics* metrics)
    : options_(std::move(options)), sink_(sink), metrics_(metrics) {}

PostgresSource::~PostgresSource() {
  Stop();
  sink_->SetAckCallback(nullptr);
}

Status PostgresSource::DropSlot(const std::string& url, const std::string& slot) {
  auto conn = ReplicationConnection::Connect(url);
  if (!conn.ok()) return conn.status();
  return (*conn)->DropSlot(slot);
}

Status PostgresSource::EnsurePublication() {
  try {
    pqxx::work tx(*catalog_);
    // Publishing a table without a replica identity makes PostgreSQL refuse
    // the application's own UPDATEs and DELETEs on it: refuse it here
    // instead, naming every such table and the statement that fixes it.
    std::vector<std::string> problems;
    // A partitioned table's rows live in its partitions, and PostgreSQL
    // checks the identity of the partition a change touches: check them too.
    std::vector<TableId> checked;
    for (const auto& t : options_.tables) {
      checked.push_back(t);
      auto leaves = LeafPartitions(tx, t);
      if (!leaves.ok()) return leaves.status();
      checked.insert(checked.end(), leaves->begin(), leaves->end());
    }
    for (const auto& t : checked) {
      auto ident = tx.exec(fmt::format(
          "SELECT c.relreplident, EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND "
          "i.indisprimary) FROM pg_class c WHERE c.oid = {}::regclass",
          tx.quote(QuoteTable(tx, t))));
      std::string kind = ident[0][0].c_str();
      bool has_pk = ident[0][1].as<bool>();
      std::string alter = fmt::format("ALTER TABLE {} REPLICA IDENTITY FULL", QuoteTable(tx, t));
      if (kind == "n" || (kind == "d" && !has_pk)) {
        problems.push_back(fmt::format(
            "table {} has {}: its updates and deletes cannot be replicated (and would fail once "
            "published); add a primary key, or run `{}`{}",
            t.Qualified(),
            kind == "n" ? "REPLICA IDENTITY NOTHING"
                        : "no primary key and REPLICA IDENTITY DEFAULT",
            alter,
            options_.refuse_tables_without_key
                ? " and set tables_without_key to full"
                : " (tables_without_key is full: then all its columns are its key)"));
      } else if (kind == "f" && !has_pk && options_.refuse_tables_without_key) {
        problems.push_back(fmt::format(
            "table {} has no primary key and tables_without_key is refuse: add a primary key, "
            "or set tables_without_key to full to replicate it by `{}` (set already), all its "
            "columns its key",
            t.Qualified(), alter));
      } else if (kind == "f" && !has_pk) {
        spdlog::info(
            "table {} has no primary key: replicated with REPLICA IDENTITY FULL, all "
            "its columns its key",
            t.Qualified());
      }
    }
    if (!problems.empty()) {
      std::string all;
      for (const auto& p : problems) all += (all.empty() ? "" : "; ") + p;
      return common::FailedPrecondition(all);
    }
    // Partitioned tables are published through their root (PostgreSQL 13
    // and later): a change of any partition, one attached or created after
    // the start included, comes as a change of the parent, on its topic.
    const bool via_root =
        tx.exec("SELECT current_setting('server_version_num')::int >= 130000")[0][0].as<bool>();
    auto existing =
        tx.exec(fmt::format("SELECT {}, puballtables FROM pg_publication WHERE pubname = {}",
                            via_root ? "pubviaroot" : "true", tx.quote(options_.publication_name)));
    std::string list;
    if (existing.empty()) {
      for (const auto& t : options_.tables) {
        if (!list.empty()) list += ", ";
        list += QuoteTable(tx, t);
      }
      tx.exec(fmt::format("CREATE PUBLICATION {} FOR TABLE {}{}",
                          tx.quote_name(options_.publication_name), list,
                          via_root ? " WITH (publish_via_partition_root = true)" : ""));
    } else {
      if (!existing[0][0].as<bool>()) {
        tx.exec(fmt::format("ALTER PUBLICATION {} SET (publish_via_partition_root = true)",
                            tx.quote_name(options_.publication_name)));
      }
      // Reuse it, adding any chosen table it lacks (pg_publication_tables
      // lists a partitioned table's partitions, not itself, without
      // publish_via_partition_root: ask the membership directly).
      const bool all_tables = existing[0][1].as<bool>();
      for (const auto& t : all_tables ? std::vector<TableId>{} : options_.tables) {
        auto has = tx.exec(fmt::format(
            "SELECT 1 FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid "
            "WHERE p.pubname = {} AND r.prrelid = {}::regclass",
            tx.quote(options_.publication_name), tx.quote(QuoteTable(tx, t))));
        if (has.empty()) {
          tx.exec(fmt::format("ALTER PUBLICATION {} ADD TABLE {}",
                              tx.quote_name(options_.publication_name), QuoteTable(tx, t)));
        }
      }
    }
    tx.commit();
  } catch (const std::exception& e) {
    return common::Unavailable(
        fmt::format("publication {}: {}", options_.publication_name, e.what()));
  }
  return Status::Ok();
}

Status PostgresSource::Start() {
  bool lost = false;
  auto st = StartOnce(&lost);
  // The lost slot was dropped: create it again and read every table anew.
  if (lost) st = StartOnce(&lost);
  return st;
}

Status PostgresSource::DropLostSlot(const std::string& reason) {
  spdlog::warn(
      "{}; dropping it to create it again, truncate its tables in the targets and read them anew",
      reason);
  // Saved before the slot goes: a source killed from here on, even before
  // the new slot exists, still truncates and reads every table again.
  options_.snapshot_progress = SnapshotProgress::Resnapshot(options_.tables);
  if (options_.on_snapshot_progress) options_.on_snapshot_progress(*options_.snapshot_progress);
  try {
    pqxx::nontransaction tx(*catalog_);
    tx.exec_params(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1",
        options_.slot_name);
  } catch (const std::exception& e) {
    return common::Unavailable(
        fmt::format("dropping lost replication slot {}: {}", options_.slot_name, e.what()));
  }
  lost_slot_dropped_ = true;
  if (options_.on_slot_lost) options_.on_slot_lost(options_.slot_name, reason);
  return Status::Ok();
}

Status PostgresSource::StartOnce(bool* slot_lost) {
  *slot_lost = false;
  if (!SimpleIdentifier(options_.slot_name) || !SimpleIdentifier(options_.publication_name)) {
    return common::InvalidArgument(
        "slot and publication names must be lower-case letters, digits and '_'");
  }
  if (options_.tables.empty()) return common::InvalidArgument("no tables chosen");
  if (options_.proto_version != 1 && options_.proto_version != 2) {
    return common::InvalidArgument("proto_version must be 1 or 2");
  }
  auto pinned = guard::PinPostgres(options_.url);
  if (!pinned.ok()) {
    if (guard::IsRefusal(pinned.status())) return pinned.status();
    return common::Unavailable("source database: " + pinned.status().message());
  }
  try {
    catalog_ = std::make_unique<pqxx::connection>(*pinned);
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("source database: {}", e.what()));
  }
  try {
    pqxx::work tx(*catalog_);
    std::string wal_level = tx.exec("SHOW wal_level")[0][0].c_str();
    if (wal_level != "logical") {
      return common::FailedPrecondition(fmt::format(
          "the source database has wal_level = {}; logical decoding needs wal_level = logical",
          wal_level));
    }
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("source database: {}", e.what()));
  }
  try {
    // A partition of a chosen partitioned table comes with its parent.
    pqxx::work tx(*catalog_);
    std::vector<TableId> covered;
    auto tables = WithoutCoveredPartitions(tx, options_.tables, &covered);
    if (!tables.ok()) return common::Unavailable(tables.status().message());
    for (const auto& t : covered)
      spdlog::info(
          "table {} is a partition of a chosen partitioned table: read and streamed "
          "as part of its parent",
          t.Qualified());
    options_.tables = std::move(*tables);
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("source database: {}", e.what()));
  }
  SLUICE_RETURN_IF_ERROR(EnsurePublication());

  SLUICE_RETURN_IF_ERROR(AwaitSlotReleased());
  bool slot_exists = false;
  try {
    pqxx::work tx(*catalog_);
    bool has_wal_status =
        tx.exec("SELECT current_setting('server_version_num')::int >= 130000")[0][0].as<bool>();
    auto rows = tx.exec(
        fmt::format("SELECT plugin, {} FROM pg_replication_slots WHERE slot_name = {}",
                    has_wal_status ? "wal_status" : "''::text", tx.quote(options_.slot_name)));
    tx.commit();
    if (!rows.empty()) {
      if (rows[0][0].c_str() != std::string("pgoutput")) {
        return common::FailedPrecondition(fmt::format("slot {} uses plugin {}, not pgoutput",
                                                      options_.slot_name, rows[0][0].c_str()));
      }
      slot_exists = true;
      if (!rows[0][1].is_null() && rows[0][1].c_str() == std::string("lost")) {
        SLUICE_RETURN_IF_ERROR(DropLostSlot(fmt::format(
            "replication slot {} is lost (wal_status = lost): the server removed WAL it had not "
            "yet delivered",
            options_.slot_name)));
        slot_exists = false;
      }
    }
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("reading replication slots: {}", e.what()));
  }

  auto conn = ReplicationConnection::Connect(options_.url);
  if (!conn.ok()) return conn.status();
  repl_ = std::move(*conn);

  auto key_lookup = [this](const TableId& table) -> Result<std::vector<std::string>> {
    try {
      pqxx::work tx(*catalog_);
      return PrimaryKeyColumns(tx, table);
    } catch (const std::exception& e) {
      return common::Unavailable(e.what());
    }
  };
  assembler_ = std::make_unique<ChangeAssembler>(sink_, &schemas_, options_.topic_prefix,
                                                 key_lookup, metrics_);
  assembler_->SetSpool(options_.spool_dir.empty() ? std::filesystem::temp_directory_path().string()
                                                  : options_.spool_dir,
                       options_.spool_memory_bytes);
  // Replaying a large streamed transaction takes a while: take in the
  // sink's acknowledgements as it goes (their bookkeeping would otherwise
  // grow with the transaction), and keep the server's wal_sender_timeout
  // from ending the stream meanwhile. What is confirmed is still only what
  // the sink acknowledged.
  assembler_->SetReplayProgress([this]() -> Status {
    SLUICE_RETURN_IF_ERROR(sink_->Pump());
    if (std::chrono::steady_clock::now() - last_status_ >= options_.status_interval)
      return SendStatus(false);
    return Status::Ok();
  });
  assembler_->OnColumnChanges(options_.on_column_changes);
  sink_->SetAckCallback([this](Lsn lsn) {
    Lsn cur = acked_.load();
    while (lsn > cur && !acked_.compare_exchange_weak(cur, lsn)) {
    }
  });

  SnapshotOptions snap;
  snap.url = options_.url;
  snap.chunk_size = options_.snapshot_chunk_size;
  snap.topic_prefix = options_.topic_prefix;
  snap.on_progress = options_.on_snapshot_progress;
  snap.max_chunks = options_.snapshot_max_chunks;

  Lsn start = 0;  // 0/0: from the slot's confirmed position
  // A re-snapshot after a lost slot (this run's, or one a killed run left
  // unfinished) is read to its end whatever the snapshot option says.
  const bool resnapshot_unfinished =
      options_.snapshot_progress && options_.snapshot_progress->ResnapshotUnfinished();
  if (!slot_exists) {
    // After a lost slot every table is truncated and read again.
    const bool resnapshot = lost_slot_dropped_ || resnapshot_unfinished;
    bool snapshot = options_.snapshot || resnapshot;
    auto created = repl_->CreateSlot(options_.slot_name, snapshot);
    if (!created.ok()) return created.status();
    start = created->consistent_point;
    if (snapshot) {
      progress_ = resnapshot ? SnapshotProgress::Resnapshot(options_.tables)
                             : SnapshotProgress::For(options_.tables, {});
      snap.snapshot_name = created->snapshot_name;
    } else {
      progress_ = {};
    }
  } else {
    if (!options_.snapshot && !resnapshot_unfinished) {
      progress_ = {};
    } else if (options_.snapshot_progress) {
      progress_ = SnapshotProgress::For(options_.tables, *options_.snapshot_progress);
    } else {
      progress_ = SnapshotProgress::For(options_.tables, {});
      spdlog::warn("slot {} exists but no snapshot progress was given: reading the tables again",
                   options_.slot_name);
    }
  }
  // The exported snapshot lives until the next command on repl_: read it all first.
  SLUICE_RETURN_IF_ERROR(ReadSnapshot(snap, &progress_, sink_, &schemas_, metrics_));
  snapshot_done_ = progress_.Done();
  if (!snapshot_done_) return Status::Ok();  // interrupted on purpose (max_chunks)

  std::string plugin_options = fmt::format("proto_version '{}', publication_names '\"{}\"'",
                                           options_.proto_version, options_.publication_name);
  if (repl_->server_version() >= 140000) {
    plugin_options += ", messages 'true'";
    if (options_.proto_version >= 2) plugin_options += ", streaming 'on'";
  }
  // Failing on a slot an earlier connection still holds would crash-loop the
  // worker (seen on resume after a pause) until the server lets go; waiting
  // a little is what the restart would have done, without the error noise.
  auto slot_deadline = std::chrono::steady_clock::now() + options_.slot_wait;
  for (bool told = false;;) {
    auto started = repl_->StartReplication(options_.slot_name, start, plugin_options);
    if (started.ok()) break;
    if (slot_exists && IsSlotLostError(started.message())) {
      repl_.reset();
      SLUICE_RETURN_IF_ERROR(DropLostSlot(started.message()));
      *slot_lost = true;
      return started;
    }
    if (started.message().find("is active for PID") == std::string::npos ||
        std::chrono::steady_clock::now() >= slot_deadline)
      return started;
    if (!told)
      spdlog::info("slot {} is still held by an earlier connection; waiting", options_.slot_name);
    told = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  received_ = start;
  last_status_ = std::chrono::steady_clock::now();
  Beat();
  spdlog::info("streaming slot {} from {}", options_.slot_name, FormatLsn(start));
  return Status::Ok();
}

// A slot another connection holds may still be in the making: a walsender
// creating it shows it at once, and drops it if its client was killed before
// the slot was complete. Taking such a slot for an existing one would read
// the tables, then find no slot to stream from, and the next attempt's fresh
// slot would miss what changed in between. So wait (up to slot_wait) until no
// one holds it, then look: it is either complete or gone.
Status PostgresSource::AwaitSlotReleased() {
  auto deadline = std::chrono::steady_clock::now() + options_.slot_wait;
  for (bool told = false;; told = true) {
    try {
      pqxx::nontransaction tx(*catalog_);
      auto rows = tx.exec_params(
          "SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1 AND active_pid IS "
          "NOT NULL",
          options_.slot_name);
      if (rows.empty()) return Status::Ok();
      if (std::chrono::steady_clock::now() >= deadline)
        return Status::Ok();  // START_REPLICATION says who holds it
      if (!told)
        spdlog::info("slot {} is held by another connection (pid {}); waiting for it to let go",
                     options_.slot_name, rows[0][0].c_str());
    } catch (const std::exception& e) {
      return common::Unavailable(fmt::format("reading replication slots: {}", e.what()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

void PostgresSource::Beat() {
  if (!catalog_) return;
  auto now = std::chrono::steady_clock::now();
  last_beat_ = now;
  if (options_.heartbeat_interval.count() > 0) {
    try {
      // Non-transactional: the message is in the WAL at once, outside any
      // transaction, and decodes to a Message the assembler drops.
      pqxx::nontransaction tx(*catalog_);
      auto at = tx.exec("SELECT pg_logical_emit_message(false, 'sluice', 'heartbeat')::text");
      if (auto lsn = ParseLsn(at[0][0].c_str()); lsn.ok()) wal_clock_.Sample(*lsn, now);
      heartbeat_failure_logged_ = false;
    } catch (const std::exception& e) {
      // A role without the right, or a standby: the stream goes on, and
      // keepalives still advance the slot when the server sends them.
      if (!heartbeat_failure_logged_)
        spdlog::warn("slot {}: heartbeat failed: {}", options_.slot_name, e.what());
      heartbeat_failure_logged_ = true;
    }
  }
  try {
    pqxx::work tx(*catalog_);
    auto current = tx.exec("SELECT pg_current_wal_insert_lsn()::text");
    if (auto lsn = ParseLsn(current[0][0].c_str()); lsn.ok()) wal_clock_.Sample(*lsn, now);
    auto status = ReadSlotStatus(tx, options_.slot_name);
    tx.commit();
    if (status.ok()) {
      status->lag_seconds = wal_clock_.SecondsBehind(status->confirmed_flush_lsn, now);
      slot_status_ = *status;
    }
    beat_failure_logged_ = false;
  } catch (const std::exception& e) {
    if (!beat_failure_logged_)
      spdlog::warn("slot {}: reading its health failed: {}", options_.slot_name, e.what());
    beat_failure_logged_ = true;
  }
}

Lsn PostgresSource::FlushPosition() const { return std::max(acked_.load(), idle_position_); }

Status PostgresSource::SendStatus(bool reply_requested) {
  Lsn flush = FlushPosition();
  SLUICE_RETURN_IF_ERROR(
      repl_->SendStatus(std::max(received_, flush), flush, flush, reply_requested));
  confirmed_ = std::max(confirmed_, flush);
  last_status_ = std::chrono::steady_clock::now();
  return Status::Ok();
}

Status PostgresSource::HandleCopyData(const std::string& data) {
  if (data.empty()) return common::InvalidArgument("empty CopyData message");
  if (data[0] == 'w') {
    // XLogData: start, current server WAL end, send time, then the payload.
    if (data.size() < 25) return common::InvalidArgument("truncated XLogData header");
    Lsn wal_start = GetU64(data, 1);
    received_ = std::max(received_, wal_start);
    const std::string_view payload = std::string_view(data).substr(25);
    auto message = decoder_.Decode(payload);
    if (!message.ok()) return message.status();
    // Our own heartbeat with nothing outstanding: everything before it was
    // sent and acknowledged, so its position may be confirmed.
    if (const auto* m = std::get_if<LogicalMessage>(&*message);
        m && !m->transactional && m->prefix == "sluice" && !assembler_->InTransaction() &&
        acked_.load() >= assembler_->last_checkpoint()) {
      idle_position_ = std::max(idle_position_, m->lsn);
    }
    return assembler_->Apply(*message, wal_start, payload);
  }
  if (data[0] == 'k') {
    // Primary keepalive: server WAL end, server time, reply requested.
    if (data.size() < 18) return common::InvalidArgument("truncated keepalive");
    Lsn wal_end = GetU64(data, 1);
    bool reply = data[17] != 0;
    // Nothing half-received and every checkpoint acknowledged: the server has
    // sent everything before its position, so confirming it loses nothing and
    // keeps an idle slot (or one whose tables see no writes) advancing.
    if (!assembler_->InTransaction() && acked_.load() >= assembler_->last_checkpoint()) {
      idle_position_ = std::max(idle_position_, wal_end);
      received_ = std::max(received_, wal_end);
    }
    if (reply || FlushPosition() > confirmed_) return SendStatus(false);
    return Status::Ok();
  }
  return common::InvalidArgument(fmt::format("unexpected CopyData message type 0x{:02x}",
                                             static_cast<unsigned char>(data[0])));
}

Status PostgresSource::Poll(std::chrono::milliseconds max_wait) {
  if (!repl_) return common::FailedPrecondition("source not started");
  if (!snapshot_done_) return common::FailedPrecondition("snapshot not finished");
  auto deadline = std::chrono::steady_clock::now() + max_wait;
  while (true) {
    auto now = std::chrono::steady_clock::now();
    auto beat_every = options_.heartbeat_interval.count() > 0 ? options_.heartbeat_interval
                                                              : std::chrono::milliseconds(10000);
    if (now - last_beat_ >= beat_every) Beat();
    if (now - last_status_ >= options_.status_interval) SLUICE_RETURN_IF_ERROR(SendStatus(false));
    if (now >= deadline) return Status::Ok();
    auto until_status = last_status_ + options_.status_interval;
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::min(deadline, until_status) - now);
    auto data = repl_->Read(std::chrono::milliseconds(0));
    if (data.ok() && !data->has_value()) {
      // Everything written so far is read: what is queued goes out now.
      SLUICE_RETURN_IF_ERROR(sink_->CaughtUp());
      data = repl_->Read(std::max(wait, std::chrono::milliseconds(0)));
    }
    if (!data.ok()) return data.status();
    if (data->has_value()) SLUICE_RETURN_IF_ERROR(HandleCopyData(**data));
  }
}

Status PostgresSource::Run(const std::atomic<bool>& stop) {
  while (!stop.load()) SLUICE_RETURN_IF_ERROR(Poll(std::chrono::milliseconds(200)));
  return Status::Ok();
}

void PostgresSource::Stop() {
  if (repl_ && snapshot_done_) {
    (void)SendStatus(false);  // what is acknowledged by now is safe to confirm
  }
  repl_.reset();
}

}  // namespace sluice::connectors::postgres
