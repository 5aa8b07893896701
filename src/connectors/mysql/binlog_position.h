// A MariaDB/MySQL binlog position (file:pos, and MariaDB's GTID position
// when the server has one), and its mapping onto the
// connectors' 64-bit Lsn so the sink's checkpoint/acknowledge machinery,
// written for PostgreSQL WAL positions, carries it unchanged: the file's
// numeric suffix in the high 32 bits, the offset in the low 32 (a binlog
// file never reaches 4 GiB: max_binlog_size is at most 1 GiB). The order of
// Lsns is the order of positions.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "connectors/change_event.h"

namespace sluice::connectors::mysql {

// One MariaDB global transaction id: domain-server-sequence.
struct Gtid {
  std::uint32_t domain = 0;
  std::uint32_t server = 0;
  std::uint64_t seq = 0;
  bool operator==(const Gtid&) const = default;
};
// A GTID position: the last transaction of each replication domain, as
// @@gtid_binlog_pos and BINLOG_GTID_POS() spell it ("0-1-100,1-2-7").
using GtidSet = std::map<std::uint32_t, Gtid>;
common::Result<GtidSet> ParseGtidSet(std::string_view text);
std::string FormatGtidSet(const GtidSet& set);

struct BinlogPosition {
  std::string file;  // e.g. "binlog.000003"
  std::uint64_t pos = 0;
  // The same position as a MariaDB GTID position; empty when the server
  // has none (no GTID yet, or not MariaDB). A resume prefers it: it names
  // the transactions, not a file, so it survives binlog files renamed or
  // reset under the source.
  std::string gtid = {};

  bool empty() const { return file.empty(); }
  std::string ToString() const;  // "binlog.000003:1234"
  // 0 when the file name has no numeric suffix.
  Lsn ToLsn() const;
  // The position of `lsn` in the binlog whose files are named like `like`
  // (same base name and suffix width).
  static BinlogPosition FromLsn(Lsn lsn, std::string_view like);
  static common::Result<BinlogPosition> Parse(std::string_view text);

  nlohmann::json ToJson() const {
    nlohmann::json j = {{"file", file}, {"pos", pos}};
    if (!gtid.empty()) j["gtid"] = gtid;
    return j;
  }
  static common::Result<BinlogPosition> FromJson(const nlohmann::json& j);
  bool operator==(const BinlogPosition&) const = default;
};

// The numeric suffix of a binlog file name ("binlog.000003" -> 3).
std::optional<std::uint32_t> BinlogSequence(std::string_view file);

}  // namespace sluice::connectors::mysql
