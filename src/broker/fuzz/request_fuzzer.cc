// libFuzzer target for the request path: header, version gating and every
// handler's decoder, on a real broker over a scratch data dir. The input is
// one request frame (what follows the size prefix).
//
// JoinGroup, SyncGroup and Fetch are skipped: valid-looking inputs there may
// wait (rebalance deadline, long-poll) by design, which a fuzzer reads as a hang.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "broker/broker.h"
#include "broker/protocol/api.h"
#include "broker/protocol/wire.h"
#include "broker/request_processor.h"

namespace {

sluice::broker::Broker* TheBroker() {
  static std::unique_ptr<sluice::broker::Broker> broker = [] {
    spdlog::set_level(spdlog::level::off);
    char tmpl[] = "/tmp/sluice-fuzz-XXXXXX";
    sluice::broker::BrokerOptions o;
    o.data_dir = ::mkdtemp(tmpl);
    o.fsync = sluice::broker::storage::FsyncPolicy::kNever;
    auto b = sluice::broker::Broker::Open(o);
    if (!b.ok()) std::abort();
    return std::move(b).value();
  }();
  return broker.get();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view frame(reinterpret_cast<const char*>(data), size);
  if (size >= 2) {
    auto key = static_cast<sluice::broker::protocol::ApiKey>(
        sluice::broker::protocol::LoadBe16(frame.data()));
    using K = sluice::broker::protocol::ApiKey;
    if (key == K::kJoinGroup || key == K::kSyncGroup || key == K::kFetch) return 0;
  }
  sluice::broker::RequestProcessor processor(TheBroker(), "fuzz");
  sluice::broker::protocol::Frame response;
  processor.Process(frame, &response);
  return 0;
}
