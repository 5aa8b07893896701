#include "runtime/worker_repository.h"

#include <fmt/format.h>

namespace sluice::runtime {

namespace {

constexpr const char* kColumns =
    "id, state, connector_id, shard_index, shard_key, "
    "(extract(epoch FROM last_heartbeat_at) * 1000000)::bigint, "
    "(extract(epoch FROM launched_at) * 1000000)::bigint, reason, "
    "(extract(epoch FROM stop_requested_at) * 1000000)::bigint, launch_generation, "
    "launched_config_hash";

std::optional<common::TimePoint> OptTime(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return common::FromEpochMicros(f.as<long long>());
}

std::optional<std::string> OptString(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return std::string(f.c_str());
}

// The observation a heartbeat carries as text ('' when the pod said none).
std::string ObservedText(std::optional<WorkerState> observed) {
  return observed ? std::string(ToString(*observed)) : std::string();
}

// Worker::HeartbeatOnlyStamps as a condition on the row, `observed` being
// the SQL expression of the heartbeat's ObservedText.
std::string OnlyStampsSql(std::string_view observed) {
  return fmt::format("NOT (state = 'ERROR' AND {} = 'LIVE')", observed);
}

Worker FromRow(const pqxx::row& r) {
  Worker w;
  w.id = *common::Uuid::Parse(r[0].c_str());
  w.state = ParseWorkerState(r[1].c_str()).value_or(WorkerState::kError);
  w.connector_id = *common::Uuid::Parse(r[2].c_str());
  w.shard_index = r[3].as<int>();
  w.shard_key = OptString(r[4]);
  w.last_heartbeat_at = OptTime(r[5]);
  w.launched_at = OptTime(r[6]);
  w.reason = OptString(r[7]);
  w.stop_requested_at = OptTime(r[8]);
  w.launch_generation = *common::Uuid::Parse(r[9].c_str());
  w.launched_config_hash = OptString(r[10]);
  return w;
}

std::optional<long long> Micros(const std::optional<common::TimePoint>& t) {
  if (!t) return std::nullopt;
  return common::ToEpochMicros(*t);
}

// Naive-UTC timestamp from an optional micros parameter.
constexpr const char* kTs = "(to_timestamp(${} / 1e6) AT TIME ZONE 'UTC')";

std::string Ts(int param) { return fmt::format(fmt::runtime(kTs), param); }

}  // namespace

std::optional<Worker> WorkerRepository::Find(pqxx::work& tx, const common::Uuid& id) {
  auto rows =
      tx.exec_params(fmt::format("SELECT {} FROM worker WHERE id = $1", kColumns), id.ToString());
  if (rows.empty()) return std::nullopt;
  return FromRow(rows[0]);
}

std::optional<Worker> WorkerRepository::FindForUpdate(pqxx::work& tx, const common::Uuid& id) {
  auto rows = tx.exec_params(
      fmt::format("SELECT {} FROM worker WHERE id = $1 FOR UPDATE", kColumns), id.ToString());
  if (rows.empty()) return std::nullopt;
  return FromRow(rows[0]);
}

std::vector<Worker> WorkerRepository::ForConnector(pqxx::work& tx,
                                                   const common::Uuid& connector_id) {
  std::vector<Worker> out;
  for (const auto& r : tx.exec_params(
           fmt::format("SELECT {} FROM worker WHERE connector_id = $1 ORDER BY shard_index",
                       kColumns),
           connector_id.ToString())) {
    out.push_back(FromRow(r));
  }
  return out;
}

std::vector<Worker> WorkerRepository::LockExpectingPods(pqxx::work& tx) {
  std::vector<Worker> out;
  for (const auto& r :
       tx.exec(fmt::format("SELECT {} FROM worker WHERE state IN ('STARTING', 'LIVE', 'STOPPING') "
                           "ORDER BY id FOR UPDATE SKIP LOCKED",
                           kColumns))) {
    out.push_back(FromRow(r));
  }
  return out;
}

void WorkerRepository::Insert(pqxx::work& tx, const Worker& w) {
  tx.exec_params(
      fmt::format("INSERT INTO worker (id, state, connector_id, shard_index, shard_key, "
                  "last_heartbeat_at, launched_at, reason, stop_requested_at, launch_generation, "
                  "launched_config_hash, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, {}, "
                  "{}, $8, {}, $10, $11, now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC')",
                  Ts(6), Ts(7), Ts(9)),
      w.id.ToString(), std::string(ToString(w.state)), w.connector_id.ToString(), w.shard_index,
      w.shard_key, Micros(w.last_heartbeat_at), Micros(w.launched_at), w.reason,
      Micros(w.stop_requested_at), w.launch_generation.ToString(), w.launched_config_hash);
  if (w.launched_at) LaunchNumber(tx, w.id, w.connector_id, w.launch_generation);
}

void WorkerRepository::Update(pqxx::work& tx, const Worker& w) {
  tx.exec_params(
      fmt::format("UPDATE worker SET state = $2, shard_key = $3, last_heartbeat_at = {}, "
                  "launched_at = {}, reason = $6, stop_requested_at = {}, launch_generation = $8, "
                  "launched_config_hash = $9, updated_at = now() AT TIME ZONE 'UTC' WHERE id = $1",
                  Ts(4), Ts(5), Ts(7)),
      w.id.ToString(), std::string(ToString(w.state)), w.shard_key, Micros(w.last_heartbeat_at),
      Micros(w.launched_at), w.reason, Micros(w.stop_requested_at), w.launch_generation.ToString(),
      w.launched_config_hash);
  if (w.launched_at) LaunchNumber(tx, w.id, w.connector_id, w.launch_generation);
}

std::optional<int> WorkerRepository::LaunchNumber(pqxx::work& tx, const common::Uuid& worker_id,
                                                  const common::Uuid& connector_id,
                                                  const common::Uuid& generation) {
  // Any unique violation (this generation already numbered, or the number
  // taken by a concurrent launch) inserts nothing; the read then answers.
  auto rows = tx.exec_params(
      "WITH added AS (INSERT INTO sluice_state.worker_generation (worker_id, connector_id, "
      "launch_generation, number) SELECT $1, $2, $3, coalesce(max(number), 0) + 1 "
      "FROM sluice_state.worker_generation WHERE worker_id = $1 HAVING NOT EXISTS "
      "(SELECT 1 FROM sluice_state.worker_generation WHERE launch_generation = $3) "
      "ON CONFLICT DO NOTHING RETURNING number) "
      "SELECT number FROM added UNION ALL SELECT number FROM sluice_state.worker_generation "
      "WHERE launch_generation = $3",
      worker_id.ToString(), connector_id.ToString(), generation.ToString());
  if (rows.empty()) return std::nullopt;
  return rows[0][0].as<int>();
}

std::vector<Worker> WorkerRepository::EnsureShards(pqxx::work& tx, const common::Uuid& connector_id,
                                                   int count) {
  // The (connector_id, shard_index) uniqueness makes a concurrent re-plan
  // insert nothing twice: ON CONFLICT leaves the existing shard alone.
  for (int shard = 0; shard < count; ++shard) {
    auto w = Worker::NewShard(connector_id, shard);
    tx.exec_params(
        "INSERT INTO worker (id, state, connector_id, shard_index, launch_generation, created_at, "
        "updated_at) VALUES ($1, $2, $3, $4, $5, now() AT TIME ZONE 'UTC', "
        "now() AT TIME ZONE 'UTC') ON CONFLICT (connector_id, shard_index) DO NOTHING",
        w.id.ToString(), std::string(ToString(w.state)), connector_id.ToString(), shard,
        w.launch_generation.ToString());
  }
  return ForConnector(tx, connector_id);
}

common::Result<Worker> WorkerRepository::ApplyReport(pqxx::work& tx, const common::Uuid& worker_id,
                                                     const StateReport& report,
                                                     common::TimePoint now) {
  auto worker = FindForUpdate(tx, worker_id);
  if (!worker) return common::NotFound("no such worker");
  SLUICE_RETURN_IF_ERROR(worker->accepts_reported_state(report));
  worker->Apply(report, now);
  Update(tx, *worker);
  return *worker;
}

common::Status WorkerRepository::Heartbeat(pqxx::work& tx, const common::Uuid& worker_id,
                                           const common::Uuid& generation,
                                           std::optional<WorkerState> observed,
                                           common::TimePoint now) {
  // The common case is one statement: the UPDATE takes the row lock itself
  // and the generation rule is its WHERE. Only a refusal or a state to
  // restore reads the row, so that the domain type decides.
  auto updated = tx.exec_params(
      fmt::format("UPDATE worker SET last_heartbeat_at = {}, updated_at = now() AT TIME ZONE "
                  "'UTC' WHERE id = $1 AND launch_generation = $2 AND {}",
                  Ts(3), OnlyStampsSql("$4")),
      worker_id.ToString(), generation.ToString(), common::ToEpochMicros(now),
      ObservedText(observed));
  if (updated.affected_rows() == 1) return common::Status::Ok();
  auto worker = FindForUpdate(tx, worker_id);
  if (!worker) return common::NotFound("no such worker");
  SLUICE_RETURN_IF_ERROR(worker->AcceptHeartbeat(generation, observed, now));
  Update(tx, *worker);
  return common::Status::Ok();
}

std::set<std::string> WorkerRepository::QuickHeartbeats(pqxx::nontransaction& tx,
                                                        const std::vector<Beat>& beats) {
  // UUIDs and integers only, so the arrays are written as literals and the
  // whole text is one simple query: SET LOCAL holds for its implicit
  // transaction only. Rows are locked in id order, so two back ends writing
  // overlapping batches cannot deadlock on each other.
  std::string ids, generations, observed, stamps;
  for (const auto& b : beats) {
    const char* sep = ids.empty() ? "" : ",";
    ids += sep + b.worker_id.ToString();
    generations += sep + b.generation.ToString();
    observed += fmt::format("{}\"{}\"", sep, ObservedText(b.observed));
    stamps += fmt::format("{}{}", sep, common::ToEpochMicros(b.now));
  }
  auto rows = tx.exec(fmt::format(
      "SET LOCAL synchronous_commit = off; "
      "WITH beat AS (SELECT * FROM unnest('{{{}}}'::uuid[], '{{{}}}'::uuid[], '{{{}}}'::text[], "
      "'{{{}}}'::bigint[]) AS b(id, generation, observed, at)), "
      "locked AS (SELECT w.id FROM worker w JOIN beat b ON w.id = b.id "
      "AND w.launch_generation = b.generation ORDER BY w.id FOR UPDATE OF w) "
      "UPDATE worker w SET last_heartbeat_at = (to_timestamp(b.at / 1e6) AT TIME ZONE 'UTC'), "
      "updated_at = now() AT TIME ZONE 'UTC' FROM (SELECT DISTINCT ON (id) * FROM beat "
      "ORDER BY id, at DESC) b WHERE w.id = b.id AND w.launch_generation = b.generation "
      "AND {} AND w.id IN (SELECT id FROM locked) RETURNING w.id::text",
      ids, generations, observed, stamps, OnlyStampsSql("b.observed")));
  std::set<std::string> stamped;
  for (const auto& row : rows) stamped.insert(row[0].c_str());
  return stamped;
}

}  // namespace sluice::runtime
