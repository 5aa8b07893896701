// PostgreSQL's COPY text format (tab-separated, \N for NULL, backslash
// escapes), rendered from row images: from JSON trees for the ordinary COPY
// path, and straight from JSON text for a batch read in place from its
// messages, which skips building a tree per row (bench/cdc perf).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "connectors/targets/target_change.h"

namespace sluice::connectors::targets {

// Appends `s` with COPY's escapes (backslash, tab, newline, carriage return).
void AppendCopyEscaped(std::string& out, std::string_view s);

// Appends one value as the column's input function reads it, exactly as
// json_populate_recordset reads the JSON value: strings as they are (into
// json and jsonb as the quoted JSON string), numbers
// and booleans as text, arrays into `_type` columns as array literals, any
// other array or object as its JSON text.
void AppendCopyValue(std::string& out, const std::string& source_type, const nlohmann::json& v);

// Rows rendered for one COPY: the column list (the first image's members in
// its order) and the COPY text.
struct CopyText {
  std::vector<std::string> names;
  std::string rows;
  // The rows leave out columns they did not change (unchanged TOAST): a row
  // that is there is updated, never upserted, as an upsert's insert half
  // would meet the table's NOT NULLs on the columns left out.
  bool partial = false;
  // Every row's key was created by the batch itself (its first change
  // there an insert): no row of theirs should be in the table yet, so they
  // are worth copying straight in (PostgresTarget::CopyRows).
  bool fresh = false;
};

// Renders images given as JSON object text, each with its key's JSON object
// text, the same way AppendCopyValue renders their trees. Nullopt when a row
// does not fit one plain COPY, and the caller then decodes the rows: an
// image that is not an object or names other columns than the first,
// a key member missing from its image or spelled differently there, or a
// value that needs more than its text (bytea, arrays into `_type` columns).
// A string value of a column in its row's `as_text` is copied as its text.
// `type_of` gives a column's source type ("" when unknown).
std::optional<CopyText> RenderJsonImages(
    const std::vector<JsonRow>& rows,
    const std::function<const std::string&(std::string_view)>& type_of);

// An image that left out its `unchanged` columns (a JSON array's text)
// completed from an earlier image of the same row: the later image's
// members, then each left-out column the earlier one holds, in `unchanged`
// order. `unchanged` is what is still left out (an array's text, empty for
// none). Nullopt when a text is not what it should be.
struct MergedImage {
  std::string image;
  std::string unchanged;
};
std::optional<MergedImage> MergePartialImage(std::string_view earlier, std::string_view later,
                                             std::string_view unchanged);

// A key's JSON object text spelt one way whatever its producer's member
// order or number spelling: its members sorted by name, each value as
// RenderJsonImages renders it, with its JSON kind. Nullopt when it is not an
// object of plain values.
std::optional<std::string> CanonicalKeyText(std::string_view key);

}  // namespace sluice::connectors::targets
