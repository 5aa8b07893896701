// The TCP side: accepts connections and runs one thread per connection that
// reads size-prefixed requests, dispatches them in order (as Kafka does per
// connection) and writes the responses. Anything malformed, oversized or of
// an unknown API closes that connection; nothing a client sends stops the broker.
// Before it authenticates a connection is kept cheap: small frames only, a
// deadline to authenticate, caps on connections overall and per address
// (broker.h's BrokerOptions says each limit). With a certificate, every
// connection is TLS from its first byte (stream.h); one that does not
// complete the handshake in that time is closed like any other.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "broker/broker.h"
#include "common/status.h"
#include "common/tls.h"

namespace sluice::broker {

class Server {
 public:
  // Binds options().host:port (port 0 picks a free one and updates the
  // advertised port) and starts accepting.
  static common::Result<std::unique_ptr<Server>> Start(Broker* broker);
  ~Server();

  int port() const { return port_; }
  // Stops accepting, closes every connection and joins their threads.
  void Stop();

 private:
  struct Connection {
    int fd = -1;
    std::uint32_t address = 0;  // the peer's IPv4 address, network order
    std::string peer;
    std::thread thread;
    std::atomic<bool> done{false};
  };

  // Refusals name their peer in the log, but a flood of them must not fill
  // the disk: past a number of lines a second the rest are only counted, and
  // the count goes out with the next line.
  class RefusalLog {
   public:
    void Warn(const std::string& line);

   private:
    std::mutex mu_;
    std::chrono::steady_clock::time_point window_start_{};
    int in_window_ = 0;
    std::int64_t suppressed_ = 0;
  };

  explicit Server(Broker* broker) : broker_(broker) {}
  void AcceptLoop();
  void Serve(Connection* c);
  void ReapFinished();
  // Drops a finished connection from the counts the caps look at.
  void Release(const Connection* c);

  Broker* broker_;
  common::SslCtxPtr tls_;  // set: connections speak TLS (BrokerOptions::tls)
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::list<std::unique_ptr<Connection>> connections_;
  int open_ = 0;                                        // connections being served
  std::unordered_map<std::uint32_t, int> per_address_;  // of those, by peer address
  RefusalLog refusals_;
};

}  // namespace sluice::broker
