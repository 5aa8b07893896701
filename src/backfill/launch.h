// What a loader is handed, built from today's rows: the item, its run, the
// source and destination connectors (configurations decrypted), and the
// subscription's shaping. Shared by the launcher and `sluice loader --item`.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "backfill/loader.h"
#include "backfill/model.h"
#include "common/status.h"
#include "secrets/key_ring.h"

namespace sluice::backfill {

common::Result<LoaderConfig> BuildLoaderConfig(pqxx::transaction_base& tx, const BackfillItem& item,
                                               const BackfillRun& run, const secrets::KeyRing* keys,
                                               std::optional<std::string> report_database_url);

}  // namespace sluice::backfill
