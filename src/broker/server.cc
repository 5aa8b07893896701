#include "broker/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "broker/protocol/wire.h"
#include "broker/request_processor.h"
#include "broker/stream.h"

namespace sluice::broker {

namespace {

using Clock = std::chrono::steady_clock;

// Size-prefixed request frames through one buffer: clients keep many
// requests in flight, so one recv often brings several, where reading each
// frame's size and then its body took two recvs per request. The buffer
// grows with the bytes that arrive, never to a size a prefix merely declares.
class FrameReader {
 public:
  enum class Status { kFrame, kClosed, kTooLarge, kIdle, kSlow };

  // What the next frame may be.
  struct Limits {
    std::int64_t max_frame = 0;  // larger is refused on the size prefix
    // Until when to wait for the frame's first byte.
    Clock::time_point idle_deadline = Clock::time_point::max();
    // Once started, the frame must be in within this, and before `latest`.
    Clock::duration frame_time = Clock::duration::max();
    Clock::time_point latest = Clock::time_point::max();
  };

  explicit FrameReader(Stream* stream) : stream_(stream) {}

  // The next frame (after its size prefix), valid until the next call.
  Status Next(std::string_view* frame, const Limits& limits) {
    chunk_ = static_cast<std::size_t>(
        std::clamp<std::int64_t>(limits.max_frame + 4, 4, static_cast<std::int64_t>(kMinRead)));
    if (start_ == end_) {
      if (buf_.size() > kKeepBytes) {  // a large request is done: give its memory back
        std::string().swap(buf_);
        start_ = end_ = 0;
      }
      int w = WaitReadable(limits.idle_deadline);
      if (w == 0) return Status::kIdle;
      if (w < 0) return Status::kClosed;
    }
    Clock::time_point deadline = limits.latest;
    auto now = Clock::now();
    if (limits.frame_time < deadline - now) deadline = now + limits.frame_time;
    Status st = Fill(4, deadline);
    if (st != Status::kFrame) return st;
    std::int32_t size = protocol::LoadBe32(buf_.data() + start_);
    if (size < 0 || size > limits.max_frame) {
      too_large_ = size;
      return Status::kTooLarge;
    }
    std::size_t total = 4 + static_cast<std::size_t>(size);
    st = Fill(total, deadline);
    if (st != Status::kFrame) return st;
    *frame = std::string_view(buf_.data() + start_ + 4, total - 4);
    start_ += total;
    return Status::kFrame;
  }

  // Whether the next request is a Produce that is already here in full.
  bool ProduceIsBuffered() const {
    std::size_t have = end_ - start_;
    if (have < 6) return false;
    std::int32_t size = protocol::LoadBe32(buf_.data() + start_);
    return size >= 2 && have >= 4 + static_cast<std::size_t>(size) &&
           protocol::LoadBe16(buf_.data() + start_ + 4) == 0;
  }

  std::int32_t too_large() const { return too_large_; }

 private:
  static constexpr std::size_t kMinRead = 64 << 10;   // read size once authenticated
  static constexpr std::size_t kKeepBytes = 1 << 20;  // kept between requests

  // 1 readable (or hung up), 0 the deadline passed, -1 an error.
  int WaitReadable(Clock::time_point deadline) {
    if (stream_->HasBuffered()) return 1;
    while (true) {
      int timeout = -1;
      if (deadline != Clock::time_point::max()) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return 0;
        timeout = static_cast<int>(std::min<std::int64_t>(left, 60000));
      }
      pollfd p{stream_->fd(), stream_->wait_events(), 0};
      int r = ::poll(&p, 1, timeout);
      if (r > 0) return 1;
      if (r < 0 && errno != EINTR) return -1;
    }
  }

