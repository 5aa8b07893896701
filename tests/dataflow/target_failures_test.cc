// Target failures with real processes: a `sluice worker` target consuming
// from `sluice broker`, reporting into a data-plane database, delivering to
// a webhook run by this test (cpp-httplib, in process) or to PostgreSQL.
// An outage (401, 503, permission denied) is retried until it passes and
// loses nothing; a refusal (422) bisects the batch so only the record at
// fault is parked, or stops the subscription at it when there is nowhere
// to park it.
#include <gtest/gtest.h>
#include <httplib.h>
#include <pwd.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <pqxx/pqxx>
#include <set>
#include <thread>

#include "broker/broker_harness.h"
#include "common/uuid.h"
#include "kafka/producer.h"
#include "runtime/process_supervisor.h"
#include "runtime/worker_repository.h"
#include "store/database.h"
#include "support/pipeline_checks.h"
#include "support/test_database.h"

namespace sluice::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Steady = std::chrono::steady_clock;

// One webhook request as the receiver saw it.
struct Request {
  Steady::time_point at;
  std::string idempotency_key;
  std::vector<int> ids;
  int status = 0;
};

class TargetFailures : public ::testing::Test {
 protected:
  void SetUp() override {
    broker_.Start();
    dir_ = std::filesystem::temp_directory_path() / ("sluice-tf-" + common::Uuid::V4().ToString());
    std::filesystem::create_directories(dir_);
    topic_ = "tf." + common::Uuid::V4().ToString().substr(0, 8);
    server_.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      auto body = json::parse(req.body, nullptr, false);
      Request seen{Steady::now(), req.get_header_value("Idempotency-Key"), {}, 0};
      if (body.is_object())
        for (const auto& c : body.value("changes", json::array()))
          seen.ids.push_back(c["key"].value("id", -1));
      std::function<int(const Request&, httplib::Response&)> answer;
      {
        std::lock_guard lock(mu_);
        answer = answer_;
      }
      seen.status = answer ? answer(seen, res) : 200;
      res.status = seen.status;
      std::lock_guard lock(mu_);
      requests_.push_back(seen);
      if (seen.status >= 200 && seen.status < 300)
        for (int id : seen.ids) delivered_.insert(id);
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(5ms);
  }
  void TearDown() override {
    supervisor_.reset();
    server_.stop();
    thread_.join();
    if (!role_.empty()) {
      try {
        pqxx::connection c(ClusterUrl("postgres"));
        pqxx::nontransaction tx(c);
        tx.exec("DROP OWNED BY " + role_ + " CASCADE");
      } catch (...) {
      }
      try {
        pqxx::connection c(ClusterUrl("postgres"));
        pqxx::nontransaction(c).exec("DROP ROLE IF EXISTS " + role_);
      } catch (...) {
      }
    }
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  // How the webhook answers each request (default 200).
  void Answer(std::function<int(const Request&, httplib::Response&)> answer) {
    std::lock_guard lock(mu_);
    answer_ = std::move(answer);
  }
  std::set<int> Delivered() {
    std::lock_guard lock(mu_);
    return delivered_;
  }
  std::vector<Request> Requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  std::string Hook() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }

  // Change events for ids [from, to] on the topic, as a source would write
  // them (one partition: the broker's default).
  void Produce(int from, int to) {
    auto config = kafka::ClientConfig::FromJson({{"bootstrap_servers", broker_.bootstrap()}});
    ASSERT_TRUE(config.ok());
    auto producer = kafka::Producer::Create(*config);
    ASSERT_TRUE(producer.ok()) << producer.status().message();
    for (int id = from; id <= to; ++id) {
      json key = {{"id", id}};
      json value = {{"op", "c"},
                    {"after", {{"id", id}, {"name", "n" + std::to_string(id)}}},
                    {"columns",
                     {{{"name", "id"}, {"type", "int4"}, {"key", true}},
                      {{"name", "name"}, {"type", "text"}, {"key", false}}}}};
      ASSERT_TRUE((*producer)->Send(topic_, key.dump(), value.dump(), id).ok());
    }
    auto flushed = (*producer)->Flush(30s);
    ASSERT_TRUE(flushed.ok()) << flushed.status().message();
    for (const auto& d : *flushed) ASSERT_TRUE(d.status.ok()) << d.status.message();
  }

