#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <thread>

#include "broker/groups/group_coordinator.h"
#include "broker/groups/offset_store.h"
#include "broker/protocol/api.h"

namespace sluice::broker::groups {
namespace {

namespace fs = std::filesystem;
namespace err = protocol::error;

class GroupsTest : public ::testing::Test {
 protected:
  GroupsTest() {
    char tmpl[] = "/tmp/sluice-groups-test-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    store_ = std::move(OffsetStore::Open(dir_).value());
    CoordinatorOptions o;
    o.min_session_timeout = std::chrono::milliseconds(100);
    coord_ = std::make_unique<GroupCoordinator>(store_.get(), o);
  }
  ~GroupsTest() override {
    coord_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }
  JoinRequest Req(const std::string& member = "", std::int32_t session_ms = 10000) {
    JoinRequest r;
    r.group_id = "g";
    r.member_id = member;
    r.session_timeout_ms = session_ms;
    r.rebalance_timeout_ms = 5000;
    r.protocol_type = "consumer";
    r.protocols = {{"range", "meta-" + member}};
    r.client_id = "c";
    return r;
  }

  fs::path dir_;
  std::unique_ptr<OffsetStore> store_;
  std::unique_ptr<GroupCoordinator> coord_;
};

TEST_F(GroupsTest, AFirstJoinThatNeedsAMemberIdLeavesNoMemberBehind) {
  // KIP-394: an abandoned first join (a client retrying after a broker
  // restart) must not leave a member the next rebalance waits for.
  auto need = Req();
  need.member_id_required = true;
  auto abandoned = coord_->Join(need);
  EXPECT_EQ(abandoned.error, err::kMemberIdRequired);
  EXPECT_FALSE(abandoned.member_id.empty());
  auto first = coord_->Join(need);
  ASSERT_EQ(first.error, err::kMemberIdRequired);
  auto r = coord_->Join(Req(first.member_id));
  EXPECT_EQ(r.error, err::kNone);
  EXPECT_EQ(r.generation, 1) << "completed at once: nobody else to wait for";
  EXPECT_EQ(r.leader, first.member_id);
  EXPECT_EQ(r.members.size(), 1u);
  EXPECT_EQ(coord_->Join(Req("never-handed-out")).error, err::kUnknownMemberId);
}

TEST_F(GroupsTest, FirstMemberBecomesLeaderOfGenerationOne) {
  auto r = coord_->Join(Req());
  EXPECT_EQ(r.error, err::kNone);
  EXPECT_EQ(r.generation, 1);
  EXPECT_EQ(r.leader, r.member_id);
  EXPECT_EQ(r.protocol_name, "range");
  ASSERT_EQ(r.members.size(), 1u);
  auto s = coord_->Sync("g", 1, r.member_id, {{r.member_id, "all-partitions"}});
  EXPECT_EQ(s.error, err::kNone);
  EXPECT_EQ(s.assignment, "all-partitions");
  EXPECT_EQ(coord_->Describe("g").state, GroupState::kStable);
}

TEST_F(GroupsTest, NewMemberTriggersRebalanceThatExistingMemberRejoins) {
  auto a = coord_->Join(Req());
  coord_->Sync("g", a.generation, a.member_id, {{a.member_id, "A"}});
  auto b_join = std::async(std::launch::async, [&] { return coord_->Join(Req()); });
  // The existing member learns of the rebalance from its heartbeat, then rejoins.
  std::int16_t hb = err::kNone;
  for (int i = 0; i < 100 && hb == err::kNone; ++i) {
    hb = coord_->Heartbeat("g", a.generation, a.member_id);
    if (hb == err::kNone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(hb, err::kRebalanceInProgress);
  auto a2 = coord_->Join(Req(a.member_id));
  auto b = b_join.get();
  EXPECT_EQ(a2.generation, 2);
  EXPECT_EQ(b.generation, 2);
  EXPECT_EQ(a2.leader, a.member_id) << "leadership sticks with a member that stays";
  EXPECT_EQ(a2.members.size(), 2u);
  EXPECT_TRUE(b.members.empty()) << "only the leader sees the member list";
  auto b_sync =
      std::async(std::launch::async, [&] { return coord_->Sync("g", 2, b.member_id, {}); });
  auto a_sync = coord_->Sync("g", 2, a.member_id, {{a.member_id, "A2"}, {b.member_id, "B2"}});
  EXPECT_EQ(a_sync.assignment, "A2");
  EXPECT_EQ(b_sync.get().assignment, "B2");
  EXPECT_EQ(coord_->Heartbeat("g", 1, a.member_id), err::kIllegalGeneration);
  EXPECT_EQ(coord_->Heartbeat("g", 2, "stranger"), err::kUnknownMemberId);
}

TEST_F(GroupsTest, SilentMemberIsExpiredAfterItsSessionTimeout) {
  auto a = coord_->Join(Req("", 200));
  coord_->Sync("g", a.generation, a.member_id, {{a.member_id, "A"}});
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_EQ(coord_->Heartbeat("g", a.generation, a.member_id), err::kUnknownMemberId);
  EXPECT_EQ(coord_->Describe("g").state, GroupState::kEmpty);
}

TEST_F(GroupsTest, LeaveEmptiesTheGroup) {
  auto a = coord_->Join(Req());
  EXPECT_EQ(coord_->Leave("g", a.member_id), err::kNone);
  EXPECT_EQ(coord_->Describe("g").state, GroupState::kEmpty);
  EXPECT_EQ(coord_->Leave("g", a.member_id), err::kUnknownMemberId);
}

TEST_F(GroupsTest, CommitsAreCheckedAgainstMembershipAndDurable) {
  auto a = coord_->Join(Req());
  coord_->Sync("g", a.generation, a.member_id, {{a.member_id, "A"}});
  std::vector<OffsetCommitEntry> e = {{{"t", 0}, 42, "meta"}};
  EXPECT_EQ(coord_->CommitOffsets("g", a.generation + 1, a.member_id, e), err::kIllegalGeneration);
  EXPECT_EQ(coord_->CommitOffsets("g", a.generation, "nobody", e), err::kUnknownMemberId);
  EXPECT_EQ(coord_->CommitOffsets("g", -1, "", e), err::kUnknownMemberId)
      << "group has live members";
  EXPECT_EQ(coord_->CommitOffsets("g", a.generation, a.member_id, e), err::kNone);
  EXPECT_EQ(coord_->CommitOffsets("standalone", -1, "", {{{"t", 1}, 7, ""}}), err::kNone);
  coord_.reset();
  store_.reset();
  auto reopened = OffsetStore::Open(dir_);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->Get("g", {"t", 0})->offset, 42);
  EXPECT_EQ((*reopened)->Get("g", {"t", 0})->metadata, "meta");
  EXPECT_EQ((*reopened)->Get("standalone", {"t", 1})->offset, 7);
}

}  // namespace
}  // namespace sluice::broker::groups
