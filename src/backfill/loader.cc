#include "backfill/loader.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <pqxx/pqxx>
#include <set>
#include <thread>

#include "backfill/copy_pump.h"
#include "connectors/mysql/mysql_connection.h"
#include "connectors/mysql/table_reader.h"
#include "connectors/postgres/catalog.h"
#include "connectors/postgres/type_mapping.h"
#include "connectors/targets/postgres_target.h"
#include "connectors/targets/target.h"
#include "dataflow/row_transform.h"
#include "guard/postgres_conninfo.h"

namespace sluice::backfill {

using common::FirstLine;
using connectors::TableId;
using connectors::postgres::CatalogColumn;
using connectors::targets::PostgresIdentifier;
using connectors::targets::PostgresTarget;
using connectors::targets::TargetChange;
using connectors::targets::TargetColumn;
using nlohmann::json;
namespace my = connectors::mysql;

namespace {

// The source table as the loader reads it.
struct SourcePlan {
  TableId table;
  std::vector<CatalogColumn> columns;
  std::vector<const CatalogColumn*> keys;  // primary key, in index order
  std::string select_list;
  std::string key_list;
  std::string table_sql;
  const CatalogColumn* cut = nullptr;  // partition column (or first key column)
  // A mysql source: each column in the row decoder's terms, parallel to
  // `columns` (whose type names are the PostgreSQL ones the stream carries).
  std::vector<my::ColumnInfo> mysql_columns;
  bool mysql() const { return !mysql_columns.empty(); }
  const my::ColumnInfo& Mysql(const CatalogColumn* col) const {
    return mysql_columns[static_cast<std::size_t>(col - columns.data())];
  }
};

std::unique_ptr<pqxx::connection> ConnectSource(const std::string& url) {
  auto conn = std::make_unique<pqxx::connection>(url);
  connectors::postgres::ApplySessionSettings(*conn);
  return conn;
}

common::Result<std::vector<dataflow::RowTransform>> Transforms(const LoaderConfig& c) {
  std::vector<dataflow::RowTransform> out;
  for (const auto& j : c.transforms) {
    if (!j.is_object() || j.empty()) continue;
    auto t = dataflow::RowTransform::Create(j);
    if (!t.ok()) return t.status();
    if (!t->is_identity()) out.push_back(std::move(t).value());
  }
  return out;
}

common::Result<SourcePlan> PlanSource(pqxx::transaction_base& tx, const LoaderConfig& c) {
  SourcePlan p;
  auto table = connectors::postgres::ParseTableName(c.source_table);
  if (!table.ok()) return table.status();
  p.table = *table;
  auto exists = tx.exec_params("SELECT to_regclass($1) IS NOT NULL",
                               tx.quote_name(p.table.schema) + "." + tx.quote_name(p.table.name));
  if (!exists[0][0].as<bool>())
    return common::NotFound(fmt::format("source table {} does not exist", p.table.Qualified()));
  auto columns = connectors::postgres::TableColumns(tx, p.table);
  if (!columns.ok()) return columns.status();
  p.columns = std::move(columns).value();
  auto pk = connectors::postgres::PrimaryKeyColumns(tx, p.table);
  if (!pk.ok()) return pk.status();
  for (const auto& name : *pk)
    for (const auto& col : p.columns)
      if (col.column.name == name) p.keys.push_back(&col);
  return p;
}

// The key, sequential-read and partition-column rules, the same for every
// source, once `p` has its columns and keys.
common::Status CheckPlan(SourcePlan& p, const LoaderConfig& c) {
  if (p.keys.empty() && !c.sequential_read)
    return common::FailedPrecondition(fmt::format(
        "source table {} has no primary key to cut and resume by; accept a sequential read "
        "(sequential_read) to load it with a single cursor",
        p.table.Qualified()));
  if (p.keys.empty()) {
    // The whole row is the key, as for REPLICA IDENTITY FULL in the stream.
    for (auto& col : p.columns) col.column.key = true;
  }
  auto unordered = [&](const CatalogColumn& col) {
    if (p.mysql()) return p.Mysql(&col).json || p.Mysql(&col).type == my::kJson;
    return col.column.type_name == "json" || col.column.type_name == "xml";
  };
  if (c.partition_column) {
    for (const auto& col : p.columns)
      if (col.column.name == *c.partition_column) p.cut = &col;
    if (!p.cut)
      return common::NotFound(fmt::format("partition column {} is not a column of {}",
                                          *c.partition_column, p.table.Qualified()));
    if (unordered(*p.cut))
      return common::FailedPrecondition(
          fmt::format("partition column {} has type {}, which has no order to cut on",
                      *c.partition_column, p.cut->column.type_name));
  } else if (!p.keys.empty()) {
    p.cut = p.keys[0];
  }
  return common::Status::Ok();
}

common::Result<SourcePlan> PlanPostgresSource(pqxx::transaction_base& tx, const LoaderConfig& c) {
  auto planned = PlanSource(tx, c);
  if (!planned.ok()) return planned.status();
  SourcePlan p = std::move(planned).value();
  SLUICE_RETURN_IF_ERROR(CheckPlan(p, c));
  for (const auto& col : p.columns) {
    if (!p.select_list.empty()) p.select_list += ", ";
    p.select_list += tx.quote_name(col.column.name);
  }
  for (const auto* k : p.keys) {
    if (!p.key_list.empty()) p.key_list += ", ";
    p.key_list += tx.quote_name(k->column.name);
  }
  p.table_sql = connectors::postgres::QuoteTable(tx, p.table);
  return p;
}

my::MysqlEndpoint MysqlEndpointOf(const LoaderConfig& c) {
  my::MysqlEndpoint e;
  e.host = c.mysql->host;
  e.port = c.mysql->port;
  e.user = c.mysql->user;
  e.password = c.mysql->password;
  return e;
}

// The connection checks the connect policy itself, at connect time.
common::Result<std::unique_ptr<my::MysqlConnection>> ConnectMysql(const LoaderConfig& c) {
  return my::MysqlConnection::Connect(MysqlEndpointOf(c));
}

// A mysql source table: its columns as the binlog stream describes them
// (connectors/mysql/table_reader.h), read the same way.
common::Result<SourcePlan> PlanMysqlSource(my::MysqlConnection& conn, const LoaderConfig& c) {
  auto shape = my::ReadTableShape(conn, c.mysql->database, c.source_table);
  if (!shape.ok()) return shape.status();
  SourcePlan p;
  p.table = shape->table;
  p.mysql_columns = shape->columns;
  for (const auto& col : shape->columns)
    p.columns.push_back({{col.name, 0, -1, my::PostgresTypeName(col), col.key}, ""});
  for (const auto& name : shape->keys)
    for (const auto& col : p.columns)
      if (col.column.name == name) p.keys.push_back(&col);
  SLUICE_RETURN_IF_ERROR(CheckPlan(p, c));
  p.select_list = shape->select_list;
  for (const auto* k : p.keys)
    p.key_list += (p.key_list.empty() ? "" : ", ") + my::MysqlConnection::QuoteName(k->column.name);
  p.table_sql = shape->table_sql;
  return p;
}

// A value read through select_list as a literal of its column: a BIT from
// its bits, a binary string from its bytes, anything else as a string the
// server converts to the column's type (a FLOAT's exact DOUBLE text compares
// equal to it).
std::string MysqlLiteral(my::MysqlConnection& conn, const my::ColumnInfo& col,
                         const std::string& text) {
  if (col.type == my::kBit) return "b'" + text + "'";
  bool string_type = col.type == my::kString || col.type == my::kVarchar || col.type == my::kBlob;
  if (string_type && col.binary()) {
    static const char* kHex = "0123456789ABCDEF";
    std::string out = "X'";
    for (unsigned char ch : text) {
      out.push_back(kHex[ch >> 4]);
      out.push_back(kHex[ch & 15]);
    }
    return out + "'";
  }
  return conn.Quote(text);
}

// Column names the destination receives once the shaping ran.
std::vector<std::string> ShapedColumns(const SourcePlan& p,
                                       const std::vector<dataflow::RowTransform>& transforms) {
  TargetChange probe;
  probe.op = common::ChangeOp::kRead;
  probe.key = json::object();
  probe.after = json::object();
  for (const auto& col : p.columns) {
    probe.columns.push_back({col.column.name, col.column.type_name, col.column.key});
    probe.after[col.column.name] = nullptr;
    if (col.column.key) probe.key[col.column.name] = nullptr;
  }
  for (const auto& t : transforms) t.Apply(probe);
  std::vector<std::string> out;
  for (const auto& [k, v] : probe.after.items()) out.push_back(k);
  return out;
}

std::string TargetUrl(const LoaderConfig& c) { return c.target.value("url", std::string()); }

std::string QualifiedTarget(pqxx::transaction_base& tx, const LoaderConfig& c) {
  return tx.quote_name(PostgresIdentifier(c.target_schema)) + "." +
         tx.quote_name(PostgresIdentifier(c.target_table));
}

common::Status CheckDestination(const LoaderConfig& c, const std::vector<std::string>& shaped) {
  if (c.target_type != "postgresql") {
    if (c.truncate_history)
      return common::FailedPrecondition(
          fmt::format("a {} destination cannot be emptied before its reload (truncate_history)",
                      c.target_type));
    return common::Status::Ok();  // a pair with no destination check
  }
  try {
    pqxx::connection conn(TargetUrl(c));
    pqxx::nontransaction tx(conn);
    auto exists = tx.exec_params("SELECT to_regclass($1) IS NOT NULL", QualifiedTarget(tx, c))[0][0]
                      .as<bool>();
    if (!exists) return common::Status::Ok();  // created from the source's columns
    std::vector<std::string> pk;
    for (const auto& r : tx.exec_params(
             "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
             "AND a.attnum = ANY(i.indkey) WHERE i.indisprimary AND i.indrelid = "
             "to_regclass($1)",
             QualifiedTarget(tx, c)))
      pk.emplace_back(r[0].c_str());
    if (pk.empty())
      return common::FailedPrecondition(fmt::format(
          "destination {}.{} has no primary key to upsert by", c.target_schema, c.target_table));
    std::vector<std::string> named;  // the shaped columns as the table names them
    for (const auto& n : shaped) named.push_back(PostgresIdentifier(n));
    for (const auto& k : pk)
      if (std::find(named.begin(), named.end(), k) == named.end())
        return common::FailedPrecondition(
            fmt::format("destination {}.{} is keyed by {}, which the source rows do not carry",
                        c.target_schema, c.target_table, k));
    return common::Status::Ok();
  } catch (const pqxx::broken_connection& e) {
    return common::Unavailable(fmt::format("destination unreachable: {}", FirstLine(e.what())));
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("destination check failed: {}", FirstLine(e.what())));
  }
}

// Holds the destination's backfill fence shared on its own session, so the
// live stream's batches (which take it exclusively) wait for this chunk.
class SharedFence {
 public:
  SharedFence(pqxx::connection* conn, const std::string& key) : conn_(conn), key_(key) {
    if (conn_)
      pqxx::nontransaction(*conn_).exec_params(
          "SELECT pg_advisory_lock_shared(hashtextextended($1, 0))", key_);
  }
  ~SharedFence() {
    try {
      if (conn_ && conn_->is_open())
        pqxx::nontransaction(*conn_).exec_params(
            "SELECT pg_advisory_unlock_shared(hashtextextended($1, 0))", key_);
    } catch (...) {
    }
  }
  SharedFence(const SharedFence&) = delete;
  SharedFence& operator=(const SharedFence&) = delete;

