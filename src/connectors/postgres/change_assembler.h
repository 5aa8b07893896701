// Turns decoded pgoutput messages into change events on a sink: keeps the
// relation cache (relation id -> table schema), maps tuple values to JSON,
// shapes before/after images, keeps streamed in-progress transactions in a
// TransactionSpool (bounded memory, then a temporary file) until they
// commit, replaying them then in order (dropping them, or one aborted
// subtransaction's changes, on abort), and marks every commit as a
// checkpoint so the sink can acknowledge it.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <variant>
#include <vector>

#include "common/status.h"
#include "connectors/change_sink.h"
#include "connectors/postgres/pgoutput_decoder.h"
#include "connectors/postgres/relation_diff.h"
#include "connectors/postgres/transaction_spool.h"
#include "connectors/production_metrics.h"

namespace sluice::connectors::postgres {

// Schemas the source knows, by table; the snapshot reader and the stream
// share it so a stream after a snapshot does not announce the same schema again.
using SchemaCache = std::map<TableId, TableSchema>;

class ChangeAssembler {
 public:
  // Primary-key columns of a table, from the catalog. Used in preference to
  // the replica identity, which is every column under REPLICA IDENTITY FULL.
  using KeyLookup = std::function<common::Result<std::vector<std::string>>(const TableId&)>;

  ChangeAssembler(ChangeSink* sink, SchemaCache* schemas, std::string topic_prefix,
                  KeyLookup key_lookup = nullptr, ProductionMetrics* metrics = nullptr);

  // `wal_start` is the XLogData start position of the message; `raw` its
  // bytes as received, which a streamed transaction's messages need (they
  // are kept as they came and decoded again at their Stream Commit).
  common::Status Apply(const PgOutputMessage& message, Lsn wal_start, std::string_view raw = {});

  // Where streamed transactions spill past `memory_bytes` each (defaults:
  // the system's temporary directory, 8 MiB).
  void SetSpool(std::string dir, std::size_t memory_bytes) {
    spool_dir_ = std::move(dir);
    spool_memory_ = memory_bytes;
  }
  // Called every few thousand changes while a streamed transaction is
  // replayed at its commit (which may take minutes for millions of rows),
  // so the caller can keep answering the server; an error stops the replay.
  void SetReplayProgress(std::function<common::Status()> progress) {
    replay_progress_ = std::move(progress);
  }

  // True while a transaction is half received or a streamed one is buffered:
  // then the server's keepalive position must not be confirmed.
  bool InTransaction() const { return in_transaction_ || !streams_.empty(); }
  // End LSN of the last commit handed to the sink as a checkpoint.
  Lsn last_checkpoint() const { return last_checkpoint_; }

  // Told of a table's column changes (DDL at the source: drops, renames,
  // type changes, adds; relation_diff.h) when a Relation message differs
  // from the schema known before, from the snapshot or an earlier message.
  using ColumnChangesCallback =
      std::function<void(const TableId&, const std::vector<ColumnChange>&)>;
  void OnColumnChanges(ColumnChangesCallback callback) { on_column_changes_ = std::move(callback); }

 private:
  struct Relation {
    TableSchema schema;
    char replica_identity = 'd';
    // Column indexes in name order (the order a JSON tree's members take)
    // and each name as a JSON string: for rendering rows as text.
    std::vector<std::size_t> name_order;
    std::vector<std::string> json_names;
  };
  // A streamed transaction not yet committed: its messages, and the
  // subtransactions aborted so far (their changes are skipped at replay).
  struct Stream {
    std::unique_ptr<TransactionSpool> spool;
    std::set<std::uint32_t> aborted;
  };

  common::Status OnStreamCommit(const StreamCommitMessage& m);
  common::Status OnRelation(const RelationMessage& m);
  common::Status OnRow(std::uint32_t xid, std::uint32_t relation_id, ChangeEvent event,
                       char old_kind, const TupleData* old_tuple, const TupleData* new_tuple);
  common::Status Deliver(std::uint32_t xid, std::variant<ChangeEvent, TableSchema> item);
  common::Status EmitNow(ChangeEvent& event);
  // A row image written as JSON text into `image` and its key into
  // event.key_json, byte for byte what dumping TupleToJson's trees gives
  // (`key_only`: of the key columns alone). Unchanged TOAST values are
  // named in event.unchanged_columns; false (nothing written) when one is in
  // a key column or in an `old_row` image.
  common::Result<bool> RenderRow(const Relation& rel, const TupleData& tuple, bool old_row,
                                 bool key_only, std::string& image, ChangeEvent& event) const;
  // Values carried as their text are named in `as_text` (when given).
  common::Result<nlohmann::json> TupleToJson(const Relation& rel, const TupleData& tuple,
                                             bool key_only, std::vector<std::string>* unchanged,
                                             std::vector<std::string>* as_text) const;
  // Logs (once per column) that a value TextToJson refused goes as its text.
  void NoteTextFallback(const TableSchema& schema, const ColumnSchema& column,
                        const common::Status& why) const;

  ChangeSink* sink_;
  bool text_rows_;  // the sink takes row images as JSON text
  SchemaCache* schemas_;
  std::string topic_prefix_;
  KeyLookup key_lookup_;
  ProductionMetrics* metrics_;
  ColumnChangesCallback on_column_changes_;

  std::unordered_map<std::uint32_t, Relation> relations_;
  std::unordered_map<std::uint32_t, std::string> type_names_;
  mutable std::set<std::string> fallback_noted_;  // table.column

  bool in_transaction_ = false;
  std::uint32_t xid_ = 0;
  std::int64_t commit_time_micros_ = 0;
  Lsn commit_lsn_ = 0;
  Lsn current_lsn_ = 0;

  std::uint32_t stream_xid_ = 0;  // top-level xid of the open stream block
  std::map<std::uint32_t, Stream> streams_;
  std::string spool_dir_ = std::filesystem::temp_directory_path().string();
  std::size_t spool_memory_ = std::size_t{8} << 20;
  std::function<common::Status()> replay_progress_;
  Lsn last_checkpoint_ = 0;
};

}  // namespace sluice::connectors::postgres
