// One input of the row-event decoder, as the mysql source hands it over:
// a TABLE_MAP's parts and a ROWS event's parts (libmariadb splits the events;
// row_decoder.h decodes them). The framing the fuzz corpus is stored in
// (tests/reliability/corpus/mysql_rows/, recorded from a real MariaDB by
// tests/connectors/mysql/mysql_source_test.cc), shared by the libFuzzer
// target (rows_fuzzer.cc) and the replay test (row_decoder_fuzz_test.cc).
//
// Framing, repeated: u8 kind (0 write, 1 update, 2 delete), u8
// after_bitmap_in_data, u32le column_count, then seven u32le-length-prefixed
// byte strings: column types, metadata, null bitmap, optional metadata,
// column bitmap, after-image bitmap, row data.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "connectors/mysql/row_decoder.h"

namespace sluice::connectors::mysql::fuzz {

struct RowsInput {
  std::uint8_t kind = 0;
  bool after_in_data = false;
  std::uint32_t column_count = 0;
  // types, metadata, nulls, optional, present, present_after, rows
  std::array<std::string, 7> parts;
};

inline void PutU32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

inline std::string EncodeRowsInput(const RowsInput& in) {
  std::string out;
  out.push_back(static_cast<char>(in.kind));
  out.push_back(in.after_in_data ? 1 : 0);
  PutU32(out, in.column_count);
  for (const auto& p : in.parts) {
    PutU32(out, static_cast<std::uint32_t>(p.size()));
    out += p;
  }
  return out;
}

// The inputs framed in `bytes`, up to the first incomplete one.
inline std::vector<RowsInput> DecodeRowsInputs(std::string_view bytes) {
  std::vector<RowsInput> out;
  auto u32 = [&](std::uint32_t* v) {
    if (bytes.size() < 4) return false;
    *v = 0;
    for (int i = 0; i < 4; ++i)
      *v |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[i])) << (8 * i);
    bytes.remove_prefix(4);
    return true;
  };
  while (bytes.size() >= 2) {
    RowsInput in;
    in.kind = static_cast<std::uint8_t>(bytes[0]);
    in.after_in_data = bytes[1] != 0;
    bytes.remove_prefix(2);
    if (!u32(&in.column_count)) return out;
    for (auto& p : in.parts) {
      std::uint32_t n = 0;
      if (!u32(&n) || n > bytes.size()) return out;
      p = std::string(bytes.substr(0, n));
      bytes.remove_prefix(n);
    }
    out.push_back(std::move(in));
  }
  return out;
}

// A write's or a delete's rows (one image each) decoded as insert text must
// spell every value as the tree's dump does, and be refused exactly when the
// trees are: Internal (a bug) otherwise.
inline common::Status CompareTextWithTrees(const TableMap& map, const RowsInput& in, bool write,
                                           const common::Result<std::vector<RowChange>>& trees) {
  TextRows text;
  auto st = DecodeWriteRowsAsText(map, in.column_count, in.parts[4], in.parts[6], text);
  if (st.ok() != trees.ok())
    return common::Internal("text path " + std::string(st.ok() ? "took" : "refused") +
                            " what the tree path " + (trees.ok() ? "took" : "refused") + ": " +
                            (st.ok() ? trees.status().message() : st.message()));
  if (!st.ok()) return common::Status::Ok();
  if (text.rows() != trees->size()) return common::Internal("text and tree row counts differ");
  constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  for (std::size_t r = 0; r < trees->size(); ++r) {
    const RowImage& image = write ? (*trees)[r].after : (*trees)[r].before;
    for (std::size_t i = 0; i < image.size(); ++i) {
      const TextCell& cell = text.cell(r, i);
      if (cell.present != image[i].has_value())
        return common::Internal("text and tree disagree on a column's presence");
      if (!cell.present) continue;
      std::string tree = image[i]->dump(-1, ' ', false, kReplace);
      // `null` is the spelling (a NaN double dumps as null too).
      if (text.text(cell) != tree || cell.null != (tree == "null"))
        return common::Internal("column " + map.columns[i].name + ": text " +
                                std::string(text.text(cell)) + ", tree " + tree);
    }
  }
  return common::Status::Ok();
}

// Decodes one input as the source does (table map, then its rows) and
// serialises every value as the sink would, both ways for one-image rows.
// An error is a Status (Internal: the two ways disagree, a bug); anything
// else (a crash, an exception, a sanitizer report) is a bug.
inline common::Status DecodeRowsInput(const RowsInput& in, std::size_t* rows_out = nullptr) {
  const auto& p = in.parts;
  auto map = ParseTableMap(1, "db", "t", p[0], p[1], p[2], p[3]);
  if (!map.ok()) return map.status();
  RowsKind kind = in.kind % 3 == 0   ? RowsKind::kWrite
                  : in.kind % 3 == 1 ? RowsKind::kUpdate
                                     : RowsKind::kDelete;
  auto rows = DecodeRows(*map, kind, in.column_count, p[4], p[5], p[6], in.after_in_data);
  if (kind != RowsKind::kUpdate)
    SLUICE_RETURN_IF_ERROR(CompareTextWithTrees(*map, in, kind == RowsKind::kWrite, rows));
  if (!rows.ok()) return rows.status();
  constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  for (const auto& row : *rows)
    for (const auto* image : {&row.before, &row.after})
      for (const auto& value : *image)
        if (value) (void)value->dump(-1, ' ', false, kReplace);
  for (const auto& c : map->columns) {
    (void)PostgresTypeName(c);
    (void)CarriedAsText(c);
  }
  if (rows_out) *rows_out = rows->size();
  return {};
}

}  // namespace sluice::connectors::mysql::fuzz
