#include "connectors/postgres/change_assembler.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/json_text.h"
#include "connectors/postgres/lsn.h"
#include "connectors/postgres/type_mapping.h"
#include "connectors/topic_naming.h"

namespace sluice::connectors::postgres {

using common::Result;
using common::Status;
using nlohmann::json;

namespace {

// What both row renderings refuse alike.
Status CheckWidth(const TableSchema& schema, const TupleData& tuple) {
  if (tuple.size() == schema.columns.size()) return Status::Ok();
  return common::InvalidArgument(fmt::format("tuple of {} columns for {} with {} columns",
                                             tuple.size(), schema.table.Qualified(),
                                             schema.columns.size()));
}
Status BinaryValue(const TableSchema& schema, const ColumnSchema& column) {
  return common::InvalidArgument(
      fmt::format("binary tuple value in {}.{}: the source asks for text", schema.table.Qualified(),
                  column.name));
}

}  // namespace

ChangeAssembler::ChangeAssembler(ChangeSink* sink, SchemaCache* schemas, std::string topic_prefix,
                                 KeyLookup key_lookup, ProductionMetrics* metrics)
    : sink_(sink),
      text_rows_(sink->TakesJsonText()),
      schemas_(schemas),
      topic_prefix_(std::move(topic_prefix)),
      key_lookup_(std::move(key_lookup)),
      metrics_(metrics) {}

Status ChangeAssembler::Apply(const PgOutputMessage& message, Lsn wal_start, std::string_view raw) {
  current_lsn_ = wal_start;
  const bool stream_control = std::holds_alternative<StreamStartMessage>(message) ||
                              std::holds_alternative<StreamStopMessage>(message) ||
                              std::holds_alternative<StreamCommitMessage>(message) ||
                              std::holds_alternative<StreamAbortMessage>(message);
  if (stream_xid_ != 0 && !stream_control) {
    // Inside a streamed block: kept as received until Stream Commit. The
    // relation and type messages too, so the relation cache follows the
    // transactions in their commit order, as the server's own apply does.
    if (raw.empty())
      return common::Internal("a streamed transaction's message came without its bytes");
    return streams_[stream_xid_].spool->Append(wal_start, raw);
  }
  return std::visit(
      [&](const auto& m) -> Status {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, BeginMessage>) {
          in_transaction_ = true;
          xid_ = m.xid;
          commit_time_micros_ = PgEpochToUnixMicros(m.commit_time);
          commit_lsn_ = m.final_lsn;
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, CommitMessage>) {
          in_transaction_ = false;
          last_checkpoint_ = m.end_lsn;
          return sink_->Checkpoint(m.end_lsn);
        } else if constexpr (std::is_same_v<T, OriginMessage>) {
          return Status::Ok();  // replicated-in changes are emitted like local ones
        } else if constexpr (std::is_same_v<T, RelationMessage>) {
          return OnRelation(m);
        } else if constexpr (std::is_same_v<T, TypeMessage>) {
          type_names_[m.type_oid] = m.type_name;
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, InsertMessage>) {
          ChangeEvent e;
          e.op = common::ChangeOp::kCreate;
          return OnRow(m.xid, m.relation_id, std::move(e), 0, nullptr, &m.new_tuple);
        } else if constexpr (std::is_same_v<T, UpdateMessage>) {
          ChangeEvent e;
          e.op = common::ChangeOp::kUpdate;
          return OnRow(m.xid, m.relation_id, std::move(e), m.old_kind,
                       m.old_kind ? &m.old_tuple : nullptr, &m.new_tuple);
        } else if constexpr (std::is_same_v<T, DeleteMessage>) {
          ChangeEvent e;
          e.op = common::ChangeOp::kDelete;
          return OnRow(m.xid, m.relation_id, std::move(e), m.old_kind, &m.old_tuple, nullptr);
        } else if constexpr (std::is_same_v<T, TruncateMessage>) {
          for (std::uint32_t id : m.relation_ids) {
            auto it = relations_.find(id);
            if (it == relations_.end()) {
              return common::FailedPrecondition(
                  fmt::format("TRUNCATE of relation {} before its Relation message", id));
            }
            auto e = ChangeEvent::TruncateOf(it->second.schema);
            e.lsn = current_lsn_;
            SLUICE_RETURN_IF_ERROR(Deliver(m.xid, std::move(e)));
          }
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, LogicalMessage>) {
          return Status::Ok();  // heartbeats and application messages carry no rows
        } else if constexpr (std::is_same_v<T, StreamStartMessage>) {
          stream_xid_ = m.xid;
          auto& stream = streams_[m.xid];
          // The first segment starts afresh (the server resends a whole
          // transaction after a reconnect); later ones continue its spool.
          if (m.first_segment || !stream.spool) {
            stream.spool = std::make_unique<TransactionSpool>(spool_dir_, spool_memory_);
            stream.aborted.clear();
          }
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, StreamStopMessage>) {
          stream_xid_ = 0;
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, StreamCommitMessage>) {
          return OnStreamCommit(m);
        } else if constexpr (std::is_same_v<T, StreamAbortMessage>) {
          auto it = streams_.find(m.xid);
          if (it == streams_.end()) return Status::Ok();
          if (m.subxid == m.xid || m.subxid == 0) {
            streams_.erase(it);  // the spool file goes with it: nothing is emitted
          } else {
            it->second.aborted.insert(m.subxid);  // ROLLBACK TO SAVEPOINT
          }
          return Status::Ok();
        }
      },
      message);
}

