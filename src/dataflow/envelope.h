// The change-event envelope on Sluice's topics: Debezium-like
// {before, after, op, ts_ms, source{schema, table, lsn, ts_ms, snapshot}}
// in JSON, plus `columns` (the source's column set, like Debezium's JSON
// converter with schemas enabled) so a target can create and grow its table,
// and `unchanged` (columns an UPDATE did not send, e.g. TOASTed values).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "connectors/change_event.h"
#include "connectors/targets/target_change.h"

namespace sluice::dataflow {

// The message key (the primary-key object as compact JSON) and value.
struct EncodedEvent {
  std::string key;
  std::string value;
};

EncodedEvent EncodeEnvelope(const connectors::ChangeEvent& event,
                            const connectors::TableSchema& schema);
// The same, with `columns` already serialized (ColumnsJson of the schema):
// a sink encodes it once per schema rather than once per event.
EncodedEvent EncodeEnvelope(const connectors::ChangeEvent& event, const std::string& columns_json);
std::string ColumnsJson(const connectors::TableSchema& schema);
// The message value alone (a sink that sends the key it already has, or none).
std::string EnvelopeValue(const connectors::ChangeEvent& event, const std::string& columns_json);
// The message key: the key object as compact JSON, or empty for an event
// without one (truncates).
std::string EnvelopeKey(const connectors::ChangeEvent& event);

// Decodes a value into what a target applies; InvalidArgument (with what
// is wrong) for a message that is not an envelope.
common::Result<connectors::targets::TargetChange> DecodeEnvelope(const std::string& key,
                                                                 const std::string& value);

// The key an update's row had before it, when the update changed it (read
// from the before image by the columns' key flags); null otherwise.
nlohmann::json OldKey(const connectors::targets::TargetChange& change,
                      const nlohmann::json& before);

// A row change (op c, r, u or d) as it sits in its message: views into the
// value of the after image's, the columns', the `unchanged` and the
// `as_text` arrays' JSON text (image empty for a delete; the arrays empty
// when absent). Nullopt for anything that needs the decoded path:
// truncates, an update with a before image (a key change, or REPLICA
// IDENTITY FULL), a layout this does not know.
struct RowChangeView {
  common::ChangeOp op = common::ChangeOp::kCreate;
  std::string_view image;
  std::string_view columns;
  std::string_view unchanged;
  std::string_view as_text;  // the `as_text` array's text; empty when there is none
};
std::optional<RowChangeView> ViewRowChange(const std::string& value);

// The column list of an envelope's `columns` text; parsed once per distinct
// text (per thread), null when it is not a JSON array.
const std::vector<connectors::targets::TargetColumn>* ColumnsFromText(std::string_view text);

}  // namespace sluice::dataflow