  // A target connector's worker row in the data-plane database, so the
  // worker's reports (state, reason, events) land where the API reads them.
  void NewWorkerRow() {
    row_ = StartedWorkerRow(plane_db(), NewPlaneTeam(plane_db()), "tf-target", "http", "target");
  }
  store::Database& plane_db() {
    if (!db_) db_ = std::make_unique<store::Database>(plane_.url(), 2);
    return *db_;
  }

  // `sluice worker` (target) with `target` and one subscription (`extra`
  // merged into it), supervised as "target".
  void StartTarget(const json& target, const json& extra = json::object(),
                   const std::vector<std::string>& env = {}) {
    if (row_.id.is_nil()) NewWorkerRow();
    json sub = {{"id", subscription_},
                {"topic", topic_},
                {"consumer_group", "tf-" + topic_},
                {"target_table", "orders"}};
    sub.update(extra);
    json config = {{"worker_id", row_.id.ToString()},
                   {"connector_id", row_.connector_id.ToString()},
                   {"generation", row_.launch_generation.ToString()},
                   {"kind", "target"},
                   {"broker", {{"bootstrap_servers", broker_.bootstrap()}}},
                   {"report", {{"database_url", plane_.url()}}},
                   {"target", target},
                   {"subscriptions", {sub}}};
    auto path = (dir_ / "target.json").string();
    std::ofstream(path) << config.dump(2);
    if (!supervisor_)
      supervisor_ = std::make_unique<runtime::ProcessSupervisor>(
          runtime::SupervisorOptions{.initial_backoff = 200ms, .max_backoff = 2000ms});
    supervisor_->Ensure("target", {{std::getenv("SLUICE_BIN"), "worker", "--config", path},
                                   env,
                                   (dir_ / "target.log").string()});
  }
  json HttpTarget() { return {{"type", "http"}, {"url", Hook()}, {"timeout_ms", 5000}}; }

  runtime::Worker Row() {
    return plane_db().Transact(
        [&](pqxx::work& tx) { return *runtime::WorkerRepository::Find(tx, row_.id); });
  }
  // Waits up to 60 s for the worker row to be in error for a reason naming `words`.
  bool AwaitErrorNaming(const std::string& words) {
    return WaitUntil(
        [&] {
          auto row = Row();
          return row.state == runtime::WorkerState::kError && row.reason &&
                 row.reason->find(words) != std::string::npos;
        },
        60s);
  }
  // Occurrences of events `code` about this connector whose reason contains `words`.
  long Events(const std::string& code, const std::string& words = "") {
    return plane_db().Transact([&](pqxx::work& tx) {
      return tx
          .exec_params1(
              "SELECT coalesce(sum(count), 0) FROM resource_event WHERE code = $1 AND "
              "connector_id = $2 AND coalesce(reason, '') LIKE '%' || $3 || '%'",
              code, row_.connector_id.ToString(), words)[0]
          .as<long>();
    });
  }
  std::string Logs() { return LogTails(dir_, {"target.log"}, 4000); }
  static std::set<int> Range(int from, int to) {
    std::set<int> out;
    for (int i = from; i <= to; ++i) out.insert(i);
    return out;
  }
  void Sql(const std::string& url, const std::string& sql) {
    pqxx::connection c(url);
    pqxx::nontransaction(c).exec(sql);
  }
  long Count(const std::string& url, const std::string& sql) {
    try {
      pqxx::connection c(url);
      return pqxx::nontransaction(c).exec1(sql)[0].as<long>();
    } catch (...) {
      return -1;
    }
  }

  BrokerProcess broker_;
  TestDatabase plane_, target_db_;
  std::unique_ptr<store::Database> db_;
  std::filesystem::path dir_;
  std::string topic_;
  std::string subscription_ = common::Uuid::V4().ToString();
  std::string role_;
  runtime::Worker row_;
  std::unique_ptr<runtime::ProcessSupervisor> supervisor_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::function<int(const Request&, httplib::Response&)> answer_;
  std::vector<Request> requests_;
  std::set<int> delivered_;
};

