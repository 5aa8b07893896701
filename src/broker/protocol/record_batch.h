// The fixed 61-byte header of a RecordBatch (magic v2). Batches are stored
// byte-for-byte as the producer sent them; the broker only rewrites the base
// offset (and partition leader epoch), neither of which the CRC covers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::broker::protocol {

inline constexpr std::size_t kBatchHeaderSize = 61;
// baseOffset (8) + batchLength (4): batchLength counts the bytes after these.
inline constexpr std::size_t kBatchLogOverhead = 12;

struct BatchHeader {
  std::int64_t base_offset = 0;
  std::int32_t batch_length = 0;  // bytes after the length field
  std::int8_t magic = 0;
  std::uint32_t crc = 0;
  std::int16_t attributes = 0;
  std::int32_t last_offset_delta = 0;
  std::int64_t first_timestamp = 0;
  std::int64_t max_timestamp = 0;
  std::int64_t producer_id = -1;
  std::int16_t producer_epoch = -1;
  std::int32_t base_sequence = -1;
  std::int32_t record_count = 0;

  std::size_t total_size() const {
    return kBatchLogOverhead + static_cast<std::size_t>(batch_length);
  }
  std::int64_t last_offset() const { return base_offset + last_offset_delta; }
  bool is_transactional() const { return (attributes & 0x10) != 0; }
  bool is_control() const { return (attributes & 0x20) != 0; }
};

// Parses the header at the start of `data` (needs kBatchHeaderSize bytes).
common::Result<BatchHeader> ParseBatchHeader(std::string_view data);

// Checks one whole batch: magic 2, sane length, CRC-32C over attributes..end.
common::Status ValidateBatch(std::string_view batch, const BatchHeader& h);

// Splits a produce request's records blob into validated batches.
// Returns InvalidArgument for anything that is not a sequence of whole v2 batches.
common::Result<std::vector<BatchHeader>> SplitBatches(std::string_view records);

void SetBaseOffset(std::string& batch, std::size_t at, std::int64_t base_offset);

}  // namespace sluice::broker::protocol
