#include "broker/protocol/record_batch.h"

#include <fmt/format.h>

#include "broker/protocol/crc32c.h"
#include "broker/protocol/wire.h"

namespace sluice::broker::protocol {

using common::InvalidArgument;

common::Result<BatchHeader> ParseBatchHeader(std::string_view data) {
  if (data.size() < kBatchHeaderSize) return InvalidArgument("record batch header truncated");
  const char* p = data.data();
  BatchHeader h;
  h.base_offset = LoadBe64(p);
  h.batch_length = LoadBe32(p + 8);
  h.magic = static_cast<std::int8_t>(p[16]);
  h.crc = static_cast<std::uint32_t>(LoadBe32(p + 17));
  h.attributes = LoadBe16(p + 21);
  h.last_offset_delta = LoadBe32(p + 23);
  h.first_timestamp = LoadBe64(p + 27);
  h.max_timestamp = LoadBe64(p + 35);
  h.producer_id = LoadBe64(p + 43);
  h.producer_epoch = LoadBe16(p + 51);
  h.base_sequence = LoadBe32(p + 53);
  h.record_count = LoadBe32(p + 57);
  if (h.magic != 2)
    return InvalidArgument(fmt::format("unsupported record batch magic {}", h.magic));
  if (h.batch_length < static_cast<std::int32_t>(kBatchHeaderSize - kBatchLogOverhead)) {
    return InvalidArgument("record batch length too small");
  }
  if (h.last_offset_delta < 0 || h.record_count < 0)
    return InvalidArgument("negative record count");
  return h;
}

common::Status ValidateBatch(std::string_view batch, const BatchHeader& h) {
  if (batch.size() != h.total_size()) return InvalidArgument("record batch truncated");
  std::uint32_t crc = Crc32c(batch.substr(21));
  if (crc != h.crc) {
    return InvalidArgument(
        fmt::format("record batch CRC mismatch: header {:08x}, computed {:08x}", h.crc, crc));
  }
  return {};
}

common::Result<std::vector<BatchHeader>> SplitBatches(std::string_view records) {
  std::vector<BatchHeader> out;
  std::size_t pos = 0;
  while (pos < records.size()) {
    auto h = ParseBatchHeader(records.substr(pos));
    if (!h.ok()) return h.status();
    if (h->total_size() > records.size() - pos) return InvalidArgument("record batch truncated");
    SLUICE_RETURN_IF_ERROR(ValidateBatch(records.substr(pos, h->total_size()), *h));
    pos += h->total_size();
    out.push_back(*h);
  }
  if (out.empty()) return InvalidArgument("no record batch");
  return out;
}

void SetBaseOffset(std::string& batch, std::size_t at, std::int64_t base_offset) {
  StoreBe64(batch.data() + at, base_offset);
}

}  // namespace sluice::broker::protocol