// Expired credentials, then an overloaded receiver, then recovery: both are
// outages, retried; nothing is refused, nothing skipped, all 1000 land.
TEST_F(TargetFailures, Http401Then503ThenRecoveryDeliversEveryChange) {
  Produce(1, 1000);
  std::optional<Steady::time_point> first;
  std::mutex first_mu;
  Answer([&](const Request& r, httplib::Response& res) {
    std::lock_guard lock(first_mu);
    if (!first) first = r.at;
    auto since = r.at - *first;
    if (since < 3s) {
      res.set_content("token expired", "text/plain");
      return 401;
    }
    if (since < 5s) {
      res.set_content("overloaded", "text/plain");
      return 503;
    }
    return 200;
  });
  StartTarget(HttpTarget());
  EXPECT_TRUE(WaitUntil([&] { return Delivered() == Range(1, 1000); }, 90s))
      << Delivered().size() << " of 1000 delivered\n"
      << Logs();
  // Visible while it lasted, in the webhook's words.
  EXPECT_GE(Events("worker.error", "401: token expired"), 1) << Logs();
  EXPECT_GE(Events("worker.error", "503: overloaded"), 1) << Logs();
  EXPECT_EQ(Events("subscription.record_rejected"), 0);
  EXPECT_EQ(Events("subscription.record_skipped"), 0);
  EXPECT_EQ(Events("subscription.stopped"), 0);
  EXPECT_TRUE(WaitUntil([&] { return Row().state == runtime::WorkerState::kLive; }, 30s));
}

// One record of a batch of 50 is refused: the batch is bisected, 49 land,
// the one at fault reaches the error table with the webhook's words.
TEST_F(TargetFailures, A422OnOneRecordOfABatchParksOnlyThatRecord) {
  Produce(1, 50);
  Answer([](const Request& r, httplib::Response& res) {
    if (std::find(r.ids.begin(), r.ids.end(), 17) != r.ids.end()) {
      res.set_content("id 17: name is not acceptable", "text/plain");
      return 422;
    }
    return 200;
  });
  StartTarget(HttpTarget(),
              {{"error_table", "orders_errors"}, {"error_target_url", target_db_.url()}});
  auto want = Range(1, 50);
  want.erase(17);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return Delivered() == want &&
               Count(target_db_.url(), "SELECT count(*) FROM orders_errors") == 1;
      },
      60s))
      << Delivered().size() << " delivered\n"
      << Logs();
  pqxx::connection c(target_db_.url());
  auto parked = pqxx::nontransaction(c).exec1("SELECT \"offset\", key, error FROM orders_errors");
  EXPECT_EQ(parked[0].as<long>(), 16);
  EXPECT_STREQ(parked[1].c_str(), R"({"id":17})");
  EXPECT_NE(std::string(parked[2].c_str()).find("name is not acceptable"), std::string::npos);
  EXPECT_EQ(Delivered().count(17), 0u);
  EXPECT_TRUE(WaitUntil([&] { return Events("subscription.record_rejected") == 1; }, 10s));
}

// No error table and on_refusal left at its default: the subscription stops
// at the refused record (ERROR, its key and offset in the reason and an
// event) and goes no further; fixed and restarted, everything lands.
TEST_F(TargetFailures, WithoutAnErrorTableARefusalStopsTheSubscriptionUntilRestarted) {
  Produce(1, 50);
  std::atomic<bool> fixed{false};
  Answer([&](const Request& r, httplib::Response& res) {
    if (!fixed && std::find(r.ids.begin(), r.ids.end(), 17) != r.ids.end()) {
      res.set_content("id 17: name is not acceptable", "text/plain");
      return 422;
    }
    return 200;
  });
  StartTarget(HttpTarget());
  ASSERT_TRUE(AwaitErrorNaming("stopped")) << Logs();
  auto reason = *Row().reason;
  EXPECT_NE(reason.find(R"(key {"id":17})"), std::string::npos) << reason;
  EXPECT_NE(reason.find(topic_ + "/0/16"), std::string::npos) << reason;
  EXPECT_NE(reason.find("name is not acceptable"), std::string::npos) << reason;
  EXPECT_TRUE(WaitUntil([&] { return Events("subscription.stopped", R"({"id":17})") >= 1; }, 10s));
  EXPECT_EQ(Events("subscription.record_skipped"), 0);
  EXPECT_EQ(Delivered().count(17), 0u);
  // Stopped means stopped: later changes wait.
  Produce(51, 60);
  std::this_thread::sleep_for(2s);
  for (int id = 51; id <= 60; ++id) EXPECT_EQ(Delivered().count(id), 0u) << id;
  // The receiver is fixed and the subscription restarted (its worker).
  fixed = true;
  kill(*supervisor_->Pid("target"), SIGKILL);
  EXPECT_TRUE(WaitUntil([&] { return Delivered() == Range(1, 60); }, 60s))
      << Delivered().size() << " of 60 delivered\n"
      << Logs();
  EXPECT_TRUE(WaitUntil([&] { return Row().state == runtime::WorkerState::kLive; }, 30s));
}

