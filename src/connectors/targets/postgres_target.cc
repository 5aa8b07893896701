#include "connectors/targets/postgres_target.h"

#include <fmt/format.h>
#include <libpq-fe.h>
#include <sodium.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>

#include "common/hex.h"
#include "connectors/postgres/type_widening.h"
#include "connectors/targets/copy_text.h"
#include "guard/postgres_conninfo.h"

namespace sluice::connectors::targets {

using common::FirstLine;
using nlohmann::json;

std::string QuoteIdent(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + "\"";
}

std::string PostgresIdentifier(std::string_view name) {
  if (name.size() <= kMaxIdentifierBytes) return std::string(name);
  constexpr std::size_t kSuffix = 1 + 8;  // "_" and 8 hex digits
  std::size_t cut = kMaxIdentifierBytes - kSuffix;
  // Back to the start of the character the cut falls in (UTF-8
  // continuation bytes are 10xxxxxx): PostgreSQL refuses a broken one.
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  return std::string(name.substr(0, cut)) + "_" + common::Sha256Hex(name).substr(0, 8);
}

namespace {

bool TooLong(std::string_view name) { return name.size() > kMaxIdentifierBytes; }

bool HasLongMember(const json& object) {
  if (!object.is_object()) return false;
  for (const auto& [k, v] : object.items())
    if (TooLong(k)) return true;
  return false;
}

// `object` with its members named as the table names its columns.
json RenamedMembers(const json& object) {
  if (!HasLongMember(object)) return object;
  json out = json::object();
  for (const auto& [k, v] : object.items()) out[PostgresIdentifier(k)] = v;
  return out;
}

std::vector<TargetColumn> RenamedColumns(std::vector<TargetColumn> columns) {
  for (auto& c : columns) c.name = PostgresIdentifier(c.name);
  return columns;
}

// A refused row's error, followed by the columns holding a NUL character:
// PostgreSQL's own words ("invalid byte sequence ... 0x00") name none.
std::string NamingNulColumns(const TargetChange& change, std::string error) {
  std::set<std::string> named;
  for (const json* image : {&change.after, &change.key}) {
    if (!image->is_object()) continue;
    for (const auto& [name, value] : image->items())
      if (value.is_string() &&
          value.get_ref<const std::string&>().find('\0') != std::string::npos &&
          named.insert(name).second)
        error += fmt::format(
            "; column {} holds a NUL character (U+0000), which PostgreSQL text cannot store", name);
  }
  return error;
}

// Sources send bytea as base64; PostgreSQL's input function wants \x hex.
json NormaliseValue(const std::string& source_type, const json& value) {
  if (source_type != "bytea" || !value.is_string()) return value;
  const auto& text = value.get_ref<const std::string&>();
  if (text.rfind("\\x", 0) == 0) return value;
  std::string bin(text.size(), '\0');
  size_t len = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(bin.data()), bin.size(), text.c_str(),
                        text.size(), nullptr, &len, nullptr, sodium_base64_VARIANT_ORIGINAL) != 0)
    return value;
  bin.resize(len);
  return "\\x" + common::ToHex(bin);
}

// Changes to one key within a batch, folded so one statement per key set is
// enough: later images merge over earlier ones, a delete resets the row.
struct FoldedRow {
  json image = json::object();
  bool upsert = false;
  bool deleted = false;
  std::set<std::string> text;  // image columns carried as their text (as_text)
};

std::string PqError(PGconn* conn) { return FirstLine(PQerrorMessage(conn)); }

// After a straight COPY met a key already there (a replay, which comes in
// runs), this many batches go staged.
constexpr int kStagedBatchesAfterReplay = 8;

// Values the target stores are TOAST-compressed with lz4, about four times
// quicker than pglz (the mixed bench's 10 KB values cost the target most of
// its time there), when the server has lz4 and nobody chose a method: a
// setting from the configuration, the database or the role is kept, as is a
// column's own COMPRESSION.
constexpr const char* kPreferLz4Sql =
    "SELECT set_config('default_toast_compression', 'lz4', false) FROM pg_settings WHERE name "
    "= 'default_toast_compression' AND source = 'default' AND 'lz4' = ANY(enumvals)";

}  // namespace

struct PostgresTarget::BulkConnection {
  PGconn* conn = nullptr;
  ~BulkConnection() {
    if (conn) PQfinish(conn);
  }
  bool connected() const { return PQstatus(conn) == CONNECTION_OK; }
  // Runs one statement; its error message, or empty.
  std::string Exec(const std::string& sql) {
    PGresult* r = PQexec(conn, sql.c_str());
    auto status = PQresultStatus(r);
    std::string error = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK
                            ? std::string()
                            : FirstLine(PQresultErrorMessage(r));
    PQclear(r);
    return error;
  }
  // One COPY of a transaction: its statement, its rows (COPY text) and the
  // statements run after it.
  struct CopyStep {
    std::string copy_sql;
    const std::string* rows = nullptr;
    std::vector<std::string> after;
  };
  // Whether this session's staging table (see CopyRows) is there and of
  // the table's current columns.
  bool staging_ready = false;
  bool staging_made = false;  // created once in this session (maybe rolled back since)
  // One transaction: the backfill fence (when `fence_key` is set), `before`,
  // each step, COMMIT. Anything refused rolls it all back: Unavailable when
  // the connection is gone or for an outage (PostgresTarget::IsOutage),
  // AlreadyExists for a unique violation, else InvalidArgument, each with
  // the server's words. With `defer`, the last step's rows are sent with
  // the rest of the transaction (its statements after and the COMMIT) in
  // the same query, and it returns without waiting: FinishCopy reads how
  // it ended, and the connection takes nothing else before that.
  common::Status CopyIn(const std::string& fence_key, const std::vector<std::string>& before,
                        const std::vector<CopyStep>& steps, bool defer = false) {
    error.clear();
    sqlstate.clear();
    auto run = [&](const std::string& sql, ExecStatusType wanted = PGRES_COMMAND_OK) {
      return Take(PQexec(conn, sql.c_str()), wanted);
    };
    bool ok = run("BEGIN");
    if (ok && !fence_key.empty()) {
      // The same fence as the ordinary path: a backfill chunk never
      // interleaves with this batch (see src/backfill/loader.h).
      const char* params[1] = {fence_key.c_str()};
      ok = Take(PQexecParams(conn, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", 1,
                             nullptr, params, nullptr, nullptr, 0),
                PGRES_TUPLES_OK);
    }
    for (const auto& sql : before) ok = ok && run(sql);
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const auto& step = steps[i];
      const bool last_deferred = defer && i + 1 == steps.size();
      if (last_deferred) {
        // COPY FROM STDIN may open a query of several statements: the
        // server goes on with the rest once the rows have ended.
        std::string sql = step.copy_sql;
        for (const auto& after : step.after) sql += "; " + after;
        sql += "; COMMIT";
        ok = ok && PQsendQuery(conn, sql.c_str()) == 1;
        if (ok) {
          PGresult* r = PQgetResult(conn);
          ok = PQresultStatus(r) == PGRES_COPY_IN;
          if (!ok) {
            Take(r, PGRES_COPY_IN);
            while (PGresult* rest = PQgetResult(conn)) PQclear(rest);
          } else {
            PQclear(r);
          }
        } else if (error.empty()) {
          error = PqError(conn);
        }
      } else {
        ok = ok && run(step.copy_sql, PGRES_COPY_IN);
      }
      if (ok) {
        const std::string& rows = *step.rows;
        constexpr std::size_t kPiece = 1 << 20;
        for (std::size_t at = 0; ok && at < rows.size(); at += kPiece) {
          auto n = std::min(kPiece, rows.size() - at);
          ok = PQputCopyData(conn, rows.data() + at, static_cast<int>(n)) == 1;
        }
        ok = PQputCopyEnd(conn, nullptr) == 1 && ok;
        if (!ok && error.empty()) error = PqError(conn);
        if (last_deferred) {
          if (ok) return common::Status::Ok();  // under way: FinishCopy
          while (PGresult* r = PQgetResult(conn)) PQclear(r);
          break;
        }
        while (PGresult* r = PQgetResult(conn)) ok = Take(r, PGRES_COMMAND_OK) && ok;
      }
      for (const auto& sql : step.after) ok = ok && run(sql);
    }
    // Also with `defer` when no step had rows: FinishCopy finds nothing then.
    ok = ok && run("COMMIT");
    if (ok) return common::Status::Ok();
    return Failed();
  }

  // How a transaction CopyIn left under way ended, as CopyIn says it.
  common::Status FinishCopy() {
    error.clear();
    sqlstate.clear();
    bool ok = true;
    while (PGresult* r = PQgetResult(conn)) ok = Take(r, PGRES_COMMAND_OK) && ok;
    if (ok) return common::Status::Ok();
    return Failed();
  }

 private:
  // The first refusal's words and SQLSTATE, of the transaction under way.
  std::string error, sqlstate;

  bool Take(PGresult* r, ExecStatusType wanted) {
    bool ok = PQresultStatus(r) == wanted || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok && error.empty()) {
      error = FirstLine(PQresultErrorMessage(r));
      if (const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE)) sqlstate = state;
    }
    PQclear(r);
    return ok;
  }

  // Rolls the transaction back and says why it failed.
  common::Status Failed() {
    (void)Exec("ROLLBACK");
    staging_ready = false;  // a rollback may have taken it away
    if (!connected()) return common::Unavailable("target connection lost: " + error);
    if (sqlstate == "23505") return common::AlreadyExists(error);
    if (PostgresTarget::IsOutage(sqlstate))
      return common::Unavailable("target database refused the write: " + error);
    return common::InvalidArgument(error);
  }
};

