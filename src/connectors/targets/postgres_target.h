// The PostgreSQL target: creates the table on first use, adds columns when
// the source grows, and applies each batch in one transaction as set-based
// upserts and deletes (json_populate_recordset turns one JSON parameter into
// typed rows, so a batch is a handful of statements whatever its size).
// A failure is either an outage (the connection, a privilege, the disk, a
// serialization failure: IsOutage of its SQLSTATE), returned as Unavailable
// so nothing counts as delivered, or a refusal of rows (bad data, a
// constraint): the batch is then bisected inside one transaction, each part
// in a savepoint, so only the rows at fault are rejected, with the
// database's message, while the others land.
//
// A large insert-only batch (a snapshot, a bulk load, a catch-up) takes the
// COPY path instead: straight into the table when its key is a primary key
// and none of the keys is there yet, else COPYed into a temporary table and
// moved with one INSERT ... ON CONFLICT DO UPDATE, so replays stay
// idempotent. Whatever the COPY path refuses is applied the ordinary way,
// poison rows included.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "connectors/targets/target_change.h"

namespace sluice::connectors::targets {

struct CopyText;  // copy_text.h

// A PostgreSQL identifier quoted: "name", any double quote in it doubled.
// Quote schema and table apart ("s"."t"). The backfill loader quotes with it too.
std::string QuoteIdent(const std::string& name);

// The longest identifier PostgreSQL keeps (NAMEDATALEN - 1), in bytes.
inline constexpr std::size_t kMaxIdentifierBytes = 63;

// The name a source's table or column (or a configured schema or table)
// has in a PostgreSQL target. PostgreSQL cuts a longer identifier to 63
// bytes with only a NOTICE, so two names sharing their first 63 bytes
// would meet in one column (MariaDB allows 64 characters, up to 256 bytes;
// a Kafka topic's JSON keys have no limit). A name of at most 63 bytes is
// itself; a longer one is its first bytes, cut at a UTF-8 character
// boundary, then "_" and the first 8 hex digits of the SHA-256 of the
// whole name: at most 63 bytes, the same on every run and every worker.
// Everything the target creates, alters, copies into, updates, keys or
// reads back is named this way, and so is the backfill loader's destination.
std::string PostgresIdentifier(std::string_view name);

struct PostgresTargetOptions {
  std::string url;  // libpq connection string (keywords or URL) of the target database
  std::string schema = "public";
  std::string table;         // unqualified target table name
  bool create_table = true;  // auto-create from the first change's columns
  // Take the destination's backfill fence exclusively in every batch's
  // transaction, so a live stream and a backfill loader never interleave
  // inside one loader chunk (the ordering rule: src/backfill/loader.h).
  // Off only for the loader itself, which holds the fence shared.
  bool backfill_fence = true;
  // Batches with at least this many changes go through COPY; 0 never. Its
  // staging table lives as long as the session, so even one change costs
  // no more that way (bench/cdc/mixed.sh).
  std::size_t copy_threshold = 1;
};

class PostgresTarget {
 public:
  explicit PostgresTarget(PostgresTargetOptions options);
  ~PostgresTarget();

  // Applies the batch; returns the changes refused (empty when all landed).
  // An outage is an Unavailable status (nothing is acknowledged, so the
  // caller retries the whole batch).
  common::Result<std::vector<RejectedChange>> Apply(const std::vector<TargetChange>& batch);

