// WAL positions in PostgreSQL's "XXXXXXXX/XXXXXXXX" text form.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "connectors/change_event.h"

namespace sluice::connectors::postgres {

common::Result<Lsn> ParseLsn(std::string_view text);
std::string FormatLsn(Lsn lsn);

// pgoutput timestamps count microseconds from 2000-01-01 UTC.
std::int64_t PgEpochToUnixMicros(std::int64_t pg_micros);
std::int64_t UnixToPgEpochMicros(std::int64_t unix_micros);

}  // namespace sluice::connectors::postgres
