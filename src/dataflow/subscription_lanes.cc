#include "dataflow/subscription_lanes.h"

#include <algorithm>
#include <map>
#include <utility>

namespace sluice::dataflow {

using Steady = std::chrono::steady_clock;

SubscriptionLanes::SubscriptionLanes(std::vector<std::unique_ptr<SubscriptionStage>> stages,
                                     std::size_t max_lanes)
    : stages_(std::move(stages)), retries_(stages_.size()), boards_(stages_.size()) {
  std::map<std::pair<std::string, std::string>, std::size_t> group_of_table;
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    const auto& spec = stages_[i]->spec();
    auto [it, fresh] =
        group_of_table.try_emplace({spec.target_schema, spec.target_table}, groups_.size());
    if (fresh) groups_.emplace_back();
    groups_[it->second].members.push_back(i);
  }
  several_ = stages_.size() > 1;
  if (several_)
    for (auto& stage : stages_) stage->WakeOnArrival(arrival_);
  const std::size_t lanes = std::max<std::size_t>(1, std::min(max_lanes, groups_.size()));
  for (std::size_t i = 0; i < lanes; ++i) lanes_.emplace_back([this] { Run(); });
}

SubscriptionLanes::~SubscriptionLanes() { Stop(); }

void SubscriptionLanes::Stop() {
  stop_ = true;
  for (auto& lane : lanes_)
    if (lane.joinable()) lane.join();
}

SubscriptionLanes::Group* SubscriptionLanes::Claim() {
  std::lock_guard lock(claim_mu_);
  for (std::size_t n = 0; n < groups_.size(); ++n) {
    auto& group = groups_[next_group_];
    next_group_ = (next_group_ + 1) % groups_.size();
    if (!group.held) {
      group.held = true;
      return &group;
    }
  }
  return nullptr;
}

void SubscriptionLanes::Release(Group& group) {
  std::lock_guard lock(claim_mu_);
  group.held = false;
}

bool SubscriptionLanes::Serve(Group& group, Steady::time_point& earliest) {
  const auto poll_timeout = std::chrono::milliseconds(several_ ? 0 : 200);
  bool found = false;
  for (std::size_t i : group.members) {
    auto& stage = *stages_[i];
    auto& retry = retries_[i];
    if (stage.stopped()) continue;  // until the subscription is restarted
    if (Steady::now() < retry.next_attempt) {
      earliest = std::min(earliest, retry.next_attempt);
      continue;
    }
    auto st = stage.RunOnce(poll_timeout);
    found = found || !stage.found_nothing();
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
      earliest = std::min(earliest, retry.next_attempt);
      retry.failure = st.message();
    }
    Post(i, stage.TakeRejected(), retry.failure, stage.stopped().has_value());
  }
  if (const auto asked = counters_asked_.load(); asked != group.counters_answered) {
    group.counters_answered = asked;
    std::lock_guard lock(mu_);
    for (std::size_t i : group.members) {
      auto taken = stages_[i]->TakeCounters();
      auto& board = boards_[i].counters;
      if (board)  // the last answer was not taken yet: add this one to it
        board->Add(taken);
      else
        board = taken;
    }
    news_ = true;
    news_cv_.notify_all();
  }
  return found;
}

void SubscriptionLanes::Run() {
  // Groups taken in a row that had nothing: after a whole round of them,
  // the lane sleeps until a record arrives.
  std::size_t idle_turns = 0;
  try {
    while (!stop_) {
      auto earliest = Steady::now() + std::chrono::milliseconds(200);
      Group* group = Claim();
      bool found = false;
      if (group) {
        try {
          found = Serve(*group, earliest);
        } catch (...) {
          Release(*group);
          throw;
        }
        Release(*group);
      }
      idle_turns = found ? 0 : idle_turns + 1;
      if (group && (found || idle_turns < groups_.size()) && (several_ || found)) continue;
      // Nothing to do: every stage waiting out a backoff or empty, or every
      // group held by another lane. Sleep until the first retry, an arrival,
      // or at most a slice short enough to see a stop.
      const auto limit = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::min(earliest - Steady::now(), Steady::duration(std::chrono::milliseconds(200))));
      const auto wait = std::max(limit, std::chrono::milliseconds(0));
      if (several_)
        arrival_.Wait(wait);
      else if (!group || stages_[0]->stopped() || Steady::now() < retries_[0].next_attempt)
        std::this_thread::sleep_for(wait);  // one stage: its poll did the waiting otherwise
      idle_turns = 0;
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