 private:
  pqxx::connection* conn_;
  std::string key_;
};

// One range of the cut column, read chunk by chunk in key order.
struct Partition {
  std::string predicate;  // "" = the whole table
  std::vector<std::string> last_key;
  bool done = false;
};

// The ranges of the cut column `col` between `bounds` (ascending, each a
// literal by `lit`), and its NULLs when it is not a key column.
std::vector<Partition> PartitionsBetween(
    const SourcePlan& p, const std::string& col, const std::vector<std::string>& bounds,
    const std::function<std::string(const std::string&)>& lit) {
  std::vector<Partition> out;
  if (bounds.empty()) {
    out.push_back(Partition{fmt::format("{} IS NOT NULL", col), {}, false});
  } else {
    out.push_back(Partition{fmt::format("{} < {}", col, lit(bounds.front())), {}, false});
    for (std::size_t i = 1; i < bounds.size(); ++i)
      out.push_back(Partition{
          fmt::format("{} >= {} AND {} < {}", col, lit(bounds[i - 1]), col, lit(bounds[i])),
          {},
          false});
    out.push_back(Partition{fmt::format("{} >= {}", col, lit(bounds.back())), {}, false});
  }
  bool nullable_cut = !p.cut->column.key;
  if (nullable_cut) out.push_back(Partition{fmt::format("{} IS NULL", col), {}, false});
  return out;
}

common::Result<std::vector<Partition>> PlanPartitions(pqxx::transaction_base& tx,
                                                      const SourcePlan& p, int wanted) {
  if (wanted <= 1 || !p.cut) return std::vector<Partition>{Partition{}};
  const std::string col = tx.quote_name(p.cut->column.name);
  const std::string& type = p.cut->sql_type;
  std::vector<std::string> bounds;
  std::string fractions;
  for (int i = 1; i < wanted; ++i)
    fractions += fmt::format("{}{}", i > 1 ? "," : "", static_cast<double>(i) / wanted);
  // Boundaries at quantiles of the cut column: ranges of about equal size
  // whatever the key distribution (and for any ordered type).
  auto r = tx.exec(fmt::format(
      "SELECT DISTINCT q.b AS v, q.b::text AS t FROM unnest((SELECT percentile_disc(ARRAY[{}]) "
      "WITHIN GROUP (ORDER BY {}) FROM {})) AS q(b) WHERE q.b IS NOT NULL ORDER BY v",
      fractions, col, p.table_sql));
  for (const auto& row : r) bounds.emplace_back(row[1].c_str());
  return PartitionsBetween(p, col, bounds,
                           [&](const std::string& v) { return tx.quote(v) + "::" + type; });
}

// The same for a mysql source: the boundaries are the first values of
// NTILE buckets of the cut column (MariaDB 10.2+, MySQL 8).
common::Result<std::vector<Partition>> PlanMysqlPartitions(my::MysqlConnection& conn,
                                                           const SourcePlan& p, int wanted) {
  if (wanted <= 1 || !p.cut) return std::vector<Partition>{Partition{}};
  const auto& info = p.Mysql(p.cut);
  const std::string col = my::MysqlConnection::QuoteName(p.cut->column.name);
  auto rows = conn.Query(fmt::format(
      "SELECT {} FROM (SELECT MIN(c) AS m FROM (SELECT {} AS c, NTILE({}) OVER (ORDER BY {}) AS b "
      "FROM {} WHERE {} IS NOT NULL) x GROUP BY b) y ORDER BY m",
      my::SelectExpr(info, "m"), col, wanted, col, p.table_sql, col));
  if (!rows.ok()) return rows.status();
  std::vector<std::string> bounds;
  // The first bucket starts at the smallest value: no boundary there.
  for (std::size_t i = 1; i < rows->size(); ++i) {
    const auto& v = (*rows)[i][0];
    if (v && (bounds.empty() || bounds.back() != *v)) bounds.push_back(*v);
  }
  return PartitionsBetween(p, col, bounds,
                           [&](const std::string& v) { return MysqlLiteral(conn, info, v); });
}

// What one thread needs: its own connections and target.
struct Lane {
  std::unique_ptr<pqxx::connection> source;    // nullptr: a mysql source
  std::unique_ptr<my::MysqlConnection> mysql;  // a mysql source's
  std::unique_ptr<pqxx::connection> fence;     // nullptr: a non-PostgreSQL destination
  std::unique_ptr<connectors::targets::Target> target;
  // The COPY fast path (copy_pump.h), when the pair allows it.
  bool fast = false;
  PgConn fast_source, fast_target;
  std::string copy_in, upsert;
  std::string copy_direct;  // COPY straight into the destination (a first load)
  bool binary = false;      // both sides' column types are the same: COPY in binary
  std::string target_sql;   // the destination, quoted
};

// Types whose COPY text the destination's column (as PostgresTarget creates
// it) reads back unchanged; anything else goes the row-by-row JSON way.
bool CopySafe(const std::string& type) {
  static const std::set<std::string> kSafe = {
      "int2",    "int4",   "int8",      "float4",      "float8",   "numeric", "bool",  "text",
      "varchar", "bpchar", "name",      "uuid",        "json",     "jsonb",   "bytea", "date",
      "time",    "timetz", "timestamp", "timestamptz", "interval", "inet"};
  return kSafe.count(type.size() > 1 && type[0] == '_' ? type.substr(1) : type) > 0;
}

using connectors::targets::QuoteIdent;

std::string QuoteLiteral(const std::string& text) {
  std::string out = "'";
  for (char ch : text) {
    if (ch == '\'') out.push_back('\'');
    out.push_back(ch);
  }
  return out + "'";
}

common::Result<Lane> OpenLane(const LoaderConfig& c) {
  Lane lane;
  if (c.mysql) {
    auto conn = ConnectMysql(c);
    if (!conn.ok()) return conn.status();
    lane.mysql = std::move(conn).value();
  }
  try {
    if (!c.mysql) lane.source = ConnectSource(c.source_url);
    if (c.target_type == "postgresql")
      lane.fence = std::make_unique<pqxx::connection>(TargetUrl(c));
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("cannot connect: {}", FirstLine(e.what())));
  }
  json config = c.target;
  config["backfill_fence"] = false;  // the lane holds the fence shared itself
  auto target =
      connectors::targets::MakeTarget(c.target_type, config, c.target_schema, c.target_table);
  if (!target.ok()) return target.status();
  lane.target = std::move(target).value();
  return lane;
}

