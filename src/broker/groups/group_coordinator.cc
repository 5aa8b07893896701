#include "broker/groups/group_coordinator.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "broker/protocol/api.h"
#include "common/time.h"
#include "common/uuid.h"

namespace sluice::broker::groups {

namespace err = protocol::error;
using Clock = std::chrono::steady_clock;

const char* GroupStateName(GroupState s) {
  switch (s) {
    case GroupState::kEmpty:
      return "Empty";
    case GroupState::kPreparingRebalance:
      return "PreparingRebalance";
    case GroupState::kCompletingRebalance:
      return "CompletingRebalance";
    case GroupState::kStable:
      return "Stable";
    case GroupState::kDead:
      return "Dead";
  }
  return "Dead";
}

GroupCoordinator::GroupCoordinator(OffsetStore* offsets, CoordinatorOptions options)
    : offsets_(offsets), options_(options) {
  reaper_ = std::thread([this] { Reap(); });
}

GroupCoordinator::~GroupCoordinator() { Shutdown(); }

void GroupCoordinator::Shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
}

void GroupCoordinator::BeginRebalance(Group& g) {
  if (g.state == GroupState::kPreparingRebalance) return;
  g.state = GroupState::kPreparingRebalance;
  std::chrono::milliseconds longest{0};
  for (auto& [id, m] : g.members) longest = std::max(longest, m.rebalance_timeout);
  g.join_deadline = Clock::now() + longest;
  spdlog::info("group {}: rebalance started (generation {}, {} members)", g.id, g.generation,
               g.members.size());
}

// Completes the join phase once every known member has rejoined, or at the
// deadline by dropping those that did not.
void GroupCoordinator::MaybeCompleteJoin(Group& g, bool deadline_passed) {
  if (g.state != GroupState::kPreparingRebalance) return;
  bool all = std::all_of(g.members.begin(), g.members.end(),
                         [](const auto& kv) { return kv.second.awaiting_join; });
  if (!all && !deadline_passed) return;
  for (auto it = g.members.begin(); it != g.members.end();) {
    it = it->second.awaiting_join ? std::next(it) : g.members.erase(it);
  }
  g.generation++;
  if (g.members.empty()) {
    g.state = GroupState::kEmpty;
    g.leader.clear();
    g.protocol.clear();
    return;
  }
  if (!g.members.count(g.leader)) g.leader = g.members.begin()->first;
  // The first protocol of the leader that every member also supports.
  g.protocol.clear();
  for (const auto& p : g.members[g.leader].protocols) {
    bool everyone = std::all_of(g.members.begin(), g.members.end(), [&](const auto& kv) {
      return std::any_of(kv.second.protocols.begin(), kv.second.protocols.end(),
                         [&](const Protocol& q) { return q.name == p.name; });
    });
    if (everyone) {
      g.protocol = p.name;
      break;
    }
  }
  auto now = Clock::now();
  for (auto& [id, m] : g.members) {
    m.awaiting_join = false;
    m.assignment.clear();
    m.last_seen = now;
  }
  g.state = GroupState::kCompletingRebalance;
  spdlog::info("group {}: generation {} with {} members, leader {}, protocol {}", g.id,
               g.generation, g.members.size(), g.leader, g.protocol);
}

