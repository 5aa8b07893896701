#include "events/event_store.h"

#include <thread>

#include "events_fixture.h"
#include "store/database.h"
#include "support/test_database.h"

namespace sluice::events {
namespace {

using namespace std::chrono_literals;

class EventStoreTest : public ::testing::Test {
 protected:
  std::int64_t Count(const std::string& sql) {
    return db_.Transact([&](pqxx::work& tx) { return tx.exec(sql)[0][0].as<std::int64_t>(); });
  }
  std::string Text(const std::string& sql) {
    return db_.Transact([&](pqxx::work& tx) { return tx.exec(sql)[0][0].as<std::string>(); });
  }

  sluice::testing::TestDatabase tdb_;
  store::Database db_{tdb_.url()};
  Resources res_;
};

TEST_F(EventStoreTest, FirstOccurrenceOpensARowWithCountOne) {
  EventStore store(db_);
  auto ev = MakeEvent(res_.Datamodel(), "datamodel.snapshot_failed", "timeout after 30s", T0());
  ev.details = {{"pod", "w-1"}};
  ev.pod = "w-1";
  ev.generation = 3;
  auto r = store.Record(ev);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->opened);
  EXPECT_EQ(r->count, 1);
  auto row = store.Get(r->event_id);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->count, 1);
  EXPECT_EQ(row->ts, T0());
  EXPECT_EQ(row->first_ts, T0());
  EXPECT_FALSE(row->closed_at.has_value());
  EXPECT_EQ(row->fingerprint, ev.Fingerprint());
  EXPECT_EQ(row->message, ev.RenderMessage());
  EXPECT_EQ(row->resource.datamodel_name, "public.orders");
  EXPECT_EQ(row->details["pod"], "w-1");
  EXPECT_EQ(row->generation, 3);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM resource_event_occurrence"), 1);
}

TEST_F(EventStoreTest, RepeatsFoldIntoTheOpenRowKeepingFirstTsAndTakingTheLatestWording) {
  EventStore store(db_);
  auto first = MakeEvent(res_.Connector(), "worker.crash_loop", "exit code 137 (restart 1)", T0());
  ASSERT_TRUE(store.Record(first).ok());
  auto again =
      MakeEvent(res_.Connector(), "worker.crash_loop", "exit code 137 (restart 2)", T0() + 10min);
  again.details = {{"restart_count", 2}};
  auto r = store.Record(again);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->opened);
  EXPECT_EQ(r->count, 2);
  auto row = store.Get(r->event_id).value();
  EXPECT_EQ(row.first_ts, T0());
  EXPECT_EQ(row.ts, T0() + 10min);
  EXPECT_EQ(row.reason, "exit code 137 (restart 2)");
  EXPECT_EQ(row.details["restart_count"], 2);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM resource_event"), 1);
  // Each occurrence keeps the count it reached.
  EXPECT_EQ(Text("SELECT string_agg(count::text, ',' ORDER BY seq) FROM resource_event_occurrence"),
            "1,2");
}

TEST_F(EventStoreTest, CrashLoopOf216RestartsIsOneRowWithCount216And216Occurrences) {
  EventStore store(db_);
  for (int i = 1; i <= 216; ++i) {
    auto ev =
        MakeEvent(res_.Connector(), "worker.crash_loop",
                  "pod orders-pg-6d4cf56db6-x7k2p restarted, restart count " + std::to_string(i),
                  T0() + std::chrono::seconds(30 * i));
    ASSERT_TRUE(store.Record(ev).ok());
  }
  EXPECT_EQ(Count("SELECT COUNT(*) FROM resource_event"), 1);
  EXPECT_EQ(Count("SELECT count FROM resource_event"), 216);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM resource_event_occurrence"), 216);
  EXPECT_EQ(Count("SELECT MAX(count) FROM resource_event_occurrence"), 216);
}

