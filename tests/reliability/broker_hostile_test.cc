// The embedded broker before (and after) authentication, against hostile
// connections over real TCP: a 100 MiB frame header, thousands of idle
// connections, slowloris senders. Each is closed cleanly with a log line
// naming its peer, the broker's memory does not follow what a header
// declares, and kcat (SASL/PLAIN) keeps working meanwhile.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "broker/broker_harness.h"
#include "broker/protocol/api.h"
#include "broker/protocol/wire.h"
#include "reliability/record.h"

namespace sluice::testing {
namespace {

namespace p = sluice::broker::protocol;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

const char* const kUser = "hostile-test";
const char* const kPassword = "hostile-secret";

// A blocking TCP connection to 127.0.0.1:port from `source` (any 127/8
// address: each is its own client address to the broker). -1 on failure.
int ConnectFrom(const std::string& source, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // The port is chosen at connect: a bind to port 0 searches the whole
  // range each time, which thousands of connections make slow.
  int one = 1;
  ::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether the broker closed `fd` (EOF or reset) before `deadline`; data
// that arrives first is read and skipped.
bool ClosedBy(int fd, Clock::time_point deadline) {
  char buf[4096];
  while (true) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left < 0) left = 0;
    pollfd pf{fd, POLLIN, 0};
    int r = ::poll(&pf, 1, static_cast<int>(left));
    if (r == 0) return false;
    if (r < 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
}

bool SendAll(int fd, const std::string& bytes) {
  return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

std::string Frame(std::int16_t key, std::int16_t version, const std::string& body) {
  p::Writer w;
  w.Int32(0);
  w.Int16(key);
  w.Int16(version);
  w.Int32(1);
  w.String("hostile");
  w.Raw(body);
  std::string b = w.Take();
  p::StoreBe32(b.data(), static_cast<std::int32_t>(b.size() - 4));
  return b;
}

std::string SizePrefix(std::int32_t size) {
  std::string b(4, '\0');
  p::StoreBe32(b.data(), size);
  return b;
}

// One response frame's body, or "" when the connection closed first.
std::string ReadResponse(int fd) {
  auto read_full = [fd](char* b, std::size_t n) {
    while (n > 0) {
      pollfd pf{fd, POLLIN, 0};
      if (::poll(&pf, 1, 5000) <= 0) return false;
      ssize_t r = ::recv(fd, b, n, 0);
      if (r <= 0) return false;
      b += r;
      n -= static_cast<std::size_t>(r);
    }
    return true;
  };
  char hdr[4];
  if (!read_full(hdr, 4)) return "";
  std::string body(static_cast<std::size_t>(p::LoadBe32(hdr)), '\0');
  if (!read_full(body.data(), body.size())) return "";
  return body;
}

// SaslHandshake v1 + SaslAuthenticate v1 with PLAIN; true when accepted.
bool Authenticate(int fd) {
  p::Writer hs;
  hs.String("PLAIN");
  if (!SendAll(fd, Frame(static_cast<std::int16_t>(p::ApiKey::kSaslHandshake), 1, hs.Take())))
    return false;
  std::string r = ReadResponse(fd);
  if (r.size() < 6 || p::LoadBe16(r.data() + 4) != 0) return false;
  p::Writer auth;
  auth.Bytes(std::string("\0", 1) + kUser + std::string("\0", 1) + kPassword);
  if (!SendAll(fd, Frame(static_cast<std::int16_t>(p::ApiKey::kSaslAuthenticate), 1, auth.Take())))
    return false;
  r = ReadResponse(fd);
  return r.size() >= 6 && p::LoadBe16(r.data() + 4) == 0;
}

long RssKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

std::string Kcat(const BrokerProcess& b, const std::string& args) {
  return "timeout 60 kcat -b " + b.bootstrap() +
         " -X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=PLAIN -X sasl.username=" + kUser +
         " -X sasl.password=" + kPassword + " " + args;
}

// kcat lists the broker, produces three messages to `topic` and reads them back.
void ExpectKcatServes(const BrokerProcess& b, const std::string& topic) {
  auto l = RunShell(Kcat(b, "-L -t " + topic) + " 2>&1");
  EXPECT_EQ(l.exit_code, 0) << l.out;
  auto put = RunShell("printf 'one\\ntwo\\nthree\\n' | " + Kcat(b, "-P -t " + topic) + " 2>&1");
  EXPECT_EQ(put.exit_code, 0) << put.out;
  auto get = RunShell(Kcat(b, "-C -t " + topic + " -o beginning -c 3 -e -q"));
  EXPECT_EQ(get.exit_code, 0);
  EXPECT_EQ(get.out, "one\ntwo\nthree\n");
}

std::vector<std::string> SaslArgs(std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"--sasl-user", std::string(kUser) + ":" + kPassword, "--flush",
                                   "never"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

bool LogHas(const BrokerProcess& b, const std::string& text) {
  return b.log().find(text) != std::string::npos;
}

TEST(BrokerHostile, PreauthFrameHeaderOf100MiBClosesWithoutAllocatingIt) {
  BrokerProcess broker(SaslArgs());
  broker.Start();
  ExpectKcatServes(broker, "before.huge");
  long before = RssKib(broker.pid());
  ASSERT_GT(before, 0);

  int refused = 0;
  long max_growth = 0;
  for (int i = 0; i < 5; ++i) {  // repeated: an allocation kept would add up
    int fd = ConnectFrom("127.0.0.1", broker.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, SizePrefix(100 << 20) + std::string(1000, 'x')));
    bool closed = ClosedBy(fd, Clock::now() + seconds(5));
    EXPECT_TRUE(closed) << "a pre-auth 100 MiB frame header is refused at once";
    refused += closed;
    ::close(fd);
    max_growth = std::max(max_growth, RssKib(broker.pid()) - before);
  }
  // Just over the cap is refused too; a size prefix is all it takes.
  int fd = ConnectFrom("127.0.0.1", broker.port());
  ASSERT_TRUE(SendAll(fd, SizePrefix((8 << 10) + 1)));
  EXPECT_TRUE(ClosedBy(fd, Clock::now() + seconds(5)));
  ::close(fd);

  EXPECT_LT(max_growth, 10 << 10) << "RSS grew by " << max_growth << " KiB";
  EXPECT_TRUE(LogHas(broker,
                     "127.0.0.1: request of 104857600 bytes exceeds the limit of 8192 "
                     "before authentication; closing"))
      << broker.log();
  ExpectKcatServes(broker, "after.huge");
  RecordReliability("bad_input", {{"broker_preauth_huge_frames_refused", refused},
                                  {"max_broker_rss_growth_kib_on_huge_header", max_growth}});
}

TEST(BrokerHostile, AuthenticatedHugeDeclaredFrameGrowsOnlyWithTheBytesThatCome) {
  BrokerProcess broker(SaslArgs({"--request-timeout-ms", "3000"}));
  broker.Start();
  int fd = ConnectFrom("127.0.0.1", broker.port());
  ASSERT_TRUE(Authenticate(fd));
  long before = RssKib(broker.pid());
  // 90 MiB declared (under --max-request-bytes), 64 KiB sent, then nothing.
  ASSERT_TRUE(SendAll(fd, SizePrefix(90 << 20) + std::string(64 << 10, 'x')));
  std::this_thread::sleep_for(milliseconds(500));
  long growth = RssKib(broker.pid()) - before;
  EXPECT_LT(growth, 10 << 10) << "RSS grew by " << growth << " KiB";
  auto start = Clock::now();
  EXPECT_TRUE(ClosedBy(fd, start + seconds(15))) << "the unfinished frame times out";
  ::close(fd);
  EXPECT_TRUE(LogHas(broker, "127.0.0.1: request started but not complete in time (3000 ms"))
      << broker.log();
  RecordReliability("bad_input", {{"max_broker_rss_growth_kib_on_declared_90mib", growth}});
}

TEST(BrokerHostile, IdleConnectionsAreClosedAfterTheTimeoutAndCappedPerAddress) {
  // Both ends hold one descriptor per connection; the broker inherits our limit.
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &lim);
  const int per_address = 500;
  const int wanted = static_cast<int>(std::min<rlim_t>(10000, lim.rlim_cur - 600));
  const int addresses = std::max(1, wanted / per_address);
  const int idle = addresses * per_address;
  const int over_cap = 50;  // from the first flood address, past its cap
  ASSERT_GE(idle, 500) << "RLIMIT_NOFILE too small for this test";
  BrokerProcess broker(
      SaslArgs({"--max-connections", std::to_string(idle + 100), "--max-connections-per-address",
                std::to_string(per_address), "--preauth-timeout-ms", "10000"}));
  broker.Start();

  // The first flood address up to its cap, then past it: those are closed
  // at once, long before the idle timeout.
  std::vector<int> fds;
  std::vector<Clock::time_point> opened;
  auto open_from = [&](const std::string& source) {
    int fd = ConnectFrom(source, broker.port());
    EXPECT_GE(fd, 0) << "connection " << fds.size() << ": " << std::strerror(errno);
    if (fd < 0) return;
    fds.push_back(fd);
    opened.push_back(Clock::now());
  };
  for (int i = 0; i < per_address; ++i) open_from("127.0.1.1");
  int refused = 0;
  for (int i = 0; i < over_cap; ++i) {
    int fd = ConnectFrom("127.0.1.1", broker.port());
    refused += fd >= 0 && ClosedBy(fd, Clock::now() + seconds(3));
    if (fd >= 0) ::close(fd);
  }
  EXPECT_EQ(refused, over_cap);
  // The rest of the flood, while an ordinary client (another address) is served.
  std::thread ordinary([&] { ExpectKcatServes(broker, "during.idle.flood"); });
  for (int a = 1; a < addresses; ++a) {
    for (int i = 0; i < per_address; ++i) open_from("127.0.1." + std::to_string(a + 1));
  }
  ordinary.join();
  long rss_with_idle = RssKib(broker.pid());

  // Every idle connection is closed by the broker after the pre-auth timeout
  // (with room for a loaded machine).
  int closed = 0;
  for (std::size_t i = 0; i < fds.size(); ++i) {
    closed += ClosedBy(fds[i], opened[i] + seconds(10 + 30));
  }
  EXPECT_EQ(closed, idle);
  for (int fd : fds) ::close(fd);
  EXPECT_TRUE(LogHas(broker,
                     "127.0.1.1: connection refused: 500 connections open from this "
                     "address, the limit per address"))
      << broker.log().substr(0, 4000);
  EXPECT_TRUE(LogHas(broker, ": did not authenticate within 10000 ms of connecting; closing"));
  ExpectKcatServes(broker, "after.idle.flood");
  RecordReliability("bad_input", {{"broker_idle_connections_closed", closed},
                                  {"broker_connections_refused_over_cap", refused},
                                  {"max_broker_rss_mib_with_idle_connections",
                                   static_cast<double>(rss_with_idle / 1024)}});
}

TEST(BrokerHostile, ConnectionsPastTheOverallCapAreClosedAtOnce) {
  BrokerProcess broker(SaslArgs({"--max-connections", "20", "--max-connections-per-address", "0"}));
  broker.Start();
  // Start()'s readiness probe counts until the broker sees it close.
  std::this_thread::sleep_for(seconds(1));
  std::vector<int> fds;
  for (int i = 0; i < 20; ++i) fds.push_back(ConnectFrom("127.0.2.1", broker.port()));
  std::this_thread::sleep_for(milliseconds(300));  // all accepted and counted
  int fd = ConnectFrom("127.0.2.2", broker.port());
  EXPECT_TRUE(ClosedBy(fd, Clock::now() + seconds(3)));
  ::close(fd);
  EXPECT_TRUE(LogHas(broker, "127.0.2.2: connection refused: 20 connections open, the limit"))
      << broker.log();
  for (int f : fds) {
    EXPECT_FALSE(ClosedBy(f, Clock::now() + milliseconds(10)));
  }
  for (int f : fds) ::close(f);
  std::this_thread::sleep_for(milliseconds(300));  // their threads end, the count drops
  ExpectKcatServes(broker, "after.cap");
}

// A frame header, then one byte a second, on `connections` connections.
// Returns the seconds until the broker closed each (-1: not within `limit`).
std::vector<double> Slowloris(const BrokerProcess& b, int connections, bool authenticate,
                              seconds limit) {
  std::vector<int> fds;
  for (int i = 0; i < connections; ++i) {
    int fd = ConnectFrom("127.0.3.1", b.port());
    if (authenticate) {
      EXPECT_TRUE(Authenticate(fd));
    }
    EXPECT_TRUE(SendAll(fd, SizePrefix(200)));
    fds.push_back(fd);
  }
  auto start = Clock::now();
  std::vector<double> closed_after(fds.size(), -1);
  std::size_t open = fds.size();
  while (open > 0 && Clock::now() - start < limit) {
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (closed_after[i] >= 0) continue;
      if (ClosedBy(fds[i], Clock::now()) || !SendAll(fds[i], "x")) {
        closed_after[i] = std::chrono::duration<double>(Clock::now() - start).count();
        --open;
      }
    }
    std::this_thread::sleep_for(seconds(1));
  }
  for (int fd : fds) ::close(fd);
  return closed_after;
}

TEST(BrokerHostile, SlowlorisBeforeAuthenticationIsClosedWithinThePreauthTimeout) {
  BrokerProcess broker(SaslArgs({"--preauth-timeout-ms", "10000"}));
  broker.Start();
  std::vector<double> closed;
  std::thread loris([&] { closed = Slowloris(broker, 20, false, seconds(30)); });
  std::this_thread::sleep_for(seconds(2));
  ExpectKcatServes(broker, "during.slowloris");
  loris.join();
  double worst = 0;
  for (double s : closed) {
    EXPECT_GE(s, 0) << "a slowloris connection outlived 30 s";
    EXPECT_LE(s, 10 + 3) << "closed later than the 10 s pre-auth bound";
    worst = std::max(worst, s);
  }
  EXPECT_TRUE(LogHas(broker, "127.0.3.1: request started but not complete in time"))
      << broker.log();
  ExpectKcatServes(broker, "after.slowloris");
  RecordReliability("bad_input", {{"broker_slowloris_closed", static_cast<double>(closed.size())},
                                  {"max_broker_slowloris_close_seconds", worst}});
}

TEST(BrokerHostile, AfterAuthenticationSlowFramesAndIdleConnectionsAreClosedToo) {
  BrokerProcess broker(SaslArgs({"--request-timeout-ms", "3000", "--idle-timeout-ms", "4000"}));
  broker.Start();
  auto closed = Slowloris(broker, 3, true, seconds(20));
  for (double s : closed) {
    EXPECT_GE(s, 0);
    EXPECT_LE(s, 3 + 3) << "closed later than the 3 s request bound";
  }
  int fd = ConnectFrom("127.0.3.2", broker.port());
  ASSERT_TRUE(Authenticate(fd));
  auto start = Clock::now();
  EXPECT_FALSE(ClosedBy(fd, start + seconds(2))) << "an authenticated connection may idle a while";
  EXPECT_TRUE(ClosedBy(fd, start + seconds(15))) << "but not past --idle-timeout-ms";
  ::close(fd);
  EXPECT_TRUE(LogHas(broker, "127.0.3.2: idle for 4000 ms; closing")) << broker.log();
  ExpectKcatServes(broker, "after.auth.slowloris");
}

}  // namespace
}  // namespace sluice::testing