class Loader {
 public:
  Loader(const LoaderConfig& c, SourcePlan plan, std::vector<dataflow::RowTransform> transforms,
         const LoadHooks& hooks, const std::atomic<bool>& stop)
      : c_(c),
        plan_(std::move(plan)),
        transforms_(std::move(transforms)),
        hooks_(hooks),
        stop_(stop),
        fence_key_(PostgresTarget::BackfillFenceKey(c.target_schema, c.target_table)) {
    for (const auto& col : plan_.columns)
      columns_.push_back({col.column.name, col.column.type_name, col.column.key});
  }

  // The fast path needs a PostgreSQL destination, no shaping, a key, and
  // column types whose text form round-trips.
  bool FastEligible() const {
    if (c_.target_type != "postgresql" || !transforms_.empty() || plan_.keys.empty() ||
        plan_.mysql())
      return false;
    for (const auto& col : plan_.columns)
      if (!CopySafe(col.column.type_name)) return false;
    return true;
  }

  // After the destination exists: a staging table per lane session and the
  // upsert from it. Any mismatch leaves the lane on the JSON path.
  void SetupFast(Lane& lane) {
    if (!FastEligible()) return;
    auto src = ConnectPg(c_.source_url);
    auto dst = ConnectPg(TargetUrl(c_));
    if (!src.ok() || !dst.ok()) return;
    if (!ExecPg(src->get(),
                "SET DateStyle = 'ISO, YMD'; SET TimeZone = 'UTC'; SET IntervalStyle "
                "= 'iso_8601'; SET bytea_output = 'hex'; SET extra_float_digits = 3")
             .ok())
      return;
    // Named as the live stream's target names them (PostgresIdentifier).
    const std::string schema = PostgresIdentifier(c_.target_schema);
    const std::string table = PostgresIdentifier(c_.target_table);
    const std::string target = QuoteIdent(schema) + "." + QuoteIdent(table);
    auto cols = QueryPg(dst->get(),
                        fmt::format("SELECT column_name, udt_name FROM information_schema.columns "
                                    "WHERE table_schema = {} AND table_name = {}",
                                    QuoteLiteral(schema), QuoteLiteral(table)));
    auto pk = QueryPg(dst->get(),
                      fmt::format("SELECT a.attname FROM pg_index i JOIN pg_attribute a ON "
                                  "a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE "
                                  "i.indisprimary AND i.indrelid = to_regclass({})",
                                  QuoteLiteral(target)));
    if (!cols.ok() || !pk.ok() || pk->empty()) return;
    std::map<std::string, std::string> have;  // column -> type name
    for (const auto& r : *cols) have[*r[0]] = r[1].value_or("");
    std::string list, updates, conflict;
    // Binary COPY carries each value in its type's own encoding, which only
    // the same type reads back; any other pair of types goes as text.
    bool same_types = true;
    for (const auto& col : plan_.columns) {
      auto it = have.find(PostgresIdentifier(col.column.name));
      if (it == have.end()) return;  // the JSON path adds the column
      same_types = same_types && it->second == col.column.type_name;
      list += (list.empty() ? "" : ", ") + QuoteIdent(it->first);
    }
    std::set<std::string> keys;
    for (const auto& r : *pk) {
      keys.insert(*r[0]);
      conflict += (conflict.empty() ? "" : ", ") + QuoteIdent(*r[0]);
    }
    for (const auto& col : plan_.columns) {
      const auto name = PostgresIdentifier(col.column.name);
      if (!keys.count(name))
        updates += fmt::format("{}{} = EXCLUDED.{}", updates.empty() ? "" : ", ", QuoteIdent(name),
                               QuoteIdent(name));
    }
    if (!ExecPg(dst->get(), fmt::format("CREATE TEMP TABLE sluice_backfill_stage ON COMMIT DELETE "
                                        "ROWS AS SELECT {} FROM {} WITH NO DATA",
                                        list, target))
             .ok())
      return;
    const char* format = same_types ? " (FORMAT binary)" : "";
    lane.copy_in = fmt::format("COPY sluice_backfill_stage ({}) FROM STDIN{}", list, format);
    lane.copy_direct = fmt::format("COPY {} ({}) FROM STDIN{}", target, list, format);
    lane.binary = same_types;
    lane.target_sql = target;
    lane.upsert = fmt::format(
        "INSERT INTO {} ({}) SELECT {} FROM sluice_backfill_stage ON CONFLICT ({}) DO {}", target,
        list, list, conflict, updates.empty() ? "NOTHING" : "UPDATE SET " + updates);
    lane.fast_source = std::move(src).value();
    lane.fast_target = std::move(dst).value();
    lane.fast = true;
  }