Status ChangeAssembler::OnStreamCommit(const StreamCommitMessage& m) {
  if (stream_xid_ != 0) return common::FailedPrecondition("Stream Commit inside a stream block");
  auto it = streams_.find(m.xid);
  if (it != streams_.end()) {
    Stream stream = std::move(it->second);
    streams_.erase(it);
    // Replayed as the plain transaction it is now: its events carry the
    // commit's xid, time and position, and go to the sink in order.
    in_transaction_ = true;
    xid_ = m.xid;
    commit_time_micros_ = PgEpochToUnixMicros(m.commit_time);
    commit_lsn_ = m.commit_lsn;
    PgOutputDecoder decoder(/*in_stream=*/true);
    std::uint64_t replayed = 0;
    auto st = stream.spool->ForEach([&](Lsn lsn, std::string_view bytes) -> Status {
      auto message = decoder.Decode(bytes);
      if (!message.ok()) return message.status();
      // Changes of an aborted subtransaction are skipped; relation and type
      // messages never are (the server will not send them again).
      std::uint32_t subxid = std::visit(
          [](const auto& d) -> std::uint32_t {
            using D = std::decay_t<decltype(d)>;
            if constexpr (std::is_same_v<D, InsertMessage> || std::is_same_v<D, UpdateMessage> ||
                          std::is_same_v<D, DeleteMessage> || std::is_same_v<D, TruncateMessage> ||
                          std::is_same_v<D, LogicalMessage>) {
              return d.xid;
            } else {
              return 0;
            }
          },
          *message);
      if (subxid != 0 && stream.aborted.count(subxid)) return Status::Ok();
      SLUICE_RETURN_IF_ERROR(Apply(*message, lsn));
      if (replay_progress_ && ++replayed % 4096 == 0) return replay_progress_();
      return Status::Ok();
    });
    in_transaction_ = false;
    SLUICE_RETURN_IF_ERROR(st);
    // Rare (only transactions past the server's logical_decoding_work_mem
    // are streamed) and worth knowing about when one is slow to arrive.
    spdlog::info(
        "streamed transaction {} committed: {} messages replayed in order ({} bytes "
        "spilled to a temporary file, {} aborted subtransactions skipped)",
        m.xid, stream.spool->messages(), stream.spool->spilled_bytes(), stream.aborted.size());
  }
  last_checkpoint_ = m.end_lsn;
  return sink_->Checkpoint(m.end_lsn);
}

Status ChangeAssembler::OnRelation(const RelationMessage& m) {
  Relation rel;
  rel.replica_identity = m.replica_identity;
  rel.schema.table = {m.namespace_name.empty() ? "pg_catalog" : m.namespace_name, m.relation_name};
  rel.schema.topic = TopicForTable(topic_prefix_, rel.schema.table);
  std::vector<std::string> pk;
  if (key_lookup_) {
    auto keys = key_lookup_(rel.schema.table);
    if (!keys.ok()) return keys.status();
    pk = std::move(*keys);
  }
  for (const auto& c : m.columns) {
    ColumnSchema col;
    col.name = c.name;
    col.type_oid = c.type_oid;
    col.type_modifier = c.type_modifier;
    auto tn = type_names_.find(c.type_oid);
    col.type_name = tn != type_names_.end() ? tn->second : BuiltinTypeName(c.type_oid);
    col.key = pk.empty() ? c.key : std::find(pk.begin(), pk.end(), c.name) != pk.end();
    rel.schema.columns.push_back(std::move(col));
  }
  // Announce a schema the first time a table is seen and whenever its column
  // set differs from the last one announced; Relation messages also repeat
  // unchanged after cache invalidations, and those stay silent.
  auto known = schemas_->find(rel.schema.table);
  bool changed = known == schemas_->end() || !known->second.SameShape(rel.schema);
  if (known != schemas_->end()) {
    rel.schema.version = known->second.version + (changed ? 1 : 0);
    if (changed && on_column_changes_) {
      auto changes = DiffRelation(known->second.columns, rel.schema.columns);
      if (!changes.empty()) on_column_changes_(rel.schema.table, changes);
    }
  }
  const auto& cols = rel.schema.columns;
  rel.name_order.resize(cols.size());
  for (std::size_t i = 0; i < cols.size(); ++i) rel.name_order[i] = i;
  std::sort(rel.name_order.begin(), rel.name_order.end(),
            [&](std::size_t a, std::size_t b) { return cols[a].name < cols[b].name; });
  for (std::size_t i : rel.name_order)
    rel.json_names.push_back(
        json(cols[i].name).dump(-1, ' ', false, json::error_handler_t::replace));
  relations_[m.relation_id] = rel;
  if (!changed) return Status::Ok();
  (*schemas_)[rel.schema.table] = rel.schema;
  return Deliver(m.xid, rel.schema);
}

