// Idempotent-producer bookkeeping: producer ids handed out by InitProducerId
// and, per (producer, partition), the epoch and sequence of the last batches,
// so a retried batch is answered with its original offset and a gap in the
// sequence is refused (OUT_OF_ORDER_SEQUENCE_NUMBER).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace sluice::broker {

class ProducerStateTable {
 public:
  explicit ProducerStateTable(std::int64_t first_id) : next_id_(first_id) {}

  std::int64_t NextProducerId();

  struct Verdict {
    std::int16_t error = 0;
    std::int64_t duplicate_of = -1;  // base offset of the already-stored copy
  };
  // Caller holds lock() across Check + Append + Record so checks and appends
  // of one partition cannot interleave.
  Verdict Check(const std::string& topic, std::int32_t partition, std::int64_t pid,
                std::int16_t epoch, std::int32_t first_seq, std::int32_t last_seq) const;
  void Record(const std::string& topic, std::int32_t partition, std::int64_t pid,
              std::int16_t epoch, std::int32_t first_seq, std::int32_t last_seq,
              std::int64_t base_offset);
  std::mutex& lock() { return mu_; }

 private:
  struct Stored {
    std::int32_t first_seq, last_seq;
    std::int64_t base_offset;
  };
  struct State {
    std::int16_t epoch = -1;
    std::deque<Stored> recent;  // the last five batches, as Kafka keeps
  };
  std::mutex mu_;
  std::mutex id_mu_;
  std::int64_t next_id_;
  std::map<std::tuple<std::string, std::int32_t, std::int64_t>, State> states_;
};

}  // namespace sluice::broker
