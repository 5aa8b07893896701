// What a source emits: one row-level change (or snapshot read) of one table,
// already decoded into JSON values, plus the schema the row was read with.
// Encoding (Avro/JSON, schema ids) happens downstream in the registry.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/change_op.h"

namespace sluice::connectors {

// A PostgreSQL WAL position; 0 means "none".
using Lsn = std::uint64_t;

struct TableId {
  std::string schema;
  std::string name;
  std::string Qualified() const { return schema + "." + name; }
  bool operator==(const TableId&) const = default;
  auto operator<=>(const TableId&) const = default;
};

struct ColumnSchema {
  std::string name;
  std::uint32_t type_oid = 0;
  std::int32_t type_modifier = -1;
  std::string type_name;  // e.g. "int4", "numeric", "_text"; empty when unknown
  bool key = false;       // part of the event key (primary key)
  bool operator==(const ColumnSchema&) const = default;
};

// The column set of a table as the source currently sees it. `version`
// counts changes seen by this source run, starting at 1.
struct TableSchema {
  TableId table;
  std::string topic;
  std::vector<ColumnSchema> columns;
  int version = 1;

  std::vector<std::string> KeyColumns() const;
  // Same names, types and key flags (the version number is ignored).
  bool SameShape(const TableSchema& other) const { return columns == other.columns; }
};

struct ChangeEvent {
  common::ChangeOp op = common::ChangeOp::kCreate;
  TableId table;
  std::string topic;
  // Primary-key columns as a JSON object; null for truncates.
  nlohmann::json key;
  // Row images as JSON objects (column -> value), or null when absent:
  // before is null for inserts and reads, after is null for deletes.
  nlohmann::json before;
  nlohmann::json after;
  // The key and a row image as compact JSON text, rendered straight from
  // the source's row for a sink that takes text (ChangeSink::TakesJsonText):
  // then `key`, `before` and `after` stay null. Updates that carry their old
  // row keep the trees.
  std::string key_json;
  std::string before_json;
  std::string after_json;
  // Columns whose value did not change and was not sent (TOASTed values on
  // UPDATE). They are absent from `after`; a later stage keeps the old value.
  std::vector<std::string> unchanged_columns;
  // Columns of the after image (the before image for a delete) whose value
  // is the PostgreSQL text of the value as a JSON string rather than its
  // usual JSON form (type_mapping.h, CarriedAsText): json, jsonb numbers
  // beyond a double, values that have no JSON form. The envelope's `as_text`.
  std::vector<std::string> text_columns;
  int schema_version = 1;
  // Where the change came from: 0 for snapshot reads.
  Lsn lsn = 0;         // the change's own WAL record
  Lsn commit_lsn = 0;  // its transaction's commit record
  std::uint32_t xid = 0;
  std::int64_t commit_time_micros = 0;  // since the Unix epoch; 0 for reads

  // A truncate of `schema`'s table on its topic (no position set).
  static ChangeEvent TruncateOf(const TableSchema& schema);
};

}  // namespace sluice::connectors
