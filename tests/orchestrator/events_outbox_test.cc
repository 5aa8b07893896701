// The connector_events outbox of every env, with real brokers over TCP and a
// real consumer (kcat): each env's events land on its own topic on its own
// broker, envs sharing a broker never share a topic, a broker that is down
// holds back only its env, and envs created while running are picked up.
#include "orchestrator/events_outbox.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <pqxx/pqxx>
#include <set>
#include <thread>

#include "broker/broker_harness.h"
#include "common/uuid.h"
#include "events/event_store.h"
#include "events/events_topic.h"
#include "kafka/admin.h"
#include "metrics/data_plane_gauges.h"
#include "store/database.h"
#include "support/test_database.h"

namespace sluice::orchestrator {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::BrokerProcess;

// A TCP proxy in front of a broker that advertises the proxy's address, so
// every client connection passes through it. HoldNextProduce() makes it keep
// back the next Produce request it sees, and the rest of that connection,
// until a Produce request comes on another connection; the held one then
// reaches the broker, and is answered, just before that one. That is a request
// delayed on the way, which the broker appends after its sender stopped
// waiting and had read the topic back, but before the sender's next send (on
// a real Kafka: appended while a follower lags, above the high watermark
// that a read back stops at).
class ProduceHoldingProxy {
 public:
  ProduceHoldingProxy() {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listener_, 64) != 0)
      throw std::runtime_error(std::string("proxy listen: ") + std::strerror(errno));
    socklen_t len = sizeof a;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~ProduceHoldingProxy() {
    stop_ = true;
    acceptor_.join();
    std::lock_guard lock(mu_);
    for (auto& t : pumps_) t.join();
    ::close(listener_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  void ForwardTo(int upstream_port) { upstream_port_ = upstream_port; }
  void HoldNextProduce() { armed_ = true; }
  bool holding() const { return held_ > 0; }
  // The held request reached the broker and was answered.
  bool answered() const { return answered_; }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) continue;
      int upstream = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<std::uint16_t>(upstream_port_.load()));
      if (::connect(upstream, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(client);
        ::close(upstream);
        continue;
      }
      std::lock_guard lock(mu_);
      pumps_.emplace_back([this, client, upstream] { Pump(client, upstream); });
    }
  }
  static bool SendAll(int fd, const std::string& bytes) {
    for (std::size_t at = 0; at < bytes.size();) {
      auto n = ::send(fd, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return false;
      at += static_cast<std::size_t>(n);
    }
    return true;
  }
  // A Produce request on this connection while another holds one: the held
  // one goes first, and this waits for its answer.
  void LetTheHeldProduceGoFirst() {
    if (held_ == 0 || released_.exchange(true)) return;
    for (int i = 0; i < 200 && !answered_ && !stop_; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // One connection. Client to broker goes frame by frame (a 4-byte size, then
  // the request, whose first two bytes are its API key; Produce is 0).
  void Pump(int client, int upstream) {
    std::string from_client, held;
    bool holding = false, delivered = false, client_open = true, broken = false;
    char buf[65536];
    while (!stop_ && !broken) {
      if (holding && released_) {
        broken = !SendAll(upstream, held);
        held.clear();
        holding = false;
        delivered = true;
      }
      if (!client_open && !holding) ::shutdown(upstream, SHUT_WR);  // the broker reads the rest
      pollfd p[2] = {{client_open ? client : -1, POLLIN, 0}, {upstream, POLLIN, 0}};
      if (::poll(p, 2, 50) < 0) break;
      if (p[0].revents != 0) {
        auto n = ::recv(client, buf, sizeof buf, 0);
        if (n <= 0) {
          client_open = false;  // what is held still goes to the broker
        } else if (holding) {
          held.append(buf, static_cast<std::size_t>(n));
        } else {
          from_client.append(buf, static_cast<std::size_t>(n));
          while (!broken && from_client.size() >= 6) {
            std::uint32_t size = 0;
            std::memcpy(&size, from_client.data(), 4);
            size = ntohl(size);
            std::uint16_t api_key = 0;
            std::memcpy(&api_key, from_client.data() + 4, 2);
            const bool produce = ntohs(api_key) == 0;
            if (produce && armed_.exchange(false)) {
              holding = true;
              held = std::move(from_client);
              from_client.clear();
              ++held_;
              break;
            }
            if (from_client.size() < 4 + static_cast<std::size_t>(size)) break;
            if (produce) LetTheHeldProduceGoFirst();
            broken = !SendAll(upstream, from_client.substr(0, 4 + size));
            from_client.erase(0, 4 + size);
          }
        }
      }
      if (p[1].revents != 0) {
        auto n = ::recv(upstream, buf, sizeof buf, 0);
        if (n <= 0) break;  // the broker closed: this connection is over
        if (delivered) answered_ = true;
        if (client_open) SendAll(client, std::string(buf, static_cast<std::size_t>(n)));
      }
    }
    ::close(client);
    ::close(upstream);
  }

  int listener_ = -1;
  int port_ = 0;
  std::atomic<int> upstream_port_{0};
  std::atomic<bool> stop_{false}, armed_{false}, released_{false}, answered_{false};
  std::atomic<int> held_{0};
  std::mutex mu_;
  std::vector<std::thread> pumps_;
  std::thread acceptor_;
};

class EventsOutboxTest : public ::testing::Test {
 protected:
  common::Uuid AddEnv(const BrokerProcess& broker) { return AddEnvAt(broker.bootstrap()); }
  common::Uuid AddEnvAt(const std::string& bootstrap) {
    auto env = common::Uuid::V4();
    db_.Transact([&](pqxx::work& tx) {
      tx.exec_params(
          "INSERT INTO env (id, name, retention_configuration) VALUES ($1, $2, $3::json)",
          env.ToString(), "env-" + env.ToString().substr(0, 8),
          json{{"bootstrap_servers", bootstrap}}.dump());
    });
    return env;
  }
  // One occurrence of a distinct event in `env`, about a connector of `team`.
  void Record(const common::Uuid& env, const std::string& code,
              const common::Uuid& team = common::Uuid::V4()) {
    events::ResourceEvent e;
    e.ts = common::Clock::now();
    e.level = events::Level::kError;
    e.type = events::Type::kConnector;
    e.code = code;
    e.summary = "Worker restarted";
    e.resource = {env, team, common::Uuid::V4(), "conn-" + code, {}, {}, {}, {}};
    ASSERT_TRUE(events::EventStore(db_).Record(e).ok());
  }
  EventsOutboxOptions Fast() {
    EventsOutboxOptions o;
    o.interval = 100ms;
    o.rescan = 200ms;
    o.delivery_timeout = 3000ms;
    o.outbox.grace = 0ms;
    return o;
  }
  // The values on `topic` of `broker`, read from the beginning by kcat.
  static std::vector<json> Read(const BrokerProcess& broker, const std::string& topic) {
    auto r = testing::RunShell("timeout 20 kcat -C -b " + broker.bootstrap() + " -t " + topic +
                               " -o beginning -e -q -f '%s\\n' 2>/dev/null");
    std::vector<json> out;
    std::size_t at = 0;
    while (at < r.out.size()) {
      auto nl = r.out.find('\n', at);
      if (nl == std::string::npos) nl = r.out.size();
      auto line = r.out.substr(at, nl - at);
      if (!line.empty()) out.push_back(json::parse(line, nullptr, false));
      at = nl + 1;
    }
    return out;
  }
  // Reads until `count` values are there (or 60 s passed).
  static std::vector<json> WaitFor(const BrokerProcess& broker, const std::string& topic,
                                   std::size_t count) {
    std::vector<json> got;
    for (auto deadline = std::chrono::steady_clock::now() + 60s;
         std::chrono::steady_clock::now() < deadline;) {
      got = Read(broker, topic);
      if (got.size() >= count) break;
      std::this_thread::sleep_for(200ms);
    }
    return got;
  }
  static std::vector<std::string> Codes(const std::vector<json>& values) {
    std::vector<std::string> out;
    for (const auto& v : values) out.push_back(v.value("code", std::string("?")));
    std::sort(out.begin(), out.end());
    return out;
  }
  double Backlog(const common::Uuid& env) {
    return db_.Transact([&](pqxx::work& tx) {
      for (const auto& f : metrics::CollectDataPlaneGauges(tx, common::Clock::now())) {
        if (f.name != "sluice_connector_events_outbox_backlog") continue;
        for (const auto& s : f.samples)
          for (const auto& [k, v] : s.labels)
            if (k == "env_id" && v == env.ToString()) return s.value;
      }
      return -1.0;
    });
  }

  std::int64_t CursorOf(const common::Uuid& env) {
    return db_.Transact([&](pqxx::work& tx) -> std::int64_t {
      auto r =
          tx.exec_params("SELECT last_seq FROM sluice_state.events_outbox_cursor WHERE name = $1",
                         events::EnvOutboxCursor(env));
      return r.empty() ? 0 : r[0][0].as<std::int64_t>();
    });
  }
  std::int64_t LastSeq() {
    return db_.Transact([&](pqxx::work& tx) {
      return tx.exec("SELECT coalesce(max(seq), 0) FROM resource_event_occurrence")[0][0]
          .as<std::int64_t>();
    });
  }

  testing::TestDatabase tdb_;
  store::Database db_{tdb_.url(), 4};
};

TEST_F(EventsOutboxTest, TwoEnvsOnOneBrokerEachGetOnlyTheirOwnEventsOnTheirOwnTopic) {
  BrokerProcess broker;
  broker.Start();
  auto a = AddEnv(broker), b = AddEnv(broker);
  Record(a, "a.one");
  Record(b, "b.one");
  Record(a, "a.two");
  Record(b, "b.two");
  Record(a, "a.three");
  EventsOutbox outbox(db_, Fast());
  auto on_a = WaitFor(broker, events::EnvEventsTopic(a), 3);
  auto on_b = WaitFor(broker, events::EnvEventsTopic(b), 2);
  EXPECT_EQ(Codes(on_a), (std::vector<std::string>{"a.one", "a.three", "a.two"}));
  EXPECT_EQ(Codes(on_b), (std::vector<std::string>{"b.one", "b.two"}));
  for (const auto& v : on_a) EXPECT_EQ(v["env_id"], a.ToString());
  for (const auto& v : on_b) EXPECT_EQ(v["env_id"], b.ToString());
  for (int i = 0; i < 50 && (Backlog(a) != 0 || Backlog(b) != 0); ++i)
    std::this_thread::sleep_for(100ms);
  EXPECT_EQ(Backlog(a), 0);
  EXPECT_EQ(Backlog(b), 0);
  // Nothing published twice, nor onto the old env-less topic.
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(Read(broker, events::EnvEventsTopic(a)).size(), 3u);
  EXPECT_TRUE(Read(broker, "connector_events").empty());
}

TEST_F(EventsOutboxTest, TwoEnvsOnTwoBrokersEachPublishOnTheirOwnBroker) {
  BrokerProcess first, second;
  first.Start();
  second.Start();
  auto a = AddEnv(first), b = AddEnv(second);
  Record(a, "a.one");
  Record(b, "b.one");
  Record(b, "b.two");
  EventsOutbox outbox(db_, Fast());
  EXPECT_EQ(Codes(WaitFor(first, events::EnvEventsTopic(a), 1)),
            (std::vector<std::string>{"a.one"}));
  EXPECT_EQ(Codes(WaitFor(second, events::EnvEventsTopic(b), 2)),
            (std::vector<std::string>{"b.one", "b.two"}));
  EXPECT_TRUE(Read(second, events::EnvEventsTopic(a)).empty());
  EXPECT_TRUE(Read(first, events::EnvEventsTopic(b)).empty());
}

TEST_F(EventsOutboxTest, ABrokerThatIsDownHoldsBackOnlyItsOwnEnv) {
  BrokerProcess down, up;
  down.Start();
  up.Start();
  auto a = AddEnv(down), b = AddEnv(up);
  down.Stop();
  Record(a, "a.one");
  Record(b, "b.one");
  Record(a, "a.two");
  Record(b, "b.two");
  EventsOutbox outbox(db_, Fast());
  EXPECT_EQ(Codes(WaitFor(up, events::EnvEventsTopic(b), 2)),
            (std::vector<std::string>{"b.one", "b.two"}));
  // Later events of the live env keep flowing while the other is down.
  Record(b, "b.three");
  EXPECT_EQ(WaitFor(up, events::EnvEventsTopic(b), 3).size(), 3u);
  EXPECT_EQ(Backlog(a), 2);
  for (int i = 0; i < 50 && Backlog(b) != 0; ++i) std::this_thread::sleep_for(100ms);
  EXPECT_EQ(Backlog(b), 0);
  // Back up: the held env's events arrive, each once.
  down.Start();
  auto on_a = WaitFor(down, events::EnvEventsTopic(a), 2);
  EXPECT_EQ(Codes(on_a), (std::vector<std::string>{"a.one", "a.two"}));
  for (int i = 0; i < 100 && Backlog(a) != 0; ++i) std::this_thread::sleep_for(100ms);
  EXPECT_EQ(Backlog(a), 0);
}

TEST_F(EventsOutboxTest, EnvsCreatedAndDeletedWhileRunningArePickedUp) {
  BrokerProcess broker;
  broker.Start();
  auto a = AddEnv(broker);
  EventsOutbox outbox(db_, Fast());
  Record(a, "a.one");
  EXPECT_EQ(WaitFor(broker, events::EnvEventsTopic(a), 1).size(), 1u);
  auto later = AddEnv(broker);
  Record(later, "later.one");
  EXPECT_EQ(Codes(WaitFor(broker, events::EnvEventsTopic(later), 1)),
            (std::vector<std::string>{"later.one"}));
  db_.Transact(
      [&](pqxx::work& tx) { tx.exec_params("DELETE FROM env WHERE id = $1", a.ToString()); });
  bool stopped = false;
  for (int i = 0; i < 100 && !stopped; ++i) {
    auto envs = outbox.PublishingEnvs();
    stopped = std::find(envs.begin(), envs.end(), a) == envs.end();
    if (!stopped) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(stopped);
}

// The window of the old at-least-once outbox, made deterministic: the broker
// acknowledged a batch and the cursor commit then failed (the failpoint
// throws right before it, as a process killed there would leave it). The
// publisher hands the same batch over again on every pass, and a new
// publisher (a restart) starts from the same cursor; neither may put an
// occurrence on the topic twice. Three partitions, so the read back covers
// more than one, and a first batch that did commit, so it stops at it.
TEST_F(EventsOutboxTest, ABatchAckedButNeverCommittedIsNotPublishedAgainOnRetryOrRestart) {
  BrokerProcess broker;
  broker.Start();
  auto a = AddEnv(broker);
  {
    kafka::ClientConfig config;
    config.bootstrap_servers = broker.bootstrap();
    auto admin = kafka::Admin::Create(config).value();
    ASSERT_TRUE(admin->CreateTopic(events::EnvEventsTopic(a), 3).ok());
  }
  Record(a, "committed.1");
  Record(a, "committed.2");
  const std::int64_t committed_upto = LastSeq();
  for (int i = 1; i <= 5; ++i) Record(a, "window." + std::to_string(i));
  std::atomic<int> refused{0};
  std::atomic<std::size_t> handed_over{0};
  auto options = Fast();
  options.outbox.batch_size = 2;
  options.outbox.before_cursor_commit = [&](const std::vector<events::OutboxRecord>& accepted) {
    if (accepted.empty() || accepted.front().seq <= committed_upto) return;
    handed_over += accepted.size();
    ++refused;
    throw std::runtime_error("failpoint: the process dies before the cursor commit");
  };
  {
    EventsOutbox failing(db_, options);
    WaitFor(broker, events::EnvEventsTopic(a), 4);
    for (int i = 0; i < 200 && refused < 5; ++i) std::this_thread::sleep_for(50ms);
    // Every pass after the first handed the window's first batch over again.
    EXPECT_GE(refused.load(), 5);
  }
  // The failpoint held the cursor where the committed batch left it.
  EXPECT_EQ(CursorOf(a), committed_upto);
  EXPECT_EQ(Read(broker, events::EnvEventsTopic(a)).size(), 4u)
      << "the window's first batch of 2 was published more than once";
  Record(a, "after.restart");
  EventsOutbox restarted(db_, Fast());
  auto on_a = WaitFor(broker, events::EnvEventsTopic(a), 8);
  for (int i = 0; i < 100 && Backlog(a) != 0; ++i) std::this_thread::sleep_for(100ms);
  EXPECT_EQ(Backlog(a), 0);
  EXPECT_EQ(CursorOf(a), LastSeq());
  std::this_thread::sleep_for(500ms);
  on_a = Read(broker, events::EnvEventsTopic(a));
  EXPECT_EQ(Codes(on_a),
            (std::vector<std::string>{"after.restart", "committed.1", "committed.2", "window.1",
                                      "window.2", "window.3", "window.4", "window.5"}));
  std::set<std::string> ids;
  std::set<std::int64_t> seqs;
  for (const auto& v : on_a) {
    ids.insert(v.value("id", std::string()));
    seqs.insert(v.value("seq", std::int64_t{0}));
  }
  EXPECT_EQ(ids.size(), on_a.size()) << "an occurrence is on the topic twice";
  EXPECT_EQ(seqs.size(), on_a.size());
  EXPECT_GE(handed_over.load(), 10u);
}

// The window a delivery timeout leaves: a Produce request delayed on the way
// to the broker past the publisher's delivery timeout, which the broker
// appends after the publisher's next read back missed it, just before the
// publisher's next send. A publisher that gave the send up and sent the
// occurrence again leaves it on the topic twice; one that awaits the send
// (resent by the producer under the same producer id and sequence, which the
// broker deduplicates) leaves it once.
TEST_F(EventsOutboxTest, ASendHeldPastTheDeliveryTimeoutThatLandsLaterIsOnTheTopicOnce) {
  ProduceHoldingProxy link;
  BrokerProcess broker({"--advertise", link.address()});
  link.ForwardTo(broker.port());
  broker.Start();
  auto a = AddEnvAt(link.address());
  const auto topic = events::EnvEventsTopic(a);
  Record(a, "before");
  auto options = Fast();
  options.delivery_timeout = 1000ms;
  EventsOutbox outbox(db_, options);
  ASSERT_EQ(WaitFor(broker, topic, 1).size(), 1u);
  link.HoldNextProduce();
  Record(a, "held");
  for (int i = 0; i < 200 && !link.holding(); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(link.holding());
  for (int i = 0; i < 400 && !link.answered(); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(link.answered()) << "the held request never reached the broker";
  for (int i = 0; i < 200 && CursorOf(a) != LastSeq(); ++i) std::this_thread::sleep_for(50ms);
  EXPECT_EQ(CursorOf(a), LastSeq());
  Record(a, "after");
  WaitFor(broker, topic, 3);
  std::this_thread::sleep_for(1000ms);
  auto values = Read(broker, topic);
  EXPECT_EQ(Codes(values), (std::vector<std::string>{"after", "before", "held"}))
      << "the held request was appended, and the occurrence sent again";
  std::set<std::string> ids;
  for (const auto& v : values) ids.insert(v.value("id", std::string()));
  EXPECT_EQ(ids.size(), values.size()) << "an occurrence is on the topic twice";
}

// `sluice serve` publishes too, through the same background wiring as `up`.
TEST_F(EventsOutboxTest, ServePublishesEachEnvsEventsOntoItsTopic) {
  BrokerProcess broker;
  broker.Start();
  auto a = AddEnv(broker), b = AddEnv(broker);
  Record(a, "a.before_serve");
  Record(b, "b.before_serve");
  auto dir =
      std::filesystem::temp_directory_path() / ("sluice-serve-" + common::Uuid::V4().ToString());
  std::filesystem::create_directories(dir);
  auto log = (dir / "serve.log").string();
  std::vector<std::string> argv = {
      std::getenv("SLUICE_BIN"), "serve",       "--listen",   "127.0.0.1:0",
      "--registry-listen",       "127.0.0.1:0", "--data-dir", (dir / "data").string()};
  std::vector<char*> cargv;
  for (auto& arg : argv) cargv.push_back(arg.data());
  cargv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("SLUICE_DATABASE_URL", tdb_.url().c_str(), 1);
    if (!freopen(log.c_str(), "w", stdout) || !freopen(log.c_str(), "a", stderr)) _exit(126);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  auto on_a = WaitFor(broker, events::EnvEventsTopic(a), 1);
  auto on_b = WaitFor(broker, events::EnvEventsTopic(b), 1);
  Record(a, "a.while_serving");
  auto later = WaitFor(broker, events::EnvEventsTopic(a), 2);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream in(log);
  std::string serve_log((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(Codes(on_a), (std::vector<std::string>{"a.before_serve"})) << serve_log;
  EXPECT_EQ(Codes(on_b), (std::vector<std::string>{"b.before_serve"})) << serve_log;
  EXPECT_EQ(Codes(later), (std::vector<std::string>{"a.before_serve", "a.while_serving"}));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << serve_log;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::orchestrator
