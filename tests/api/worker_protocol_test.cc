// The HTTP worker protocol over a real server and PostgreSQL: a pod's token
// opens the worker endpoints and nothing else, reports go through the same
// row-locked rules as local ones (409 when refused), the launch config is
// the one place decrypted credentials leave the back end, and bad bodies are
// 422 with every problem listed. A real worker process speaking it end to
// end is in tests/orchestrator.
#include <pqxx/pqxx>

#include <chrono>
#include <thread>

#include "api/api_harness.h"
#include "api/authenticate.h"
#include "runtime/worker_repository.h"

namespace sluice::testing {
namespace {

using namespace std::chrono_literals;

class WorkerProtocol : public ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    source_ = NewConnector(team_id_, "src", "postgresql-source");
    auto d = Post("/api/v1/connectors/" + source_ + "/datamodels",
                  {{"name", "orders"}, {"source_schema", "public"}, {"source_table", "orders"}});
    ASSERT_EQ(d.status, 201) << d.body.dump();
    worker_ = db().Transact([&](pqxx::work& tx) {
      auto w = runtime::WorkerRepository::EnsureShards(tx, *common::Uuid::Parse(source_), 1)[0];
      w.Start(common::Clock::now(), std::nullopt);
      runtime::WorkerRepository::Update(tx, w);
      return w;
    });
    token_ = TokenFor(worker_.launch_generation);
  }
  std::string TokenFor(const common::Uuid& generation) {
    return api::IssueWorkerToken(server().context().signer, worker_.id, worker_.connector_id,
                                 generation, 1h);
  }
  HttpResult Pod(const std::string& method, const std::string& path, const Json& body = nullptr,
                 const std::string& token = "") {
    return Call(method, "/api/v1/worker" + path, body, token.empty() ? token_ : token);
  }
  std::string State() {
    return db().Transact([&](pqxx::work& tx) {
      return std::string(runtime::ToString(runtime::WorkerRepository::Find(tx, worker_.id)->state));
    });
  }
  std::string source_;
  runtime::Worker worker_;
  std::string token_;
};

TEST_F(WorkerProtocol, WorkerTokenOpensOnlyTheWorkerEndpoints) {
  EXPECT_EQ(Pod("POST", "/heartbeat", Json::object()).status, 204);
  auto user_endpoint = Call("GET", "/api/v1/connectors/" + source_, nullptr, token_);
  EXPECT_EQ(user_endpoint.status, 401);
  EXPECT_NE(user_endpoint.body["error"]["message"].get<std::string>().find("worker token"),
            std::string::npos);
  // And a user's token cannot pose as a pod.
  EXPECT_EQ(Pod("POST", "/heartbeat", Json::object(), root_token_).status, 401);
  EXPECT_EQ(Pod("POST", "/heartbeat", Json::object(), "slu1.forged.token").status, 401);
}

TEST_F(WorkerProtocol, ReportsFollowTheWorkerRulesUnderTheRowLock) {
  EXPECT_EQ(Pod("POST", "/state", {{"state", "LIVE"}}).status, 204);
  EXPECT_EQ(State(), "LIVE");
  // A replaced pod (older generation) is refused, not believed.
  auto stale =
      Pod("POST", "/state", {{"state", "ERROR"}, {"reason", "late"}}, TokenFor(common::Uuid::V4()));
  EXPECT_EQ(stale.status, 409) << stale.body.dump();
  EXPECT_EQ(State(), "LIVE");
  // A pod may not report an intent: that is the back end's to write.
  EXPECT_EQ(Pod("POST", "/state", {{"state", "STOPPING"}}).status, 422);
  EXPECT_EQ(Pod("POST", "/state", {{"state", "NAPPING"}}).status, 422);
  EXPECT_EQ(Pod("POST", "/state", {{"state", "ERROR"}, {"reason", "disk full"}}).status, 204);
  auto row = db().Transact(
      [&](pqxx::work& tx) { return *runtime::WorkerRepository::Find(tx, worker_.id); });
  EXPECT_EQ(row.reason, "disk full");
  // The failure is also a resource event, in the worker's words.
  pqxx::connection c(url());
  auto event = pqxx::work(c).exec1(
      "SELECT count(*), max(reason) FROM resource_event WHERE code = 'worker.error'");
  EXPECT_EQ(event[0].as<int>(), 1);
  EXPECT_EQ(std::string(event[1].c_str()), "disk full");
}

