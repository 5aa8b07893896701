// Lifecycle of what runs: start / pause / resume / restart / stop a
// connector or a pipeline (its source and target connectors), and the
// per-shard status with heartbeat age, reason and config drift. Handlers
// write intents on the worker rows; the orchestrator does the rest.
#include <fmt/format.h>

#include <set>

#include "api/license_gate.h"
#include "api/lifecycle_events.h"
#include "api/routes.h"
#include "model/access/access.h"
#include "model/config_keys.h"
#include "model/operations/user_log_repository.h"
#include "model/pipelines/pipelines_repository.h"
#include "orchestrator/launch_builder.h"
#include "orchestrator/placement.h"
#include "runtime/launch_config.h"
#include "runtime/worker_repository.h"

namespace sluice::api {

namespace {

using auth::Action;
using runtime::Worker;
using runtime::WorkerRepository;
using runtime::WorkerState;

struct Owned {
  common::Uuid team_id;
  std::vector<common::Uuid> connectors;
};

// The connector's team, 404 when absent or invisible to the caller.
Owned LoadConnector(pqxx::work& tx, const Principal& caller, const common::Uuid& id,
                    Action action) {
  auto r = tx.exec_params("SELECT team_id FROM connector WHERE id = $1", id.ToString());
  if (r.empty() || r[0][0].is_null()) throw ApiError(404, "not_found", "connector not found");
  auto team = *common::Uuid::Parse(r[0][0].c_str());
  RequireTeam(tx, caller, team, action);
  return {team, {id}};
}

// An action needs connectors to act on (409 without); a status read does not.
Owned LoadPipeline(pqxx::work& tx, const Principal& caller, const common::Uuid& id, Action action,
                   bool need_connectors = true) {
  auto r = tx.exec_params(
      "SELECT team_id, source_connector_id, target_connector_id FROM pipeline WHERE id = $1",
      id.ToString());
  if (r.empty()) throw ApiError(404, "not_found", "pipeline not found");
  auto team = *common::Uuid::Parse(r[0][0].c_str());
  RequireTeam(tx, caller, team, action);
  Owned owned{team, {}};
  for (int col : {1, 2})
    if (!r[0][col].is_null()) owned.connectors.push_back(*common::Uuid::Parse(r[0][col].c_str()));
  if (need_connectors && owned.connectors.empty())
    throw ApiError(409, "incomplete", "the pipeline has no connectors to run yet");
  return owned;
}

Json WorkerJson(pqxx::work& tx, const ApiContext& ctx, const Worker& w) {
  auto now = common::Clock::now();
  Json j = {
      {"id", w.id.ToString()},
      {"connector_id", w.connector_id.ToString()},
      {"shard_index", w.shard_index},
      {"state", std::string(runtime::ToString(w.state))},
      {"reason", w.reason ? Json(*w.reason) : Json(nullptr)},
      {"launch_generation", w.launch_generation.ToString()},
      {"stop_requested_at",
       w.stop_requested_at ? Json(common::FormatIso8601(*w.stop_requested_at)) : Json(nullptr)},
      {"last_heartbeat_at",
       w.last_heartbeat_at ? Json(common::FormatIso8601(*w.last_heartbeat_at)) : Json(nullptr)},
      {"heartbeat_age_seconds",
       w.last_heartbeat_at
           ? Json(std::chrono::duration_cast<std::chrono::seconds>(now - *w.last_heartbeat_at)
                      .count())
           : Json(nullptr)}};
  // Drift: null when unmeasured (no stamp), never "no drift".
  Json drift = nullptr;
  auto today = orchestrator::BuildLaunchConfig(tx, w, &ctx.keys);
  if (today.ok()) {
    auto outdated = w.RunsOutdatedConfig(runtime::LaunchConfigHash(*today));
    if (outdated) drift = *outdated;
  }
  j["config_outdated"] = drift;
  return j;
}

// Each source shard's replication slot as its worker last read it from the
// source (sluice_state.source_slot); empty until a source reported.
Json SlotsJson(pqxx::work& tx, const Owned& owned) {
  Json slots = Json::array();
  for (const auto& c : owned.connectors) {
    for (const auto& r : tx.exec_params(
             "SELECT shard_index, slot_name, wal_status, safe_wal_size, lag_bytes, lag_seconds, "
             "confirmed_flush_lsn, level, to_char(measured_at AT TIME ZONE 'UTC', "
             "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM sluice_state.source_slot "
             "WHERE connector_id = $1 ORDER BY shard_index",
             c.ToString())) {
      slots.push_back(
          {{"connector_id", c.ToString()},
           {"shard_index", r[0].as<int>()},
           {"slot_name", r[1].c_str()},
           {"wal_status", r[2].c_str()},
           {"safe_wal_size", r[3].is_null() ? Json(nullptr) : Json(r[3].as<std::int64_t>())},
           {"lag_bytes", r[4].as<std::int64_t>()},
           {"lag_seconds", r[5].as<double>()},
           {"confirmed_flush_lsn", r[6].c_str()},
           {"level", r[7].c_str()},
           {"measured_at", r[8].c_str()}});
    }
  }
  return slots;
}

enum class Verb { kStart, kPause, kResume, kRestart, kStop };

// The verb as user_log records it: connector.pause, pipeline.restart.
const char* VerbName(Verb verb) {
  switch (verb) {
    case Verb::kStart:
      return "start";
    case Verb::kPause:
      return "pause";
    case Verb::kResume:
      return "resume";
    case Verb::kRestart:
      return "restart";
    case Verb::kStop:
      return "stop";
  }
  return "act";
}

// The past tense the event codes use: connector.paused, pipeline.restarted.
const char* PastTense(Verb verb) {
  switch (verb) {
    case Verb::kStart:
      return "started";
    case Verb::kPause:
      return "paused";
    case Verb::kResume:
      return "resumed";
    case Verb::kRestart:
      return "restarted";
    case Verb::kStop:
      return "stopped";
  }
  return "changed";
}

void ApplyVerb(pqxx::work& tx, const ApiContext& ctx, const common::Uuid& connector, Verb verb) {
  auto now = common::Clock::now();
  if (verb == Verb::kStart || verb == Verb::kResume || verb == Verb::kRestart) {
    auto license = LicenseAllowsStart(tx, ctx);
    if (!license.ok()) throw ApiError(403, "license", "cannot start: " + license.message());
  }
  auto workers = WorkerRepository::ForConnector(tx, connector);
  if (workers.empty()) workers = WorkerRepository::EnsureShards(tx, connector, 1);
  // A start re-plans: as many shards as the configuration and the work ask
  // for, then the unplaced tables / subscriptions are placed on them.
  if (verb == Verb::kStart || verb == Verb::kResume || verb == Verb::kRestart) {
    int shards = ValueOrThrow(orchestrator::PlannedShardCount(tx, connector, &ctx.keys));
    workers = WorkerRepository::EnsureShards(tx, connector, shards);
    std::vector<Worker> kept;
    for (const auto& w : workers) {
      if (w.shard_index < shards) {
        kept.push_back(w);
        continue;
      }
      // A surplus shard may only go once its pod is gone.
      if (w.state == WorkerState::kLive || w.state == WorkerState::kStarting ||
          w.state == WorkerState::kStopping)
        throw ApiError(409, "shards_running",
                       fmt::format("shard {} still runs; stop the connector before lowering "
                                   "its shards to {}",
                                   w.shard_index, shards));
      tx.exec_params("DELETE FROM worker WHERE id = $1", w.id.ToString());
    }
    workers = kept;
    orchestrator::PlaceConnectorWork(tx, connector, shards);
  }
  for (auto& w : workers) {
    auto locked = *WorkerRepository::FindForUpdate(tx, w.id);
    switch (verb) {
      case Verb::kStart:
      case Verb::kResume:
        if (locked.state == WorkerState::kLive || locked.state == WorkerState::kStarting) continue;
        if (locked.state == WorkerState::kStopping)
          throw ApiError(409, "stopping",
                         "the worker is still stopping; try again when it stopped");
        locked.Start(now, std::nullopt);
        break;
      case Verb::kRestart:
        locked.Start(now, std::nullopt);  // a new generation replaces the pod
        break;
      case Verb::kPause:
        locked.Pause();
        break;
      case Verb::kStop:
        locked.RequestStop(now);
        break;
    }
    WorkerRepository::Update(tx, locked);
  }
}

// A pipeline's pause or stop leaves running each connector it shares with a
// pipeline that still runs (stopping it would stop that one too); they are
// removed from `owned` and listed. 409 when nothing of its own is left.
Json KeepSharedConnectors(pqxx::work& tx, const common::Uuid& pipeline, Owned& owned) {
  Json kept = Json::array();
  std::vector<common::Uuid> own;
  for (const auto& c : owned.connectors) {
    auto others = model::OtherPipelinesRunningOn(tx, c, pipeline);
    if (others.empty()) {
      own.push_back(c);
      continue;
    }
    Json names = Json::array();
    for (const auto& p : others) names.push_back({{"id", p.id.ToString()}, {"name", p.name}});
    kept.push_back({{"connector_id", c.ToString()}, {"running_pipelines", names}});
  }
  if (own.empty()) {
    std::set<std::string> distinct;
    for (const auto& k : kept)
      for (const auto& p : k["running_pipelines"]) distinct.insert(p["name"].get<std::string>());
    std::string names;
    for (const auto& n : distinct) names += (names.empty() ? "'" : ", '") + n + "'";
    throw ApiError(409, "shared_connectors",
                   fmt::format("every connector of this pipeline also carries running pipelines "
                               "({}); pause or stop those too, or the connectors themselves",
                               names));
  }
  owned.connectors = std::move(own);
  return kept;
}

Response Act(ApiContext& ctx, Request& req, bool pipeline, Verb verb) {
  auto id = req.PathUuid(pipeline ? "pipeline_id" : "connector_id");
  Json workers = Json::array();
  Json kept = Json::array();
  ctx.db.Transact([&](pqxx::work& tx) {
    auto owned = pipeline ? LoadPipeline(tx, req.caller(), id, Action::kTeamResourceWrite)
                          : LoadConnector(tx, req.caller(), id, Action::kTeamResourceWrite);
    const std::string subject = pipeline ? "pipeline" : "connector";
    if (pipeline && (verb == Verb::kPause || verb == Verb::kStop))
      kept = KeepSharedConnectors(tx, id, owned);
    for (const auto& c : owned.connectors) {
      ApplyVerb(tx, ctx, c, verb);
      for (const auto& w : WorkerRepository::ForConnector(tx, c))
        workers.push_back(WorkerJson(tx, ctx, w));
      Json details = Json::object();
      if (pipeline) details["pipeline_id"] = id.ToString();
      if (!kept.empty()) details["kept_running"] = kept;
      RecordLifecycle(
          tx, req.caller(), {c}, subject + "." + PastTense(verb),
          fmt::format("{} {} by a user", pipeline ? "Pipeline" : "Connector", PastTense(verb)),
          std::move(details));
    }
    // e.g. connector.pause, pipeline.restart: at most 17 of user_log.action's 20.
    LogAction(tx, req.caller(), subject + "." + VerbName(verb));
  });
  Json body = {{"workers", workers}};
  if (pipeline) body["kept_running"] = kept;
  return Response::Ok(body);
}

Response Status(ApiContext& ctx, Request& req, bool pipeline) {
  auto id = req.PathUuid(pipeline ? "pipeline_id" : "connector_id");
  Json body;
  ctx.db.Transact([&](pqxx::work& tx) {
    Owned owned = pipeline ? LoadPipeline(tx, req.caller(), id, Action::kTeamResourceRead, false)
                           : LoadConnector(tx, req.caller(), id, Action::kTeamResourceRead);
    Json workers = Json::array();
    std::vector<WorkerState> states;
    for (const auto& c : owned.connectors) {
      for (const auto& w : WorkerRepository::ForConnector(tx, c)) {
        workers.push_back(WorkerJson(tx, ctx, w));
        states.push_back(w.state);
      }
    }
    std::string state(
        runtime::ToString(runtime::DisplayedState(states).value_or(WorkerState::kPaused)));
    if (pipeline) {
      auto r = tx.exec_params("SELECT coalesce(is_completed, false) FROM pipeline WHERE id = $1",
                              id.ToString());
      // "draft" is computed: an incomplete pipeline whose worker is paused.
      if (!r[0][0].as<bool>() && state == "PAUSED") state = "DRAFT";
    }
    body = {{"state", state}, {"workers", workers}, {"source_slots", SlotsJson(tx, owned)}};
  });
  return Response::Ok(body);
}

}  // namespace

void RegisterWorkersRoutes(Router& r, ApiContext& ctx) {
  RouteGroup g(r, kApiPrefix, "workers");
  struct Named {
    const char* name;
    Verb verb;
  };
  for (auto [name, verb] :
       {Named{"start", Verb::kStart}, Named{"pause", Verb::kPause}, Named{"resume", Verb::kResume},
        Named{"restart", Verb::kRestart}, Named{"stop", Verb::kStop}}) {
    auto v = verb;
    g.Post(fmt::format("/connectors/{{connector_id}}/{}", name),
           fmt::format("{} a connector's workers", name),
           [&ctx, v](Request& q) { return Act(ctx, q, false, v); });
    g.Post(fmt::format("/pipelines/{{pipeline_id}}/{}", name),
           fmt::format("{} a pipeline's workers", name),
           [&ctx, v](Request& q) { return Act(ctx, q, true, v); });
  }
  g.Get("/connectors/{connector_id}/workers", "Per-shard status of a connector",
        [&ctx](Request& q) { return Status(ctx, q, false); });
  g.Get("/pipelines/{pipeline_id}/status", "A pipeline's displayed state and its workers",
        [&ctx](Request& q) { return Status(ctx, q, true); });
}

}  // namespace sluice::api
