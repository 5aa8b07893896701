#include "broker/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "broker/protocol/wire.h"
#include "broker/request_processor.h"

namespace sluice::broker {

namespace {

// Size-prefixed request frames through one buffer: clients keep many
// requests in flight, so one recv often brings several, where reading each
// frame's size and then its body took two recvs per request.
class FrameReader {
 public:
  enum class Status { kFrame, kClosed, kTooLarge };

  FrameReader(int fd, std::int32_t max_frame) : fd_(fd), max_frame_(max_frame) {}

  // The next frame (after its size prefix), valid until the next call.
  Status Next(std::string_view* frame) {
    if (!Fill(4)) return Status::kClosed;
    std::int32_t size = protocol::LoadBe32(buf_.data() + start_);
    if (size < 0 || size > max_frame_) {
      too_large_ = size;
      return Status::kTooLarge;
    }
    std::size_t total = 4 + static_cast<std::size_t>(size);
    if (!Fill(total)) return Status::kClosed;
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
  static constexpr std::size_t kMinRead = 64 << 10;  // per connection, kept

  // Makes `n` bytes from start_ available, reading as much as the socket has.
  bool Fill(std::size_t n) {
    if (end_ - start_ >= n) return true;
    if (start_ > 0) {  // keep the unread part at the front; it is less than `n`
      std::memmove(buf_.data(), buf_.data() + start_, end_ - start_);
      end_ -= start_;
      start_ = 0;
    }
    if (buf_.size() < std::max(n, kMinRead)) buf_.resize(std::max(n, kMinRead));
    while (end_ < n) {
      ssize_t r = ::recv(fd_, buf_.data() + end_, buf_.size() - end_, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      end_ += static_cast<std::size_t>(r);
    }
    return true;
  }

  int fd_;
  std::int32_t max_frame_;
  std::int32_t too_large_ = 0;
  std::string buf_;
  std::size_t start_ = 0;  // unread bytes are buf_[start_, end_)
  std::size_t end_ = 0;
};

// `more` (MSG_MORE) holds a short piece back so it leaves in one segment
// with what follows, e.g. a fetch response header with its record batches.
bool WriteFull(int fd, const char* buf, std::size_t n, bool more = false) {
  int flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0);
  while (n > 0) {
    ssize_t r = ::send(fd, buf, n, flags);
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    buf += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

// Sends a file slice from the page cache to the socket. A file shorter than
// the slice fails: the frame's length prefix already promised those bytes.
bool SendSlice(int fd, const protocol::FileSlice& s) {
  off_t at = s.offset;
  std::int64_t left = s.length;
  while (left > 0) {
    ssize_t r = ::sendfile(fd, s.fd, &at, static_cast<std::size_t>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EINVAL || errno == ENOSYS)) {
      // A file system without sendfile support: copy the rest through memory.
      auto rest = protocol::ReadSlice({s.fd, at, left, nullptr});
      return rest && WriteFull(fd, rest->data(), rest->size());
    }
    if (r <= 0) return false;
    left -= r;
  }
  return true;
}

bool SendFrame(int fd, const protocol::Frame& f) {
  std::size_t done = 0;
  for (const auto& [at, slice] : f.files) {
    if (!WriteFull(fd, f.bytes.data() + done, at - done, /*more=*/true)) return false;
    if (!SendSlice(fd, slice)) return false;
    done = at;
  }
  return WriteFull(fd, f.bytes.data() + done, f.bytes.size() - done);
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
  if (::listen(s->listen_fd_, 128) != 0)
    return common::Internal(fmt::format("listen: {}", std::strerror(errno)));
  socklen_t len = sizeof addr;
  ::getsockname(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  s->port_ = ntohs(addr.sin_port);
  if (o.port == 0) broker->set_advertised_port(s->port_);
  s->acceptor_ = std::thread([p = s.get()] { p->AcceptLoop(); });
  spdlog::info("broker listening on {}:{} (advertised {}:{})", host, s->port_,
               broker->advertised_host(), broker->advertised_port());
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

void Server::AcceptLoop() {
  while (!stopping_) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
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
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ReapFinished();
    std::lock_guard lock(mu_);
    if (stopping_) {
      ::close(fd);
      break;
    }
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    Connection* raw = c.get();
    connections_.push_back(std::move(c));
    raw->thread = std::thread([this, raw] {
      Serve(raw);
      raw->done = true;
    });
  }
}

void Server::Serve(Connection* c) {
  IgnoreSigpipeInThisThread();
  Broker& b = *broker_;
  std::string peer = "unknown";
  {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    if (::getpeername(c->fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      char buf[INET_ADDRSTRLEN] = {};
      ::inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
      peer = buf;
    }
  }
  RequestProcessor processor(&b, peer);
  FrameReader reader(c->fd, b.options().max_request_bytes);
  // Replies held back while pipelined produces follow, then sent in one go.
  // Only before a Produce: it never waits, so nothing held waits on a long poll.
  std::string held;
  auto flush = [&] {
    bool ok = WriteFull(c->fd, held.data(), held.size());
    held.clear();
    return ok;
  };
  while (!stopping_) {
    std::string_view frame;
    auto status = reader.Next(&frame);
    if (status == FrameReader::Status::kTooLarge) {
      spdlog::warn("{}: request of {} bytes exceeds the limit; closing", peer, reader.too_large());
    }
    if (status != FrameReader::Status::kFrame) break;

    protocol::Frame response;
    auto outcome = processor.Process(frame, &response);
    if (outcome == RequestProcessor::Outcome::kClose) break;
    if (outcome == RequestProcessor::Outcome::kRespond) {
      if (response.files.empty()) {
        held += response.bytes;
      } else if (!WriteFull(c->fd, held.data(), held.size(), /*more=*/true) ||
                 !SendFrame(c->fd, response)) {
        break;
      } else {
        held.clear();
      }
    }
    if (processor.hang_up_after_reply()) break;  // after its reply, flushed below
    if (!reader.ProduceIsBuffered() && !flush()) break;
  }
  flush();  // replies held when the loop ends (e.g. before a bad request) still go out
  ::shutdown(c->fd, SHUT_RDWR);
}

}  // namespace sluice::broker
