// The TCP side: accepts connections and runs one thread per connection that
// reads size-prefixed requests, dispatches them in order (as Kafka does per
// connection) and writes the responses. Anything malformed, oversized or of
// an unknown API closes that connection; nothing a client sends stops the broker.
#pragma once

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include "broker/broker.h"
#include "common/status.h"

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
    std::thread thread;
    std::atomic<bool> done{false};
  };

  explicit Server(Broker* broker) : broker_(broker) {}
  void AcceptLoop();
  void Serve(Connection* c);
  void ReapFinished();

  Broker* broker_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::list<std::unique_ptr<Connection>> connections_;
};

}  // namespace sluice::broker