PostgresTarget::PostgresTarget(PostgresTargetOptions options)
    : options_(std::move(options)),
      schema_(PostgresIdentifier(options_.schema)),
      table_(PostgresIdentifier(options_.table)) {}
PostgresTarget::~PostgresTarget() = default;

std::string PostgresTarget::Qualified() const {
  return QuoteIdent(schema_) + "." + QuoteIdent(table_);
}

std::optional<std::vector<TargetChange>> PostgresTarget::InPostgresNames(
    const std::vector<TargetChange>& batch) {
  const auto long_names = [](const TargetChange& c) {
    for (const auto& column : c.columns)
      if (TooLong(column.name)) return true;
    for (const auto& name : c.as_text)
      if (TooLong(name)) return true;
    return HasLongMember(c.key) || HasLongMember(c.after) || HasLongMember(c.old_key);
  };
  if (std::none_of(batch.begin(), batch.end(), long_names)) return std::nullopt;
  std::vector<TargetChange> named = batch;
  for (auto& c : named) {
    c.columns = RenamedColumns(std::move(c.columns));
    for (auto& name : c.as_text) name = PostgresIdentifier(name);
    c.key = RenamedMembers(c.key);
    c.after = RenamedMembers(c.after);
    c.old_key = RenamedMembers(c.old_key);
  }
  return named;
}

std::string PostgresTarget::BackfillFenceKey(const std::string& schema, const std::string& table) {
  return "sluice.backfill:" + schema + "." + table;
}

std::string PostgresTarget::TargetType(const std::string& source_type) {
  static const std::map<std::string, std::string> kTypes = {{"int2", "smallint"},
                                                            {"int4", "integer"},
                                                            {"int8", "bigint"},
                                                            {"float4", "real"},
                                                            {"float8", "double precision"},
                                                            {"numeric", "numeric"},
                                                            {"bool", "boolean"},
                                                            {"text", "text"},
                                                            {"varchar", "text"},
                                                            {"bpchar", "text"},
                                                            {"name", "text"},
                                                            {"uuid", "uuid"},
                                                            {"json", "json"},
                                                            {"jsonb", "jsonb"},
                                                            {"bytea", "bytea"},
                                                            {"date", "date"},
                                                            {"time", "time"},
                                                            {"timetz", "timetz"},
                                                            {"timestamp", "timestamp"},
                                                            {"timestamptz", "timestamptz"},
                                                            {"interval", "interval"},
                                                            {"inet", "inet"},
                                                            // Its text ("$12.34") is locale-bound:
                                                            // numeric refuses it, text keeps it.
                                                            {"money", "text"},
                                                            {"oid", "bigint"},
                                                            {"bit", "varbit"},
                                                            {"varbit", "varbit"},
                                                            {"xml", "xml"},
                                                            {"tsvector", "tsvector"},
                                                            {"tsquery", "tsquery"},
                                                            {"point", "point"},
                                                            {"line", "line"},
                                                            {"lseg", "lseg"},
                                                            {"box", "box"},
                                                            {"path", "path"},
                                                            {"polygon", "polygon"},
                                                            {"circle", "circle"},
                                                            {"cidr", "cidr"},
                                                            {"macaddr", "macaddr"},
                                                            {"macaddr8", "macaddr8"},
                                                            {"pg_lsn", "pg_lsn"},
                                                            {"int4range", "int4range"},
                                                            {"int8range", "int8range"},
                                                            {"numrange", "numrange"},
                                                            {"tsrange", "tsrange"},
                                                            {"tstzrange", "tstzrange"},
                                                            {"daterange", "daterange"},
                                                            {"int4multirange", "int4multirange"},
                                                            {"int8multirange", "int8multirange"},
                                                            {"nummultirange", "nummultirange"},
                                                            {"tsmultirange", "tsmultirange"},
                                                            {"tstzmultirange", "tstzmultirange"},
                                                            {"datemultirange", "datemultirange"}};
  if (source_type.size() > 1 && source_type[0] == '_') {
    auto element = TargetType(source_type.substr(1));
    return element == "text" && source_type != "_text" && kTypes.count(source_type.substr(1)) == 0
               ? "text[]"
               : element + "[]";
  }
  auto it = kTypes.find(source_type);
  return it == kTypes.end() ? "text" : it->second;
}