TEST_F(EventStoreTest, EventFoldReopensAfterDedupWindow) {
  EventStore store(db_, {1h});
  auto a = store.Record(MakeEvent(res_.Connector(), "worker.oom_killed", "OOMKilled", T0()));
  auto b =
      store.Record(MakeEvent(res_.Connector(), "worker.oom_killed", "OOMKilled", T0() + 50min));
  ASSERT_EQ(a->event_id, b->event_id);
  // 61 minutes after the last occurrence: the old row closes, a new one opens.
  auto c = store.Record(
      MakeEvent(res_.Connector(), "worker.oom_killed", "OOMKilled", T0() + 50min + 61min));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->opened);
  EXPECT_NE(c->event_id, a->event_id);
  EXPECT_EQ(c->count, 1);
  auto old_row = store.Get(a->event_id).value();
  ASSERT_TRUE(old_row.closed_at.has_value());
  EXPECT_EQ(*old_row.closed_at, T0() + 50min + 1h);
  EXPECT_EQ(old_row.count, 2);
  auto new_row = store.Get(c->event_id).value();
  EXPECT_EQ(new_row.first_ts, T0() + 111min);
  EXPECT_FALSE(new_row.closed_at.has_value());
  // The next repeat folds into the new row, not the closed one.
  auto d =
      store.Record(MakeEvent(res_.Connector(), "worker.oom_killed", "OOMKilled", T0() + 112min));
  EXPECT_EQ(d->event_id, c->event_id);
  EXPECT_EQ(d->count, 2);
}

TEST_F(EventStoreTest, ConcurrentRecordsOfOneFingerprintFoldIntoOneRow) {
  constexpr int kThreads = 8, kPerThread = 100;
  std::atomic<int> failures = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      store::Database own(tdb_.url(), 1);  // a connection per thread
      EventStore store(own);
      for (int i = 0; i < kPerThread; ++i) {
        auto ev = MakeEvent(res_.Connector(), "worker.crash_loop",
                            "restart " + std::to_string(t * kPerThread + i), T0() + 1s * i);
        if (!store.Record(ev).ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM resource_event"), 1);
  EXPECT_EQ(Count("SELECT count FROM resource_event"), kThreads * kPerThread);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM resource_event_occurrence"), kThreads * kPerThread);
  // Counts handed out are exactly 1..800: no two recorders saw the same one.
  EXPECT_EQ(Count("SELECT COUNT(DISTINCT count) FROM resource_event_occurrence"),
            kThreads * kPerThread);
  EXPECT_EQ(Text("SELECT ts::text FROM resource_event"), "2026-03-10 12:01:39");
}

TEST_F(EventStoreTest, OccurrenceRecordedInsideARolledBackTransactionLeavesNoTrace) {
  try {
    db_.Transact([&](pqxx::work& tx) {
      auto r = EventStore::Record(tx, MakeEvent(res_.Connector(), "c.x", "boom", T0()), {});
      ASSERT_TRUE(r.ok());
      throw std::runtime_error("caller aborts");
    });
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(Count("SELECT COUNT(*) FROM resource_event"), 0);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM resource_event_occurrence"), 0);
}

TEST_F(EventStoreTest, CloseExpiredClosesOnlyQuietRows) {
  EventStore store(db_, {1h});
  auto quiet = store.Record(MakeEvent(res_.Connector(), "a.quiet", std::nullopt, T0()));
  auto busy = store.Record(MakeEvent(res_.Connector(), "a.busy", std::nullopt, T0() + 30min));
  auto closed = store.CloseExpired(T0() + 75min);
  ASSERT_TRUE(closed.ok());
  EXPECT_EQ(*closed, 1);
  EXPECT_EQ(store.Get(quiet->event_id)->closed_at, T0() + 1h);
  EXPECT_FALSE(store.Get(busy->event_id)->closed_at.has_value());
}

TEST_F(EventStoreTest, InvalidEventIsRefusedBeforeTheDatabase) {
  EventStore store(db_);
  auto ev = MakeEvent(res_.Connector(), "Bad Code", std::nullopt, T0());
  EXPECT_EQ(store.Record(ev).status().code(), common::Code::kInvalidArgument);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM resource_event"), 0);
}

}  // namespace
}  // namespace sluice::events
