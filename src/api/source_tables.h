// The tables a source connector could capture, read from the source itself
// with the connector's own settings, through the connect policy: what the
// table picker lists and what the wizard checks its tables against.
#pragma once

#include <optional>
#include <vector>

#include "common/status.h"
#include "connectors/source_tables.h"
#include "model/pipelines/connectors_repository.h"

namespace sluice::api {

// nullopt for a source that reads a topic rather than tables. An error's
// message never quotes the connector's secrets.
std::optional<common::Result<std::vector<connectors::ListedTable>>> ReadSourceTables(
    const model::ConnectorRow& source);

}  // namespace sluice::api
