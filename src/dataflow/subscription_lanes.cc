#include "dataflow/subscription_lanes.h"

#include <algorithm>
#include <map>
#include <utility>

#include "dataflow/stage_turns.h"

namespace sluice::dataflow {

using Steady = std::chrono::steady_clock;

struct SubscriptionLanes::Lane {
  StageTurns turns;
  std::vector<std::size_t> members;  // indexes into stages_
  std::vector<SubscriptionStage*> stages;
  std::thread thread;
};

SubscriptionLanes::SubscriptionLanes(std::vector<std::unique_ptr<SubscriptionStage>> stages,
                                     std::size_t max_lanes)
    : stages_(std::move(stages)), boards_(stages_.size()) {
  // One lane per target table, dealt round-robin onto at most max_lanes.
  std::map<std::pair<std::string, std::string>, std::size_t> lane_of_table;
  const std::size_t lanes = std::max<std::size_t>(1, std::min(max_lanes, stages_.size()));
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    const auto& spec = stages_[i]->spec();
    auto [it, fresh] =
        lane_of_table.try_emplace({spec.target_schema, spec.target_table}, lane_of_table.size());
    const std::size_t lane = it->second % lanes;
    while (lanes_.size() <= lane) lanes_.push_back(std::make_unique<Lane>());
    lanes_[lane]->members.push_back(i);
    lanes_[lane]->stages.push_back(stages_[i].get());
  }
  for (auto& lane : lanes_) {
    lane->turns.Serve(lane->stages);
    lane->thread = std::thread([this, l = lane.get()] { Run(*l); });
  }
}

SubscriptionLanes::~SubscriptionLanes() { Stop(); }

void SubscriptionLanes::Stop() {
  stop_ = true;
  for (auto& lane : lanes_)
    if (lane->thread.joinable()) lane->thread.join();
}

void SubscriptionLanes::Run(Lane& lane) {
  // Per stage: its outage backoff, when it may next try, and what is wrong
  // with it now (empty when nothing is).
  struct Retry {
    std::chrono::milliseconds backoff{0};
    Steady::time_point next_attempt{};
    std::string failure;
  };
  std::vector<Retry> retries(lane.stages.size());
  std::uint64_t counters_answered = 0;
  try {
    while (!stop_) {
      bool ran = false;
      auto earliest = Steady::now() + std::chrono::milliseconds(200);
      for (std::size_t k = 0; k < lane.stages.size(); ++k) {
        auto& stage = *lane.stages[k];
        auto& retry = retries[k];
        if (stage.stopped()) continue;  // until the subscription is restarted
        if (Steady::now() < retry.next_attempt) {
          earliest = std::min(earliest, retry.next_attempt);
          continue;
        }
        ran = true;
        auto st = stage.RunOnce(lane.turns.poll_timeout());
        lane.turns.Ran(stage.found_nothing());
        if (st.ok()) {
          retry = {};
        } else if (stage.stopped()) {
          retry.failure = *stage.stopped();
        } else {
          // An outage: retried with capped exponential backoff, never sooner
          // than the target asked (Retry-After). Nothing is committed
          // meanwhile, so nothing is lost.
          retry.backoff = std::min(std::max(retry.backoff * 2, std::chrono::milliseconds(200)),
                                   std::chrono::milliseconds(5000));
          auto wait = std::max(retry.backoff, stage.RetryAfter().value_or(retry.backoff));
          retry.next_attempt = Steady::now() + wait;
          retry.failure = st.message();
        }
        Post(lane.members[k], stage.TakeRejected(), retry.failure, stage.stopped().has_value());
      }
      if (const auto asked = counters_asked_.load(); asked != counters_answered) {
        counters_answered = asked;
        std::lock_guard lock(mu_);
        for (std::size_t k = 0; k < lane.stages.size(); ++k) {
          auto taken = lane.stages[k]->TakeCounters();
          auto& board = boards_[lane.members[k]].counters;
          if (board)  // the last answer was not taken yet: add this one to it
            board->Add(taken);
          else
            board = taken;
        }
        news_ = true;
        news_cv_.notify_all();
      }
      // Every stage waiting out a backoff (or stopped): sleep until the
      // first may try again, in slices short enough to see a stop.
      const auto limit = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::min(earliest - Steady::now(), Steady::duration(std::chrono::milliseconds(200))));
      if (!ran)
        std::this_thread::sleep_for(std::max(limit, std::chrono::milliseconds(0)));
      else
        lane.turns.EndRound(limit);
    }
  } catch (const std::exception& e) {
    std::lock_guard lock(mu_);
    if (!broken_) broken_ = common::Internal(e.what());
    news_ = true;
    news_cv_.notify_all();
  }
}

void SubscriptionLanes::Post(std::size_t stage, std::vector<RejectedRecord> rejected,
                             const std::string& failure, bool stopped) {
  std::lock_guard lock(mu_);
  auto& board = boards_[stage];
  if (rejected.empty() && board.failure == failure && board.stopped == stopped) return;
  for (auto& r : rejected) board.rejected.push_back(std::move(r));
  board.failure = failure;
  board.stopped = stopped;
  news_ = true;
  news_cv_.notify_all();
}

void SubscriptionLanes::WaitForNews(std::chrono::milliseconds limit) {
  std::unique_lock lock(mu_);
  news_cv_.wait_for(lock, limit, [this] { return news_; });
  news_ = false;
}

std::vector<std::vector<RejectedRecord>> SubscriptionLanes::TakeRejected() {
  return TakeEach(&Board::rejected);
}

std::string SubscriptionLanes::Failure() {
  std::lock_guard lock(mu_);
  for (const auto& board : boards_)
    if (board.stopped) return board.failure;
  for (const auto& board : boards_)
    if (!board.failure.empty()) return board.failure;
  return {};
}

void SubscriptionLanes::RequestCounters() { ++counters_asked_; }

std::vector<std::optional<DeliveryCounters>> SubscriptionLanes::TakeCounters() {
  return TakeEach(&Board::counters);
}

std::optional<common::Status> SubscriptionLanes::broken() {
  std::lock_guard lock(mu_);
  return broken_;
}

}  // namespace sluice::dataflow
