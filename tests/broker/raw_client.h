// A Kafka wire client for tests that need exact control over requests
// (hostile bytes, idempotent sequences, raw offsets): one blocking
// connection, v1 request headers, and the few bodies the broker tests send.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/protocol/api.h"
#include "broker/protocol/wire.h"

namespace sluice::testing {

// A request frame: size, v1 request header, body.
inline std::string RequestFrame(std::int16_t key, std::int16_t version, const std::string& body,
                                std::int32_t corr) {
  namespace p = sluice::broker::protocol;
  p::Writer w;
  w.Int32(0);
  w.Int16(key);
  w.Int16(version);
  w.Int32(corr);
  w.String("raw-test-client");
  w.Raw(body);
  std::string b = w.Take();
  p::StoreBe32(b.data(), static_cast<std::int32_t>(b.size() - 4));
  return b;
}

class Conn {
 public:
  explicit Conn(int port, int timeout_seconds = 3) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    timeval tv{timeout_seconds, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Conn() { ::close(fd_); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  void SendRaw(const std::string& bytes) {
    (void)!::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
  // Frames `body` after a v1 request header.
  void Send(std::int16_t key, std::int16_t version, const std::string& body,
            std::int32_t corr = 7) {
    SendRaw(RequestFrame(key, version, body, corr));
  }
  // The response body after the correlation id, or nullopt when the broker closed.
  std::optional<std::string> Receive(std::int32_t* corr = nullptr) {
    namespace p = sluice::broker::protocol;
    char hdr[4];
    if (!ReadFull(hdr, 4)) return std::nullopt;
    std::string body(static_cast<std::size_t>(p::LoadBe32(hdr)), '\0');
    if (!ReadFull(body.data(), body.size())) return std::nullopt;
    if (corr) *corr = p::LoadBe32(body.data());
    return body.substr(4);
  }

 private:
  bool ReadFull(char* b, std::size_t n) {
    while (n > 0) {
      ssize_t r = ::recv(fd_, b, n, 0);
      if (r <= 0) return false;
      b += r;
      n -= static_cast<std::size_t>(r);
    }
    return true;
  }
  int fd_;
  bool connected_ = false;
};

// Produce v3..v7 body: one topic, partition 0.
inline std::string ProduceBody(const std::string& topic, const std::string& records,
                               std::int16_t acks = 1) {
  sluice::broker::protocol::Writer w;
  w.NullableString(std::nullopt);
  w.Int16(acks);
  w.Int32(1000);
  w.ArrayLength(1);
  w.String(topic);
  w.ArrayLength(1);
  w.Int32(0);
  w.Bytes(records);
  return w.Take();
}

// The one partition's (error, base offset) of a Produce response.
inline std::pair<std::int16_t, std::int64_t> ProduceResult(const std::string& response) {
  sluice::broker::protocol::Reader in(response);
  in.ArrayLength();
  in.String();
  in.ArrayLength();
  in.Int32();
  std::int16_t error = in.Int16();
  return {error, in.Int64()};
}

inline std::int16_t ProducePartitionError(const std::string& response) {
  return ProduceResult(response).first;
}

// Fetch v4 body: one topic, partition 0.
inline std::string FetchBody(const std::string& topic, std::int64_t offset,
                             std::int32_t max_wait_ms, std::int32_t min_bytes,
                             std::int32_t max_bytes = 1 << 20) {
  sluice::broker::protocol::Writer w;
  w.Int32(-1);  // replica_id
  w.Int32(max_wait_ms);
  w.Int32(min_bytes);
  w.Int32(max_bytes);
  w.Int8(0);  // isolation_level
  w.ArrayLength(1);
  w.String(topic);
  w.ArrayLength(1);
  w.Int32(0);
  w.Int64(offset);
  w.Int32(max_bytes);
  return w.Take();
}

struct FetchedPartition {
  std::int16_t error;
  std::int64_t high_watermark;
  std::string records;
};

inline FetchedPartition ParseFetchV4(const std::string& r) {
  sluice::broker::protocol::Reader in(r);
  in.Int32();  // throttle
  in.ArrayLength();
  in.String();
  in.ArrayLength();
  in.Int32();
  FetchedPartition f;
  f.error = in.Int16();
  f.high_watermark = in.Int64();
  in.Int64();  // last stable offset
  in.ArrayLength();
  f.records = std::string(in.Bytes());
  return f;
}

}  // namespace sluice::testing