common::Status PostgresTarget::Connect() {
  if (conn_ && conn_->is_open()) return common::Status::Ok();
  // The connect policy, at connect time: to the checked address only.
  auto pinned = guard::PinPostgres(options_.url);
  if (!pinned.ok()) {
    if (guard::IsRefusal(pinned.status())) return pinned.status();
    return common::Unavailable("target database unreachable: " + pinned.status().message());
  }
  try {
    conn_ = std::make_unique<pqxx::connection>(*pinned);
    pqxx::nontransaction session(*conn_);
    session.exec(kPreferLz4Sql);
    session.commit();
    known_columns_.clear();
    return common::Status::Ok();
  } catch (const std::exception& e) {
    conn_.reset();
    return common::Unavailable(fmt::format("target database unreachable: {}", FirstLine(e.what())));
  }
}

void PostgresTarget::Fence(pqxx::transaction_base& tx) {
  if (!options_.backfill_fence) return;
  tx.exec_params("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                 BackfillFenceKey(options_.schema, options_.table));
}

void PostgresTarget::EnsureTable(pqxx::transaction_base& tx,
                                 const std::vector<TargetColumn>& columns) {
  if (known_columns_.empty()) {
    json_columns_.clear();
    source_types_.clear();
    for (const auto& r : tx.exec_params(
             "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = "
             "$1 AND table_name = $2",
             schema_, table_)) {
      known_columns_.insert(r[0].c_str());
      std::string type = r[1].c_str();
      if (type == "json" || type == "jsonb") json_columns_[r[0].c_str()] = type;
    }
    // The key, read again with the table: a rolled-back transaction may
    // have undone a unique index FollowKey made.
    key_columns_.clear();
    key_is_primary_ = whole_row_key_ = key_from_source_ = key_checked_ = false;
    for (const auto& r : tx.exec_params(
             "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
             "AND a.attnum = ANY(i.indkey) WHERE i.indisprimary AND i.indrelid = "
             "to_regclass($1) ORDER BY array_position(i.indkey, a.attnum)",
             Qualified())) {
      key_columns_.emplace_back(r[0].c_str());
      key_is_primary_ = true;
    }
  }
  if (key_columns_.empty()) {
    key_columns_ = SourceKey(columns);
    // Every column the key: a source table without a primary key, under
    // REPLICA IDENTITY FULL. Its columns may be NULL.
    whole_row_key_ = !key_columns_.empty() && key_columns_.size() == columns.size();
    key_from_source_ = !key_columns_.empty();
  }
  if (known_columns_.empty()) {
    if (!options_.create_table) {
      throw std::runtime_error(fmt::format("target table {} does not exist", Qualified()));
    }
    std::string ddl = fmt::format("CREATE SCHEMA IF NOT EXISTS {}; CREATE TABLE IF NOT EXISTS {} (",
                                  QuoteIdent(schema_), Qualified());
    for (std::size_t i = 0; i < columns.size(); ++i) {
      ddl += fmt::format("{}{} {}", i ? ", " : "", QuoteIdent(columns[i].name),
                         TargetType(columns[i].source_type));
    }
    if (!key_columns_.empty()) {
      key_is_primary_ = true;
      // A whole-row key takes NULLs, which a primary key refuses (where the
      // target cannot say NULLS NOT DISTINCT, rows with a NULL are refused).
      ddl += whole_row_key_ && tx.conn().server_version() >= 150000
                 ? ", UNIQUE NULLS NOT DISTINCT ("
                 : ", PRIMARY KEY (";
      for (std::size_t i = 0; i < key_columns_.size(); ++i)
        ddl += (i ? ", " : "") + QuoteIdent(key_columns_[i]);
      ddl += ")";
    }
    tx.exec(ddl + ")");
    key_checked_ = true;
    for (const auto& c : columns) NoteColumn(c.name, TargetType(c.source_type));
    spdlog::info("created target table {}", Qualified());
    return;
  }
  for (const auto& c : columns) {
    if (known_columns_.count(c.name)) continue;
    tx.exec(fmt::format("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {}", Qualified(),
                        QuoteIdent(c.name), TargetType(c.source_type)));
    NoteColumn(c.name, TargetType(c.source_type));
    spdlog::info("added column {} to {}", c.name, Qualified());
  }
  FollowKey(tx, columns);
}

std::vector<std::string> PostgresTarget::SourceKey(const std::vector<TargetColumn>& columns) {
  std::vector<std::string> key;
  for (const auto& c : columns)
    if (c.key) key.push_back(c.name);
  return key;
}

bool PostgresTarget::KeyChanged(const std::vector<TargetColumn>& columns) const {
  if (!key_from_source_ || key_columns_.empty()) return false;
  auto key = SourceKey(columns);
  return !key.empty() && key != key_columns_;
}

void PostgresTarget::FollowKey(pqxx::transaction_base& tx,
                               const std::vector<TargetColumn>& columns) {
  if (!key_from_source_) return;
  const auto key = SourceKey(columns);
  if (key.empty() || (key == key_columns_ && key_checked_)) return;
  const bool whole_row = key.size() == columns.size();
  std::string list;
  for (const auto& k : key) list += (list.empty() ? "" : ", ") + QuoteIdent(k);
  // The unique indexes (and their constraints) of the table on exactly `names`.
  const auto unique_on = [&](const std::vector<std::string>& names) {
    return tx.exec_params(
        "SELECT c.conname FROM pg_index i LEFT JOIN pg_constraint c ON c.conindid = "
        "i.indexrelid AND c.conrelid = i.indrelid WHERE i.indrelid = to_regclass($1) AND "
        "i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL AND ARRAY(SELECT "
        "a.attname::text FROM pg_attribute a WHERE a.attrelid = i.indrelid AND a.attnum = "
        "ANY(i.indkey) ORDER BY 1) = ARRAY(SELECT jsonb_array_elements_text($2) ORDER BY 1)",
        Qualified(), json(names).dump());
  };
  if (unique_on(key).empty()) {
    // The upserts' ON CONFLICT needs one.
    if (!options_.create_table)
      throw std::runtime_error(
          fmt::format("target table {} has no unique index on the source's key ({}): add one",
                      Qualified(), list));
    tx.exec(fmt::format(
        "CREATE UNIQUE INDEX ON {} {}({})", Qualified(),
        whole_row && tx.conn().server_version() >= 150000 ? "NULLS NOT DISTINCT " : "", list));
    spdlog::info("made a unique index on ({}) of {}, the source's key", list, Qualified());
  }
  // The source re-keyed the table (a primary key added, dropped or
  // changed). A whole-row key only limits rows once there is a real one
  // (its index entries hold every value): the constraint this target made
  // for it goes.
  if (key != key_columns_ && whole_row_key_ && !whole_row) {
    for (const auto& r : unique_on(key_columns_))
      if (!r[0].is_null())
        tx.exec(fmt::format("ALTER TABLE {} DROP CONSTRAINT {}", Qualified(),
                            QuoteIdent(r[0].c_str())));
  }
  if (key != key_columns_)
    spdlog::info("the source keys {} by ({}) now: the table follows", Qualified(), list);
  key_columns_ = key;
  whole_row_key_ = whole_row;
  key_checked_ = true;
}

bool PostgresTarget::TypesChanged(const std::vector<TargetColumn>& columns) const {
  for (const auto& c : columns) {
    if (c.source_type.empty()) continue;
    auto it = source_types_.find(c.name);
    if (it == source_types_.end() || it->second != c.source_type) return true;
  }
  return false;
}

void PostgresTarget::FollowTypes(pqxx::transaction_base& tx,
                                 const std::vector<TargetColumn>& columns) {
  if (!TypesChanged(columns)) return;
  std::map<std::string, connectors::postgres::ColumnType> current;
  for (const auto& r : tx.exec_params(
           "SELECT a.attname, t.typname, a.atttypmod FROM pg_attribute a JOIN pg_type t ON t.oid "
           "= a.atttypid WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT "
           "a.attisdropped",
           Qualified()))
    current[r[0].c_str()] = {r[1].c_str(), r[2].as<std::int32_t>()};
  for (const auto& c : columns) {
    if (c.source_type.empty()) continue;
    auto seen = source_types_.find(c.name);
    if (seen != source_types_.end() && seen->second == c.source_type) continue;
    bool changed = seen != source_types_.end();
    source_types_[c.name] = c.source_type;
    auto it = current.find(c.name);
    if (it == current.end() || (!changed && it->second.modifier >= 0)) continue;
    std::string want = TargetType(c.source_type);
    auto want_name = tx.exec_params1(
                           "SELECT coalesce((SELECT typname::text FROM pg_type WHERE oid = "
                           "to_regtype($1)), '')",
                           want)[0]
                         .as<std::string>();
    if (!connectors::postgres::IsSafeWidening(it->second, {want_name, -1})) continue;
    tx.exec(fmt::format("ALTER TABLE {} ALTER COLUMN {} TYPE {}", Qualified(), QuoteIdent(c.name),
                        want));
    spdlog::info("widened column {} of {} from {} to {} (its source type is now {})", c.name,
                 Qualified(), connectors::postgres::FormatType(it->second), want, c.source_type);
    it->second = {want_name, -1};
  }
}

void PostgresTarget::NoteColumn(const std::string& name, const std::string& type) {
  known_columns_.insert(name);
  if (type == "json" || type == "jsonb") json_columns_[name] = type;
}

std::string PostgresTarget::KeyMatch(const std::string& a, const std::string& b) const {
  std::string match;
  for (std::size_t i = 0; i < key_columns_.size(); ++i) {
    const auto& k = QuoteIdent(key_columns_[i]);
    // A whole-row key may hold NULLs, which '=' never matches.
    match += fmt::format("{}{}.{} {} {}.{}", i ? " AND " : "", a, k,
                         whole_row_key_ ? "IS NOT DISTINCT FROM" : "=", b, k);
  }
  return match;
}

std::vector<std::string> PostgresTarget::PartialImageSql(
    const std::string& source, const std::string& cols,
    const std::vector<std::string>& names) const {
  std::string sets, select;
  for (const auto& n : names) {
    select += (select.empty() ? "s." : ", s.") + QuoteIdent(n);
    if (std::find(key_columns_.begin(), key_columns_.end(), n) == key_columns_.end())
      sets += (sets.empty() ? "" : ", ") + fmt::format("{} = s.{}", QuoteIdent(n), QuoteIdent(n));
  }
  std::vector<std::string> sql;
  if (!sets.empty())
    sql.push_back(fmt::format("UPDATE {} t SET {} FROM {} WHERE {}", Qualified(), sets, source,
                              KeyMatch("t", "s")));
  sql.push_back(fmt::format(
      "INSERT INTO {} ({}) SELECT {} FROM {} WHERE NOT EXISTS (SELECT FROM {} t WHERE {})",
      Qualified(), cols, select, source, Qualified(), KeyMatch("t", "s")));
  return sql;
}

void PostgresTarget::MoveKey(pqxx::transaction_base& tx, const TargetChange& change) {
  // The row under the old key takes the new one, keeping the columns the
  // update did not send (unchanged TOASTed values); the upsert of the new
  // image then follows as for any update. A row already under the new key
  // gives way first, when the old one is still there to move (a replay
  // finds the old key gone and the new one in place, and leaves it).
  std::string old_key = change.old_key.dump(), new_key = change.key.dump();
  tx.exec_params(fmt::format("DELETE FROM {0} t USING json_populate_record(NULL::{0}, $1) n "
                             "WHERE {1} AND EXISTS (SELECT 1 FROM {0} o, "
                             "json_populate_record(NULL::{0}, $2) p WHERE {2})",
                             Qualified(), KeyMatch("t", "n"), KeyMatch("o", "p")),
                 new_key, old_key);
  std::string set;
  for (std::size_t i = 0; i < key_columns_.size(); ++i)
    set += fmt::format("{}{} = n.{}", i ? ", " : "", QuoteIdent(key_columns_[i]),
                       QuoteIdent(key_columns_[i]));
  tx.exec_params(fmt::format("UPDATE {0} t SET {1} FROM json_populate_record(NULL::{0}, $1) n, "
                             "json_populate_record(NULL::{0}, $2) p WHERE {2}",
                             Qualified(), set, KeyMatch("t", "p")),
                 new_key, old_key);
}

void PostgresTarget::ApplyFolded(pqxx::transaction_base& tx,
                                 const std::vector<TargetChange>& batch) {
  std::size_t start = 0;
  while (start < batch.size()) {
    if (batch[start].op == common::ChangeOp::kTruncate) {
      tx.exec(fmt::format("TRUNCATE {}", Qualified()));
      ++start;
      continue;
    }
    // A key change moves its row first, then starts a segment of its own:
    // the segment's deletes run before its upserts, which must not pass it.
    if (batch[start].op == common::ChangeOp::kUpdate && batch[start].old_key.is_object()) {
      EnsureTable(tx, batch[start].columns);
      if (key_columns_.empty())
        throw std::runtime_error("target table has no key to apply changes by");
      MoveKey(tx, batch[start]);
    }
    // One segment: up to the next truncate or key change.
    std::size_t end = start;
    std::vector<std::string> order;
    std::map<std::string, FoldedRow> rows;
    std::vector<TargetColumn> columns;
    std::map<std::string, std::string> types;
    for (; end < batch.size() && batch[end].op != common::ChangeOp::kTruncate &&
           !(end > start && batch[end].op == common::ChangeOp::kUpdate &&
             batch[end].old_key.is_object());
         ++end) {
      const auto& change = batch[end];
      if (!change.columns.empty()) columns = change.columns;
      for (const auto& c : change.columns) types[c.name] = c.source_type;
      std::string id = change.key.dump();
      auto [it, fresh] = rows.try_emplace(id);
      if (fresh) order.push_back(id);
      auto& row = it->second;
      if (change.op == common::ChangeOp::kDelete) {
        row = FoldedRow{change.key, false, true};
        continue;
      }
      if (!row.upsert) {
        row.image = json::object();
        row.text.clear();
      }
      for (const auto& [k, v] : change.key.items()) row.image[k] = v;
      for (const auto& [k, v] : change.after.items()) {
        bool text = v.is_string() && std::find(change.as_text.begin(), change.as_text.end(), k) !=
                                         change.as_text.end();
        row.image[k] = text ? v : NormaliseValue(types[k], v);
        if (text)
          row.text.insert(k);
        else
          row.text.erase(k);
      }
      row.upsert = true;
    }
    EnsureTable(tx, columns);
    FollowTypes(tx, columns);
    if (key_columns_.empty())
      throw std::runtime_error("target table has no key to apply changes by");

    json deletes = json::array();
    std::map<std::string, json> upserts_by_columns;  // column list -> rows
    // Per column list: the columns whose string goes to a json column as
    // its text (json_populate_record would store it as a JSON string).
    std::map<std::string, std::set<std::string>> text_by_columns;
    for (const auto& id : order) {
      auto& row = rows[id];
      if (row.deleted && !row.upsert) {
        deletes.push_back(row.image);
        continue;
      }
      if (!row.upsert) continue;
      for (const auto& [k, v] : row.image.items()) {
        if (!known_columns_.count(k)) EnsureTable(tx, {{k, types[k], false}});
      }
      std::set<std::string> text;
      for (const auto& k : row.text)
        if (json_columns_.count(k)) text.insert(k);
      std::string signature;
      for (const auto& [k, v] : row.image.items()) signature += k + (text.count(k) ? "~," : ",");
      upserts_by_columns[signature].push_back(row.image);
      text_by_columns[signature] = std::move(text);
    }
    std::string key_match = KeyMatch("t", "d");
    if (!deletes.empty()) {
      tx.exec_params(fmt::format("DELETE FROM {} t USING json_populate_recordset(NULL::{}, $1) d "
                                 "WHERE {}",
                                 Qualified(), Qualified(), key_match),
                     deletes.dump());
    }
    std::string conflict;
    for (std::size_t i = 0; i < key_columns_.size(); ++i)
      conflict += (i ? ", " : "") + QuoteIdent(key_columns_[i]);
    for (const auto& [signature, group] : upserts_by_columns) {
      const auto& text = text_by_columns[signature];
      std::string cols, updates, select, named;
      std::vector<std::string> names;
      for (const auto& [k, v] : group[0].items()) {
        cols += (cols.empty() ? "" : ", ") + QuoteIdent(k);
        auto value = text.count(k)
                         ? fmt::format("(x.value->>{})::{}", tx.quote(k), json_columns_[k])
                         : "d." + QuoteIdent(k);
        select += (select.empty() ? "" : ", ") + value;
        named += (named.empty() ? "" : ", ") + value + " AS " + QuoteIdent(k);
        names.push_back(k);
        bool is_key = std::find(key_columns_.begin(), key_columns_.end(), k) != key_columns_.end();
        if (!is_key)
          updates += (updates.empty() ? "" : ", ") +
                     fmt::format("{} = EXCLUDED.{}", QuoteIdent(k), QuoteIdent(k));
      }
      std::string from = text.empty()
                             ? fmt::format("json_populate_recordset(NULL::{}, $1) d", Qualified())
                             : fmt::format(
                                   "json_array_elements($1) x CROSS JOIN LATERAL "
                                   "json_populate_record(NULL::{}, x.value) d",
                                   Qualified());
      auto rows_json = group.dump(-1, ' ', false, json::error_handler_t::replace);
      // Images that leave out a column the source has (unchanged TOAST).
      bool partial = false;
      for (const auto& c : columns) partial = partial || !group[0].contains(c.name);
      if (!partial) {
        tx.exec_params(fmt::format("INSERT INTO {} ({}) SELECT {} FROM {} ON CONFLICT ({}) DO {}",
                                   Qualified(), cols, select, from, conflict,
                                   updates.empty() ? "NOTHING" : "UPDATE SET " + updates),
                       rows_json);
        continue;
      }
      for (const auto& sql :
           PartialImageSql(fmt::format("(SELECT {} FROM {}) s", named, from), cols, names))
        tx.exec_params(sql, rows_json);
    }
    start = end;
  }
}

common::Status PostgresTarget::ApplyCopy(const std::vector<TargetChange>& batch) {
  // Whole row images and deletes, folded by key: each key's last change
  // alone decides its row (a whole image replaces the row, a delete removes
  // it). Images are read in place from the batch: copying each one cost
  // more than the COPY itself (bench/cdc perf). Truncates, key changes and
  // partial images (unchanged TOAST) take the ordinary path.
  std::vector<std::size_t> last;                      // batch index of each key's last change
  std::unordered_map<std::string, std::size_t> slot;  // key text -> its place in last
  const std::vector<TargetColumn>* described = nullptr;
  bool has_text = false;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto& change = batch[i];
    if (change.op == common::ChangeOp::kTruncate) return common::FailedPrecondition("a truncate");
    if (change.old_key.is_object()) return common::FailedPrecondition("a key change");
    if (!change.key.is_object()) return common::FailedPrecondition("no key");
    if (change.op != common::ChangeOp::kDelete && !change.after.is_object())
      return common::FailedPrecondition("no row image");
    if (!change.as_text.empty()) has_text = true;
    if (!change.columns.empty()) described = &change.columns;
    auto [it, fresh] = slot.try_emplace(change.key.dump(), last.size());
    if (fresh)
      last.push_back(i);
    else
      last[it->second] = i;
  }
  std::vector<std::size_t> order;  // the keys whose row is written
  json deletes = json::array();
  for (std::size_t i : last) {
    if (batch[i].op == common::ChangeOp::kDelete)
      deletes.push_back(batch[i].key);
    else
      order.push_back(i);
  }
  if (order.empty()) return common::FailedPrecondition("nothing to copy");
  std::vector<TargetColumn> columns = described ? *described : std::vector<TargetColumn>();
  std::map<std::string, std::string> types;
  for (const auto& c : columns) types[c.name] = c.source_type;
  // One column list for every image of the batch, folded away or not (each
  // image's own keys, in its sorted order, holding the row's key). Else the
  // ordinary path's per-signature statements are what keeps absent columns
  // at their defaults, and its merge of images what keeps an unchanged
  // TOAST value an earlier image of the batch carried.
  std::vector<std::string> names;
  for (const auto& [k, v] : batch[order.front()].after.items()) names.push_back(k);
  for (const auto& change : batch) {
    if (change.op == common::ChangeOp::kDelete) continue;
    if (change.after.size() != names.size()) return common::FailedPrecondition("mixed column sets");
    std::size_t j = 0;
    for (const auto& [k, v] : change.after.items())
      if (k != names[j++]) return common::FailedPrecondition("mixed column sets");
    for (const auto& [k, v] : change.key.items())
      if (!change.after.contains(k) || change.after[k] != v)
        return common::FailedPrecondition("key outside the image");
  }
  std::vector<std::string> name_types;
  for (const auto& n : names) name_types.push_back(types[n]);
  CopyText text{names, {}};
  auto& rows = text.rows;
  for (std::size_t i : order) {
    std::size_t j = 0;
    const auto& as_text = batch[i].as_text;
    for (const auto& [k, v] : batch[i].after.items()) {
      if (j) rows.push_back('\t');
      const auto& type = name_types[j++];
      static const std::string kText = "text";
      if (has_text && v.is_string() &&
          std::find(as_text.begin(), as_text.end(), k) != as_text.end())
        AppendCopyValue(rows, kText, v);  // its text is what COPY reads
      else if (type == "bytea")
        AppendCopyValue(rows, type, NormaliseValue(type, v));
      else
        AppendCopyValue(rows, type, v);
    }
    rows.push_back('\n');
  }
  // Worth trying straight in when every row is new.
  text.fresh = std::all_of(order.begin(), order.end(),
                           [&](std::size_t i) { return common::BringsNewRow(batch[i].op); });
  return CopyRows(columns, {text},
                  deletes.empty() ? std::string()
                                  : deletes.dump(-1, ' ', false, json::error_handler_t::replace));
}

