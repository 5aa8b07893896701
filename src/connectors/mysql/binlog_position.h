// A MariaDB/MySQL binlog position (file:pos), and its mapping onto the
// connectors' 64-bit Lsn so the sink's checkpoint/acknowledge machinery,
// written for PostgreSQL WAL positions, carries it unchanged: the file's
// numeric suffix in the high 32 bits, the offset in the low 32 (a binlog
// file never reaches 4 GiB: max_binlog_size is at most 1 GiB). The order of
// Lsns is the order of positions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "connectors/change_event.h"

namespace sluice::connectors::mysql {

struct BinlogPosition {
  std::string file;  // e.g. "binlog.000003"
  std::uint64_t pos = 0;

  bool empty() const { return file.empty(); }
  std::string ToString() const;  // "binlog.000003:1234"
  // 0 when the file name has no numeric suffix.
  Lsn ToLsn() const;
  // The position of `lsn` in the binlog whose files are named like `like`
  // (same base name and suffix width).
  static BinlogPosition FromLsn(Lsn lsn, std::string_view like);
  static common::Result<BinlogPosition> Parse(std::string_view text);

  nlohmann::json ToJson() const { return {{"file", file}, {"pos", pos}}; }
  static common::Result<BinlogPosition> FromJson(const nlohmann::json& j);
  bool operator==(const BinlogPosition&) const = default;
};

// The numeric suffix of a binlog file name ("binlog.000003" -> 3).
std::optional<std::uint32_t> BinlogSequence(std::string_view file);

}  // namespace sluice::connectors::mysql