  // The key list as a literal row: `values` cast to the key columns' types.
  std::string KeyRow(pqxx::transaction_base& tx, const std::vector<std::string>& values) const {
    std::string row;
    for (std::size_t i = 0; i < plan_.keys.size(); ++i)
      row += fmt::format("{}{}::{}", i ? ", " : "", tx.quote(values[i]), plan_.keys[i]->sql_type);
    return row;
  }

  // The part of the partition not read yet (after its last key).
  std::string RemainingWhere(pqxx::transaction_base& tx, const Partition& part) const {
    std::string where = part.predicate;
    if (!part.last_key.empty())
      where += fmt::format("{}({}) > ({})", where.empty() ? "" : " AND ", plan_.key_list,
                           KeyRow(tx, part.last_key));
    return where;
  }

  // The same for a mysql source; a row comparison spelled out (a > x OR
  // (a = x AND b > y)), which MariaDB's range optimizer reads as key ranges.
  std::string MysqlRemainingWhere(my::MysqlConnection& conn, const Partition& part) const {
    std::string where = part.predicate;
    if (part.last_key.empty()) return where;
    std::string after, equal;
    for (std::size_t i = 0; i < plan_.keys.size(); ++i) {
      const auto* k = plan_.keys[i];
      std::string name = my::MysqlConnection::QuoteName(k->column.name);
      std::string value = MysqlLiteral(conn, plan_.Mysql(k), part.last_key[i]);
      after += fmt::format("{}({}{} > {})", i ? " OR " : "", equal, name, value);
      equal += fmt::format("{} = {} AND ", name, value);
    }
    return where.empty() ? after : fmt::format("{} AND ({})", where, after);
  }