struct PostgresTarget::Prepared : PreparedRows {
  std::vector<TargetColumn> columns;
  std::vector<CopyText> groups;
  std::string deletes;  // a JSON array of keys, empty for none
};

common::Result<bool> PostgresTarget::ApplyJsonRows(const std::vector<JsonRow>& rows,
                                                   const std::vector<TargetColumn>& columns) {
  auto prepared = PrepareJsonRows(rows, columns);
  if (!prepared.ok()) return prepared.status();
  if (!*prepared) return false;
  auto started = StartPrepared(std::move(*prepared));
  if (!started.ok() || !*started) return started;
  return FinishPrepared();
}

common::Result<std::unique_ptr<PreparedRows>> PostgresTarget::PrepareJsonRows(
    const std::vector<JsonRow>& rows, const std::vector<TargetColumn>& columns) {
  if (options_.copy_threshold == 0 || rows.size() < options_.copy_threshold) return NotPrepared();
  // Folded by key: each key's last change decides its row, completed from
  // the images before it when it left unchanged columns out. Keys are
  // compared as their values, not their spelling, as a delete and an
  // upsert of one key must never both reach the database.
  struct FoldedJsonRow {
    JsonRow row;
    std::string column_set;  // rows of one column set, in one order, share a COPY
    bool fresh = false;      // the key's first change here created its row
  };
  std::vector<FoldedJsonRow> last;
  std::deque<MergedImage> merged;  // images completed here (the rows view them)
  std::unordered_map<std::string, std::size_t> slot;
  for (const auto& row : rows) {
    // Text-carried values of a partial image would need merging by name.
    if (!row.as_text.empty() && !row.unchanged.empty()) return NotPrepared();
    auto key = CanonicalKeyText(row.key);
    if (!key) return NotPrepared();
    auto [it, fresh] = slot.try_emplace(std::move(*key), last.size());
    if (fresh) {
      last.push_back({row, std::string(row.unchanged), common::BringsNewRow(row.op)});
      continue;
    }
    auto& earlier = last[it->second];
    if (row.deleted() || row.unchanged.empty() || earlier.row.deleted()) {
      earlier = {row, std::string(row.unchanged), earlier.fresh};
      continue;
    }
    if (!earlier.row.as_text.empty()) return NotPrepared();
    auto completed = MergePartialImage(earlier.row.image, row.image, row.unchanged);
    if (!completed) return NotPrepared();
    merged.push_back(std::move(*completed));
    // Its members: the later image's, then the columns it took from before.
    std::string column_set = "+" + std::string(row.unchanged) + "|" + merged.back().unchanged;
    earlier = {{row.key, merged.back().image, merged.back().unchanged, row.op},
               std::move(column_set),
               earlier.fresh};
  }
  std::string deletes;
  // One COPY per column set, new rows apart.
  std::map<std::pair<bool, std::string_view>, std::vector<JsonRow>> by_column_set;
  for (const auto& [row, column_set, fresh] : last) {
    if (row.deleted()) {
      deletes += deletes.empty() ? '[' : ',';
      deletes += row.key;
    } else {
      by_column_set[{fresh, column_set}].push_back(row);
    }
  }
  if (!deletes.empty()) deletes += ']';
  std::unordered_map<std::string_view, std::string> types;
  for (const auto& c : columns) types[c.name] = c.source_type;
  static const std::string kUnknown;
  auto type_of = [&](std::string_view name) -> const std::string& {
    auto it = types.find(name);
    return it == types.end() ? kUnknown : it->second;
  };
  std::vector<CopyText> groups;
  for (const auto& [fresh_and_set, group] : by_column_set) {
    auto text = RenderJsonImages(group, type_of);
    if (!text) return NotPrepared();
    text->partial = !group.front().unchanged.empty();
    text->fresh = fresh_and_set.first;
    groups.push_back(std::move(*text));
  }
  auto prepared = std::make_unique<Prepared>();
  prepared->columns = columns;
  // Rendered with the messages' names; written with the table's
  // (PostgresIdentifier), the deleted keys' members too, as
  // json_populate_recordset matches them by name.
  bool long_names = columns.empty();
  for (const auto& c : columns) long_names = long_names || TooLong(c.name);
  for (const auto& group : groups)
    for (const auto& n : group.names) long_names = long_names || TooLong(n);
  if (long_names) {
    prepared->columns = RenamedColumns(columns);
    for (auto& group : groups)
      for (auto& n : group.names) n = PostgresIdentifier(n);
    if (!deletes.empty()) {
      auto keys = json::parse(deletes, nullptr, false);
      if (!keys.is_array()) return NotPrepared();
      for (auto& key : keys) key = RenamedMembers(key);
      deletes = keys.dump(-1, ' ', false, json::error_handler_t::replace);
    }
  }
  prepared->groups = std::move(groups);
  prepared->deletes = std::move(deletes);
  return std::unique_ptr<PreparedRows>(std::move(prepared));
}