Result<bool> ChangeAssembler::RenderRow(const Relation& rel, const TupleData& tuple, bool old_row,
                                        bool key_only, std::string& image,
                                        ChangeEvent& event) const {
  const auto& cols = rel.schema.columns;
  SLUICE_RETURN_IF_ERROR(CheckWidth(rel.schema, tuple));
  auto decline = [&] {
    event.text_columns.clear();
    event.unchanged_columns.clear();
    return false;
  };
  constexpr auto kAbsent = std::string::npos;
  // Each value rendered once, then laid out in name order for the image
  // and again for the key.
  thread_local std::string values;
  thread_local std::vector<std::pair<std::size_t, std::size_t>> spans;
  values.clear();
  spans.assign(cols.size(), {kAbsent, 0});
  for (std::size_t i = 0; i < cols.size(); ++i) {
    if (key_only && !cols[i].key) continue;
    const TupleValue& v = tuple[i];
    std::size_t from = values.size();
    switch (v.kind) {
      case TupleValue::Kind::kNull:
        values += "null";
        break;
      case TupleValue::Kind::kUnchangedToast:
        // A key column's would leave the key to the old image, and an old
        // image's is left out unnamed: the trees' cases.
        if (cols[i].key || old_row) return decline();
        event.unchanged_columns.push_back(cols[i].name);
        continue;
      case TupleValue::Kind::kText:
        if (CarriedAsText(cols[i].type_oid, v.data)) {
          common::AppendJsonString(values, v.data);
          event.text_columns.push_back(cols[i].name);
        } else if (auto st = AppendValueJson(values, cols[i].type_oid, v.data); !st.ok()) {
          NoteTextFallback(rel.schema, cols[i], st);
          values.resize(from);
          common::AppendJsonString(values, v.data);
          event.text_columns.push_back(cols[i].name);
        }
        break;
      case TupleValue::Kind::kBinary:
        return BinaryValue(rel.schema, cols[i]);
    }
    spans[i] = {from, values.size() - from};
  }
  auto layout = [&](std::string& out, bool keys) {
    out.reserve(values.size() + 16 * cols.size());
    out.push_back('{');
    bool first = true;
    for (std::size_t n = 0; n < rel.name_order.size(); ++n) {
      std::size_t i = rel.name_order[n];
      if (spans[i].first == kAbsent || (keys && !cols[i].key)) continue;
      if (!first) out.push_back(',');
      first = false;
      out += rel.json_names[n];
      out.push_back(':');
      out.append(values, spans[i].first, spans[i].second);
    }
    out.push_back('}');
  };
  layout(image, false);
  layout(event.key_json, true);
  return true;
}

void ChangeAssembler::NoteTextFallback(const TableSchema& schema, const ColumnSchema& column,
                                       const Status& why) const {
  // Once per column and run: a column of such values would flood the log.
  if (!fallback_noted_.insert(schema.table.Qualified() + "." + column.name).second) return;
  spdlog::warn("{}.{}: a value has no JSON form ({}); carried as its text",
               schema.table.Qualified(), column.name, why.message());
}