// A pod's events carry the name it gives (the Sluice-Pod header) and its
// launch's integer number; a replaced pod's late report keeps its own
// number, so it is recognisable beside the current launch's.
TEST_F(WorkerProtocol, PodEventsCarryThePodNameAndTheLaunchNumber) {
  auto event = [&](const std::string& code) {
    pqxx::connection c(url());
    return pqxx::work(c).exec_params1(
        "SELECT coalesce(pod, '<null>'), coalesce(generation, 0) FROM resource_event "
        "WHERE code = $1",
        code);
  };
  const std::string old_token = token_;
  ASSERT_EQ(Call("POST", "/api/v1/worker/state", {{"state", "ERROR"}, {"reason", "disk full"}},
                 token_, {{"Sluice-Pod", "sluice-worker-1a2b-0-abc12"}})
                .status,
            204);
  auto first = event("worker.error");
  EXPECT_EQ(std::string(first[0].c_str()), "sluice-worker-1a2b-0-abc12");
  EXPECT_EQ(first[1].as<int>(), 1);

  // The back end relaunches the shard: the next number, under a new token.
  worker_ = db().Transact([&](pqxx::work& tx) {
    auto w = *runtime::WorkerRepository::FindForUpdate(tx, worker_.id);
    w.Start(common::Clock::now(), std::nullopt);
    runtime::WorkerRepository::Update(tx, w);
    return w;
  });
  token_ = TokenFor(worker_.launch_generation);
  ASSERT_EQ(Call("POST", "/api/v1/worker/state", {{"state", "ERROR"}, {"reason", "disk full"}},
                 token_, {{"Sluice-Pod", "sluice-worker-1a2b-0-def34"}})
                .status,
            204);
  auto second = event("worker.error");
  EXPECT_EQ(std::string(second[0].c_str()), "sluice-worker-1a2b-0-def34");
  EXPECT_EQ(second[1].as<int>(), 2);

  // The replaced pod still reports its slot lost: the event says launch 1.
  ASSERT_EQ(Call("POST", "/api/v1/worker/slot",
                 {{"slot", "sluice_src"}, {"lag_bytes", 0}, {"lost_reason", "slot gone"}},
                 old_token, {{"Sluice-Pod", "sluice-worker-1a2b-0-abc12"}})
                .status,
            204);
  auto late = event("source.slot_lost");
  EXPECT_EQ(std::string(late[0].c_str()), "sluice-worker-1a2b-0-abc12");
  EXPECT_EQ(late[1].as<int>(), 1);

  // A source without a slot starting over from a new snapshot says so too.
  ASSERT_EQ(
      Call("POST", "/api/v1/worker/slot",
           {{"slot", "binlog"}, {"lag_bytes", 0}, {"resnapshot_reason", "a partial row image"}},
           token_, {{"Sluice-Pod", "sluice-worker-1a2b-0-def34"}})
          .status,
      204);
  pqxx::connection c(url());
  auto resnapshot = pqxx::work(c).exec1(
      "SELECT level, reason, message FROM resource_event WHERE code = 'source.resnapshot'");
  EXPECT_STREQ(resnapshot[0].c_str(), "warn");
  EXPECT_STREQ(resnapshot[1].c_str(), "a partial row image");
  EXPECT_NE(std::string(resnapshot[2].c_str()).find("truncated in the targets"), std::string::npos);
}

TEST_F(WorkerProtocol, LaunchIsDecryptedOnlyHere) {
  auto launch = Pod("GET", "/launch");
  ASSERT_EQ(launch.status, 200) << launch.body.dump();
  EXPECT_EQ(launch.body["worker_id"], worker_.id.ToString());
  EXPECT_NE(launch.body["source"]["url"].get<std::string>().find("s3cret-pw"), std::string::npos);
  EXPECT_EQ(Get("/api/v1/connectors/" + source_).body.dump().find("s3cret-pw"), std::string::npos);
  // A replaced generation gets nothing.
  EXPECT_EQ(Pod("GET", "/launch", nullptr, TokenFor(common::Uuid::V4())).status, 409);
}

TEST_F(WorkerProtocol, MetricsAreValidatedAndIngested) {
  auto now = common::NowEpochMillis();
  Json good = {{"intervals",
                {{{"topic", "sluice.public.orders"},
                  {"from_ts", now - 5000},
                  {"to_ts", now},
                  {"counts", {{"total", 3}, {"r", 0}, {"c", 2}, {"u", 1}, {"d", 0}}}}}}};
  EXPECT_EQ(Pod("POST", "/metrics/production", good).status, 204);
  pqxx::connection c(url());
  EXPECT_EQ(pqxx::work(c).exec1("SELECT count(*) FROM production_metric")[0].as<int>(), 1);
  auto bad = Pod("POST", "/metrics/production",
                 {{"intervals", {{{"topic", 7}, {"from_ts", "x"}, {"counts", Json::object()}}}}});
  EXPECT_EQ(bad.status, 422);
  auto message = bad.body["error"]["message"].get<std::string>();
  EXPECT_NE(message.find("intervals[0].topic"), std::string::npos) << message;
  EXPECT_NE(message.find("intervals[0].to_ts"), std::string::npos) << message;
  // A subscription the pod's connector does not deliver is not its to report.
  auto foreign = Pod("POST", "/metrics/consumption",
                     {{"subscription_id", common::Uuid::V4().ToString()},
                      {"counters",
                       {{"from_ms", now - 1000},
                        {"to_ms", now},
                        {"consumed", 1},
                        {"delivered", 1},
                        {"skipped", 0},
                        {"errored", 0}}}});
  EXPECT_EQ(foreign.status, 404);
}