  // Row changes read in place from their messages (inserts, updates and
  // deletes), of the table's `columns`, through the COPY path without
  // decoding each row into a tree: folded by key (an image that left
  // unchanged columns out completed from the one before it), deletes by
  // their keys, and one COPY per column set. True when the whole batch
  // landed; false when it does not fit that path (see RenderJsonImages) or
  // the database refused it, and the caller then decodes it and calls
  // Apply, which rejects poison rows one by one. An error status as for Apply.
  common::Result<bool> ApplyJsonRows(const std::vector<JsonRow>& rows,
                                     const std::vector<TargetColumn>& columns);
  // ApplyJsonRows in its three steps (see Target::PrepareJsonRows): the
  // last COPY of a started batch is sent in one query with the rest of its
  // transaction, COMMIT included, and its outcome read by FinishPrepared.
  common::Result<std::unique_ptr<PreparedRows>> PrepareJsonRows(
      const std::vector<JsonRow>& rows, const std::vector<TargetColumn>& columns);
  common::Result<bool> StartPrepared(std::unique_ptr<PreparedRows> prepared);
  common::Result<bool> FinishPrepared();

  // The advisory-lock key text of a destination's backfill fence; both sides
  // lock pg_advisory_*lock*(hashtextextended(key, 0)) on the target database.
  static std::string BackfillFenceKey(const std::string& schema, const std::string& table);

  // Whether an error of this SQLSTATE is the database's state (an outage:
  // retry, never drop) rather than the row's fault. Unknown ones are outages.
  static bool IsOutage(const std::string& sqlstate);

  // PostgreSQL type for a source type name (int4 -> integer, _text -> text[] ...).
  static std::string TargetType(const std::string& source_type);

  // Batches applied through COPY so far, and of those, the ones with rows
  // copied straight into the table, not staged.
  std::int64_t copied_batches() const { return copied_batches_; }
  std::int64_t direct_batches() const { return direct_batches_; }

 private:
  common::Status Connect();
  void Fence(pqxx::transaction_base& tx);
  void EnsureTable(pqxx::transaction_base& tx, const std::vector<TargetColumn>& columns);
  void ApplyFolded(pqxx::transaction_base& tx, const std::vector<TargetChange>& batch);
  // batch[begin, end) in a savepoint, halved on a refusal until the rows at
  // fault are alone (appended to `rejected`); Unavailable on an outage.
  common::Status Bisect(pqxx::transaction_base& tx, const std::vector<TargetChange>& batch,
                        std::size_t begin, std::size_t end, std::vector<RejectedChange>& rejected);
  // The outage `e` is (Unavailable, the database's words), or nullopt when
  // it is about the rows.
  std::optional<common::Status> Outage(const std::exception& e);
  // An update that changed the key: its row moves to the new key.
  void MoveKey(pqxx::transaction_base& tx, const TargetChange& change);
  // "a.k1 = b.k1 AND ..." over the key columns.
  std::string KeyMatch(const std::string& a, const std::string& b) const;
  // Statements that apply rows leaving out unchanged columns, read from
  // `source` (a FROM item aliased s) with the column list `cols` of
  // `names`: the rows there are updated, the others inserted.
  std::vector<std::string> PartialImageSql(const std::string& source, const std::string& cols,
                                           const std::vector<std::string>& names) const;
  // Records a column of the table and its type.
  void NoteColumn(const std::string& name, const std::string& type);
  // Follows a source column's type change (DDL at the source) where that is
  // safe: the column is altered to the type this target gives the new
  // source type when that type takes every value of its current one
  // (connectors/postgres/type_widening.h: integer -> bigint, real -> double
  // precision, varchar(n) -> text, ...). Anything else leaves the column as
  // it is: a value it refuses is a rejected row like any other. Looked at
  // when a column's source type differs from the last one seen; on first
  // sight, only a column without a declared size or precision (as this
  // target creates them) is widened, never one a user sized.
  void FollowTypes(pqxx::transaction_base& tx, const std::vector<TargetColumn>& columns);
  // True when a column's source type differs from the last one seen.
  bool TypesChanged(const std::vector<TargetColumn>& columns) const;
  // The source's key columns as `columns` mark them.
  static std::vector<std::string> SourceKey(const std::vector<TargetColumn>& columns);
  // True when the table is keyed as the source keys it (it has no primary
  // key of its own) and the source's key is not the one in use.
  bool KeyChanged(const std::vector<TargetColumn>& columns) const;
  // Follows a key the source changed (a primary key added to a table that
  // had none, dropped, or changed): the table gets a unique index on the
  // new key, which the upserts' ON CONFLICT needs (a whole-row one this
  // target made goes when the new key is not the whole row), and changes
  // are matched by it from then on. Without this, rows keyed the new way
  // matched nothing and old images stayed beside the new (found from
  // outside).
  void FollowKey(pqxx::transaction_base& tx, const std::vector<TargetColumn>& columns);
  // The COPY path; FailedPrecondition when the batch does not fit it (the
  // caller then applies it the ordinary way).
  common::Status ApplyCopy(const std::vector<TargetChange>& batch);
  // COPYs rendered rows, one COPY per column set: straight in, or staged
  // and upserted, in one transaction with deleting the rows of
  // `delete_keys` (a JSON array's text; empty for none). No key may be in
  // two of them.
  // With `defer`, the transaction is left under way (BulkConnection::CopyIn)
  // and its bookkeeping to FinishPrepared.
  common::Status CopyRows(const std::vector<TargetColumn>& columns,
                          const std::vector<CopyText>& groups, const std::string& delete_keys,
                          bool defer = false);
  // CopyRows with its database exceptions told apart: Unavailable for a lost
  // connection, FailedPrecondition for the rest (the batch does not fit).
  common::Status CopyRowsCaught(const std::vector<TargetColumn>& columns,
                                const std::vector<CopyText>& groups, const std::string& delete_keys,
                                bool defer);
  std::string Qualified() const;
  // The batch with every column name as the table holds it
  // (PostgresIdentifier), or nullopt when every name is short enough
  // to be its own.
  static std::optional<std::vector<TargetChange>> InPostgresNames(
      const std::vector<TargetChange>& batch);
  // Apply of a batch already in the table's names.
  common::Result<std::vector<RejectedChange>> ApplyNamed(const std::vector<TargetChange>& batch);

