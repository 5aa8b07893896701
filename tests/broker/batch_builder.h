// Builds real RecordBatch v2 bytes (uncompressed) for tests, the way a
// producer would: zigzag-varint records after the 61-byte header, CRC-32C.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "broker/protocol/crc32c.h"
#include "broker/protocol/wire.h"

namespace sluice::testing {

inline void PutVarint(std::string& out, std::int64_t v) {
  auto u = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
  while (u >= 0x80) {
    out.push_back(static_cast<char>((u & 0x7f) | 0x80));
    u >>= 7;
  }
  out.push_back(static_cast<char>(u));
}

struct BatchSpec {
  std::vector<std::string> values;
  std::int64_t timestamp = 1'700'000'000'000;
  std::int64_t producer_id = -1;
  std::int16_t producer_epoch = -1;
  std::int32_t base_sequence = -1;
};

inline std::string BuildBatch(const BatchSpec& spec) {
  namespace p = sluice::broker::protocol;
  std::string records;
  for (std::size_t i = 0; i < spec.values.size(); ++i) {
    std::string r;
    r.push_back(0);                              // attributes
    PutVarint(r, 0);                             // timestamp delta
    PutVarint(r, static_cast<std::int64_t>(i));  // offset delta
    PutVarint(r, -1);                            // null key
    PutVarint(r, static_cast<std::int64_t>(spec.values[i].size()));
    r += spec.values[i];
    PutVarint(r, 0);  // headers
    PutVarint(records, static_cast<std::int64_t>(r.size()));
    records += r;
  }
  p::Writer w;
  w.Int64(0);
  std::size_t len_at = w.Placeholder32();
  w.Int32(0);  // partition leader epoch
  w.Int8(2);
  std::size_t crc_at = w.Placeholder32();
  w.Int16(0);  // attributes
  w.Int32(static_cast<std::int32_t>(spec.values.size()) - 1);
  w.Int64(spec.timestamp);
  w.Int64(spec.timestamp);
  w.Int64(spec.producer_id);
  w.Int16(spec.producer_epoch);
  w.Int32(spec.base_sequence);
  w.Int32(static_cast<std::int32_t>(spec.values.size()));
  w.Raw(records);
  std::string b = w.Take();
  p::StoreBe32(b.data() + len_at, static_cast<std::int32_t>(b.size() - 12));
  p::StoreBe32(b.data() + crc_at,
               static_cast<std::int32_t>(p::Crc32c(std::string_view(b).substr(21))));
  return b;
}

}  // namespace sluice::testing