  // Makes `n` bytes from start_ available, reading as much as the socket
  // has, until `deadline` (then kSlow).
  Status Fill(std::size_t n, Clock::time_point deadline) {
    if (end_ - start_ >= n) return Status::kFrame;
    if (start_ > 0) {  // keep the unread part at the front; it is less than `n`
      std::memmove(buf_.data(), buf_.data() + start_, end_ - start_);
      end_ -= start_;
      start_ = 0;
    }
    while (end_ < n) {
      if (end_ == buf_.size()) {  // full: double it, up to what the frame needs
        buf_.resize(std::max(chunk_, std::min(n, std::max(buf_.size() * 2, chunk_))));
      }
      int w = WaitReadable(deadline);
      if (w == 0) return Status::kSlow;
      if (w < 0) return Status::kClosed;
      ssize_t r = stream_->ReadSome(buf_.data() + end_, buf_.size() - end_);
      if (r == Stream::kWouldBlock) continue;
      if (r <= 0) return Status::kClosed;
      end_ += static_cast<std::size_t>(r);
    }
    return Status::kFrame;
  }

  Stream* stream_;
  std::size_t chunk_ = 4;  // the least the buffer holds: read-ahead
  std::int32_t too_large_ = 0;
  std::string buf_;
  std::size_t start_ = 0;  // unread bytes are buf_[start_, end_)
  std::size_t end_ = 0;
};

bool SendFrame(Stream& stream, const protocol::Frame& f) {
  std::size_t done = 0;
  for (const auto& [at, slice] : f.files) {
    if (!stream.Write(f.bytes.data() + done, at - done, /*more=*/true)) return false;
    if (!stream.SendSlice(slice)) return false;
    done = at;
  }
  return stream.Write(f.bytes.data() + done, f.bytes.size() - done);
}

// sendfile has no MSG_NOSIGNAL: a peer that hung up would raise SIGPIPE and
// kill the broker. Blocked in the connection's thread, it turns into EPIPE.
void IgnoreSigpipeInThisThread() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

}  // namespace