  PostgresTargetOptions options_;
  // options_.schema and options_.table as PostgreSQL names them
  // (PostgresIdentifier). The backfill fence's key keeps the configured
  // names, as the loader's does.
  std::string schema_, table_;
  std::unique_ptr<pqxx::connection> conn_;
  std::set<std::string> known_columns_;
  // Each column's source type as last seen (FollowTypes); forgotten with
  // known_columns_, as a rolled-back transaction may have undone an ALTER.
  std::map<std::string, std::string> source_types_;
  // Columns of type json or jsonb (-> that name): a value carried as its
  // text goes into them through a cast, not as a JSON string.
  std::map<std::string, std::string> json_columns_;
  std::vector<std::string> key_columns_;
  // The key columns are the table's primary key, so a straight COPY cannot
  // duplicate a key: it fails instead.
  bool key_is_primary_ = false;
  // The key is every column (a source table without a primary key): rows
  // are matched with IS NOT DISTINCT FROM, as NULLs are part of the key.
  bool whole_row_key_ = false;
  // key_columns_ are the source's (the table has no primary key of its
  // own), so they follow the source's (FollowKey).
  bool key_from_source_ = false;
  // A unique index on key_columns_ is known to be there (made with the
  // table, or found or made by FollowKey) since the table was last read.
  bool key_checked_ = false;
  // After a straight COPY met an existing key, this many batches go staged.
  int staged_only_batches_ = 0;
  // COPY needs libpq's copy protocol, which this libpqxx does not expose for
  // rows of a width only known at run time: a libpq connection of its own.
  struct BulkConnection;
  std::unique_ptr<BulkConnection> bulk_;
  std::int64_t copied_batches_ = 0;
  std::int64_t direct_batches_ = 0;
  // The batch StartPrepared left under way, and whether its rows went
  // straight into the table.
  struct Prepared;
  std::unique_ptr<Prepared> started_;
  bool started_direct_ = false;
};

}  // namespace sluice::connectors::targets