common::Result<bool> PostgresTarget::StartPrepared(std::unique_ptr<PreparedRows> prepared) {
  if (started_) return common::FailedPrecondition("a batch is under way already");
  auto* mine = dynamic_cast<Prepared*>(prepared.get());
  if (!mine) return false;
  SLUICE_RETURN_IF_ERROR(Connect());
  auto copied = CopyRowsCaught(mine->columns, mine->groups, mine->deletes, /*defer=*/true);
  if (copied.code() == common::Code::kUnavailable) return copied;
  if (!copied.ok()) return false;
  started_.reset(static_cast<Prepared*>(prepared.release()));
  return true;
}

common::Result<bool> PostgresTarget::FinishPrepared() {
  if (!started_) return common::FailedPrecondition("no batch is under way");
  auto batch = std::move(started_);
  auto finished = bulk_->FinishCopy();
  if (finished.ok()) {
    if (started_direct_) ++direct_batches_;
    ++copied_batches_;
    return true;
  }
  if (finished.code() == common::Code::kAlreadyExists && started_direct_ && bulk_->connected()) {
    // A replay met rows copied straight in: this batch and the next few go
    // staged (see CopyRows), this one at once.
    staged_only_batches_ = kStagedBatchesAfterReplay;
    finished = CopyRowsCaught(batch->columns, batch->groups, batch->deletes, /*defer=*/false);
    if (finished.ok()) return true;
  }
  if (bulk_ && !bulk_->connected()) bulk_.reset();
  if (finished.code() == common::Code::kUnavailable) return finished;
  return false;
}

