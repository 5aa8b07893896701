// How one thread takes turns at several stages (subscriptions or
// datamodels). One stage blocks in its own poll. Several are each polled
// without waiting, and a round in which none had anything ends asleep until
// a record arrives for any of them: taking turns at blocking on each made a
// worker with ten subscriptions wait out nine empty polls per batch.
#pragma once

#include <chrono>

#include "kafka/consumer.h"

namespace sluice::dataflow {

class StageTurns {
 public:
  // Outlive the stages' consumers: they write to it until closed.
  template <typename Stages>
  void Serve(const Stages& stages) {
    several_ = stages.size() > 1;
    if (several_)
      for (const auto& stage : stages) stage->WakeOnArrival(arrival_);
  }
  std::chrono::milliseconds poll_timeout() const {
    return std::chrono::milliseconds(several_ ? 0 : 200);
  }
  void Ran(bool found_nothing) { found_any_ = found_any_ || !found_nothing; }
  // Ends a round: when several stages all found nothing, sleeps up to `limit`.
  void EndRound(std::chrono::milliseconds limit) {
    if (several_ && !found_any_) arrival_.Wait(limit);
    found_any_ = false;
  }

 private:
  kafka::ArrivalWakeup arrival_;
  bool several_ = false;
  bool found_any_ = false;
};

}  // namespace sluice::dataflow
