// One connection's bytes, both ways: straight over the socket, or through
// TLS when the listener has a certificate (BrokerOptions::tls). TLS starts
// at the first byte, as Kafka's SSL listeners do; the Kafka protocol above
// it is the same. Reads never wait (the server polls, with its deadlines,
// for wait_events()); writes wait at most the send timeout.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>

#include "broker/protocol/wire.h"
#include "common/status.h"
#include "common/tls.h"

typedef struct ssl_st SSL;  // NOLINT: as <openssl/types.h> declares it

namespace sluice::broker {

class Stream {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr ssize_t kWouldBlock = -2;

  // `fd` as accepted, blocking; plain writes are bounded by its SO_SNDTIMEO,
  // TLS writes by `send_timeout`.
  Stream(int fd, std::chrono::milliseconds send_timeout) : fd_(fd), send_timeout_(send_timeout) {}
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // The TLS handshake as the server, done by `deadline`; the socket turns
  // non-blocking. kPeerLeft: the peer hung up before sending a byte (a port
  // probe); kFailed: `why` says why (OpenSSL's reason, the peer hanging up
  // mid-way, the deadline). Either way the stream is then unusable.
  enum class Handshake { kDone, kPeerLeft, kFailed };
  Handshake StartTls(SSL_CTX* ctx, Clock::time_point deadline, std::string* why);
  bool tls() const { return ssl_ != nullptr; }
  int fd() const { return fd_; }

  // What is there to read: > 0 bytes, 0 the peer closed, -1 an error, or
  // kWouldBlock (poll for wait_events() and call again).
  ssize_t ReadSome(char* buf, std::size_t n);
  // Bytes TLS has already decrypted: readable without the socket.
  bool HasBuffered() const;
  short wait_events() const { return want_; }

  // Sends all of `buf`. `more`: more follows at once, so a short piece may
  // wait to leave with it (MSG_MORE; under TLS, one record). False on an
  // error, with errno EAGAIN when the peer took nothing for the send timeout.
  bool Write(const char* buf, std::size_t n, bool more = false);
  // A file slice: sendfile from the page cache, or read and encrypted under
  // TLS. A file shorter than the slice fails (the frame promised its bytes).
  bool SendSlice(const protocol::FileSlice& s);
  // Under TLS, close_notify, without waiting for the peer's.
  void Close();

 private:
  static constexpr std::size_t kTlsBuffer = 64 << 10;  // bytes gathered per TLS write

  // 1 ready, 0 `deadline` passed, -1 an error.
  int Wait(short events, Clock::time_point deadline) const;
  bool WriteTls(const char* buf, std::size_t n);
  bool FlushTls();

  int fd_;
  std::chrono::milliseconds send_timeout_;
  SSL* ssl_ = nullptr;
  short want_ = POLLIN;
  std::string pending_;  // TLS: bytes gathered for the next write
};

}  // namespace sluice::broker
