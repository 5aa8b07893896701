// Load on the real API over real HTTP and PostgreSQL, bounded in time and
// count: 200 concurrent clients on a list endpoint and the worker heartbeat
// endpoint; 100 workers reporting at once through the row-locked path; and
// a 1000-restart crash loop folding into one event row. Latency figures are
// printed and recorded for the summary; what is asserted is correctness
// (no error, no deadlock, exact counts), never a speed.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <pqxx/pqxx>
#include <thread>

#include "api/api_harness.h"
#include "api/authenticate.h"
#include "events/event_store.h"
#include "reliability/record.h"
#include "runtime/worker_repository.h"

namespace sluice::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class Load : public ApiTest {
 protected:
  // n started workers of one source connector, each with its pod token.
  std::vector<std::pair<runtime::Worker, std::string>> Workers(int n) {
    auto connector = *common::Uuid::Parse(NewConnector(team_id_, "load-src", "postgresql-source"));
    auto rows = db().Transact([&](pqxx::work& tx) {
      auto ws = runtime::WorkerRepository::EnsureShards(tx, connector, n);
      for (auto& w : ws) {
        w.Start(common::Clock::now(), std::nullopt);
        runtime::WorkerRepository::Update(tx, w);
      }
      return ws;
    });
    std::vector<std::pair<runtime::Worker, std::string>> out;
    for (const auto& w : rows)
      out.emplace_back(w, api::IssueWorkerToken(server().context().signer, w.id, w.connector_id,
                                                w.launch_generation, 1h));
    return out;
  }
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * v.size()))];
}

