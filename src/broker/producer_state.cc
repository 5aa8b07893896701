#include "broker/producer_state.h"

#include "broker/protocol/api.h"

namespace sluice::broker {

namespace err = protocol::error;

std::int64_t ProducerStateTable::NextProducerId() {
  std::lock_guard lock(id_mu_);
  return next_id_++;
}

ProducerStateTable::Verdict ProducerStateTable::Check(const std::string& topic,
                                                      std::int32_t partition, std::int64_t pid,
                                                      std::int16_t epoch, std::int32_t first_seq,
                                                      std::int32_t last_seq) const {
  Verdict v;
  auto it = states_.find({topic, partition, pid});
  if (it == states_.end()) return v;  // first batch we see from this producer here
  const State& s = it->second;
  if (epoch < s.epoch) {
    v.error = err::kInvalidProducerEpoch;
    return v;
  }
  if (epoch > s.epoch) {
    if (first_seq != 0) v.error = err::kOutOfOrderSequence;
    return v;
  }
  for (const auto& b : s.recent) {
    if (b.first_seq == first_seq && b.last_seq == last_seq) {
      v.duplicate_of = b.base_offset;
      return v;
    }
  }
  std::int32_t expected = s.recent.empty() ? 0 : s.recent.back().last_seq + 1;
  if (expected < 0) expected = 0;  // sequences wrap at INT32_MAX
  if (first_seq != expected) v.error = err::kOutOfOrderSequence;
  return v;
}

void ProducerStateTable::Record(const std::string& topic, std::int32_t partition, std::int64_t pid,
                                std::int16_t epoch, std::int32_t first_seq, std::int32_t last_seq,
                                std::int64_t base_offset) {
  State& s = states_[{topic, partition, pid}];
  if (epoch != s.epoch) s.recent.clear();
  s.epoch = epoch;
  s.recent.push_back({first_seq, last_seq, base_offset});
  if (s.recent.size() > 5) s.recent.pop_front();
}

}  // namespace sluice::broker