common::Status PostgresTarget::CopyRowsCaught(const std::vector<TargetColumn>& columns,
                                              const std::vector<CopyText>& groups,
                                              const std::string& delete_keys, bool defer) {
  try {
    return CopyRows(columns, groups, delete_keys, defer);
  } catch (const pqxx::broken_connection& e) {
    conn_.reset();
    return common::Unavailable(fmt::format("target connection lost: {}", FirstLine(e.what())));
  } catch (const std::exception& e) {
    known_columns_.clear();  // the failed transaction may have rolled DDL back
    return common::FailedPrecondition(FirstLine(e.what()));
  }
}

common::Status PostgresTarget::CopyRows(const std::vector<TargetColumn>& columns,
                                        const std::vector<CopyText>& groups,
                                        const std::string& delete_keys, bool defer) {
  // The table is looked at (and grown) only when the batch names a column
  // not seen yet: a round trip per batch otherwise.
  bool known = !known_columns_.empty() && !key_columns_.empty();
  for (const auto& group : groups)
    for (const auto& n : group.names) known = known && known_columns_.count(n);
  const bool reshaped = !known || TypesChanged(columns) || KeyChanged(columns);
  if (reshaped) {
    std::map<std::string, std::string> types;
    for (const auto& c : columns) types[c.name] = c.source_type;
    pqxx::work tx(*conn_);
    EnsureTable(tx, columns);
    for (const auto& group : groups)
      for (const auto& n : group.names)
        if (!known_columns_.count(n)) EnsureTable(tx, {{n, types[n], false}});
    FollowTypes(tx, columns);
    tx.commit();
  }
  if (key_columns_.empty()) return common::FailedPrecondition("no key");
  if (!bulk_ || !bulk_->connected()) {
    auto pinned = guard::PinPostgres(options_.url);
    if (!pinned.ok()) {
      if (guard::IsRefusal(pinned.status())) return pinned.status();
      return common::Unavailable("target database unreachable: " + pinned.status().message());
    }
    bulk_ = std::make_unique<BulkConnection>();
    bulk_->conn = PQconnectdb(pinned->c_str());
    std::string error = bulk_->connected() ? bulk_->Exec(kPreferLz4Sql) : PqError(bulk_->conn);
    if (!error.empty()) {
      bulk_.reset();
      return common::Unavailable("target database unreachable: " + error);
    }
  }
  if (reshaped) bulk_->staging_ready = false;
  auto column_list = [](const std::vector<std::string>& names) {
    std::string cols;
    for (const auto& n : names) cols += (cols.empty() ? "" : ", ") + QuoteIdent(n);
    return cols;
  };
  std::string conflict;
  for (std::size_t i = 0; i < key_columns_.size(); ++i)
    conflict += (i ? ", " : "") + QuoteIdent(key_columns_[i]);
  std::string fence =
      options_.backfill_fence ? BackfillFenceKey(options_.schema, options_.table) : std::string();
  // Rows whose keys the batch itself created (CopyText::fresh) go straight
  // into the table when its key is a primary key: written once instead of
  // staged and upserted. A key that is there already (a replay) is a unique
  // violation that rolls the attempt back; the batch is then applied all
  // staged, and so are the next few, as a replay comes in runs.
  bool direct = false;
  if (staged_only_batches_ > 0) {
    --staged_only_batches_;
  } else {
    direct = key_is_primary_ && std::any_of(groups.begin(), groups.end(),
                                            [](const auto& g) { return g.fresh && !g.partial; });
  }
  std::string delete_sql;
  if (!delete_keys.empty()) {
    // Folded: no key is both deleted and written, so the order is free.
    char* literal = PQescapeLiteral(bulk_->conn, delete_keys.data(), delete_keys.size());
    if (!literal) return common::Unavailable("target connection lost: " + PqError(bulk_->conn));
    delete_sql =
        fmt::format("DELETE FROM {} t USING json_populate_recordset(NULL::{}, {}) d WHERE {}",
                    Qualified(), Qualified(), literal, KeyMatch("t", "d"));
    PQfreemem(literal);
  }
  auto apply = [&](bool straight_in) {
    std::vector<BulkConnection::CopyStep> staged, straight;
    for (const auto& group : groups) {
      std::string cols = column_list(group.names), updates;
      if (straight_in && group.fresh && !group.partial) {
        straight.push_back(
            {fmt::format("COPY {} ({}) FROM STDIN", Qualified(), cols), &group.rows, {}});
        continue;
      }
      for (const auto& n : group.names)
        if (std::find(key_columns_.begin(), key_columns_.end(), n) == key_columns_.end())
          updates += (updates.empty() ? "" : ", ") +
                     fmt::format("{} = EXCLUDED.{}", QuoteIdent(n), QuoteIdent(n));
      BulkConnection::CopyStep step{
          fmt::format("COPY sluice_copy ({}) FROM STDIN", cols), &group.rows, {}};
      if (group.partial)
        step.after = PartialImageSql("sluice_copy s", cols, group.names);
      else
        step.after = {fmt::format(
            "INSERT INTO {} ({}) SELECT {} FROM sluice_copy ON CONFLICT ({}) DO {}", Qualified(),
            cols, cols, conflict, updates.empty() ? "NOTHING" : "UPDATE SET " + updates)};
      // The next column set's rows must not meet these.
      step.after.push_back("DELETE FROM sluice_copy");
      staged.push_back(std::move(step));
    }
    std::vector<std::string> before;
    if (!staged.empty()) {
      staged.back().after.pop_back();
      // The staging table lives as long as the session, emptied at each
      // commit: creating one per batch cost more than a small batch's rows.
      if (!bulk_->staging_ready) {
        if (bulk_->staging_made) before.push_back("DROP TABLE IF EXISTS pg_temp.sluice_copy");
        // Without the table's NOT NULLs (LIKE keeps them): an image that
        // leaves an unchanged column out must still stage.
        before.push_back(fmt::format(
            "CREATE TEMP TABLE sluice_copy ON COMMIT DELETE ROWS AS SELECT * FROM {} WITH NO DATA",
            Qualified()));
        // Stored uncompressed: a value is compressed once, going into the
        // table, not also on its way through here (8,000 rows of 10 KB text
        // took 3.1 s staged against 1.7 s copied straight in).
        before.push_back(
            "DO $$ DECLARE c name; BEGIN FOR c IN SELECT attname FROM pg_attribute WHERE "
            "attrelid = 'pg_temp.sluice_copy'::regclass AND attnum > 0 AND NOT attisdropped AND "
            "attstorage <> 'p' LOOP EXECUTE format('ALTER TABLE pg_temp.sluice_copy ALTER "
            "COLUMN %I SET STORAGE EXTERNAL', c); END LOOP; END $$");
        bulk_->staging_made = true;
      }
      bulk_->staging_ready = true;
    }
    if (!delete_sql.empty()) before.push_back(delete_sql);
    // New rows last: an update may free a value of another unique index
    // that one of them takes.
    for (auto& step : straight) staged.push_back(std::move(step));
    return bulk_->CopyIn(fence, before, staged, defer);
  };
  auto applied = apply(direct);
  if (!applied.ok() && direct && applied.code() == common::Code::kAlreadyExists &&
      bulk_->connected()) {
    staged_only_batches_ = kStagedBatchesAfterReplay;
    direct = false;
    applied = apply(false);
  }
  if (!applied.ok()) {
    if (!bulk_->connected()) bulk_.reset();
    return applied.code() == common::Code::kAlreadyExists
               ? common::InvalidArgument(applied.message())
               : applied;
  }
  if (defer) {
    started_direct_ = direct;  // FinishPrepared counts it
    return common::Status::Ok();
  }
  if (direct) ++direct_batches_;
  ++copied_batches_;
  return common::Status::Ok();
}

