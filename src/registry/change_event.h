// Change events as the connectors publish them: a Debezium-like envelope
// {before, after, source{..., lsn, ts_ms, db, schema, table}, op, ts_ms},
// either as Avro in Confluent's wire format or as plain JSON.
//
//   ChangeEventEncoder enc = *ChangeEventEncoder::Create(table, EventFormat::kAvro);
//   int id = <register enc.schema_text() under enc.value_subject()>;
//   std::string bytes = *enc.Encode(change, id);
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/change_op.h"
#include "common/status.h"
#include "registry/avro_schema.h"

namespace sluice::registry {

struct ColumnSpec {
  std::string name;
  // An Avro type: "long", "string", {"type": "long", "logicalType": "timestamp-micros"}, ...
  nlohmann::json avro_type;
  bool nullable = true;  // becomes ["null", type] with default null
  // The field's doc. Part of the registry's content hash (custom attributes
  // are not), so metadata a reader needs belongs here.
  std::string doc;
};

struct TableSpec {
  std::string server;  // topic prefix; the record namespace is <server>.<schema>.<table>
  std::string db;
  std::string schema;
  std::string table;
  std::vector<ColumnSpec> columns;
  // Adds `unchanged` (array of column names, default []) to the envelope:
  // columns an update did not send (PostgreSQL's unchanged TOASTed values),
  // which a reader must leave as they are rather than set to null.
  bool track_unchanged = false;
};

struct ChangeSource {
  std::optional<std::int64_t> lsn;  // position in the source's log; absent if it has none
  std::int64_t ts_ms = 0;           // when the source committed the change
  bool snapshot = false;            // read by a snapshot rather than from the log
};

struct Change {
  common::ChangeOp op = common::ChangeOp::kCreate;
  // Row images as {column: value} in the datum form of avro_codec.h. c and r
  // need `after`, d needs `before`, u needs `after` (and `before` if known).
  std::optional<nlohmann::json> before;
  std::optional<nlohmann::json> after;
  ChangeSource source;
  std::int64_t ts_ms = 0;              // when Sluice processed the change
  std::vector<std::string> unchanged;  // column names; needs track_unchanged
};

enum class EventFormat { kAvro, kJson };

// The Avro name a column is written under ([A-Za-z0-9_], no leading digit).
std::string AvroFieldName(const std::string& column);

// The Avro schema of the envelope for `table`, as JSON.
nlohmann::json EnvelopeSchema(const TableSpec& table);

class ChangeEventEncoder {
 public:
  // Fails if a column type is not a valid Avro schema.
  static common::Result<ChangeEventEncoder> Create(TableSpec table, EventFormat format);

  EventFormat format() const { return format_; }
  const TableSpec& table() const { return table_; }
  // The envelope schema text to register, and the subject for it
  // ("<server>.<schema>.<table>-value", Confluent's topic-name strategy).
  const std::string& schema_text() const { return schema_text_; }
  std::string value_subject() const;

  // The envelope of `change` as a JSON object (the JSON format's payload).
  common::Result<nlohmann::json> Envelope(const Change& change) const;
  // kAvro: magic byte + `schema_id` + Avro binary. kJson: the envelope as
  // compact JSON text (schema_id unused).
  common::Result<std::string> Encode(const Change& change, std::int32_t schema_id) const;

 private:
  ChangeEventEncoder() = default;
  TableSpec table_;
  EventFormat format_ = EventFormat::kAvro;
  avro::SchemaPtr schema_;
  std::string schema_text_;
};

}  // namespace sluice::registry
