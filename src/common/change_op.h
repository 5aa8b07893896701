// The operation of one row change, spelled on the wire by its Debezium
// letter. The one type a source emits, the JSON and Avro envelopes carry, the
// worker's stages shape and a target applies.
#pragma once

#include <string_view>

#include "common/status.h"

namespace sluice::common {

enum class ChangeOp : char {
  kCreate = 'c',    // INSERT
  kUpdate = 'u',    // UPDATE; may change the key
  kDelete = 'd',    // DELETE: a key, no after image
  kRead = 'r',      // a snapshot or backfill read of an existing row
  kTruncate = 't',  // the whole table: no key, no row images
};

// The wire letter: c, u, d, r or t.
constexpr char Letter(ChangeOp op) { return static_cast<char>(op); }

// "create", "update", "delete", "read" or "truncate".
std::string_view Name(ChangeOp op);

// Brings a row the target should not hold yet (c, r): an insert, or a
// snapshot or backfill read.
constexpr bool BringsNewRow(ChangeOp op) {
  return op == ChangeOp::kCreate || op == ChangeOp::kRead;
}

// Upserts a row image (c, u, r).
constexpr bool WritesRow(ChangeOp op) {
  return op == ChangeOp::kCreate || op == ChangeOp::kUpdate || op == ChangeOp::kRead;
}

// From its wire letter ("u"); anything else, a name or the empty string
// included, is InvalidArgument "unknown op '<text>'" (the decoders' words).
Result<ChangeOp> ChangeOpFromLetter(std::string_view letter);

// From its name ("update"); anything else is InvalidArgument.
Result<ChangeOp> ChangeOpFromName(std::string_view name);

}  // namespace sluice::common