common::Result<std::vector<RejectedChange>> PostgresTarget::Apply(
    const std::vector<TargetChange>& batch) {
  // From here on every column is named as the table names it: the images'
  // members too, as json_populate_recordset matches them by name.
  if (auto named = InPostgresNames(batch)) return ApplyNamed(*named);
  return ApplyNamed(batch);
}

common::Result<std::vector<RejectedChange>> PostgresTarget::ApplyNamed(
    const std::vector<TargetChange>& batch) {
  SLUICE_RETURN_IF_ERROR(Connect());
  std::vector<RejectedChange> rejected;
  if (options_.copy_threshold > 0 && batch.size() >= options_.copy_threshold) {
    try {
      auto copied = ApplyCopy(batch);
      if (copied.ok()) return rejected;
      if (copied.code() == common::Code::kUnavailable) return copied;
      if (copied.code() != common::Code::kFailedPrecondition)
        spdlog::warn("COPY into {} refused ({}); applying the batch row-wise", Qualified(),
                     copied.message());
    } catch (const pqxx::broken_connection& e) {
      conn_.reset();
      return common::Unavailable(fmt::format("target connection lost: {}", FirstLine(e.what())));
    } catch (const std::exception& e) {
      known_columns_.clear();
      spdlog::warn("COPY path into {} failed ({}); applying the ordinary way", Qualified(),
                   FirstLine(e.what()));
    }
  }
  try {
    pqxx::work tx(*conn_);
    Fence(tx);
    ApplyFolded(tx, batch);
    tx.commit();
    return rejected;
  } catch (const pqxx::broken_connection& e) {
    conn_.reset();
    return common::Unavailable(fmt::format("target connection lost: {}", FirstLine(e.what())));
  } catch (const std::exception& e) {
    known_columns_.clear();  // the failed transaction may have rolled DDL back
    if (auto outage = Outage(e)) return *outage;
    spdlog::warn("batch refused by {} ({}); bisecting it", Qualified(), FirstLine(e.what()));
  }
  // Bisected, each part in a savepoint: the rows at fault are rejected with
  // the database's own words, the rest commit together. An outage met on
  // the way (the connection, a privilege, the disk) rolls everything back.
  try {
    pqxx::work tx(*conn_);
    Fence(tx);
    auto st = Bisect(tx, batch, 0, batch.size(), rejected);
    if (!st.ok()) return st;
    tx.commit();
    return rejected;
  } catch (const pqxx::broken_connection& e) {
    conn_.reset();
    return common::Unavailable(fmt::format("target connection lost: {}", FirstLine(e.what())));
  } catch (const std::exception& e) {
    if (auto outage = Outage(e)) return *outage;
    return common::Unavailable(fmt::format("target write failed: {}", FirstLine(e.what())));
  }
}