  // The next chunk of what is left (`where`, from RemainingWhere).
  std::string ChunkSql(const std::string& where) const {
    return fmt::format("SELECT {} FROM {}{} ORDER BY {} LIMIT {}", plan_.select_list,
                       plan_.table_sql, where.empty() ? "" : " WHERE " + where, plan_.key_list,
                       c_.chunk_rows);
  }

  // One chunk by COPY: fence, then COPY the read into the destination (or
  // the staging table, then upsert from it) in one destination transaction,
  // then release. The chunk ends at the key chunk_rows into what is left,
  // found first through the key's index, so the rows move as raw bytes
  // without being read for their key (a binary COPY could not be).
  common::Result<std::size_t> FastChunk(Lane& lane, Partition& part) {
    SharedFence fence(lane.fence.get(), fence_key_);
    pqxx::nontransaction quoting(*lane.source);
    const std::string remaining = RemainingWhere(quoting, part);
    auto end =
        QueryPg(lane.fast_source.get(),
                fmt::format("SELECT {} FROM {}{} ORDER BY {} OFFSET {} LIMIT 1", plan_.key_list,
                            plan_.table_sql, remaining.empty() ? "" : " WHERE " + remaining,
                            plan_.key_list, c_.chunk_rows - 1));
    if (!end.ok()) return end.status();
    std::optional<std::vector<std::string>> end_key;  // none: the chunk is the rest
    std::string where = remaining;
    if (!end->empty()) {
      end_key.emplace();
      for (const auto& v : end->front()) {
        if (!v) return common::Internal("a key column holds NULL");
        end_key->push_back(*v);
      }
      where += fmt::format("{}({}) <= ({})", where.empty() ? "" : " AND ", plan_.key_list,
                           KeyRow(quoting, *end_key));
    }
    const std::string copy_out =
        fmt::format("COPY (SELECT {} FROM {}{} ORDER BY {}) TO STDOUT{}", plan_.select_list,
                    plan_.table_sql, where.empty() ? "" : " WHERE " + where, plan_.key_list,
                    lane.binary ? " (FORMAT binary)" : "");
    // A first load goes straight into the destination when nothing of what
    // is left of this partition is there yet: no staging, no upsert. The
    // fence keeps the stream out and other lanes hold other ranges; a row
    // that is there anyway (a lost attempt still writing) fails the COPY,
    // and the chunk is loaded again the upsert way.
    auto present =
        QueryPg(lane.fast_target.get(), AnyRowSql(lane.target_sql, remaining, plan_.key_list));
    common::Result<std::size_t> rows = common::Unavailable("not copied");
    if (present.ok() && present->empty()) {
      rows = CopyChunk(lane, copy_out, lane.copy_direct, "");
      if (rows.ok()) ++direct_chunks;
    }
    if (!rows.ok()) {
      rows = CopyChunk(lane, copy_out, lane.copy_in, lane.upsert);
      if (!rows.ok()) return rows.status();
      ++upsert_chunks;
    }
    if (lane.binary) ++binary_chunks;
    if (end_key)
      part.last_key = std::move(*end_key);
    else
      part.done = true;
    return rows;
  }

  // One destination transaction: `copy_out`'s rows COPYed in through
  // `copy_in`, then `then` (unless empty), committed; rolled back on error.
  common::Result<std::size_t> CopyChunk(Lane& lane, const std::string& copy_out,
                                        const std::string& copy_in, const std::string& then) {
    PGconn* dst = lane.fast_target.get();
    SLUICE_RETURN_IF_ERROR(ExecPg(dst, "BEGIN"));
    auto rows = Pump(lane.fast_source.get(), copy_out, dst, copy_in);
    common::Status st = rows.ok() ? common::Status::Ok() : rows.status();
    if (st.ok() && !then.empty()) st = ExecPg(dst, then);
    if (st.ok()) st = ExecPg(dst, "COMMIT");
    if (!st.ok()) {
      (void)ExecPg(dst, "ROLLBACK");
      return st;
    }
    return rows;
  }

  // A read row's change with no values yet: the columns, empty images.
  TargetChange EmptyRead() const {
    TargetChange ch;
    ch.op = common::ChangeOp::kRead;
    ch.key = json::object();
    ch.after = json::object();
    ch.columns = columns_;
    return ch;
  }