Result<json> ChangeAssembler::TupleToJson(const Relation& rel, const TupleData& tuple,
                                          bool key_only, std::vector<std::string>* unchanged,
                                          std::vector<std::string>* as_text) const {
  const auto& cols = rel.schema.columns;
  SLUICE_RETURN_IF_ERROR(CheckWidth(rel.schema, tuple));
  json out = json::object();
  for (std::size_t i = 0; i < cols.size(); ++i) {
    if (key_only && !cols[i].key) continue;
    const TupleValue& v = tuple[i];
    switch (v.kind) {
      case TupleValue::Kind::kNull:
        out[cols[i].name] = nullptr;
        break;
      case TupleValue::Kind::kUnchangedToast:
        if (unchanged) unchanged->push_back(cols[i].name);
        break;
      case TupleValue::Kind::kText: {
        if (!CarriedAsText(cols[i].type_oid, v.data)) {
          auto value = TextToJson(cols[i].type_oid, v.data);
          if (value.ok()) {
            out[cols[i].name] = std::move(*value);
            break;
          }
          NoteTextFallback(rel.schema, cols[i], value.status());
        }
        // Never stop the stream on a value: its exact text goes instead.
        out[cols[i].name] = std::string(v.data);
        if (as_text) as_text->push_back(cols[i].name);
        break;
      }
      case TupleValue::Kind::kBinary:
        return BinaryValue(rel.schema, cols[i]);
    }
  }
  return out;
}

Status ChangeAssembler::OnRow(std::uint32_t xid, std::uint32_t relation_id, ChangeEvent event,
                              char old_kind, const TupleData* old_tuple,
                              const TupleData* new_tuple) {
  auto it = relations_.find(relation_id);
  if (it == relations_.end()) {
    return common::FailedPrecondition(
        fmt::format("change of relation {} before its Relation message", relation_id));
  }
  const Relation& rel = it->second;
  event.table = rel.schema.table;
  event.topic = rel.schema.topic;
  event.schema_version = rel.schema.version;
  event.lsn = current_lsn_;
  // An insert, an update without its old row, a delete: written as text.
  // An update with its old row (a key change, REPLICA IDENTITY FULL) merges
  // the two images, and keeps the trees.
  if (text_rows_ && (old_tuple == nullptr) != (new_tuple == nullptr)) {
    const bool deleted = new_tuple == nullptr;
    auto rendered =
        deleted ? RenderRow(rel, *old_tuple, true, old_kind == 'K', event.before_json, event)
                : RenderRow(rel, *new_tuple, false, false, event.after_json, event);
    if (!rendered.ok()) return rendered.status();
    if (*rendered) return Deliver(xid, std::move(event));
  }
  std::vector<std::string> before_text;
  if (old_tuple) {
    std::vector<std::string> old_unchanged;
    auto before = TupleToJson(rel, *old_tuple, old_kind == 'K', &old_unchanged, &before_text);
    if (!before.ok()) return before.status();
    event.before = std::move(*before);
    if (!new_tuple) event.text_columns = before_text;
  }
  if (new_tuple) {
    auto after = TupleToJson(rel, *new_tuple, false, &event.unchanged_columns, &event.text_columns);
    if (!after.ok()) return after.status();
    event.after = std::move(*after);
    // With the whole old row at hand (REPLICA IDENTITY FULL) an unchanged
    // TOASTed value is known: fill it in instead of leaving it to later stages.
    if (event.before.is_object()) {
      auto& u = event.unchanged_columns;
      u.erase(std::remove_if(u.begin(), u.end(),
                             [&](const std::string& col) {
                               auto found = event.before.find(col);
                               if (found == event.before.end()) return false;
                               event.after[col] = *found;
                               if (std::find(before_text.begin(), before_text.end(), col) !=
                                   before_text.end())
                                 event.text_columns.push_back(col);
                               return true;
                             }),
              u.end());
    }
  }
  event.key = json::object();
  for (const auto& col : rel.schema.columns) {
    if (!col.key) continue;
    if (event.after.is_object() && event.after.contains(col.name)) {
      event.key[col.name] = event.after[col.name];
    } else if (event.before.is_object() && event.before.contains(col.name)) {
      event.key[col.name] = event.before[col.name];
    }
  }
  return Deliver(xid, std::move(event));
}

Status ChangeAssembler::Deliver(std::uint32_t xid, std::variant<ChangeEvent, TableSchema> item) {
  (void)xid;  // a subtransaction's own id; the event carries its top-level one
  if (auto* schema = std::get_if<TableSchema>(&item)) return sink_->SchemaChanged(*schema);
  auto& e = std::get<ChangeEvent>(item);
  e.xid = xid_;
  e.commit_time_micros = commit_time_micros_;
  e.commit_lsn = commit_lsn_;
  return EmitNow(e);
}

Status ChangeAssembler::EmitNow(ChangeEvent& event) {
  SLUICE_RETURN_IF_ERROR(sink_->Emit(event));
  if (metrics_) metrics_->Record(event.topic, event.op);
  return Status::Ok();
}

}  // namespace sluice::connectors::postgres