common::Status PostgresTarget::Bisect(pqxx::transaction_base& tx,
                                      const std::vector<TargetChange>& batch, std::size_t begin,
                                      std::size_t end, std::vector<RejectedChange>& rejected) {
  tx.exec("SAVEPOINT sluice_part");
  try {
    ApplyFolded(tx, std::vector<TargetChange>(batch.begin() + static_cast<std::ptrdiff_t>(begin),
                                              batch.begin() + static_cast<std::ptrdiff_t>(end)));
    tx.exec("RELEASE SAVEPOINT sluice_part");
    return common::Status::Ok();
  } catch (const pqxx::broken_connection&) {
    throw;
  } catch (const std::exception& e) {
    tx.exec("ROLLBACK TO SAVEPOINT sluice_part");
    tx.exec("RELEASE SAVEPOINT sluice_part");
    known_columns_.clear();
    if (auto outage = Outage(e)) return *outage;
    if (end - begin == 1) {
      rejected.push_back({begin, NamingNulColumns(batch[begin], FirstLine(e.what()))});
      return common::Status::Ok();
    }
  }
  std::size_t mid = begin + (end - begin) / 2;
  SLUICE_RETURN_IF_ERROR(Bisect(tx, batch, begin, mid, rejected));
  return Bisect(tx, batch, mid, end, rejected);
}

bool PostgresTarget::IsOutage(const std::string& sqlstate) {
  // The rows' own fault: bad data (22), a constraint (23), a type or column
  // the row does not fit (42, but for 42501), a trigger refusing it (P0),
  // a cardinality problem (21), a check option (44), an unsupported value
  // (0A), or a row past a limit (54: an index entry too long for a whole-row
  // key; a batch past one is bisected down to its row). Everything else, and no SQLSTATE at all, is
  // the database's state: connection (08), resources and disk (53), operator (57), system (58),
  // serialization and deadlocks (40), privileges (42501, 28), read only (25006), locks (55).
  if (sqlstate.size() != 5) return true;
  if (sqlstate == "42501") return true;
  for (const char* refusal : {"22", "23", "42", "P0", "21", "44", "0A", "2F", "27", "39", "54"})
    if (sqlstate.compare(0, 2, refusal) == 0) return false;
  return true;
}

std::optional<common::Status> PostgresTarget::Outage(const std::exception& e) {
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
    if (!IsOutage(sql->sqlstate())) return std::nullopt;
  } else if (!dynamic_cast<const pqxx::failure*>(&e)) {
    // Not the database's word (a table without a key, a value that does
    // not convert): about the rows.
    return std::nullopt;
  }
  // The database's state (a rollback it forced, a transaction in doubt, a
  // lost connection, or an SQLSTATE above): nothing of the batch counts.
  if (conn_ && !conn_->is_open()) conn_.reset();
  return common::Unavailable(
      fmt::format("target database refused the write: {}", FirstLine(e.what())));
}

}  // namespace sluice::connectors::targets
