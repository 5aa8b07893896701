// The messages of one streamed in-progress transaction (pgoutput protocol
// v2), kept in their arrival order until its Stream Commit or Stream Abort.
// Up to `memory_limit` bytes stay in memory; past that they go to an
// anonymous temporary file (unlinked at once, so a crash leaves nothing
// behind), so a transaction of any size costs bounded memory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "connectors/change_event.h"

namespace sluice::connectors::postgres {

class TransactionSpool {
 public:
  // `dir`: where the temporary file goes (created on the first spill).
  TransactionSpool(std::string dir, std::size_t memory_limit);
  ~TransactionSpool();
  TransactionSpool(const TransactionSpool&) = delete;
  TransactionSpool& operator=(const TransactionSpool&) = delete;

  // Keeps one raw pgoutput message and its XLogData start position.
  common::Status Append(Lsn wal_start, std::string_view message);
  // Calls `each` for every message kept, in the order appended; stops at
  // the first error `each` returns. The views live until `each` returns.
  common::Status ForEach(const std::function<common::Status(Lsn, std::string_view)>& each);

  std::uint64_t messages() const { return messages_; }
  // Bytes written to the file so far (0: everything is in memory).
  std::uint64_t spilled_bytes() const { return file_size_; }

 private:
  common::Status Spill();

  std::string dir_;
  std::size_t memory_limit_;
  std::string buffer_;  // records not yet in the file
  int fd_ = -1;
  std::uint64_t file_size_ = 0;
  std::uint64_t messages_ = 0;
};

}  // namespace sluice::connectors::postgres
