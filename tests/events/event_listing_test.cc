#include "events/event_listing.h"

#include <set>

#include "events/event_store.h"
#include "events_fixture.h"
#include "store/database.h"
#include "support/test_database.h"

namespace sluice::events {
namespace {

using namespace std::chrono_literals;

class EventListingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EventStore store(db_);
    auto rec = [&](const ResourceRef& ref, const std::string& code, Level level,
                   common::TimePoint ts) {
      ASSERT_TRUE(store.Record(MakeEvent(ref, code, std::nullopt, ts, level)).ok());
    };
    rec(res_.Connector(), "worker.oom_killed", Level::kCritical, T0());
    rec(res_.Connector(), "connector.paused", Level::kInfo, T0() + 1min);
    rec(res_.Datamodel(), "datamodel.snapshot_failed", Level::kError, T0() + 2min);
    rec(res_.Datamodel(), "datamodel.schema_changed", Level::kWarn, T0() + 3min);
    rec(res_.Subscription(), "subscription.delivery_failed", Level::kError, T0() + 4min);
    Resources other;
    rec(other.Connector(), "worker.oom_killed", Level::kError, T0() + 5min);
  }

  std::vector<std::string> Codes(const EventQuery& q) {
    return db_.Transact([&](pqxx::work& tx) {
      auto page = ListEvents(tx, q);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      std::vector<std::string> codes;
      for (const auto& e : page->events) codes.push_back(e.code);
      return codes;
    });
  }

  sluice::testing::TestDatabase tdb_;
  store::Database db_{tdb_.url()};
  Resources res_;
  const std::vector<Level> all_ = {Level::kCritical, Level::kError, Level::kWarn, Level::kInfo};
};

TEST_F(EventListingTest, ErrorsOnlyByDefaultNewestFirst) {
  EventQuery q{EventScope::Connector(res_.connector)};
  EXPECT_EQ(Codes(q), (std::vector<std::string>{"subscription.delivery_failed",
                                                "datamodel.snapshot_failed", "worker.oom_killed"}));
}

TEST_F(EventListingTest, ConnectorViewIncludesItsDatamodelAndSubscriptionEvents) {
  EventQuery q{EventScope::Connector(res_.connector), all_};
  EXPECT_EQ(Codes(q).size(), 5u);  // not the other connector's event
}

TEST_F(EventListingTest, DatamodelViewShowsItsOwnAndItsConnectorsEvents) {
  EventQuery q{EventScope::Datamodel(res_.connector, res_.datamodel), all_};
  EXPECT_EQ(Codes(q),
            (std::vector<std::string>{"datamodel.schema_changed", "datamodel.snapshot_failed",
                                      "connector.paused", "worker.oom_killed"}));
}

TEST_F(EventListingTest, SubscriptionViewShowsItsOwnAndItsConnectorsEvents) {
  EventQuery q{EventScope::Subscription(res_.connector, res_.subscription)};
  EXPECT_EQ(Codes(q),
            (std::vector<std::string>{"subscription.delivery_failed", "worker.oom_killed"}));
}

TEST_F(EventListingTest, LevelFilterSelectsExactlyTheAskedLevels) {
  EventQuery q{EventScope::Connector(res_.connector), {Level::kWarn, Level::kInfo}};
  EXPECT_EQ(Codes(q), (std::vector<std::string>{"datamodel.schema_changed", "connector.paused"}));
}

TEST_F(EventListingTest, PagingWalksEveryRowOnceNewestFirst) {
  EventQuery q{EventScope::Connector(res_.connector), all_, 2};
  std::vector<std::string> seen;
  int pages = 0;
  db_.Transact([&](pqxx::work& tx) {
    for (;;) {
      auto page = ListEvents(tx, q);
      ASSERT_TRUE(page.ok());
      ++pages;
      for (const auto& e : page->events) seen.push_back(e.code);
      if (!page->next) break;
      // The token survives the trip through an API client.
      q.after = PageToken::Decode(page->next->Encode());
      ASSERT_TRUE(q.after.has_value());
    }
  });
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen, (std::vector<std::string>{"subscription.delivery_failed",
                                            "datamodel.schema_changed", "datamodel.snapshot_failed",
                                            "connector.paused", "worker.oom_killed"}));
}

TEST_F(EventListingTest, RowsWithTheSameTsArePagedWithoutLossOrRepeat) {
  EventStore store(db_);
  Resources r;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        store.Record(MakeEvent(r.Connector(), "same.ts" + std::to_string(i), std::nullopt, T0()))
            .ok());
  }
  EventQuery q{EventScope::Connector(r.connector), all_, 2};
  std::set<std::string> seen;
  db_.Transact([&](pqxx::work& tx) {
    for (;;) {
      auto page = ListEvents(tx, q).value();
      for (const auto& e : page.events) EXPECT_TRUE(seen.insert(e.code).second) << e.code;
      if (!page.next) break;
      q.after = page.next;
    }
  });
  EXPECT_EQ(seen.size(), 5u);
}

TEST_F(EventListingTest, BadPageSizeOrTokenIsRejected) {
  db_.Transact([&](pqxx::work& tx) {
    EventQuery q{EventScope::Connector(res_.connector), all_, 0};
    EXPECT_EQ(ListEvents(tx, q).status().code(), common::Code::kInvalidArgument);
    q.limit = kMaxPageSize + 1;
    EXPECT_FALSE(ListEvents(tx, q).ok());
    q.limit = 10;
    q.levels.clear();
    EXPECT_FALSE(ListEvents(tx, q).ok());
  });
  EXPECT_FALSE(PageToken::Decode("garbage").has_value());
  EXPECT_FALSE(PageToken::Decode("12x_2b1f7c1e-8d3a-4e55-9a7b-1c2d3e4f5a6b").has_value());
}

}  // namespace
}  // namespace sluice::events