TEST_F(Load, TwoHundredConcurrentClientsAreAllAnswered) {
  auto workers = Workers(4);
  const int kClients = 200;
  const auto kFor = 5s;
  std::vector<std::vector<double>> latencies(kClients);
  std::atomic<long> errors{0};
  std::vector<std::string> first_error(kClients);
  std::vector<std::thread> clients;
  auto until = Clock::now() + kFor;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      httplib::Client cli("127.0.0.1", server().port());
      cli.set_connection_timeout(30s);
      cli.set_read_timeout(30s);
      // Half list connectors as a user, half heartbeat as a pod.
      bool pod = i % 2 == 1;
      const auto& token = pod ? workers[i % workers.size()].second : root_token_;
      httplib::Headers headers = {{"Authorization", "Bearer " + token}};
      std::string list = "/api/v1/teams/" + team_id_ + "/connectors";
      while (Clock::now() < until) {
        auto start = Clock::now();
        auto res = pod ? cli.Post("/api/v1/worker/heartbeat", headers, "{}", "application/json")
                       : cli.Get(list.c_str(), headers);
        latencies[i].push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        int want = pod ? 204 : 200;
        if (!res || res->status != want) {
          if (errors++ == 0 || first_error[i].empty())
            first_error[i] = res ? std::to_string(res->status) + " " + res->body
                                 : httplib::to_string(res.error());
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  double p50 = Percentile(all, 0.50), p99 = Percentile(all, 0.99);
  std::printf("load: %d clients, %zu requests in %llds, p50 %.1f ms, p99 %.1f ms, %ld errors\n",
              kClients, all.size(), static_cast<long long>(kFor.count()), p50, p99, errors.load());
  RecordReliability("load", {{"clients", kClients},
                             {"requests", static_cast<double>(all.size())},
                             {"errors", static_cast<double>(errors.load())},
                             {"max_p99_ms", p99}});
  std::string example;
  for (const auto& e : first_error)
    if (!e.empty()) example = e;
  EXPECT_EQ(errors.load(), 0) << "e.g. " << example;
  // Every client got through at least once: nobody starved for 5 s.
  for (int i = 0; i < kClients; ++i) EXPECT_FALSE(latencies[i].empty()) << "client " << i;
}

TEST_F(Load, HundredWorkersReportingAtOnceNeitherDeadlockNorLoseAReport) {
  auto workers = Workers(100);
  std::atomic<long> failures{0}, reports{0};
  std::mutex example_mu;
  std::string example;
  std::vector<std::thread> pods;
  for (const auto& [w, token] : workers) {
    pods.emplace_back([&, token = token] {
      httplib::Client cli("127.0.0.1", server().port());
      cli.set_read_timeout(60s);
      httplib::Headers headers = {{"Authorization", "Bearer " + token}};
      auto check = [&](const httplib::Result& res) {
        reports++;
        if (res && res->status == 204) return;
        if (failures++ == 0) {
          std::lock_guard lock(example_mu);
          example =
              res ? std::to_string(res->status) + " " + res->body : httplib::to_string(res.error());
        }
      };
      check(cli.Post("/api/v1/worker/state", headers, R"({"state":"LIVE"})", "application/json"));
      for (int beat = 0; beat < 10; ++beat)
        check(cli.Post("/api/v1/worker/heartbeat", headers, "{}", "application/json"));
    });
  }
  for (auto& t : pods) t.join();
  std::printf("heartbeats: 100 workers, %ld reports, %ld failed\n", reports.load(),
              failures.load());
  RecordReliability("load", {{"worker_reports", static_cast<double>(reports.load())},
                             {"worker_report_failures", static_cast<double>(failures.load())}});
  EXPECT_EQ(failures.load(), 0) << "e.g. " << example;
  pqxx::connection c(url());
  auto live = pqxx::work(c).exec1(
      "SELECT count(*) FROM worker WHERE state = 'LIVE' AND last_heartbeat_at IS NOT NULL")[0];
  EXPECT_EQ(live.as<int>(), 100);
}

TEST_F(Load, ACrashLoopOf1000RestartsIsOneEventRowCounting1000) {
  auto w = Workers(1)[0].first;
  auto ids = db().Transact([&](pqxx::work& tx) {
    auto r = tx.exec_params1("SELECT env_id, team_id FROM connector WHERE id = $1",
                             w.connector_id.ToString());
    return std::pair{*common::Uuid::Parse(r[0].c_str()), *common::Uuid::Parse(r[1].c_str())};
  });
  // The orchestrator's crash record, from 4 threads at once as exits race.
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 250; ++i) {
        events::ResourceEvent ev;
        ev.ts = common::Clock::now();
        ev.level = events::Level::kError;
        ev.type = events::Type::kConnector;
        ev.code = "worker.crashed";
        ev.summary = "Worker process crashed";
        // Differs only in numbers, which the fingerprint normalises away.
        ev.reason = "shard 0 exited with status " + std::to_string(100 + (t * 250 + i) % 7);
        ev.resource.env_id = ids.first;
        ev.resource.team_id = ids.second;
        ev.resource.connector_id = w.connector_id;
        ev.resource.connector_name = "load-src";
        ev.pod = "shard-0";
        try {
          db().Transact([&](pqxx::work& tx) {
            if (!events::EventStore::Record(tx, ev, {}).ok()) failed++;
          });
        } catch (const std::exception&) {
          failed++;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  pqxx::connection c(url());
  pqxx::work tx(c);
  auto rows = tx.exec1(
      "SELECT count(*), coalesce(sum(count), 0) FROM resource_event WHERE code = 'worker.crashed'");
  auto occurrences = tx.exec1(
      "SELECT count(*) FROM resource_event_occurrence o JOIN resource_event e "
      "ON e.id = o.event_id WHERE e.code = 'worker.crashed'")[0];
  std::printf("crash loop: 1000 restarts -> %d event row(s), count %d, %d occurrences\n",
              rows[0].as<int>(), rows[1].as<int>(), occurrences.as<int>());
  RecordReliability("load", {{"crash_loop_restarts", 1000}});
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(rows[0].as<int>(), 1);
  EXPECT_EQ(rows[1].as<int>(), 1000);
  EXPECT_EQ(occurrences.as<int>(), 1000);
}

}  // namespace
}  // namespace sluice::testing
