// The `postgresql` engine: statements go to a PostgreSQL server over libpq's
// asynchronous API (PQsendQuery + single-row mode), so Poll never blocks,
// Cancel is libpq's out-of-band cancel, and only the first rows of a large
// result are kept in memory. One session serves the whole script.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "warehouse/engine.h"

namespace sluice::warehouse {

// config: host, port (5432), database, user, password, sslmode.
common::Result<std::unique_ptr<Engine>> ConnectPostgresql(const nlohmann::json& config,
                                                          size_t max_rows_kept = kMaxResultRows);

}  // namespace sluice::warehouse