// A datamodel's unreadable records: a warn event on the pod's own datamodel;
// another connector's datamodel is not the pod's to report on (422, no
// event), and a bad body lists every problem.
TEST_F(WorkerProtocol, SkippedRecordsAreAWarnEventOnlyOnThePodsOwnDatamodel) {
  pqxx::connection c(url());
  const std::string own_dm =
      pqxx::nontransaction(c)
          .exec_params1("SELECT id::text FROM datamodel WHERE source_connector_id = $1", source_)[0]
          .as<std::string>();
  auto other = NewConnector(team_id_, "other", "postgresql-source");
  auto d = Post("/api/v1/connectors/" + other + "/datamodels",
                {{"name", "theirs"}, {"source_schema", "public"}, {"source_table", "t"}});
  ASSERT_EQ(d.status, 201) << d.body.dump();
  auto tally = [](const std::string& dm, std::int64_t count) {
    return Json{{"skipped",
                 {{{"datamodel_id", dm},
                   {"topic", "sluice.public.orders"},
                   {"reason", "message value is not a JSON object"},
                   {"count", count},
                   {"partition", 0},
                   {"offset", 9223372036854775807LL}}}}};
  };
  auto events = [&] {
    return pqxx::nontransaction(c)
        .exec1("SELECT count(*) FROM resource_event WHERE code = 'datamodel.record_skipped'")[0]
        .as<int>();
  };
  auto foreign = Pod("POST", "/skipped_records", tally(d.body["id"].get<std::string>(), 3));
  EXPECT_EQ(foreign.status, 422) << foreign.body.dump();
  EXPECT_EQ(events(), 0);
  auto bad = Pod("POST", "/skipped_records",
                 {{"skipped", {{{"datamodel_id", 7}, {"count", 0}, {"partition", -1}}}}});
  EXPECT_EQ(bad.status, 422);
  auto message = bad.body["error"]["message"].get<std::string>();
  for (const char* field : {"skipped[0].datamodel_id", "skipped[0].topic", "skipped[0].reason",
                            "skipped[0].count", "skipped[0].partition", "skipped[0].offset"})
    EXPECT_NE(message.find(field), std::string::npos) << field << " in " << message;
  EXPECT_EQ(events(), 0);
  ASSERT_EQ(Pod("POST", "/skipped_records", tally(own_dm, 3)).status, 204);
  auto row = pqxx::nontransaction(c).exec1(
      "SELECT level::text, datamodel_id::text, reason, (details->>'skipped')::int, "
      "details->>'offset' FROM resource_event WHERE code = 'datamodel.record_skipped'");
  EXPECT_EQ(row[0].as<std::string>(), "warn");
  EXPECT_EQ(row[1].as<std::string>(), own_dm);
  EXPECT_EQ(row[2].as<std::string>(), "message value is not a JSON object");
  EXPECT_EQ(row[3].as<int>(), 3);
  EXPECT_EQ(row[4].as<std::string>(), "9223372036854775807");
}

TEST_F(WorkerProtocol, AHeartbeatStampsItsRowAndAReplacedGenerationsIsRefused) {
  auto stamp = [&] {
    return db().Transact([&](pqxx::work& tx) {
      auto r =
          tx.exec_params("SELECT coalesce(last_heartbeat_at::text, '') FROM worker WHERE id = $1",
                         worker_.id.ToString());
      return std::string(r[0][0].c_str());
    });
  };
  EXPECT_EQ(Pod("POST", "/heartbeat", Json::object()).status, 204);
  auto first = stamp();
  EXPECT_FALSE(first.empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(Pod("POST", "/heartbeat", Json::object()).status, 204);
  auto second = stamp();
  EXPECT_GT(second, first);
  // The quick path's WHERE misses an older generation; the locked path words it.
  auto stale = Pod("POST", "/heartbeat", Json::object(), TokenFor(common::Uuid::V4()));
  EXPECT_EQ(stale.status, 409) << stale.body.dump();
  EXPECT_EQ(stamp(), second);
}

TEST_F(WorkerProtocol, DeletingTheConnectorRevokesItsTokens) {
  EXPECT_EQ(Delete("/api/v1/connectors/" + source_).status, 204);
  EXPECT_EQ(Pod("POST", "/heartbeat", Json::object()).status, 401);
}

}  // namespace
}  // namespace sluice::testing
