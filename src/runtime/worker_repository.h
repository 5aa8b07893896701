// SQL for the worker table. Every runtime write goes through ApplyReport or
// Heartbeat, which lock the row (SELECT ... FOR UPDATE) and ask the Worker
// whether the report is acceptable, so concurrent reports serialise.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/worker.h"

namespace sluice::runtime {

class WorkerRepository {
 public:
  static std::optional<Worker> Find(pqxx::work& tx, const common::Uuid& id);
  static std::optional<Worker> FindForUpdate(pqxx::work& tx, const common::Uuid& id);
  static std::vector<Worker> ForConnector(pqxx::work& tx, const common::Uuid& connector_id);
  // All rows whose pod is expected to be running, locked, skipping rows
  // another back end holds (safe with several orchestrators).
  static std::vector<Worker> LockExpectingPods(pqxx::work& tx);

  static void Insert(pqxx::work& tx, const Worker& w);
  static void Update(pqxx::work& tx, const Worker& w);

  // The integer launch counter beside the UUID launch_generation
  // (sluice_state.worker_generation): each launch of a worker row takes the
  // next number from 1, recorded when the launch is written (Insert/Update
  // with launched_at set). Numbers a generation not seen yet (a row launched
  // before the counter existed) on the way; nullopt only when a concurrent
  // numbering of the same worker won the race.
  static std::optional<int> LaunchNumber(pqxx::work& tx, const common::Uuid& worker_id,
                                         const common::Uuid& connector_id,
                                         const common::Uuid& generation);

  // Makes shards 0..count-1 exist (dense from 0); never touches existing rows.
  static std::vector<Worker> EnsureShards(pqxx::work& tx, const common::Uuid& connector_id,
                                          int count);

  // The locked read-decide-write of a pod's report.
  static common::Result<Worker> ApplyReport(pqxx::work& tx, const common::Uuid& worker_id,
                                            const StateReport& report, common::TimePoint now);
  static common::Status Heartbeat(pqxx::work& tx, const common::Uuid& worker_id,
                                  const common::Uuid& generation,
                                  std::optional<WorkerState> observed, common::TimePoint now);
  // The same heartbeat's common case for many pods in one round trip: the
  // UPDATE and its relaxed commit (no wait for the disk) as one implicit
  // transaction, rows locked in id order. Returns the worker ids whose row
  // took its beat (generation matched, nothing to restore); Heartbeat words
  // the others' refusal or restores their observed state.
  struct Beat {
    common::Uuid worker_id;
    common::Uuid generation;
    std::optional<WorkerState> observed;
    common::TimePoint now;
  };
  static std::set<std::string> QuickHeartbeats(pqxx::nontransaction& tx,
                                               const std::vector<Beat>& beats);
};

}  // namespace sluice::runtime