  // Rows read -> shaped changes (filtered rows dropped).
  common::Result<std::vector<TargetChange>> Changes(const pqxx::result& rows) {
    std::vector<TargetChange> batch;
    batch.reserve(rows.size());
    for (const auto& row : rows) {
      TargetChange ch = EmptyRead();
      for (std::size_t i = 0; i < plan_.columns.size(); ++i) {
        const auto& col = plan_.columns[i].column;
        json value = nullptr;
        const auto& f = row[static_cast<int>(i)];
        if (!f.is_null()) {
          // As the source carries it: its exact text when it has no exact
          // JSON form (connectors/postgres/type_mapping.h).
          std::string_view text(f.c_str(), f.size());
          auto mapped = connectors::postgres::CarriedAsText(col.type_oid, text)
                            ? common::Result<json>(common::FailedPrecondition("as text"))
                            : connectors::postgres::TextToJson(col.type_oid, text);
          if (mapped.ok()) {
            value = std::move(mapped).value();
          } else {
            value = std::string(text);
            ch.as_text.push_back(col.name);
          }
        }
        if (col.key) ch.key[col.name] = value;
        ch.after[col.name] = std::move(value);
      }
      if (Shape(ch)) batch.push_back(std::move(ch));
    }
    return batch;
  }

  // The shaping of the live stream; false: a filter dropped the row.
  bool Shape(TargetChange& ch) const {
    for (const auto& t : transforms_) {
      if (!t.Keeps(ch)) return false;
      t.Apply(ch);
    }
    return true;
  }

  // Rows of a mysql source -> shaped changes, each value as the binlog
  // stream decodes it (connectors/mysql/table_reader.h).
  std::vector<TargetChange> MysqlChanges(const std::vector<my::MysqlRow>& rows) const {
    std::vector<TargetChange> batch;
    batch.reserve(rows.size());
    for (const auto& row : rows) {
      TargetChange ch = EmptyRead();
      for (std::size_t i = 0; i < plan_.columns.size() && i < row.size(); ++i) {
        const auto& col = plan_.columns[i].column;
        const auto& info = plan_.mysql_columns[i];
        json value = row[i] ? my::TextValue(info, *row[i]) : json(nullptr);
        if (row[i] && !value.is_null() && my::CarriedAsText(info)) ch.as_text.push_back(col.name);
        if (col.key) ch.key[col.name] = value;
        ch.after[col.name] = std::move(value);
      }
      if (Shape(ch)) batch.push_back(std::move(ch));
    }
    return batch;
  }

  common::Status Write(Lane& lane, const std::vector<TargetChange>& batch) {
    if (batch.empty()) return common::Status::Ok();
    auto rejected = lane.target->Apply(batch);
    if (!rejected.ok()) return rejected.status();
    if (!rejected->empty())
      return common::FailedPrecondition(
          fmt::format("the destination refused {} of {} rows; first: {}", rejected->size(),
                      batch.size(), rejected->front().error));
    return common::Status::Ok();
  }

  // One chunk of `part`: fence, then read, then write, then release.
  common::Result<std::size_t> Chunk(Lane& lane, Partition& part) {
    SharedFence fence(lane.fence.get(), fence_key_);
    if (lane.mysql) {
      // One statement: InnoDB reads it from one consistent view.
      auto rows = lane.mysql->Query(ChunkSql(MysqlRemainingWhere(*lane.mysql, part)));
      if (!rows.ok()) return rows.status();
      auto batch = MysqlChanges(*rows);
      SLUICE_RETURN_IF_ERROR(Write(lane, batch));
      if (!rows->empty()) {
        part.last_key.clear();
        for (const auto* k : plan_.keys)
          part.last_key.push_back(
              rows->back()[static_cast<std::size_t>(k - plan_.columns.data())].value_or(""));
      }
      if (rows->size() < static_cast<std::size_t>(c_.chunk_rows)) part.done = true;
      return batch.size();
    }
    pqxx::nontransaction tx(*lane.source);
    auto rows = tx.exec(ChunkSql(RemainingWhere(tx, part)));
    auto batch = Changes(rows);
    if (!batch.ok()) return batch.status();
    SLUICE_RETURN_IF_ERROR(Write(lane, *batch));
    if (!rows.empty()) {
      part.last_key.clear();
      const auto& last = rows[rows.size() - 1];
      for (const auto* k : plan_.keys) part.last_key.emplace_back(last[k->column.name].c_str());
    }
    if (rows.size() < static_cast<std::size_t>(c_.chunk_rows)) part.done = true;
    return batch->size();
  }

  common::Status Count(std::size_t rows, bool force) {
    std::int64_t total = written_ += static_cast<std::int64_t>(rows);
    std::lock_guard lock(report_mu_);
    auto now = common::Clock::now();
    if (!force && now - last_report_ < std::chrono::seconds(1)) return common::Status::Ok();
    last_report_ = now;
    if (hooks_.on_progress) return hooks_.on_progress(total, now);
    return common::Status::Ok();
  }

  // Cuts the table before anything is emptied, so a plan that fails fails
  // with the destination untouched.
  common::Status Plan() {
    if (c_.sequential_read) return common::Status::Ok();
    if (plan_.mysql()) {
      auto conn = ConnectMysql(c_);
      if (!conn.ok()) return conn.status();
      auto planned = PlanMysqlPartitions(**conn, plan_, c_.partitions);
      if (!planned.ok()) return planned.status();
      parts_ = std::move(planned).value();
      return common::Status::Ok();
    }
    auto conn = ConnectSource(c_.source_url);
    pqxx::nontransaction tx(*conn);
    auto planned = PlanPartitions(tx, plan_, c_.partitions);
    if (!planned.ok()) return planned.status();
    parts_ = std::move(planned).value();
    return common::Status::Ok();
  }

