// libFuzzer target for the logical replication path: a stream of pgoutput
// messages through PgOutputDecoder and on into the ChangeAssembler (relation
// cache, tuple-to-JSON type mapping, streamed transactions), whatever the
// bytes. Errors are fine; a crash, a sanitizer report or a hang is a bug.
//
// Input framing: repeated [u16 big-endian length][message bytes], the way
// the replication connection hands over one XLogData payload at a time.
#include <cstdint>
#include <string_view>

#include "connectors/change_sink.h"
#include "connectors/postgres/change_assembler.h"
#include "connectors/postgres/pgoutput_decoder.h"

namespace {

using namespace sluice;

class DiscardSink : public connectors::ChangeSink {
 public:
  common::Status Emit(const connectors::ChangeEvent& event) override {
    // Serialise as dataflow::EncodeEnvelope does (non-UTF-8 text replaced),
    // so a value the real sink could not write surfaces here.
    constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
    (void)event.key.dump(-1, ' ', false, kReplace);
    (void)event.after.dump(-1, ' ', false, kReplace);
    (void)event.before.dump(-1, ' ', false, kReplace);
    return {};
  }
  common::Status SchemaChanged(const connectors::TableSchema&) override { return {}; }
  common::Status Checkpoint(connectors::Lsn) override { return {}; }
  common::Status Flush() override { return {}; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  DiscardSink sink;
  connectors::postgres::SchemaCache schemas;
  connectors::postgres::ChangeAssembler assembler(&sink, &schemas, "fuzz");
  connectors::postgres::PgOutputDecoder decoder;
  connectors::Lsn wal = 0x1000000;
  while (in.size() >= 2) {
    std::size_t n = (static_cast<std::uint8_t>(in[0]) << 8) | static_cast<std::uint8_t>(in[1]);
    in.remove_prefix(2);
    if (n > in.size()) n = in.size();
    auto message = decoder.Decode(in.substr(0, n));
    in.remove_prefix(n);
    if (message.ok()) (void)assembler.Apply(*message, wal);
    wal += n + 1;
  }
  return 0;
}