// on_refusal: skip commits past the refused record, counted skipped, with an event.
TEST_F(TargetFailures, OnRefusalSkipGoesPastTheRecordWithAnEvent) {
  Produce(1, 50);
  Answer([](const Request& r, httplib::Response& res) {
    if (std::find(r.ids.begin(), r.ids.end(), 17) != r.ids.end()) {
      res.set_content("id 17: name is not acceptable", "text/plain");
      return 422;
    }
    return 200;
  });
  StartTarget(HttpTarget(), {{"on_refusal", "skip"}});
  auto want = Range(1, 50);
  want.erase(17);
  EXPECT_TRUE(WaitUntil([&] { return Delivered() == want; }, 60s)) << Logs();
  EXPECT_TRUE(WaitUntil([&] { return Events("subscription.record_skipped") == 1; }, 10s));
  Produce(51, 60);
  want.merge(Range(51, 60));
  EXPECT_TRUE(WaitUntil([&] { return Delivered() == want; }, 60s)) << Logs();
  EXPECT_EQ(Events("subscription.stopped"), 0);
}

// A 503 with Retry-After: 2 is not asked again before 2 s have passed.
TEST_F(TargetFailures, RetryAfterIsHonoured) {
  Produce(1, 10);
  std::atomic<int> calls{0};
  Answer([&](const Request&, httplib::Response& res) {
    if (calls++ == 0) {
      res.set_header("Retry-After", "2");
      res.set_content("come back later", "text/plain");
      return 503;
    }
    return 200;
  });
  StartTarget(HttpTarget());
  ASSERT_TRUE(WaitUntil([&] { return Delivered() == Range(1, 10); }, 60s)) << Logs();
  auto requests = Requests();
  ASSERT_GE(requests.size(), 2u);
  EXPECT_EQ(requests[0].status, 503);
  EXPECT_GE(requests[1].at - requests[0].at, 1900ms);
  EXPECT_GE(Events("worker.error", "come back later"), 1);
}

// The webhook takes a batch but answers only after the worker was killed:
// the replay after the restart is the same records under the same key, so
// the receiver can drop it.
TEST_F(TargetFailures, AReplayAfterKill9CarriesTheSameIdempotencyKey) {
  Produce(1, 50);
  std::atomic<int> calls{0};
  Answer([&](const Request&, httplib::Response&) {
    if (calls++ == 0) std::this_thread::sleep_for(3s);  // the worker dies meanwhile
    return 200;
  });
  StartTarget(HttpTarget());
  ASSERT_TRUE(WaitUntil([&] { return calls.load() >= 1; }, 60s)) << Logs();
  kill(*supervisor_->Pid("target"), SIGKILL);
  ASSERT_TRUE(WaitUntil([&] { return Requests().size() >= 2; }, 60s)) << Logs();
  auto requests = Requests();
  EXPECT_FALSE(requests[0].idempotency_key.empty());
  EXPECT_EQ(requests[1].idempotency_key, requests[0].idempotency_key);
  EXPECT_EQ(requests[1].ids, requests[0].ids);
  EXPECT_NE(requests[0].idempotency_key.find(topic_ + "/0/0-"), std::string::npos)
      << requests[0].idempotency_key;
  EXPECT_EQ(Delivered(), Range(1, 50));
  // Not by luck of the fetch sizes: the restarted worker re-formed the batch
  // its predecessor noted with the group's offset.
  EXPECT_NE(Logs().find("replaying the batch a previous run left in flight (50 records)"),
            std::string::npos)
      << Logs();
}

// A row PostgreSQL refuses (a CHECK constraint) with no error table stops
// the subscription at it, the other rows of its batch landed; once the
// constraint is fixed and the worker restarted, it lands too.
TEST_F(TargetFailures, APostgresDataErrorWithoutAnErrorTableStopsAtTheRow) {
  Sql(target_db_.url(),
      "CREATE TABLE public.orders (id int PRIMARY KEY, name text CONSTRAINT not_n17 CHECK (name "
      "<> 'n17'))");
  Produce(1, 50);
  StartTarget({{"type", "postgresql"}, {"url", target_db_.url()}});
  ASSERT_TRUE(AwaitErrorNaming("not_n17")) << Logs();
  EXPECT_NE(Row().reason->find(R"(key {"id":17} at )" + topic_ + "/0/16"), std::string::npos)
      << *Row().reason;
  EXPECT_EQ(Count(target_db_.url(), "SELECT count(*) FROM orders"), 49);
  EXPECT_TRUE(WaitUntil([&] { return Events("subscription.stopped", "not_n17") >= 1; }, 10s));
  Sql(target_db_.url(), "ALTER TABLE orders DROP CONSTRAINT not_n17");
  kill(*supervisor_->Pid("target"), SIGKILL);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return Count(target_db_.url(), "SELECT count(*) FROM orders WHERE name = 'n' || id") == 50;
      },
      60s))
      << Logs();
}