  common::Result<std::int64_t> Partitioned() {
    auto& parts = parts_;
    // The first rows create the destination table, before lanes race to.
    {
      auto lane = OpenLane(c_);
      if (!lane.ok()) return lane.status();
      for (auto& part : parts) {
        if (stop_) return common::Unavailable("stopped");
        auto n = Chunk(*lane, part);
        if (!n.ok()) return n.status();
        SLUICE_RETURN_IF_ERROR(Count(*n, false));
        if (*n > 0) break;
      }
    }
    std::atomic<std::size_t> next{0};
    std::mutex err_mu;
    common::Status error = common::Status::Ok();
    std::atomic<bool> failed{false};
    auto work = [&] {
      auto lane = OpenLane(c_);
      auto fail = [&](common::Status st) {
        std::lock_guard lock(err_mu);
        if (error.ok()) error = std::move(st);
        failed = true;
      };
      if (!lane.ok()) return fail(lane.status());
      SetupFast(*lane);
      for (std::size_t i = next++; i < parts.size(); i = next++) {
        auto& part = parts[i];
        while (!part.done) {
          if (stop_ || failed) return fail(common::Unavailable("stopped before the end"));
          try {
            common::Result<std::size_t> n = common::Unavailable("unread");
            if (lane->fast) {
              n = FastChunk(*lane, part);
              if (!n.ok() && n.status().code() != common::Code::kUnavailable) {
                // The destination refused the set: the JSON path says which rows.
                spdlog::warn("COPY path refused ({}); loading row by row", n.status().message());
                lane->fast = false;
              }
            }
            if (!lane->fast) n = Chunk(*lane, part);
            if (!n.ok()) return fail(n.status());
            auto st = Count(*n, false);
            if (!st.ok()) return fail(st);
          } catch (const std::exception& e) {
            return fail(common::Unavailable(FirstLine(e.what())));
          }
        }
      }
    };
    std::vector<std::thread> threads;
    int lanes = std::min<int>(c_.partitions, static_cast<int>(parts.size()));
    for (int i = 0; i < lanes; ++i) threads.emplace_back(work);
    for (auto& t : threads) t.join();
    if (!error.ok()) return error;
    SLUICE_RETURN_IF_ERROR(Count(0, true));
    return written_.load();
  }

  // One cursor in one snapshot, no resume; the fence is held throughout.
  common::Result<std::int64_t> Sequential() {
    auto lane = OpenLane(c_);
    if (!lane.ok()) return lane.status();
    SharedFence fence(lane->fence.get(), fence_key_);
    if (lane->mysql) return MysqlSequential(*lane);
    pqxx::nontransaction tx(*lane->source);
    tx.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    tx.exec(fmt::format("DECLARE sluice_backfill NO SCROLL CURSOR FOR SELECT {} FROM {}",
                        plan_.select_list, plan_.table_sql));
    while (true) {
      if (stop_) return common::Unavailable("stopped before the end");
      auto rows = tx.exec(fmt::format("FETCH {} FROM sluice_backfill", c_.chunk_rows));
      auto batch = Changes(rows);
      if (!batch.ok()) return batch.status();
      SLUICE_RETURN_IF_ERROR(Write(*lane, *batch));
      SLUICE_RETURN_IF_ERROR(Count(batch->size(), false));
      if (rows.size() < static_cast<std::size_t>(c_.chunk_rows)) break;
    }
    tx.exec("COMMIT");
    SLUICE_RETURN_IF_ERROR(Count(0, true));
    return written_.load();
  }

  // A mysql source's table in one consistent snapshot, streamed.
  common::Result<std::int64_t> MysqlSequential(Lane& lane) {
    auto& conn = *lane.mysql;
    SLUICE_RETURN_IF_ERROR(conn.Exec("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"));
    SLUICE_RETURN_IF_ERROR(conn.Exec("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"));
    auto each = [&](const std::vector<my::MysqlRow>& rows) -> common::Status {
      if (stop_) return common::Unavailable("stopped before the end");
      auto batch = MysqlChanges(rows);
      SLUICE_RETURN_IF_ERROR(Write(lane, batch));
      return Count(batch.size(), false);
    };
    SLUICE_RETURN_IF_ERROR(
        conn.QueryEach(fmt::format("SELECT {} FROM {}", plan_.select_list, plan_.table_sql),
                       static_cast<std::size_t>(c_.chunk_rows), each));
    SLUICE_RETURN_IF_ERROR(conn.Exec("COMMIT"));
    SLUICE_RETURN_IF_ERROR(Count(0, true));
    return written_.load();
  }

  common::Status Truncate() {
    if (!c_.truncate_history || c_.already_truncated) return common::Status::Ok();
    pqxx::connection conn(TargetUrl(c_));
    SharedFence fence(&conn, fence_key_);
    pqxx::connection writer(TargetUrl(c_));
    pqxx::work tx(writer);
    auto q = QualifiedTarget(tx, c_);
    if (!tx.exec_params("SELECT to_regclass($1) IS NOT NULL", q)[0][0].as<bool>())
      return common::Status::Ok();  // nothing to empty: truncated_at stays NULL
    tx.exec("TRUNCATE " + q);
    tx.commit();
    spdlog::warn("emptied destination {} before its reload (truncate_history)", q);
    if (hooks_.on_truncated) return hooks_.on_truncated(common::Clock::now());
    return common::Status::Ok();
  }

 private:
  const LoaderConfig& c_;
  SourcePlan plan_;
  std::vector<dataflow::RowTransform> transforms_;
  const LoadHooks& hooks_;
  const std::atomic<bool>& stop_;
  std::string fence_key_;

