// A target worker's subscriptions, applied on lanes: threads that take
// turns at the subscriptions, so that while the target database applies one
// lane's batch, another lane decodes and sends its next one. One thread
// taking turns at ten subscriptions left a third of the machine idle in
// bench/cdc/mixed.sh, every step waiting on the last.
//
// Subscriptions into the same target table form a group, which one lane at
// a time holds: one table is written by one thread (one writer per JSONL
// file, no two batches of a table racing each other's locks). A lane takes
// whichever group is free next, so a slow table (a wide one, or one locked
// by a migration) holds one lane and the others share the rest; groups
// dealt to lanes once left a table waiting behind a slow one on its lane.
//
// The lanes never talk to the back end. What a subscription has to report
// (the records refused, what is wrong with it, its counters) waits here for
// the worker's own thread, which alone reports, heartbeats and serves
// metrics.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"
#include "dataflow/subscription_stage.h"
#include "kafka/consumer.h"

namespace sluice::dataflow {

class SubscriptionLanes {
 public:
  // Spreads `stages` over at most `max_lanes` threads, started at once.
  SubscriptionLanes(std::vector<std::unique_ptr<SubscriptionStage>> stages, std::size_t max_lanes);
  ~SubscriptionLanes();
  SubscriptionLanes(const SubscriptionLanes&) = delete;
  SubscriptionLanes& operator=(const SubscriptionLanes&) = delete;

  // Joins the lanes; afterwards only the caller's thread touches the stages.
  void Stop();
  // Subscription specs never change, so any thread may read them.
  const std::vector<std::unique_ptr<SubscriptionStage>>& stages() const { return stages_; }

  // Waits up to `limit` for news: refused records, a failure that began,
  // changed or ended, counters asked for, or a lane that broke down.
  void WaitForNews(std::chrono::milliseconds limit);
  // Per stage (in the given order), the records it refused since the last call.
  std::vector<std::vector<RejectedRecord>> TakeRejected();
  // What the worker's state should say: a subscription stopped at a refused
  // record first (it stays until restarted), else the latest outage; empty
  // when nothing is wrong.
  std::string Failure();
  // Asks every lane for its stages' counters; each answers after its
  // current round (TakeCounters).
  void RequestCounters();
  // Per stage, the counters answered since the last call, if any.
  std::vector<std::optional<DeliveryCounters>> TakeCounters();
  // An exception a lane could not handle (the worker exits and replays).
  std::optional<common::Status> broken();

 private:
  // The subscriptions into one target table. `held` is guarded by
  // claim_mu_; the rest is touched only by the lane holding the group.
  struct Group {
    std::vector<std::size_t> members;  // indexes into stages_
    bool held = false;
    std::uint64_t counters_answered = 0;
  };
  // Per stage: its outage backoff, when it may next try, and what is wrong
  // with it now (empty when nothing is). Touched by its group's holder.
  struct Retry {
    std::chrono::milliseconds backoff{0};
    std::chrono::steady_clock::time_point next_attempt{};
    std::string failure;
  };
  // What a stage has for the worker's thread. Guarded by mu_.
  struct Board {
    std::vector<RejectedRecord> rejected;
    std::string failure;  // empty when delivering
    bool stopped = false;
    std::optional<DeliveryCounters> counters;
  };
  void Run();
  // The next group no lane holds, now held; null when every group is held.
  Group* Claim();
  void Release(Group& group);
  // One turn at each stage of the group; whether any delivered or found
  // records, and `earliest` lowered to the first retry time it waits for.
  bool Serve(Group& group, std::chrono::steady_clock::time_point& earliest);
  // Per stage, what its board held in `field`, leaving it empty.
  template <typename T>
  std::vector<T> TakeEach(T Board::*field) {
    std::lock_guard lock(mu_);
    std::vector<T> taken(boards_.size());
    for (std::size_t i = 0; i < boards_.size(); ++i)
      taken[i] = std::exchange(boards_[i].*field, {});
    return taken;
  }
  void Post(std::size_t stage, std::vector<RejectedRecord> rejected, const std::string& failure,
            bool stopped);

  // Before the stages: the wakeup must outlive the consumers that write to
  // it, and the stages are destroyed (closed) first.
  kafka::ArrivalWakeup arrival_;
  std::vector<std::unique_ptr<SubscriptionStage>> stages_;
  std::vector<Group> groups_;
  std::vector<Retry> retries_;
  // Several stages: each is polled without waiting, and a lane that found
  // nothing in a whole round of groups sleeps on arrival_. One stage
  // blocks in its own poll.
  bool several_ = false;
  std::vector<std::thread> lanes_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> counters_asked_{0};

  std::mutex claim_mu_;
  std::size_t next_group_ = 0;  // guarded by claim_mu_

  std::mutex mu_;
  std::condition_variable news_cv_;
  bool news_ = false;
  std::vector<Board> boards_;
  std::optional<common::Status> broken_;
};

}  // namespace sluice::dataflow
