// Ingestion: validated snapshots become append-only raw rows. created_at is
// the ingestion time and decides the UTC day a row rolls up into.
#pragma once

#include <pqxx/pqxx>

#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "metrics/snapshot.h"

namespace sluice::metrics {

// Validates every snapshot first; one bad snapshot rejects the batch (its
// index is in the message) and nothing is written.
common::Status IngestProduction(pqxx::work& tx, const std::vector<ProductionSnapshot>& batch,
                                common::TimePoint now, const ValidationOptions& opts = {});
common::Status IngestConsumption(pqxx::work& tx, const std::vector<ConsumptionSnapshot>& batch,
                                 common::TimePoint now, const ValidationOptions& opts = {});

}  // namespace sluice::metrics
