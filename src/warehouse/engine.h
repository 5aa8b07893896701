// One interface over the compute engines a warehouse relays statements to.
// A statement is submitted, polled until it is terminal (the caller decides
// how long to wait between polls and may cancel in between), and its result
// fetched, bounded to a few hundred rows: only the statement and the first
// rows travel; the query runs on the customer's own compute.
//
//   auto engine = ConnectEngine("postgresql", config);
//   auto id = (*engine)->Submit("select 1");
//   while ((*engine)->Poll(*id)->running()) sleep...;
//   auto rows = (*engine)->FetchResult(*id, kMaxResultRows);
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::warehouse {

// Rows kept per statement in a run row.
inline constexpr size_t kMaxResultRows = 500;

struct ResultColumn {
  std::string name;
  std::string type;  // the engine's type name
};

struct ResultSet {
  std::vector<ResultColumn> columns;
  // Values as the engine renders them as text; JSON null for SQL NULL.
  std::vector<std::vector<nlohmann::json>> rows;
  bool truncated = false;                     // more rows existed than were kept
  std::optional<std::int64_t> rows_affected;  // DML, when the engine says

  nlohmann::json ToJson() const;
  static ResultSet FromJson(const nlohmann::json& j);
};

enum class StatementPhase { kRunning, kSucceeded, kFailed, kCancelled };

struct StatementState {
  StatementPhase phase = StatementPhase::kRunning;
  std::string error;  // the engine's own words, for kFailed
  bool running() const { return phase == StatementPhase::kRunning; }
};

class Engine {
 public:
  virtual ~Engine() = default;

  // Proves the connection and credentials; returns what the engine answered
  // (kept as warehouse.last_test_message).
  virtual common::Result<std::string> Test() = 0;
  // Starts one statement without waiting for it; returns its handle.
  virtual common::Result<std::string> Submit(const std::string& sql) = 0;
  // Where the statement is now; never blocks for long.
  virtual common::Result<StatementState> Poll(const std::string& handle) = 0;
  // Asks the engine to stop the statement; Poll then reports it terminal.
  virtual common::Status Cancel(const std::string& handle) = 0;
  // The first `max_rows` rows of a succeeded statement.
  virtual common::Result<ResultSet> FetchResult(const std::string& handle, size_t max_rows) = 0;
};

// An engine for warehouse_type with its decrypted configuration. A
// PostgreSQL engine connects here (one session for the whole script, so
// SET, temporary tables and transactions carry across statements).
common::Result<std::unique_ptr<Engine>> ConnectEngine(const std::string& warehouse_type,
                                                      const nlohmann::json& config);

// Whether a warehouse type's scripts are split with backslash escapes.
bool UsesBackslashEscapes(const std::string& warehouse_type);

}  // namespace sluice::warehouse
