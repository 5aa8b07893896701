// Three real `sluice serve` processes over one data-plane database and one
// real `sluice broker`, running a PostgreSQL -> PostgreSQL pipeline, a
// backfill and a task scheduled every minute. Ten times, one serve is
// SIGKILLed (every other round the leader: the one whose children the
// workers are) and started again. Throughout, each shard has at most one
// worker process and each backfill item at most one loader; a stalled run's
// stalled_since never moves; at the end each task slot ran once, each
// outbox occurrence is on the env's events topic once, and the targets
// equal the sources.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <pqxx/pqxx>
#include <random>
#include <set>
#include <thread>

#include "backfill/trigger.h"
#include "broker/broker_harness.h"
#include "common/uuid.h"
#include "connectors/topic_naming.h"
#include "events/event_store.h"
#include "events/events_topic.h"
#include "license/license_repository.h"
#include "runtime/worker_repository.h"
#include "store/database.h"
#include "support/test_database.h"

namespace sluice::orchestrator {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

constexpr int kServes = 3;
constexpr int kRounds = 10;

std::string RandomHex(int bytes) {
  std::random_device rd;
  std::string out;
  const char* digits = "0123456789abcdef";
  for (int i = 0; i < bytes * 2; ++i) out += digits[rd() % 16];
  return out;
}

// A /proc file, read with read(2): a process gone meanwhile reads empty
// (a filebuf throws on the ESRCH instead).
std::string ProcFile(const std::string& path) {
  std::string out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

// argv of a live process (empty for a zombie or a process gone meanwhile).
std::vector<std::string> Cmdline(const std::string& pid) {
  std::string all = ProcFile("/proc/" + pid + "/cmdline");
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < all.size()) {
    auto end = all.find('\0', at);
    if (end == std::string::npos) end = all.size();
    out.push_back(all.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

pid_t ParentOf(const std::string& pid) {
  std::string stat = ProcFile("/proc/" + pid + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  char state = 0;
  int ppid = -1;
  if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2 || state == 'Z')
    return -1;
  return ppid;
}

class SeveralBackends : public ::testing::Test {
 protected:
  void SetUp() override {
    broker_.Start();
    db_ = std::make_unique<store::Database>(plane_.url(), 4);
    dir_ = fs::temp_directory_path() / ("sluice-several-" + common::Uuid::V4().ToString());
    fs::create_directories(dir_);
    secret_key_ = RandomHex(32);
    config_key_ = RandomHex(32);
    Source(
        "CREATE TABLE items (id int PRIMARY KEY, label text); "
        "INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 200) g; "
        "CREATE TABLE bulk (id bigint PRIMARY KEY, label text NOT NULL); "
        "INSERT INTO bulk SELECT g, 'row ' || g FROM generate_series(1, 100000) g");
    {
      pqxx::connection c(work_.url());
      pqxx::nontransaction(c).exec("CREATE TABLE hits (at timestamptz NOT NULL DEFAULT now())");
    }
    source_id_ = common::Uuid::V4();
    target_id_ = common::Uuid::V4();
    env_ = common::Uuid::V4();
    team_ = common::Uuid::V4();
    task_ = common::Uuid::V4();
    common::Uuid bulk_sub = common::Uuid::V4();
    db_->Transact([&](pqxx::work& tx) {
      tx.exec_params("INSERT INTO env (id, name, retention_configuration) VALUES ($1, 'e', $2)",
                     env_.ToString(), json{{"bootstrap_servers", broker_.bootstrap()}}.dump());
      tx.exec_params("INSERT INTO team (id, name, env_id) VALUES ($1, 't', $2)", team_.ToString(),
                     env_.ToString());
      auto connector = [&](const common::Uuid& id, const char* name, const char* way,
                           const std::string& url) {
        tx.exec_params(
            "INSERT INTO connector (id, name, connector_type, json_configuration, way, "
            "team_id, env_id) VALUES ($1, $2, 'postgresql', $3, $4, $5, $6)",
            id.ToString(), name, json{{"url", url}}.dump(), way, team_.ToString(), env_.ToString());
      };
      connector(source_id_, "src", "source", source_.url());
      connector(target_id_, "dst", "target", target_.url());
      auto pair = [&](const std::string& table, const common::Uuid& sub) {
        auto dm = common::Uuid::V4().ToString();
        tx.exec_params(
            "INSERT INTO datamodel (id, name, config, source_connector_id, source_topic, "
            "source_schema, source_table) VALUES ($1, $2, '{}', $3, $4, 'public', $2)",
            dm, table, source_id_.ToString(),
            connectors::TopicForTable("sluice", {"public", table}));
        tx.exec_params(
            "INSERT INTO subscription (id, name, config, transform_config, datamodel_id, "
            "target_connector_id, error_table_enabled, target_table_name, "
            "requires_unique_destination) VALUES ($1, $2, '{}', '{}', $3, $4, false, $5, true)",
            sub.ToString(), table + "-sub", dm, target_id_.ToString(), table + "_copy");
      };
      pair("items", common::Uuid::V4());
      pair("bulk", bulk_sub);
      license::LicenseRepository::Store(tx, {true, std::nullopt, common::Clock::now()});
      // A task every minute on a warehouse (a database of the test cluster),
      // due now.
      auto warehouse = common::Uuid::V4().ToString();
      json config = {{"host", "127.0.0.1"},
                     {"port", testing::ClusterPort()},
                     {"database", work_.name()},
                     {"user", "postgres"},
                     {"password", testing::ClusterPassword()},
                     {"sslmode", "disable"}};
      tx.exec_params(
          "INSERT INTO warehouse (id, name, warehouse_type, json_configuration, team_id, env_id, "
          "created_at, updated_at) VALUES ($1, 'wh', 'postgresql', $2::json, $3, $4, "
          "now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC')",
          warehouse, config.dump(), team_.ToString(), env_.ToString());
      tx.exec_params(
          "INSERT INTO task (id, name, team_id, env_id, warehouse_id, sql, sql_version, schedule, "
          "enabled, next_run_at, created_at, updated_at) VALUES ($1, 'every-minute', $2, $3, $4, "
          "'INSERT INTO hits DEFAULT VALUES', 1, '{\"every\": 1, \"unit\": \"minutes\"}', true, "
          "(now() AT TIME ZONE 'UTC') - interval '1 second', now() AT TIME ZONE 'UTC', "
          "now() AT TIME ZONE 'UTC')",
          task_.ToString(), team_.ToString(), env_.ToString(), warehouse);
      // The pipeline's workers are wanted running.
      for (const auto& id : {source_id_, target_id_})
        for (auto& w : runtime::WorkerRepository::EnsureShards(tx, id, 1)) {
          w.Start(common::Clock::now(), std::nullopt);
          runtime::WorkerRepository::Update(tx, w);
        }
      // The backfill of `bulk`.
      backfill::TriggerRequest q;
      q.origin = backfill::Origin::kBulk;
      q.subscription_ids = {bulk_sub};
      q.email = "tester@sluice.local";
      auto pairs = backfill::ResolvePairs(tx, q);
      ASSERT_TRUE(pairs.ok()) << pairs.status().message();
      auto runs = backfill::CreateRuns(tx, q, *pairs);
      ASSERT_TRUE(runs.ok()) << runs.status().message();
      ASSERT_EQ(runs->size(), 1u);
      backfill_run_ = (*runs)[0].run.id;
    });
  }

  void TearDown() override {
    stop_sampling_ = true;
    if (sampler_.joinable()) sampler_.join();
    for (auto& pid : serves_)
      if (pid > 0) {
        kill(pid, SIGTERM);
        waitpid(pid, nullptr, 0);
        pid = -1;
      }
    try {
      Source(
          "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE NOT active "
          // Slots are cluster-wide: another test's slot between its creation
          // and its stream is inactive too.
          "AND database = current_database()");
    } catch (...) {
    }
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void Source(const std::string& sql) {
    pqxx::connection c(source_.url());
    pqxx::nontransaction(c).exec(sql);
  }
  std::string Query(const std::string& url, const std::string& sql) {
    try {
      pqxx::connection c(url);
      auto r = pqxx::nontransaction(c).exec(sql);
      return r.empty() || r[0][0].is_null() ? "" : r[0][0].c_str();
    } catch (const std::exception& e) {
      return std::string("error: ") + e.what();
    }
  }
  std::string Digest(const std::string& url, const std::string& table) {
    return Query(url,
                 "SELECT count(*)::text || ':' || coalesce(md5(string_agg(id::text || '/' || "
                 "label, '|' ORDER BY id)), '') FROM " +
                     table);
  }

  void StartServe(int i) {
    auto data_dir = (dir_ / ("serve-" + std::to_string(i))).string();
    auto log = (dir_ / ("serve-" + std::to_string(i) + ".log")).string();
    std::vector<std::string> argv = {
        std::getenv("SLUICE_BIN"), "serve",       "--listen",   "127.0.0.1:0",
        "--registry-listen",       "127.0.0.1:0", "--data-dir", data_dir};
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      // One database and the same keys: what several replicas share.
      setenv("SLUICE_DATABASE_URL", plane_.url().c_str(), 1);
      setenv("SLUICE_SECRET_KEY", secret_key_.c_str(), 1);
      setenv("SLUICE_CONFIG_KEY", config_key_.c_str(), 1);
      if (!freopen(log.c_str(), "a", stdout) || !freopen(log.c_str(), "a", stderr)) _exit(126);
      execv(cargv[0], cargv.data());
      _exit(127);
    }
    ASSERT_GT(pid, 0);
    serves_[i] = pid;
  }
  void KillServe(int i) {
    kill(serves_[i], SIGKILL);
    waitpid(serves_[i], nullptr, 0);
    serves_[i] = -1;
  }
  // The serve whose children the workers are, or -1.
  int Leader() {
    for (const auto& e : fs::directory_iterator("/proc")) {
      auto pid = e.path().filename().string();
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      auto argv = Cmdline(pid);
      if (argv.size() < 2 || argv[1] != "worker") continue;
      pid_t parent = ParentOf(pid);
      for (int i = 0; i < kServes; ++i)
        if (serves_[i] == parent) return i;
    }
    return -1;
  }

  // Every 100 ms: worker processes per shard and loaders per item (by their
  // launch file, named after the worker row or item), and stalled_since.
  void Sample() {
    pqxx::connection c(plane_.url());
    std::map<std::string, std::string> stalled;
    while (!stop_sampling_) {
      std::map<std::string, int> workers, loaders;
      for (const auto& e : fs::directory_iterator("/proc")) {
        auto pid = e.path().filename().string();
        if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
        auto argv = Cmdline(pid);
        if (argv.size() < 4 || argv[2] != "--config" || ParentOf(pid) < 0) continue;
        if (argv[3].find(dir_.string()) != 0) continue;  // another test's
        auto stem = fs::path(argv[3]).stem().string();
        if (argv[1] == "worker") ++workers[stem];
        if (argv[1] == "loader" &&
            std::find(argv.begin(), argv.end(), "--check-only") == argv.end())
          ++loaders[stem];
      }
      {
        std::lock_guard lock(mu_);
        for (const auto& [id, n] : workers) {
          most_workers_per_shard_ = std::max(most_workers_per_shard_, n);
          shards_seen_.insert(id);
        }
        for (const auto& [id, n] : loaders)
          most_loaders_per_item_ = std::max(most_loaders_per_item_, n);
      }
      try {
        for (const auto& r : pqxx::nontransaction(c).exec(
                 "SELECT id::text, stalled_since::text FROM backfill_run WHERE stalled_since IS "
                 "NOT NULL")) {
          auto [it, fresh] = stalled.emplace(r[0].c_str(), r[1].c_str());
          if (!fresh && it->second != r[1].c_str()) {
            std::lock_guard lock(mu_);
            stall_moves_.push_back(it->second + " -> " + r[1].c_str());
          }
        }
      } catch (...) {
      }
      std::this_thread::sleep_for(100ms);
    }
  }

  std::string Logs() {
    std::string out = "worker rows:\n";
    try {
      pqxx::connection c(plane_.url());
      for (const auto& r : pqxx::nontransaction(c).exec(
               "SELECT id::text || ' ' || state || ' ' || launch_generation::text || ' ' || "
               "coalesce(reason, '') || ' hb ' || coalesce(last_heartbeat_at::text, '-') FROM "
               "worker"))
        out += std::string(r[0].c_str()) + "\n";
    } catch (const std::exception& e) {
      out += e.what();
    }
    for (int i = 0; i < kServes; ++i) {
      std::ifstream in(dir_ / ("serve-" + std::to_string(i) + ".log"));
      std::string all((std::istreambuf_iterator<char>(in)), {});
      out += "--- serve " + std::to_string(i) + "\n" +
             all.substr(all.size() > 3000 ? all.size() - 3000 : 0);
    }
    return out;
  }

  testing::BrokerProcess broker_;
  testing::TestDatabase plane_, source_, target_, work_;
  std::unique_ptr<store::Database> db_;
  fs::path dir_;
  std::string secret_key_, config_key_;
  common::Uuid source_id_, target_id_, env_, team_, task_, backfill_run_;
  pid_t serves_[kServes] = {-1, -1, -1};
  std::thread sampler_;
  std::atomic<bool> stop_sampling_{false};
  std::mutex mu_;
  int most_workers_per_shard_ = 0;
  int most_loaders_per_item_ = 0;
  std::set<std::string> shards_seen_;
  std::vector<std::string> stall_moves_;
};

TEST_F(SeveralBackends, KillingAnyServeTenTimesNeverDoublesAWorkerATaskSlotOrAnEvent) {
  for (int i = 0; i < kServes; ++i) StartServe(i);
  sampler_ = std::thread([this] { Sample(); });
  std::mt19937 rng(std::random_device{}());
  int next_id = 1000;
  int leader_kills = 0;
  for (int round = 0; round < kRounds; ++round) {
    // Changes to stream, and an event for the outbox, each round.
    Source("INSERT INTO items SELECT g, 'round " + std::to_string(round) +
           "' FROM generate_series(" + std::to_string(next_id) + ", " +
           std::to_string(next_id + 19) + ") g");
    next_id += 20;
    events::ResourceEvent e;
    e.ts = common::Clock::now();
    e.level = events::Level::kWarn;
    e.type = events::Type::kConnector;
    e.code = "test.round_" + std::to_string(round);
    e.summary = "Round " + std::to_string(round);
    e.resource = {env_, team_, source_id_, "src", {}, {}, {}, {}};
    ASSERT_TRUE(events::EventStore(*db_).Record(e).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(4000 + rng() % 3000));
    int victim = round % 2 == 0 ? Leader() : -1;
    if (victim >= 0) ++leader_kills;
    if (victim < 0) victim = static_cast<int>(rng() % kServes);
    KillServe(victim);
    std::this_thread::sleep_for(std::chrono::milliseconds(500 + rng() % 1500));
    StartServe(victim);
  }

  // The survivors finish the work.
  auto source_items = Digest(source_.url(), "items");
  auto source_bulk = Digest(source_.url(), "bulk");
  auto deadline = std::chrono::steady_clock::now() + 90s;
  while (std::chrono::steady_clock::now() < deadline &&
         (Digest(target_.url(), "items_copy") != source_items ||
          Digest(target_.url(), "bulk_copy") != source_bulk ||
          Query(plane_.url(), "SELECT status FROM backfill_run WHERE id = '" +
                                  backfill_run_.ToString() + "'") != "done"))
    std::this_thread::sleep_for(500ms);
  EXPECT_EQ(Digest(target_.url(), "items_copy"), source_items) << Logs();
  EXPECT_EQ(Digest(target_.url(), "bulk_copy"), source_bulk) << Logs();
  EXPECT_EQ(Query(plane_.url(),
                  "SELECT status FROM backfill_run WHERE id = '" + backfill_run_.ToString() + "'"),
            "done");

  // Every occurrence of the env is on its topic once.
  auto topic = events::EnvEventsTopic(env_);
  std::set<std::string> expected;
  {
    pqxx::connection c(plane_.url());
    for (const auto& r : pqxx::nontransaction(c).exec_params(
             "SELECT o.id::text FROM resource_event_occurrence o JOIN resource_event e ON e.id = "
             "o.event_id WHERE e.env_id = $1",
             env_.ToString()))
      expected.insert(r[0].c_str());
  }
  std::map<std::string, int> published;
  deadline = std::chrono::steady_clock::now() + 60s;
  for (;;) {
    auto r = testing::RunShell("timeout 20 kcat -C -b " + broker_.bootstrap() + " -t " + topic +
                               " -o beginning -e -q -f '%s\\n' 2>/dev/null");
    published.clear();
    std::size_t at = 0;
    while (at < r.out.size()) {
      auto nl = r.out.find('\n', at);
      if (nl == std::string::npos) nl = r.out.size();
      auto v = json::parse(r.out.substr(at, nl - at), nullptr, false);
      if (v.is_object() && v.contains("id")) ++published[v["id"].get<std::string>()];
      at = nl + 1;
    }
    bool all = true;
    for (const auto& id : expected) all = all && published.count(id);
    if (all || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(1s);
  }
  stop_sampling_ = true;
  sampler_.join();
  int missing = 0, doubled = 0;
  for (const auto& id : expected) missing += published.count(id) ? 0 : 1;
  for (const auto& [id, n] : published) doubled += n > 1 ? 1 : 0;
  EXPECT_GE(expected.size(), static_cast<std::size_t>(kRounds));
  EXPECT_EQ(missing, 0) << "of " << expected.size() << " occurrences";
  EXPECT_EQ(doubled, 0) << "occurrences published more than once";

  // Each task slot (minute) ran once, and each run executed once.
  std::int64_t runs = 0, slots = 0, most_per_slot = 0;
  {
    pqxx::connection c(plane_.url());
    for (const auto& r : pqxx::nontransaction(c).exec_params(
             "SELECT count(*) FROM warehouse_script_run WHERE task_id = $1 AND trigger = "
             "'schedule' GROUP BY date_trunc('minute', created_at)",
             task_.ToString())) {
      ++slots;
      runs += r[0].as<std::int64_t>();
      most_per_slot = std::max(most_per_slot, r[0].as<std::int64_t>());
    }
  }
  EXPECT_GE(slots, 1);
  EXPECT_EQ(most_per_slot, 1) << runs << " runs in " << slots << " slots";
  EXPECT_EQ(std::stoll(Query(work_.url(), "SELECT count(*) FROM hits")), runs);

  std::lock_guard lock(mu_);
  EXPECT_EQ(shards_seen_.size(), 2u) << "the source's and the target's shard ran";
  EXPECT_EQ(most_workers_per_shard_, 1) << "two worker processes of one shard at once";
  EXPECT_LE(most_loaders_per_item_, 1) << "two loaders of one item at once";
  EXPECT_TRUE(stall_moves_.empty()) << stall_moves_.front();
  EXPECT_GE(leader_kills, kRounds / 2 - 1) << "the leader was among the killed";
  std::printf(
      "several_backends: %d rounds, %d leader kills, %lld task runs in %lld slots, %zu "
      "occurrences\n",
      kRounds, leader_kills, static_cast<long long>(runs), static_cast<long long>(slots),
      expected.size());
}

}  // namespace
}  // namespace sluice::orchestrator
