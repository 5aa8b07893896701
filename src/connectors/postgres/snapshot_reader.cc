#include "connectors/postgres/snapshot_reader.h"

#include <fmt/format.h>

#include <spdlog/spdlog.h>
#include <pqxx/pqxx>
#include <set>

#include "connectors/postgres/catalog.h"
#include "connectors/postgres/type_mapping.h"
#include "connectors/topic_naming.h"
#include "guard/postgres_conninfo.h"

namespace sluice::connectors::postgres {

using common::Result;
using common::Status;
using nlohmann::json;

bool SnapshotProgress::Done() const {
  for (const auto& t : tables) {
    if (!t.done) return false;
  }
  return true;
}

json SnapshotProgress::ToJson() const {
  json out = json::array();
  for (const auto& t : tables) {
    out.push_back({{"schema", t.table.schema},
                   {"table", t.table.name},
                   {"done", t.done},
                   {"last_key", t.last_key},
                   {"rows", t.rows},
                   {"truncate_first", t.truncate_first}});
  }
  return {{"tables", out}, {"resnapshot", resnapshot}};
}

Result<SnapshotProgress> SnapshotProgress::FromJson(const json& j) {
  SnapshotProgress p;
  try {
    for (const auto& t : j.at("tables")) {
      TableProgress tp;
      tp.table = {t.at("schema").get<std::string>(), t.at("table").get<std::string>()};
      tp.done = t.at("done").get<bool>();
      tp.last_key = t.at("last_key").get<std::vector<std::string>>();
      tp.rows = t.value("rows", std::int64_t{0});
      tp.truncate_first = t.value("truncate_first", false);
      p.tables.push_back(std::move(tp));
    }
    p.resnapshot = j.value("resnapshot", false);
  } catch (const std::exception& e) {
    return common::InvalidArgument(fmt::format("bad snapshot progress: {}", e.what()));
  }
  return p;
}

SnapshotProgress SnapshotProgress::For(const std::vector<TableId>& tables,
                                       const SnapshotProgress& previous) {
  SnapshotProgress p;
  for (const auto& t : tables) {
    TableProgress tp;
    tp.table = t;
    for (const auto& old : previous.tables) {
      if (old.table == t) tp = old;
    }
    p.tables.push_back(std::move(tp));
  }
  p.resnapshot = previous.resnapshot;
  return p;
}

SnapshotProgress SnapshotProgress::Resnapshot(const std::vector<TableId>& tables) {
  SnapshotProgress p = For(tables, {});
  p.resnapshot = true;
  for (auto& t : p.tables) t.truncate_first = true;
  return p;
}

namespace {

Status ReadTable(pqxx::nontransaction& tx, const SnapshotOptions& options, TableProgress* progress,
                 SnapshotProgress* all, ChangeSink* sink, SchemaCache* schemas,
                 ProductionMetrics* metrics, int* chunks_left) {
  auto columns = TableColumns(tx, progress->table);
  if (!columns.ok()) return columns.status();
  TableSchema schema;
  schema.table = progress->table;
  schema.topic = TopicForTable(options.topic_prefix, schema.table);
  std::vector<const CatalogColumn*> keys;
  std::string select_list;
  for (const auto& c : *columns) {
    schema.columns.push_back(c.column);
    if (!select_list.empty()) select_list += ", ";
    select_list += tx.quote_name(c.column.name);
  }
  auto pk = PrimaryKeyColumns(tx, schema.table);
  if (!pk.ok()) return pk.status();
  // No primary key (so REPLICA IDENTITY FULL): the whole row is the key, as
  // in the stream's Relation messages.
  if (pk->empty()) {
    for (auto& c : schema.columns) c.key = true;
  }
  for (const auto& name : *pk) {
    for (const auto& c : *columns) {
      if (c.column.name == name) keys.push_back(&c);
    }
  }
  auto known = schemas->find(schema.table);
  if (known == schemas->end() || !known->second.SameShape(schema)) {
    if (known != schemas->end()) schema.version = known->second.version + 1;
    (*schemas)[schema.table] = schema;
    SLUICE_RETURN_IF_ERROR(sink->SchemaChanged(schema));
  } else {
    schema.version = known->second.version;
  }

  std::string key_list;
  for (const auto* k : keys) {
    if (!key_list.empty()) key_list += ", ";
    key_list += tx.quote_name(k->column.name);
  }
  const std::string table_sql = QuoteTable(tx, schema.table);
  std::set<std::string> fallback_noted;  // columns already logged
  const bool chunked = !keys.empty();

  while (!progress->done) {
    if (*chunks_left == 0) return Status::Ok();
    if (progress->truncate_first) {
      // Before any row of the table: the target empties it, the rows refill it.
      auto e = ChangeEvent::TruncateOf(schema);
      SLUICE_RETURN_IF_ERROR(sink->Emit(e));
      if (metrics) metrics->Record(e.topic, e.op);
      // Reported (so not sent again) only with the chunk's flush below.
      progress->truncate_first = false;
    }
    std::string sql = fmt::format("SELECT {} FROM {}", select_list, table_sql);
    if (chunked) {
      if (!progress->last_key.empty()) {
        if (progress->last_key.size() != keys.size()) {
          return common::InvalidArgument(
              fmt::format("snapshot progress of {} has {} key values, the key has {} columns",
                          schema.table.Qualified(), progress->last_key.size(), keys.size()));
        }
        std::string bound;
        for (std::size_t i = 0; i < keys.size(); ++i) {
          if (!bound.empty()) bound += ", ";
          bound += tx.quote(progress->last_key[i]) + "::" + keys[i]->sql_type;
        }
        sql += fmt::format(" WHERE ({}) > ({})", key_list, bound);
      }
      sql += fmt::format(" ORDER BY {} LIMIT {}", key_list, options.chunk_size);
    }
    pqxx::result rows;
    try {
      rows = tx.exec(sql);
    } catch (const std::exception& e) {
      return common::Unavailable(
          fmt::format("snapshot of {} failed: {}", schema.table.Qualified(), e.what()));
    }
    for (const auto& row : rows) {
      ChangeEvent e;
      e.op = common::ChangeOp::kRead;
      e.table = schema.table;
      e.topic = schema.topic;
      e.schema_version = schema.version;
      e.after = json::object();
      e.key = json::object();
      for (std::size_t i = 0; i < schema.columns.size(); ++i) {
        const auto& col = schema.columns[i];
        json value = nullptr;
        if (const auto& field = row[static_cast<int>(i)]; !field.is_null()) {
          std::string_view text(field.c_str(), field.size());
          bool as_text = CarriedAsText(col.type_oid, text);
          if (!as_text) {
            auto mapped = TextToJson(col.type_oid, text);
            if (mapped.ok()) {
              value = std::move(*mapped);
            } else {
              as_text = true;
              if (fallback_noted.insert(col.name).second)
                spdlog::warn("{}.{}: a value has no JSON form ({}); carried as its text",
                             schema.table.Qualified(), col.name, mapped.status().message());
            }
          }
          // Never stop on a value: its exact text goes, named in as_text.
          if (as_text) {
            value = std::string(text);
            e.text_columns.push_back(col.name);
          }
        }
        if (col.key) e.key[col.name] = value;
        e.after[col.name] = std::move(value);
      }
      SLUICE_RETURN_IF_ERROR(sink->Emit(e));
      if (metrics) metrics->Record(e.topic, e.op);
    }
    progress->rows += static_cast<std::int64_t>(rows.size());
    if (chunked && !rows.empty()) {
      const auto& last = rows[rows.size() - 1];
      progress->last_key.clear();
      for (const auto* k : keys) {
        progress->last_key.push_back(last[k->column.name].c_str());
      }
    }
    if (!chunked || rows.size() < static_cast<std::size_t>(options.chunk_size)) {
      progress->done = true;
    }
    // Durable first, then reported: a resume never skips rows the sink lost.
    SLUICE_RETURN_IF_ERROR(sink->Flush());
    if (options.on_progress) options.on_progress(*all);
    if (*chunks_left > 0) --*chunks_left;
  }
  return Status::Ok();
}

}  // namespace

Status ReadSnapshot(const SnapshotOptions& options, SnapshotProgress* progress, ChangeSink* sink,
                    SchemaCache* schemas, ProductionMetrics* metrics) {
  if (options.chunk_size <= 0) return common::InvalidArgument("snapshot chunk size must be > 0");
  if (progress->Done()) return Status::Ok();
  auto pinned = guard::PinPostgres(options.url);
  if (!pinned.ok()) {
    if (guard::IsRefusal(pinned.status())) return pinned.status();
    return common::Unavailable("source database: " + pinned.status().message());
  }
  try {
    pqxx::connection conn(*pinned);
    ApplySessionSettings(conn);
    pqxx::nontransaction tx(conn);
    tx.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    if (!options.snapshot_name.empty()) {
      tx.exec("SET TRANSACTION SNAPSHOT " + tx.quote(options.snapshot_name));
    }
    int chunks_left = options.max_chunks > 0 ? options.max_chunks : -1;
    for (auto& table : progress->tables) {
      SLUICE_RETURN_IF_ERROR(
          ReadTable(tx, options, &table, progress, sink, schemas, metrics, &chunks_left));
      if (chunks_left == 0) break;
    }
    tx.exec("COMMIT");
  } catch (const std::exception& e) {
    return common::Unavailable(fmt::format("snapshot failed: {}", e.what()));
  }
  return Status::Ok();
}

}  // namespace sluice::connectors::postgres
