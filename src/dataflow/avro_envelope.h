// The Avro form of Sluice's change events, for connectors with
// `format: avro`: Confluent's wire format (magic byte, schema id, Avro
// binary) carrying the registry's Debezium-like envelope
// (before/after/source{lsn, ts_ms}/op/ts_ms/unchanged), registered under
// "<topic>-value" (Confluent's topic-name strategy). The key stays the
// primary key as compact JSON, as in the JSON format.
//
// Column types map to Avro exactly: booleans, integers (long) and floats
// (double; NaN and the infinities as Avro doubles) natively; everything else
// as the string the JSON format carries (numeric, timestamps ISO-8601, uuid,
// base64 bytea), json/jsonb and arrays as JSON text. Each field's doc holds
// {"column", "pg_type", "key"}, so a reader rebuilds the column set the
// JSON envelope lists in `columns` (doc is part of the registry's content
// hash, unlike custom attributes, so different types never share an id).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "connectors/change_event.h"
#include "connectors/targets/target_change.h"
#include "dataflow/registry_client.h"
#include "registry/avro_schema.h"
#include "registry/change_event.h"

namespace sluice::dataflow {

// The registry's table description of `schema` (server = topic prefix).
registry::TableSpec AvroTableSpec(const connectors::TableSchema& schema, const std::string& server);
// `event` in the registry's change form, values converted to Avro datums.
registry::Change AvroChange(const connectors::ChangeEvent& event,
                            const connectors::TableSchema& schema);

// Writes a change's Avro envelope straight from the event: the bytes
// ChangeEventEncoder::Encode gives for AvroChange(event) under the schema
// registered as `schema_id`, without building its datums on the way.
class AvroChangeWriter {
 public:
  AvroChangeWriter(const connectors::TableSchema& schema, const std::string& server, int schema_id);

  // `now_ms`: the envelope's ts_ms. InvalidArgument for a value its
  // column's Avro type cannot hold.
  common::Result<std::string> Write(const connectors::ChangeEvent& event,
                                    std::int64_t now_ms) const;

 private:
  struct Column {
    std::string name;
    std::string field;  // its Avro name
    int kind;           // how its values are written (avro_envelope.cc)
  };
  common::Status WriteImage(const nlohmann::json& image, const std::vector<std::string>& as_text,
                            std::string& out) const;

  std::string header_;  // the wire format's magic byte and schema id
  std::string server_;
  std::string schema_name_;
  std::string table_name_;
  std::vector<Column> columns_;
};

// Confluent framing: magic byte 0 and a 4-byte schema id. A JSON envelope
// starts with '{', so the two formats never collide on one topic.
bool IsWireFramed(const std::string& value);

// Decodes wire-framed envelopes into what a target applies, fetching each
// schema id once from the registry.
class AvroEnvelopeDecoder {
 public:
  explicit AvroEnvelopeDecoder(std::shared_ptr<RegistryClient> registry)
      : registry_(std::move(registry)) {}

  // InvalidArgument for a message that does not decode (it goes to the error
  // table); Unavailable when the registry cannot be reached (retried).
  common::Result<connectors::targets::TargetChange> Decode(const std::string& key,
                                                           const std::string& value);

  // A row change as the JSON format's text (see Target::ApplyJsonRows),
  // written straight from the Avro payload without decoding it into values.
  struct RowText {
    common::ChangeOp op = common::ChangeOp::kCreate;
    std::string image;      // the after image's JSON object; empty for a delete
    std::string unchanged;  // the columns it leaves out, as a JSON array; empty for none
    const std::vector<connectors::targets::TargetColumn>* columns = nullptr;  // the schema's
  };
  // Nullopt for what needs Decode: a truncate, an update carrying its old
  // image, json and array values and jsonb ones other than an object or
  // array, a type the envelope does not use, or a payload that does not
  // read (Decode says what is wrong with it).
  std::optional<RowText> ViewRowChange(const std::string& value);

 private:
  struct Column {
    std::string field;  // the Avro field name
    connectors::targets::TargetColumn column;
    bool json_text = false;  // json, jsonb, arrays: JSON text in an Avro string
    bool jsonb = false;      // any spelling of its JSON is the same value
    bool floating = false;   // NaN and the infinities go as the JSON format's strings
  };
  struct Reader {
    registry::avro::SchemaPtr schema;
    std::vector<Column> columns;
    std::vector<connectors::targets::TargetColumn> described;  // the columns' own, in order
    // The envelope's fields by their index in its record; -1 when absent.
    int before = -1;
    int after = -1;
    int op = -1;
    int unchanged = -1;
  };
  common::Result<const Reader*> ReaderFor(int id);

  std::shared_ptr<RegistryClient> registry_;
  std::map<int, Reader> readers_;
};

}  // namespace sluice::dataflow