// The JSONL target's disk is full (its file is a /dev/full node): an outage in the
// file system's words, nothing committed; with space again every line lands.
TEST_F(TargetFailures, AFullDiskUnderAJsonlTargetIsAnOutageAndLosesNothing) {
  auto files = dir_ / "jsonl";
  std::filesystem::create_directories(files);
  // A device node like /dev/full (the target opens no symlink).
  if (mknod((files / "orders.jsonl").c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0)
    GTEST_SKIP() << "mknod needs CAP_MKNOD: " << strerror(errno);
  Produce(1, 20);
  StartTarget({{"type", "jsonl"}, {"root", dir_.string()}, {"directory", "jsonl"}});
  EXPECT_TRUE(AwaitErrorNaming("No space left on device")) << Logs();
  std::filesystem::remove(files / "orders.jsonl");
  std::set<int> lines;
  EXPECT_TRUE(WaitUntil(
      [&] {
        lines.clear();
        std::ifstream in(files / "orders.jsonl");
        for (std::string l; std::getline(in, l);)
          lines.insert(json::parse(l)["key"]["id"].get<int>());
        return lines == Range(1, 20);
      },
      60s))
      << lines.size() << " of 20\n"
      << Logs();
  EXPECT_EQ(Events("subscription.stopped"), 0);
  EXPECT_TRUE(WaitUntil([&] { return Row().state == runtime::WorkerState::kLive; }, 30s));
}

// REVOKE INSERT on the target table is an outage: the worker says so in
// PostgreSQL's words, nothing is refused or skipped, and once the grant is
// back every row is there.
TEST_F(TargetFailures, PostgresPermissionDeniedIsAnOutageAndLosesNothing) {
  role_ = "tf_writer_" + common::Uuid::V4().ToString().substr(0, 8);
  Sql(ClusterUrl("postgres"), "CREATE ROLE " + role_ + " LOGIN PASSWORD 'writer-pw'");
  Sql(target_db_.url(),
      "CREATE TABLE public.orders (id int PRIMARY KEY, name text); "
      "GRANT USAGE ON SCHEMA public TO " +
          role_ + "; GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON public.orders TO " + role_);
  std::string url = ClusterUrlAs(target_db_.name(), role_, "writer-pw");
  Produce(1, 200);
  StartTarget({{"type", "postgresql"}, {"url", url}});
  ASSERT_TRUE(
      WaitUntil([&] { return Count(target_db_.url(), "SELECT count(*) FROM orders") == 200; }, 60s))
      << Logs();
  Sql(target_db_.url(), "REVOKE INSERT ON public.orders FROM " + role_);
  Produce(201, 400);
  EXPECT_TRUE(AwaitErrorNaming("permission denied")) << Logs();
  std::this_thread::sleep_for(3s);
  Sql(target_db_.url(), "GRANT INSERT ON public.orders TO " + role_);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return Count(
                   target_db_.url(),
                   "SELECT count(*) FROM orders WHERE id BETWEEN 1 AND 400 AND name = 'n' || id") ==
               400;
      },
      60s))
      << Logs();
  EXPECT_GE(Events("worker.error", "permission denied"), 1);
  EXPECT_EQ(Events("subscription.stopped"), 0);
  EXPECT_EQ(Events("subscription.record_rejected"), 0);
  EXPECT_TRUE(WaitUntil([&] { return Row().state == runtime::WorkerState::kLive; }, 30s));
}

