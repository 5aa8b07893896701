#include "broker/stream.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include <fmt/format.h>

namespace sluice::broker {

Stream::~Stream() {
  if (ssl_) SSL_free(ssl_);
}

int Stream::Wait(short events, Clock::time_point deadline) const {
  while (true) {
    int timeout = -1;
    if (deadline != Clock::time_point::max()) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return 0;
      timeout = static_cast<int>(std::min<std::int64_t>(left, 60000));
    }
    pollfd p{fd_, events, 0};
    int r = ::poll(&p, 1, timeout);
    if (r > 0) return 1;
    if (r < 0 && errno != EINTR) return -1;
  }
}

Stream::Handshake Stream::StartTls(SSL_CTX* ctx, Clock::time_point deadline, std::string* why) {
  auto failed = [why](std::string reason) {
    *why = std::move(reason);
    return Handshake::kFailed;
  };
  // A connection closed before its first byte is someone checking the port.
  int ready = Wait(POLLIN, deadline);
  if (ready == 0) return failed("not complete in time");
  char first = 0;
  if (ready > 0 && ::recv(fd_, &first, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
    return Handshake::kPeerLeft;
  ERR_clear_error();
  ssl_ = SSL_new(ctx);
  if (!ssl_) return failed(common::TakeOpenSslErrors());
  // Partial writes, retried from wherever the buffer then is; idle
  // connections give their record buffers back.
  SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                         SSL_MODE_RELEASE_BUFFERS);
  if (SSL_set_fd(ssl_, fd_) != 1) return failed(common::TakeOpenSslErrors());
  int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK) < 0)
    return failed(fmt::format("fcntl: {}", std::strerror(errno)));
  while (true) {
    ERR_clear_error();
    errno = 0;
    int r = SSL_accept(ssl_);
    if (r == 1) return Handshake::kDone;
    int e = SSL_get_error(ssl_, r);
    short events = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
    if (events == 0) {
      if (ERR_peek_error() != 0) return failed(common::TakeOpenSslErrors());
      return failed(e == SSL_ERROR_SYSCALL && errno != 0
                        ? fmt::format("the peer went away: {}", std::strerror(errno))
                        : std::string("the peer went away"));
    }
    int w = Wait(events, deadline);
    if (w == 0) return failed("not complete in time");
    if (w < 0) return failed(fmt::format("poll: {}", std::strerror(errno)));
  }
}

ssize_t Stream::ReadSome(char* buf, std::size_t n) {
  if (!ssl_) {
    ssize_t r = ::recv(fd_, buf, n, MSG_DONTWAIT);
    if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return kWouldBlock;
    return r < 0 ? -1 : r;
  }
  ERR_clear_error();
  int r = SSL_read(ssl_, buf, static_cast<int>(std::min<std::size_t>(n, INT_MAX)));
  if (r > 0) {
    want_ = POLLIN;
    return r;
  }
  switch (SSL_get_error(ssl_, r)) {
    case SSL_ERROR_WANT_READ:
      want_ = POLLIN;
      return kWouldBlock;
    case SSL_ERROR_WANT_WRITE:
      want_ = POLLOUT;
      return kWouldBlock;
    case SSL_ERROR_ZERO_RETURN:
      return 0;
    default:
      ERR_clear_error();
      return -1;
  }
}

bool Stream::HasBuffered() const { return ssl_ && SSL_pending(ssl_) > 0; }

bool Stream::Write(const char* buf, std::size_t n, bool more) {
  if (ssl_) {
    if (pending_.size() + n <= kTlsBuffer) {
      pending_.append(buf, n);
      return more || FlushTls();
    }
    if (!FlushTls()) return false;
    if (more && n < kTlsBuffer) {
      pending_.append(buf, n);
      return true;
    }
    return WriteTls(buf, n);
  }
  int flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0);
  while (n > 0) {
    ssize_t r = ::send(fd_, buf, n, flags);
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    buf += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

bool Stream::SendSlice(const protocol::FileSlice& s) {
  off_t at = s.offset;
  std::int64_t left = s.length;
  if (ssl_) {
    // No sendfile through TLS: the slice goes through memory, a buffer's
    // worth at a time, gathered with what precedes and follows it.
    while (left > 0) {
      if (pending_.size() >= kTlsBuffer && !FlushTls()) return false;
      std::size_t room = kTlsBuffer - pending_.size();
      std::size_t want = static_cast<std::size_t>(std::min<std::int64_t>(left, room));
      std::size_t had = pending_.size();
      pending_.resize(had + want);
      ssize_t r = ::pread(s.fd, pending_.data() + had, want, at);
      if (r < 0 && errno == EINTR) {
        pending_.resize(had);
        continue;
      }
      pending_.resize(had + static_cast<std::size_t>(std::max<ssize_t>(r, 0)));
      if (r <= 0) return false;
      at += r;
      left -= r;
    }
    return true;
  }
  while (left > 0) {
    ssize_t r = ::sendfile(fd_, s.fd, &at, static_cast<std::size_t>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EINVAL || errno == ENOSYS)) {
      // A file system without sendfile support: copy the rest through memory.
      auto rest = protocol::ReadSlice({s.fd, at, left, nullptr});
      return rest && Write(rest->data(), rest->size());
    }
    if (r <= 0) return false;
    left -= r;
  }
  return true;
}

bool Stream::FlushTls() {
  bool ok = WriteTls(pending_.data(), pending_.size());
  pending_.clear();
  if (pending_.capacity() > kTlsBuffer * 2) std::string().swap(pending_);
  return ok;
}

bool Stream::WriteTls(const char* buf, std::size_t n) {
  while (n > 0) {
    ERR_clear_error();
    int r = SSL_write(ssl_, buf, static_cast<int>(std::min<std::size_t>(n, 1 << 30)));
    if (r > 0) {
      buf += r;
      n -= static_cast<std::size_t>(r);
      continue;
    }
    int e = SSL_get_error(ssl_, r);
    if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
      int w = Wait(e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, Clock::now() + send_timeout_);
      if (w == 0) {
        errno = EAGAIN;  // as a plain send past SO_SNDTIMEO says
        return false;
      }
      if (w < 0) return false;
      continue;
    }
    ERR_clear_error();
    if (errno == EAGAIN || errno == EWOULDBLOCK) errno = EPIPE;
    return false;
  }
  return true;
}

void Stream::Close() {
  if (!ssl_) return;
  ERR_clear_error();
  SSL_shutdown(ssl_);  // sends close_notify if it can; does not wait for the peer's
  ERR_clear_error();
}

}  // namespace sluice::broker
