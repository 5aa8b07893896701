// What a target applies: one change to one row, already decoded from the
// topic, with the column set the source described. Targets apply changes
// idempotently in order, so at-least-once delivery ends exactly right.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/change_op.h"

namespace sluice::connectors::targets {

struct TargetColumn {
  std::string name;
  std::string source_type;  // the source's type name ("int4", "numeric", "_text"); may be empty
  bool key = false;
  bool operator==(const TargetColumn&) const = default;
};

struct TargetChange {
  common::ChangeOp op = common::ChangeOp::kCreate;
  nlohmann::json key;                 // primary-key columns
  nlohmann::json after;               // the row image; columns absent from it are left as they are
  std::vector<TargetColumn> columns;  // the table's columns as of this change
  std::string position;               // "topic/partition/offset" it was read from, when known
  nlohmann::json source;              // the envelope's source metadata (lsn, ts_ms, ...), if any
  // Columns of `after` whose string is the value's PostgreSQL text, to be
  // read by the column's input function even where a JSON string would be
  // taken as JSON (json and jsonb columns). The envelope's `as_text`.
  std::vector<std::string> as_text;
  // For an update that changed the key: the key the row had before (else
  // null). The row under it is gone once the change is applied.
  nlohmann::json old_key;
};

// A row change read in place from the message it came in (see
// Target::PrepareJsonRows): its op (c, r, u or d), its key's JSON object text
// and, unless it is a delete, its row image's. An image names every column but those in
// `unchanged` (the text of the envelope's array, empty when there is none):
// images with the same `unchanged` name the same columns.
struct JsonRow {
  std::string_view key;
  std::string_view image;
  std::string_view unchanged = {};
  common::ChangeOp op = common::ChangeOp::kCreate;
  // The envelope's `as_text` array (empty for none): columns whose JSON
  // string is their PostgreSQL text, not a JSON value (MySQL's JSON, say).
  std::string_view as_text = {};
  bool deleted() const { return op == common::ChangeOp::kDelete; }
};

// A batch of JsonRows made ready for its target (folded and rendered), with
// no database work yet and no view into the messages left: see
// Target::PrepareJsonRows.
class PreparedRows {
 public:
  virtual ~PreparedRows() = default;
};
// The answer for a batch that does not take that path.
inline std::unique_ptr<PreparedRows> NotPrepared() { return nullptr; }

// A change the target refused, with the target's own words.
struct RejectedChange {
  std::size_t index;  // position in the batch
  std::string error;
};

}  // namespace sluice::connectors::targets