 public:
  // Chunks written straight into the destination / through staging + upsert.
  std::atomic<std::int64_t> direct_chunks{0}, upsert_chunks{0}, binary_chunks{0};

 private:
  std::vector<TargetColumn> columns_;
  std::vector<Partition> parts_;
  std::atomic<std::int64_t> written_{0};
  std::mutex report_mu_;
  common::TimePoint last_report_{};
};

struct Prepared {
  SourcePlan plan;
  std::vector<dataflow::RowTransform> transforms;
  CheckVerdict verdict;
};

common::Result<Prepared> Prepare(const LoaderConfig& c) {
  Prepared out;
  if (c.partition_column && c.sequential_read)
    return common::InvalidArgument("partition_column and sequential_read exclude each other");
  auto transforms = Transforms(c);
  if (!transforms.ok()) return transforms.status();
  out.transforms = std::move(transforms).value();
  if (c.mysql) {
    auto conn = ConnectMysql(c);
    if (!conn.ok()) return conn.status();
    auto plan = PlanMysqlSource(**conn, c);
    if (!plan.ok()) return plan.status();
    out.plan = std::move(plan).value();
    // InnoDB's estimate (information_schema.TABLES), when it has one.
    auto est = (*conn)->Query(
        fmt::format("SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND "
                    "TABLE_NAME = {}",
                    (*conn)->Quote(c.mysql->database), (*conn)->Quote(c.source_table)));
    if (est.ok() && !est->empty() && est->front()[0]) {
      std::int64_t n = 0;
      const std::string& text = *est->front()[0];
      std::from_chars(text.data(), text.data() + text.size(), n);
      if (n > 0) out.verdict.approximate_row_count = n;
    }
    SLUICE_RETURN_IF_ERROR(CheckDestination(c, ShapedColumns(out.plan, out.transforms)));
    return out;
  }
  std::unique_ptr<pqxx::connection> conn;
  try {
    conn = ConnectSource(c.source_url);
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("source unreachable: {}", FirstLine(e.what())));
  }
  try {
    pqxx::nontransaction tx(*conn);
    auto plan = PlanPostgresSource(tx, c);
    if (!plan.ok()) return plan.status();
    out.plan = std::move(plan).value();
    auto est = tx.exec_params("SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass($1)",
                              out.plan.table_sql);
    // reltuples is -1 (or 0 before any ANALYZE on old servers): no estimate.
    if (!est.empty() && !est[0][0].is_null() && est[0][0].as<std::int64_t>() > 0)
      out.verdict.approximate_row_count = est[0][0].as<std::int64_t>();
  } catch (const pqxx::broken_connection& e) {
    return common::Unavailable(fmt::format("source connection lost: {}", FirstLine(e.what())));
  }
  SLUICE_RETURN_IF_ERROR(CheckDestination(c, ShapedColumns(out.plan, out.transforms)));
  return out;
}

// The connect policy at connect time: both ends resolved once and checked,
// and every connection of this load made to the checked addresses.
common::Result<LoaderConfig> Pinned(const LoaderConfig& config) {
  LoaderConfig c = config;
  if (c.source_type == "mysql" && !c.mysql)
    return common::InvalidArgument("a mysql source needs its server");
  // A mysql connection checks the policy itself, each time it connects.
  if (!c.mysql) {
    auto source = guard::PinPostgres(c.source_url);
    if (!source.ok()) return source.status();
    c.source_url = *source;
  }
  if (c.target_type == "postgresql") {
    auto target = guard::PinPostgres(TargetUrl(c));
    if (!target.ok()) return target.status();
    c.target["url"] = *target;
  }
  return c;
}

}  // namespace

std::string AnyRowSql(const std::string& table_sql, const std::string& where,
                      const std::string& key_list) {
  return fmt::format("SELECT 1 FROM {}{} ORDER BY {} LIMIT 1", table_sql,
                     where.empty() ? "" : " WHERE " + where, key_list);
}

common::Result<CheckVerdict> CheckPair(const LoaderConfig& unpinned) {
  auto pinned = Pinned(unpinned);
  if (!pinned.ok()) return pinned.status();
  const LoaderConfig& config = *pinned;
  auto prepared = Prepare(config);
  if (!prepared.ok()) return prepared.status();
  return prepared->verdict;
}

common::Result<std::int64_t> LoadPair(const LoaderConfig& unpinned, const LoadHooks& hooks,
                                      const std::atomic<bool>& stop) {
  auto pinned = Pinned(unpinned);
  if (!pinned.ok()) return pinned.status();
  const LoaderConfig& config = *pinned;
  // The same rules as the pre-check, before anything is emptied.
  auto prepared = Prepare(config);
  if (!prepared.ok()) return prepared.status();
  try {
    Loader loader(config, std::move(prepared->plan), std::move(prepared->transforms), hooks, stop);
    SLUICE_RETURN_IF_ERROR(loader.Plan());
    if (hooks.still_ours) SLUICE_RETURN_IF_ERROR(hooks.still_ours());
    SLUICE_RETURN_IF_ERROR(loader.Truncate());
    auto loaded = config.sequential_read ? loader.Sequential() : loader.Partitioned();
    if (loader.direct_chunks + loader.upsert_chunks > 0)
      spdlog::info(
          "loader: {} chunks copied straight in, {} upserted through staging, {} in binary",
          loader.direct_chunks.load(), loader.upsert_chunks.load(), loader.binary_chunks.load());
    return loaded;
  } catch (const pqxx::broken_connection& e) {
    return common::Unavailable(fmt::format("connection lost: {}", FirstLine(e.what())));
  } catch (const std::exception& e) {
    return common::Internal(FirstLine(e.what()));
  }
}

}  // namespace sluice::backfill