JoinResult GroupCoordinator::Join(const JoinRequest& req) {
  JoinResult r;
  if (req.group_id.empty()) {
    r.error = err::kInvalidGroupId;
    return r;
  }
  if (req.session_timeout_ms < options_.min_session_timeout.count() ||
      req.session_timeout_ms > options_.max_session_timeout.count()) {
    r.error = err::kInvalidSessionTimeout;
    return r;
  }
  std::unique_lock lock(mu_);
  Group& g = groups_[req.group_id];
  g.id = req.group_id;
  if (g.state == GroupState::kDead) g.state = GroupState::kEmpty;
  if (!g.members.empty() && g.protocol_type != req.protocol_type) {
    r.error = err::kInconsistentGroupProtocol;
    return r;
  }
  std::string member_id = req.member_id;
  auto now = Clock::now();
  std::erase_if(pending_members_, [&](const auto& kv) { return kv.second < now; });
  if (member_id.empty()) {
    member_id = (req.client_id.empty() ? std::string("member") : req.client_id) + "-" +
                common::Uuid::V4().ToString();
    if (req.member_id_required) {
      pending_members_[member_id] = now + std::chrono::milliseconds(req.session_timeout_ms);
      r.error = err::kMemberIdRequired;
      r.member_id = member_id;
      return r;
    }
  } else if (!g.members.count(member_id) && !pending_members_.erase(member_id)) {
    r.error = err::kUnknownMemberId;
    r.member_id = member_id;
    return r;
  }
  g.protocol_type = req.protocol_type;
  Member& m = g.members[member_id];
  m.id = member_id;
  m.client_id = req.client_id;
  m.client_host = req.client_host;
  m.protocols = req.protocols;
  m.session_timeout = std::chrono::milliseconds(req.session_timeout_ms);
  m.rebalance_timeout =
      std::chrono::milliseconds(std::max(req.rebalance_timeout_ms, req.session_timeout_ms));
  m.last_seen = Clock::now();
  m.awaiting_join = true;
  BeginRebalance(g);
  MaybeCompleteJoin(g, false);
  cv_.notify_all();
  while (true) {
    auto it = g.members.find(member_id);
    if (it == g.members.end()) {
      r.error = err::kUnknownMemberId;
      return r;
    }
    if (!it->second.awaiting_join) break;
    if (stop_) {
      r.error = err::kCoordinatorNotAvailable;
      return r;
    }
    cv_.wait_for(lock, std::chrono::milliseconds(200));
  }
  r.generation = g.generation;
  r.protocol_name = g.protocol;
  r.leader = g.leader;
  r.member_id = member_id;
  if (member_id == g.leader) {
    for (const auto& [id, mem] : g.members) {
      std::string meta;
      for (const auto& p : mem.protocols) {
        if (p.name == g.protocol) meta = p.metadata;
      }
      r.members.emplace_back(id, meta);
    }
  }
  return r;
}

SyncResult GroupCoordinator::Sync(
    const std::string& group, std::int32_t generation, const std::string& member,
    const std::vector<std::pair<std::string, std::string>>& assignments) {
  SyncResult r;
  std::unique_lock lock(mu_);
  auto git = groups_.find(group);
  if (git == groups_.end() || !git->second.members.count(member)) {
    r.error = err::kUnknownMemberId;
    return r;
  }
  Group& g = git->second;
  if (generation != g.generation) {
    r.error = err::kIllegalGeneration;
    return r;
  }
  if (g.state == GroupState::kPreparingRebalance) {
    r.error = err::kRebalanceInProgress;
    return r;
  }
  g.members[member].last_seen = Clock::now();
  if (g.state == GroupState::kCompletingRebalance && member == g.leader) {
    for (const auto& [id, a] : assignments) {
      auto it = g.members.find(id);
      if (it != g.members.end()) it->second.assignment = a;
    }
    g.state = GroupState::kStable;
    cv_.notify_all();
  }
  while (g.state == GroupState::kCompletingRebalance && g.generation == generation && !stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(200));
  }
  auto it = g.members.find(member);
  if (it == g.members.end()) {
    r.error = err::kUnknownMemberId;
  } else if (g.state != GroupState::kStable || g.generation != generation) {
    r.error = err::kRebalanceInProgress;
  } else {
    it->second.last_seen = Clock::now();
    r.assignment = it->second.assignment;
  }
  return r;
}

std::int16_t GroupCoordinator::Heartbeat(const std::string& group, std::int32_t generation,
                                         const std::string& member) {
  std::lock_guard lock(mu_);
  auto git = groups_.find(group);
  if (git == groups_.end()) return err::kUnknownMemberId;
  Group& g = git->second;
  auto it = g.members.find(member);
  if (it == g.members.end()) return err::kUnknownMemberId;
  it->second.last_seen = Clock::now();
  if (g.state == GroupState::kPreparingRebalance) return err::kRebalanceInProgress;
  if (generation != g.generation) return err::kIllegalGeneration;
  return err::kNone;
}