common::Result<std::unique_ptr<Server>> Server::Start(Broker* broker) {
  auto s = std::unique_ptr<Server>(new Server(broker));
  const auto& o = broker->options();
  if (o.tls.enabled()) {
    auto ctx = common::NewServerTlsContext(o.tls);
    if (!ctx.ok()) return ctx.status();
    s->tls_ = std::move(ctx).value();
    // Clients reconnect rarely and cheaply: no session tickets or cache to keep.
    SSL_CTX_set_num_tickets(s->tls_.get(), 0);
    SSL_CTX_set_session_cache_mode(s->tls_.get(), SSL_SESS_CACHE_OFF);
  }
  s->listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->listen_fd_ < 0) return common::Internal(fmt::format("socket: {}", std::strerror(errno)));
  int one = 1;
  ::setsockopt(s->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(o.port));
  std::string host = o.host.empty() ? "0.0.0.0" : o.host;
  if (host == "localhost") host = "127.0.0.1";
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return common::InvalidArgument(fmt::format("listen host must be an IPv4 address: {}", o.host));
  }
  if (::bind(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return common::Unavailable(fmt::format("bind {}:{}: {}", host, o.port, std::strerror(errno)));
  }
  // A burst of connects waits in the queue rather than retrying SYNs for seconds.
  if (::listen(s->listen_fd_, 1024) != 0)
    return common::Internal(fmt::format("listen: {}", std::strerror(errno)));
  socklen_t len = sizeof addr;
  ::getsockname(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  s->port_ = ntohs(addr.sin_port);
  if (o.port == 0) broker->set_advertised_port(s->port_);
  s->acceptor_ = std::thread([p = s.get()] { p->AcceptLoop(); });
  spdlog::info("broker listening on {}:{} (advertised {}:{}){}", host, s->port_,
               broker->advertised_host(), broker->advertised_port(),
               s->tls_ ? fmt::format(", TLS with {}", o.tls.cert_file) : std::string());
  return s;
}

Server::~Server() { Stop(); }

void Server::Stop() {
  if (stopping_.exchange(true)) return;
  ::shutdown(listen_fd_, SHUT_RDWR);
  ::close(listen_fd_);
  if (acceptor_.joinable()) acceptor_.join();
  std::list<std::unique_ptr<Connection>> conns;
  {
    std::lock_guard lock(mu_);
    for (auto& c : connections_) ::shutdown(c->fd, SHUT_RDWR);
    conns.swap(connections_);
  }
  broker_->Shutdown();  // wakes long-polling fetches and waiting joins
  for (auto& c : conns) {
    if (c->thread.joinable()) c->thread.join();
    ::close(c->fd);
  }
}

void Server::RefusalLog::Warn(const std::string& line) {
  constexpr int kPerSecond = 50;
  std::int64_t suppressed = 0;
  {
    std::lock_guard lock(mu_);
    auto now = Clock::now();
    if (now - window_start_ >= std::chrono::seconds(1)) {
      window_start_ = now;
      in_window_ = 0;
    }
    if (++in_window_ > kPerSecond) {
      ++suppressed_;
      return;
    }
    std::swap(suppressed, suppressed_);
  }
  if (suppressed > 0) {
    spdlog::warn("{} (and {} more refusals before it, not logged)", line, suppressed);
  } else {
    spdlog::warn("{}", line);
  }
}

void Server::ReapFinished() {
  std::lock_guard lock(mu_);
  for (auto it = connections_.begin(); it != connections_.end();) {
    if ((*it)->done) {
      (*it)->thread.join();
      ::close((*it)->fd);
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
}

void Server::Release(const Connection* c) {
  std::lock_guard lock(mu_);
  --open_;
  auto it = per_address_.find(c->address);
  if (it != per_address_.end() && --it->second <= 0) per_address_.erase(it);
}

void Server::AcceptLoop() {
  const BrokerOptions& o = broker_->options();
  while (!stopping_) {
    sockaddr_in addr{};
    socklen_t addr_len = sizeof addr;
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &addr_len, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_) break;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) {
        spdlog::warn("accept: {}", std::strerror(errno));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      break;
    }
    char text[INET_ADDRSTRLEN] = "unknown";
    ::inet_ntop(AF_INET, &addr.sin_addr, text, sizeof text);
    std::string peer = text;
    ReapFinished();
    std::string refusal;
    {
      std::lock_guard lock(mu_);
      if (stopping_) {
        ::close(fd);
        break;
      }
      auto from = per_address_.find(addr.sin_addr.s_addr);
      int from_peer = from == per_address_.end() ? 0 : from->second;
      if (o.max_connections > 0 && open_ >= o.max_connections) {
        refusal =
            fmt::format("{}: connection refused: {} connections open, the limit", peer, open_);
      } else if (o.max_connections_per_address > 0 && from_peer >= o.max_connections_per_address) {
        refusal = fmt::format(
            "{}: connection refused: {} connections open from this address, "
            "the limit per address",
            peer, from_peer);
      } else {
        ++open_;
        ++per_address_[addr.sin_addr.s_addr];
        auto c = std::make_unique<Connection>();
        c->fd = fd;
        c->address = addr.sin_addr.s_addr;
        c->peer = peer;
        Connection* raw = c.get();
        try {
          raw->thread = std::thread([this, raw] {
            Serve(raw);
            Release(raw);
            raw->done = true;
          });
          connections_.push_back(std::move(c));
        } catch (const std::system_error& e) {  // out of threads or memory
          --open_;
          if (--per_address_[addr.sin_addr.s_addr] <= 0) per_address_.erase(addr.sin_addr.s_addr);
          refusal = fmt::format("{}: connection refused: no thread for it ({})", peer, e.what());
        }
      }
    }
    if (!refusal.empty()) {
      refusals_.Warn(refusal);
      ::close(fd);  // before anything is read or allocated for it
    }
  }
}

void Server::Serve(Connection* c) {
  IgnoreSigpipeInThisThread();
  Broker& b = *broker_;
  const BrokerOptions& o = b.options();
  const std::string& peer = c->peer;
  {
    int one = 1;
    ::setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // A client that stops reading its responses: a send that cannot go on
    // for this long fails, and the connection closes.
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(o.request_timeout_ms / 1000);
    tv.tv_usec = static_cast<suseconds_t>((o.request_timeout_ms % 1000) * 1000);
    ::setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  RequestProcessor processor(&b, peer);
  Stream stream(c->fd, std::chrono::milliseconds(o.request_timeout_ms));
  FrameReader reader(&stream);
  const auto connected = Clock::now();
  const auto preauth_deadline = connected + std::chrono::milliseconds(o.preauth_timeout_ms);
  // TLS first, within the time the connection has to authenticate.
  if (tls_) {
    std::string why;
    auto handshake = stream.StartTls(tls_.get(), preauth_deadline, &why);
    if (handshake != Stream::Handshake::kDone) {
      if (handshake == Stream::Handshake::kFailed)
        refusals_.Warn(fmt::format("{}: TLS handshake failed ({}); closing", peer, why));
      ::shutdown(c->fd, SHUT_RDWR);
      return;
    }
  }
  // Authenticated (or no SASL) and past its first request: the long idle
  // timeout applies from then on.
  bool settled = false;
  auto last_reply = connected;
  // Replies held back while pipelined produces follow, then sent in one go.
  // Only before a Produce: it never waits, so nothing held waits on a long
  // poll; and never more than kMaxHeld bytes.
  constexpr std::size_t kMaxHeld = 1 << 20;
  std::string held;
  bool send_timed_out = false;  // the client stopped reading
  auto sent = [&](bool ok) {
    if (!ok && (errno == EAGAIN || errno == EWOULDBLOCK)) send_timed_out = true;
    return ok;
  };
  auto flush = [&] {
    bool ok = sent(stream.Write(held.data(), held.size()));
    held.clear();
    return ok;
  };
  while (!stopping_) {
    FrameReader::Limits limits;
    limits.max_frame = processor.max_frame_bytes();
    limits.frame_time = std::chrono::milliseconds(o.request_timeout_ms);
    if (settled) {
      limits.idle_deadline = last_reply + std::chrono::milliseconds(o.idle_timeout_ms);
    } else {
      limits.idle_deadline = limits.latest = preauth_deadline;
    }
    std::string_view frame;
    auto status = reader.Next(&frame, limits);
    if (status == FrameReader::Status::kTooLarge) {
      refusals_.Warn(fmt::format("{}: request of {} bytes exceeds the limit of {}{}; closing", peer,
                                 reader.too_large(), limits.max_frame,
                                 processor.authenticated() ? "" : " before authentication"));
    } else if (status == FrameReader::Status::kIdle) {
      if (settled) {
        refusals_.Warn(fmt::format("{}: idle for {} ms; closing", peer, o.idle_timeout_ms));
      } else {
        refusals_.Warn(
            fmt::format("{}: {} within {} ms of connecting; closing", peer,
                        b.requires_authentication() ? "did not authenticate" : "sent no request",
                        o.preauth_timeout_ms));
      }
    } else if (status == FrameReader::Status::kSlow) {
      refusals_.Warn(fmt::format(
          "{}: request started but not complete in time ({} ms per request{}); closing", peer,
          o.request_timeout_ms,
          settled ? ""
                  : fmt::format(", {} ms from connecting to authenticate", o.preauth_timeout_ms)));
    }
    if (status != FrameReader::Status::kFrame) break;

    protocol::Frame response;
    auto outcome = processor.Process(frame, &response);
    if (outcome == RequestProcessor::Outcome::kClose) break;
    if (outcome == RequestProcessor::Outcome::kRespond) {
      if (response.files.empty()) {
        held += response.bytes;
      } else if (!sent(stream.Write(held.data(), held.size(), /*more=*/true)) ||
                 !sent(SendFrame(stream, response))) {
        break;
      } else {
        held.clear();
      }
    }
    settled = processor.authenticated();
    last_reply = Clock::now();
    if (processor.hang_up_after_reply()) break;  // after its reply, flushed below
    if ((held.size() >= kMaxHeld || !reader.ProduceIsBuffered()) && !flush()) break;
  }
  flush();  // replies held when the loop ends (e.g. before a bad request) still go out
  if (send_timed_out) {
    refusals_.Warn(fmt::format("{}: did not read its responses within {} ms; closing", peer,
                               o.request_timeout_ms));
  }
  stream.Close();
  ::shutdown(c->fd, SHUT_RDWR);
}

}  // namespace sluice::broker
