// Consumer group membership (the classic JoinGroup/SyncGroup protocol): the
// coordinator only collects members and relays the leader's assignment; the
// range/roundrobin assignment itself runs in the client elected leader.
// Calls block (thread per connection) the way Kafka's purgatory delays them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "broker/groups/offset_store.h"

namespace sluice::broker::groups {

enum class GroupState { kEmpty, kPreparingRebalance, kCompletingRebalance, kStable, kDead };
const char* GroupStateName(GroupState s);

struct Protocol {
  std::string name;
  std::string metadata;
};

struct JoinRequest {
  std::string group_id;
  std::int32_t session_timeout_ms = 10000;
  std::int32_t rebalance_timeout_ms = 10000;
  std::string member_id;
  std::string protocol_type;
  std::vector<Protocol> protocols;
  std::string client_id;
  std::string client_host;
  // JoinGroup v4+ (KIP-394): a first join is answered MEMBER_ID_REQUIRED with
  // the id to join with, so a join the client gave up on (a retry after a
  // broker restart, say) leaves no member behind for rebalances to wait for.
  bool member_id_required = false;
};

struct JoinResult {
  std::int16_t error = 0;
  std::int32_t generation = -1;
  std::string protocol_name;
  std::string leader;
  std::string member_id;
  std::vector<std::pair<std::string, std::string>> members;  // (id, metadata), leader only
};

struct SyncResult {
  std::int16_t error = 0;
  std::string assignment;
};

struct MemberDescription {
  std::string member_id, client_id, client_host, metadata, assignment;
};

struct GroupDescription {
  std::string group_id;
  GroupState state = GroupState::kDead;
  std::string protocol_type, protocol;
  std::vector<MemberDescription> members;
};

struct OffsetCommitEntry {
  OffsetKey key;
  std::int64_t offset;
  std::string metadata;
};

struct CoordinatorOptions {
  std::chrono::milliseconds min_session_timeout{1000};
  std::chrono::milliseconds max_session_timeout{300000};
};

class GroupCoordinator {
 public:
  GroupCoordinator(OffsetStore* offsets, CoordinatorOptions options);
  ~GroupCoordinator();

  JoinResult Join(const JoinRequest& req);
  SyncResult Sync(const std::string& group, std::int32_t generation, const std::string& member,
                  const std::vector<std::pair<std::string, std::string>>& assignments);
  std::int16_t Heartbeat(const std::string& group, std::int32_t generation,
                         const std::string& member);
  std::int16_t Leave(const std::string& group, const std::string& member);

  // Validates membership (generation -1 with empty member = a standalone
  // commit, allowed while the group has no members) and stores durably.
  std::int16_t CommitOffsets(const std::string& group, std::int32_t generation,
                             const std::string& member,
                             const std::vector<OffsetCommitEntry>& entries);

  GroupDescription Describe(const std::string& group);
  std::vector<std::pair<std::string, std::string>> List();  // (group id, protocol type)

  void Shutdown();

 private:
  struct Member {
    std::string id, client_id, client_host;
    std::vector<Protocol> protocols;
    std::string assignment;
    std::chrono::milliseconds session_timeout{10000};
    std::chrono::milliseconds rebalance_timeout{10000};
    std::chrono::steady_clock::time_point last_seen;
    bool awaiting_join = false;
  };
  struct Group {
    std::string id;
    GroupState state = GroupState::kEmpty;
    std::int32_t generation = 0;
    std::string protocol_type, protocol, leader;
    std::map<std::string, Member> members;
    std::chrono::steady_clock::time_point join_deadline;
  };

  void BeginRebalance(Group& g);
  void MaybeCompleteJoin(Group& g, bool deadline_passed);
  void Reap();

  OffsetStore* offsets_;
  CoordinatorOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Group> groups_;
  // Ids handed out with MEMBER_ID_REQUIRED, until they join or time out.
  std::map<std::string, std::chrono::steady_clock::time_point> pending_members_;
  bool stop_ = false;
  std::thread reaper_;
};

}  // namespace sluice::broker::groups