std::int16_t GroupCoordinator::Leave(const std::string& group, const std::string& member) {
  std::lock_guard lock(mu_);
  auto git = groups_.find(group);
  if (git == groups_.end()) return err::kUnknownMemberId;
  Group& g = git->second;
  if (!g.members.erase(member)) return err::kUnknownMemberId;
  spdlog::info("group {}: member {} left", group, member);
  if (g.members.empty()) {
    g.state = GroupState::kEmpty;
    g.generation++;
    g.leader.clear();
  } else {
    BeginRebalance(g);
    MaybeCompleteJoin(g, false);
  }
  cv_.notify_all();
  return err::kNone;
}

std::int16_t GroupCoordinator::CommitOffsets(const std::string& group, std::int32_t generation,
                                             const std::string& member,
                                             const std::vector<OffsetCommitEntry>& entries) {
  if (group.empty()) return err::kInvalidGroupId;
  {
    std::lock_guard lock(mu_);
    auto git = groups_.find(group);
    bool has_members = git != groups_.end() && !git->second.members.empty();
    if (generation < 0 && member.empty()) {
      if (has_members) return err::kUnknownMemberId;
    } else {
      if (!has_members || !git->second.members.count(member)) return err::kUnknownMemberId;
      Group& g = git->second;
      if (g.state == GroupState::kPreparingRebalance) return err::kRebalanceInProgress;
      if (generation != g.generation) return err::kIllegalGeneration;
      g.members[member].last_seen = Clock::now();
    }
  }
  std::vector<std::pair<OffsetKey, CommittedOffset>> rows;
  std::int64_t now = common::NowEpochMillis();
  for (const auto& e : entries) rows.push_back({e.key, {e.offset, e.metadata, now}});
  auto st = offsets_->Commit(group, rows);
  if (!st.ok()) {
    spdlog::error("offset commit for {}: {}", group, st.ToString());
    return err::kCoordinatorNotAvailable;
  }
  return err::kNone;
}

GroupDescription GroupCoordinator::Describe(const std::string& group) {
  std::lock_guard lock(mu_);
  GroupDescription d;
  d.group_id = group;
  auto git = groups_.find(group);
  if (git == groups_.end()) {
    if (!offsets_->All(group).empty()) d.state = GroupState::kEmpty;
    return d;
  }
  const Group& g = git->second;
  d.state = g.state;
  d.protocol_type = g.protocol_type;
  d.protocol = g.state == GroupState::kStable || g.state == GroupState::kCompletingRebalance
                   ? g.protocol
                   : "";
  for (const auto& [id, m] : g.members) {
    MemberDescription md{id, m.client_id, m.client_host, {}, {}};
    for (const auto& p : m.protocols) {
      if (p.name == g.protocol) md.metadata = p.metadata;
    }
    if (g.state == GroupState::kStable) md.assignment = m.assignment;
    d.members.push_back(std::move(md));
  }
  return d;
}

std::vector<std::pair<std::string, std::string>> GroupCoordinator::List() {
  std::lock_guard lock(mu_);
  std::map<std::string, std::string> out;
  for (const auto& g : offsets_->Groups()) out[g] = "consumer";
  for (const auto& [id, g] : groups_)
    out[id] = g.protocol_type.empty() ? "consumer" : g.protocol_type;
  return {out.begin(), out.end()};
}

// Expires members whose session lapsed and joins whose deadline passed.
void GroupCoordinator::Reap() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    auto now = Clock::now();
    bool changed = false;
    for (auto& [gid, g] : groups_) {
      for (auto it = g.members.begin(); it != g.members.end();) {
        const Member& m = it->second;
        if (!m.awaiting_join && now - m.last_seen > m.session_timeout) {
          spdlog::info("group {}: member {} session expired", gid, it->first);
          it = g.members.erase(it);
          changed = true;
          if (g.members.empty()) {
            g.state = GroupState::kEmpty;
            g.generation++;
          } else {
            BeginRebalance(g);
          }
        } else {
          ++it;
        }
      }
      if (g.state == GroupState::kPreparingRebalance) {
        GroupState before = g.state;
        MaybeCompleteJoin(g, now >= g.join_deadline);
        changed = changed || g.state != before;
      }
    }
    if (changed) cv_.notify_all();
  }
}

}  // namespace sluice::broker::groups
