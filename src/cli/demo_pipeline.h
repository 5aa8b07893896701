// The demo `sluice up --demo` runs: a sample source database with writes
// going on, a target database, and one pipeline between them, created
// through the same tables the API writes.
#pragma once

#include <atomic>
#include <string>
#include <thread>

#include "common/status.h"
#include "secrets/key_ring.h"
#include "store/database.h"
#include "store/embedded_cluster.h"

namespace sluice::cli {

struct DemoPipeline {
  std::string pipeline_id;
  std::string source_url;
  std::string target_url;
};

// The demo databases' own role: owner of both, with REPLICATION for the
// source's slot, and nothing else on the cluster.
inline constexpr const char* kDemoRole = "sluice_demo";

// Creates (or finds, on a second run) the demo databases, rows and workers.
// `format`: the source's change events, json or avro (through the registry).
// `keys` encrypts the connectors' configurations.
common::Result<DemoPipeline> SeedDemo(store::Database& db, store::EmbeddedCluster& cluster,
                                      const secrets::KeyRing& keys,
                                      const std::string& broker_bootstrap,
                                      const std::string& format = "json");

// Inserts, updates and deletes rows in the demo source until `stop`.
std::thread StartDemoWriter(std::string source_url, const std::atomic<bool>& stop);

}  // namespace sluice::cli
