// libFuzzer target for the request path: header, version and SASL gating and
// every handler's decoder, on a real broker over a scratch data dir. The
// input is what a client sends on one connection: size-prefixed frames, as
// the seeds recorded from kcat and confluent-kafka sessions are
// (tests/reliability/corpus/record_broker_seeds.py). They go through one
// RequestProcessor in order, so a session that authenticates (SASL/PLAIN as
// fuzz / fuzz-secret) reaches every API; a frame over the connection's
// current limit ends the input, as the server would close.
//
// Requests that wait by design (a Fetch's long poll, a JoinGroup or
// SyncGroup waiting for the other members) have their waits bounded here:
// a Fetch's max_wait_ms and a JoinGroup's timeouts are clamped in the frame,
// and the broker allows short group sessions, so no input reads as a hang.
// The members an input joined leave after it, as when its connection drops.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "broker/broker.h"
#include "broker/protocol/api.h"
#include "broker/protocol/wire.h"
#include "broker/request_processor.h"

namespace {

namespace b = sluice::broker;
namespace p = sluice::broker::protocol;

constexpr std::int32_t kMaxWaitMs = 10;           // a Fetch's long poll at most
constexpr std::int32_t kMaxGroupTimeoutMs = 200;  // JoinGroup session/rebalance at most
constexpr int kMaxFramesPerInput = 64;

b::Broker* TheBroker() {
  static std::unique_ptr<b::Broker> broker = [] {
    spdlog::set_level(spdlog::level::off);
    char tmpl[] = "/tmp/sluice-fuzz-XXXXXX";
    b::BrokerOptions o;
    o.data_dir = ::mkdtemp(tmpl);
    o.fsync = b::storage::FsyncPolicy::kNever;
    o.sasl_users["fuzz"] = "fuzz-secret";
    o.group_min_session_timeout_ms = 1;
    o.group_max_session_timeout_ms = kMaxGroupTimeoutMs;
    auto opened = b::Broker::Open(o);
    if (!opened.ok()) std::abort();
    return std::move(opened).value();
  }();
  return broker.get();
}

void ClampInt32At(char* frame, std::size_t size, std::size_t at, std::int32_t most) {
  if (at + 4 > size) return;
  if (p::LoadBe32(frame + at) > most) p::StoreBe32(frame + at, most);
}

// Bounds the waits a request asks for (see the top of the file). Works on
// the raw bytes; a frame too short or odd to patch is left for the decoder.
void BoundWaits(char* frame, std::size_t size) {
  if (size < 10) return;
  auto key = static_cast<p::ApiKey>(p::LoadBe16(frame));
  std::int16_t version = p::LoadBe16(frame + 2);
  std::int16_t client_id = p::LoadBe16(frame + 8);
  std::size_t body = 10 + static_cast<std::size_t>(std::max<std::int16_t>(client_id, 0));
  if (key == p::ApiKey::kFetch) {
    ClampInt32At(frame, size, body + 4, kMaxWaitMs);  // after replica_id
  } else if (key == p::ApiKey::kJoinGroup) {
    if (body + 2 > size) return;
    std::int16_t group = p::LoadBe16(frame + body);
    std::size_t at = body + 2 + static_cast<std::size_t>(std::max<std::int16_t>(group, 0));
    ClampInt32At(frame, size, at, kMaxGroupTimeoutMs);                        // session
    if (version >= 1) ClampInt32At(frame, size, at + 4, kMaxGroupTimeoutMs);  // rebalance
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  b::RequestProcessor processor(TheBroker(), "fuzz");
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  for (int n = 0; n < kMaxFramesPerInput && rest.size() >= 4; ++n) {
    std::int32_t length = p::LoadBe32(rest.data());
    if (length < 0 || length > processor.max_frame_bytes()) break;  // the server closes
    auto frame_size = static_cast<std::size_t>(length);
    if (rest.size() - 4 < frame_size) break;  // the client hung up mid-frame
    // An exact-size copy, so reading past the frame is an ASan report.
    std::unique_ptr<char[]> frame(new char[frame_size == 0 ? 1 : frame_size]);
    std::memcpy(frame.get(), rest.data() + 4, frame_size);
    rest.remove_prefix(4 + frame_size);
    BoundWaits(frame.get(), frame_size);
    p::Frame response;
    auto outcome = processor.Process(std::string_view(frame.get(), frame_size), &response);
    if (outcome == b::RequestProcessor::Outcome::kClose || processor.hang_up_after_reply()) break;
  }
  // The connection is gone, and so are its group members: the next input's
  // JoinGroup then waits for no one (and inputs stay independent).
  auto& groups = TheBroker()->groups();
  for (const auto& [group, type] : groups.List()) {
    for (const auto& member : groups.Describe(group).members) groups.Leave(group, member.member_id);
  }
  return 0;
}