// The target database's disk fills up (its table lives on a 512 KiB tmpfs):
// an outage in PostgreSQL's words, retried, never committed past; once the
// file system grows every row lands. Mounting needs CAP_SYS_ADMIN, so the
// test is skipped, saying so, where it cannot mount.
TEST_F(TargetFailures, PostgresDiskFullIsAnOutageAndLosesNothing) {
  auto space = std::filesystem::path("/tmp") / ("sluice-tf-full-" + topic_);
  std::filesystem::create_directories(space);
  if (::mount("tmpfs", space.c_str(), "tmpfs", 0, "size=512k,mode=0700") != 0) {
    std::filesystem::remove(space);
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno)
                 << "): the disk-full case needs CAP_SYS_ADMIN";
  }
  struct Unmount {
    std::filesystem::path dir;
    ~Unmount() {
      ::umount2(dir.c_str(), MNT_DETACH);
      std::error_code ec;
      std::filesystem::remove(dir, ec);
    }
  } unmount{space};
  struct passwd* pg = ::getpwnam("postgres");
  ASSERT_NE(pg, nullptr);
  ASSERT_EQ(::chown(space.c_str(), pg->pw_uid, pg->pw_gid), 0);
  std::string tablespace = "tf_small_" + common::Uuid::V4().ToString().substr(0, 8);
  Sql(ClusterUrl("postgres"),
      "CREATE TABLESPACE " + tablespace + " LOCATION '" + space.string() + "'");
  Sql(target_db_.url(),
      "CREATE TABLE public.orders (id int PRIMARY KEY, name text) TABLESPACE " + tablespace);
  Produce(1, 200);
  StartTarget({{"type", "postgresql"}, {"url", target_db_.url()}});
  ASSERT_TRUE(
      WaitUntil([&] { return Count(target_db_.url(), "SELECT count(*) FROM orders") == 200; }, 60s))
      << Logs();
  // About 1 MiB of rows: more than the file system has left.
  Produce(201, 20000);
  EXPECT_TRUE(AwaitErrorNaming("No space left on device")) << Logs();
  long while_full = Count(target_db_.url(), "SELECT count(*) FROM orders");
  EXPECT_LT(while_full, 20000);
  ASSERT_EQ(::mount("tmpfs", space.c_str(), "tmpfs", MS_REMOUNT, "size=64m,mode=0700"), 0)
      << std::strerror(errno);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return Count(target_db_.url(),
                     "SELECT count(*) FROM orders WHERE id BETWEEN 1 AND 20000 AND name = 'n' || "
                     "id") == 20000;
      },
      60s))
      << Logs();
  EXPECT_GE(Events("worker.error", "No space left on device"), 1);
  EXPECT_EQ(Events("subscription.stopped"), 0);
  EXPECT_EQ(Events("subscription.record_rejected"), 0);
  EXPECT_EQ(Events("subscription.record_skipped"), 0);
  EXPECT_TRUE(WaitUntil([&] { return Row().state == runtime::WorkerState::kLive; }, 30s));
  supervisor_.reset();
  Sql(target_db_.url(), "DROP TABLE public.orders");
  Sql(ClusterUrl("postgres"), "DROP TABLESPACE " + tablespace);
}

// An event a pod reports carries the pod's own name and the integer number
// of the launch it runs under; a relaunch reports under the next number.
TEST_F(TargetFailures, AWorkerErrorEventNamesThePodAndItsLaunchNumber) {
  Produce(1, 1000);
  Answer([&](const Request&, httplib::Response& res) {
    res.set_content("pod outage", "text/plain");
    return 503;
  });
  StartTarget(HttpTarget(), json::object(), {"SLUICE_POD_NAME=tf-target-7d9f-0"});
  auto event = [&] {
    return plane_db().Transact([&](pqxx::work& tx) {
      auto r = tx.exec_params(
          "SELECT coalesce(pod, ''), coalesce(generation, 0) FROM resource_event WHERE code = "
          "'worker.error' AND connector_id = $1",
          row_.connector_id.ToString());
      return r.empty() ? std::pair<std::string, int>{"", -1}
                       : std::pair<std::string, int>{r[0][0].c_str(), r[0][1].as<int>()};
    });
  };
  ASSERT_TRUE(WaitUntil([&] { return event().second >= 0; }, 60s)) << Logs();
  EXPECT_EQ(event(), (std::pair<std::string, int>{"tf-target-7d9f-0", 1})) << Logs();

  // The back end relaunches the shard: a new UUID generation, number 2.
  supervisor_.reset();
  row_ = plane_db().Transact([&](pqxx::work& tx) {
    auto w = *runtime::WorkerRepository::FindForUpdate(tx, row_.id);
    w.Start(common::Clock::now(), std::nullopt);
    runtime::WorkerRepository::Update(tx, w);
    return w;
  });
  StartTarget(HttpTarget(), json::object(), {"SLUICE_POD_NAME=tf-target-7d9f-1"});
  EXPECT_TRUE(WaitUntil(
      [&] {
        return event() == std::pair<std::string, int>{"tf-target-7d9f-1", 2};
      },
      60s))
      << event().first << " " << event().second << "\n"
      << Logs();
}

}  // namespace
}  // namespace sluice::testing
