#include "events/outbox.h"

#include <mutex>
#include <thread>

#include "events/event_store.h"
#include "events/events_topic.h"
#include "events_fixture.h"
#include "store/database.h"
#include "support/test_database.h"

namespace sluice::events {
namespace {

using namespace std::chrono_literals;

// The publish callback stands in for the Kafka producer (wired by the lead);
// it records what it was handed, and can be told to refuse.
struct Sink {
  std::mutex mu;
  std::vector<OutboxRecord> got;
  int refuse_at_seq = -1;

  PublishFn Fn() {
    return [this](const OutboxRecord& r) {
      std::lock_guard lock(mu);
      if (r.seq == refuse_at_seq) return common::Unavailable("broker down");
      got.push_back(r);
      return common::Status::Ok();
    };
  }
  std::vector<std::int64_t> Seqs() {
    std::lock_guard lock(mu);
    std::vector<std::int64_t> s;
    for (const auto& r : got) s.push_back(r.seq);
    return s;
  }
};

class OutboxTest : public ::testing::Test {
 protected:
  OutboxOptions Opts(std::chrono::milliseconds grace = 0ms,
                     std::chrono::milliseconds gap_timeout = 60s) {
    OutboxOptions o;
    o.grace = grace;
    o.gap_timeout = gap_timeout;
    o.batch_size = 3;  // small, so multi-batch passes are exercised
    return o;
  }
  RecordResult Record(const std::string& code, common::TimePoint ts = T0()) {
    return store_.Record(MakeEvent(res_.Subscription(), code, "exit 1", ts)).value();
  }

  sluice::testing::TestDatabase tdb_;
  store::Database db_{tdb_.url()};
  EventStore store_{db_};
  Resources res_;
  Sink sink_;
};

TEST_F(OutboxTest, PublishesEveryOccurrenceInSeqOrderJoinedToItsFoldedRow) {
  Record("worker.crash_loop");
  Record("worker.crash_loop", T0() + 1min);
  for (int i = 0; i < 5; ++i) Record("c.n" + std::to_string(i));
  OutboxPublisher pub(db_, sink_.Fn(), Opts());
  auto report = pub.PublishOnce();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->published, 7);
  EXPECT_EQ(sink_.Seqs(), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7}));
  const auto& first = sink_.got[0];
  EXPECT_EQ(first.count, 1);
  EXPECT_EQ(sink_.got[1].count, 2);
  EXPECT_EQ(first.event.count, 2);  // the folded row as it is now
  EXPECT_EQ(first.event.resource.subscription_name, "orders-to-warehouse");
  EXPECT_EQ(first.Key(), res_.connector.ToString());
  auto j = first.ToJson();
  EXPECT_EQ(j["seq"], 1);
  EXPECT_EQ(j["message"], first.event.message);
  EXPECT_EQ(j["code"], "worker.crash_loop");
  EXPECT_EQ(j["env_id"], res_.env.ToString());
  EXPECT_EQ(*pub.Cursor(), 7);
  EXPECT_EQ(pub.PublishOnce()->published, 0);
}

TEST_F(OutboxTest, CursorIsDurableAcrossPublisherRestarts) {
  Record("a.one");
  Record("a.two");
  ASSERT_EQ(OutboxPublisher(db_, sink_.Fn(), Opts()).PublishOnce()->published, 2);
  Record("a.three");
  Sink second;
  OutboxPublisher restarted(db_, second.Fn(), Opts());
  EXPECT_EQ(restarted.PublishOnce()->published, 1);
  EXPECT_EQ(second.Seqs(), (std::vector<std::int64_t>{3}));
}

TEST_F(OutboxTest, CursorAdvancesOnlyPastRecordsTheCallbackAccepted) {
  for (int i = 0; i < 5; ++i) Record("b.n" + std::to_string(i));
  sink_.refuse_at_seq = 3;
  OutboxPublisher pub(db_, sink_.Fn(), Opts());
  auto report = pub.PublishOnce();
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->failure.ok());
  EXPECT_EQ(report->published, 2);
  EXPECT_EQ(*pub.Cursor(), 2);
  sink_.refuse_at_seq = -1;
  EXPECT_EQ(pub.PublishOnce()->published, 3);
  EXPECT_EQ(sink_.Seqs(), (std::vector<std::int64_t>{1, 2, 3, 4, 5}));
}

TEST_F(OutboxTest, AThrowingCallbackCountsAsARefusal) {
  Record("t.one");
  OutboxPublisher pub(
      db_,
      [](const OutboxRecord&) -> common::Status { throw std::runtime_error("producer exploded"); },
      Opts());
  auto report = pub.PublishOnce();
  ASSERT_TRUE(report.ok());
  EXPECT_NE(report->failure.message().find("producer exploded"), std::string::npos);
  EXPECT_EQ(*pub.Cursor(), 0);
}

TEST_F(OutboxTest, RowsYoungerThanTheGraceIntervalAreLeftAlone) {
  Record("g.one");
  OutboxPublisher patient(db_, sink_.Fn(), Opts(60s));
  auto report = patient.PublishOnce();
  EXPECT_EQ(report->published, 0);
  EXPECT_TRUE(report->held_back);
  OutboxPublisher eager(db_, sink_.Fn(), Opts(0ms));
  EXPECT_EQ(eager.PublishOnce()->published, 1);
}

TEST_F(OutboxTest, OutboxNeverSkipsALateCommittingOccurrence) {
  // Transaction A draws seq 1 and stays open; B draws seq 2 and commits.
  pqxx::connection conn_a(tdb_.url());
  pqxx::work tx_a(conn_a);
  auto a = EventStore::Record(tx_a, MakeEvent(res_.Connector(), "late.a", std::nullopt, T0()), {});
  ASSERT_TRUE(a.ok());
  auto b = Record("late.b");
  ASSERT_EQ(a->seq, 1);
  ASSERT_EQ(b.seq, 2);
  // Even with no grace at all, seq 2 sits behind a fresh gap: held.
  OutboxPublisher pub(db_, sink_.Fn(), Opts(0ms, 60s));
  auto held = pub.PublishOnce();
  EXPECT_EQ(held->published, 0);
  EXPECT_TRUE(held->held_back);
  EXPECT_EQ(*pub.Cursor(), 0);
  tx_a.commit();
  EXPECT_EQ(pub.PublishOnce()->published, 2);
  EXPECT_EQ(sink_.Seqs(), (std::vector<std::int64_t>{1, 2}));
}

TEST_F(OutboxTest, GapLeftByARolledBackOccurrenceIsPassedAfterTheGapTimeout) {
  {
    pqxx::connection conn(tdb_.url());
    pqxx::work tx(conn);
    ASSERT_TRUE(
        EventStore::Record(tx, MakeEvent(res_.Connector(), "rb.a", std::nullopt, T0()), {}).ok());
    tx.abort();
  }
  Record("rb.b");  // seq 2
  OutboxPublisher pub(db_, sink_.Fn(), Opts(0ms, 300ms));
  EXPECT_EQ(pub.PublishOnce()->published, 0);
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(pub.PublishOnce()->published, 1);
  EXPECT_EQ(sink_.Seqs(), (std::vector<std::int64_t>{2}));
}

TEST_F(OutboxTest, ConcurrentPublishersOfOneOutboxDeliverEachRecordOnce) {
  for (int i = 0; i < 20; ++i) Record("p.n" + std::to_string(i));
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      store::Database own(tdb_.url(), 1);
      OutboxPublisher pub(own, sink_.Fn(), Opts());
      for (int i = 0; i < 5; ++i) ASSERT_TRUE(pub.PublishOnce().ok());
    });
  }
  for (auto& th : threads) th.join();
  auto seqs = sink_.Seqs();
  ASSERT_EQ(seqs.size(), 20u);
  for (std::size_t i = 0; i < seqs.size(); ++i)
    EXPECT_EQ(seqs[i], static_cast<std::int64_t>(i + 1));
}

TEST_F(OutboxTest, RunPublishesUntilStopped) {
  Record("r.one");
  OutboxPublisher pub(db_, sink_.Fn(), Opts());
  std::jthread runner([&](std::stop_token st) { pub.Run(st, 20ms); });
  for (int i = 0; i < 200 && sink_.Seqs().size() < 2; ++i) {
    if (i == 5) Record("r.two");
    std::this_thread::sleep_for(10ms);
  }
  runner.request_stop();
  runner.join();
  EXPECT_EQ(sink_.Seqs(), (std::vector<std::int64_t>{1, 2}));
}

// Per env: a publisher hands over only its env's occurrences, each env has
// its own cursor, and another env's rows interleaved in seq are not gaps.
class PerEnvOutboxTest : public OutboxTest {
 protected:
  OutboxOptions EnvOpts(const common::Uuid& env, std::chrono::milliseconds grace = 0ms,
                        std::chrono::milliseconds gap_timeout = 60s) {
    auto o = Opts(grace, gap_timeout);
    o.name = EnvOutboxCursor(env);
    o.env_id = env;
    return o;
  }
  RecordResult RecordIn(const Resources& r, const std::string& code) {
    return store_.Record(MakeEvent(r.Connector(), code, "exit 1", T0())).value();
  }
  Resources other_;  // a second env, with its own team and connector
};

TEST_F(PerEnvOutboxTest, AnotherEnvsInterleavedRowsAreNotGapsAndAreNotPublished) {
  for (int i = 0; i < 4; ++i) {
    RecordIn(res_, "a.n" + std::to_string(i));    // seq 1, 3, 5, 7
    RecordIn(other_, "b.n" + std::to_string(i));  // seq 2, 4, 6, 8
  }
  // A gap timeout of a minute: were another env's row a gap, nothing would pass.
  OutboxPublisher a(db_, sink_.Fn(), EnvOpts(res_.env));
  auto report = a.PublishOnce();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_FALSE(report->held_back);
  EXPECT_EQ(report->published, 4);
  EXPECT_EQ(sink_.Seqs(), (std::vector<std::int64_t>{1, 3, 5, 7}));
  for (const auto& r : sink_.got) EXPECT_EQ(r.event.resource.env_id, res_.env);
  EXPECT_EQ(*a.Cursor(), 8);  // past the other env's rows too
  Sink b_sink;
  OutboxPublisher b(db_, b_sink.Fn(), EnvOpts(other_.env));
  EXPECT_EQ(b.PublishOnce()->published, 4);
  EXPECT_EQ(b_sink.Seqs(), (std::vector<std::int64_t>{2, 4, 6, 8}));
}

TEST_F(PerEnvOutboxTest, AnEnvWhosePublisherIsRefusedHoldsBackOnlyItself) {
  RecordIn(res_, "a.one");
  RecordIn(other_, "b.one");
  RecordIn(res_, "a.two");
  RecordIn(other_, "b.two");
  OutboxPublisher down(
      db_, [](const OutboxRecord&) { return common::Unavailable("broker down"); },
      EnvOpts(res_.env));
  auto refused = down.PublishOnce();
  EXPECT_FALSE(refused->failure.ok());
  EXPECT_EQ(*down.Cursor(), 0);  // its first record was not handed over
  OutboxPublisher up(db_, sink_.Fn(), EnvOpts(other_.env));
  EXPECT_EQ(up.PublishOnce()->published, 2);
  EXPECT_EQ(sink_.Seqs(), (std::vector<std::int64_t>{2, 4}));
  // Back up: the held env resumes where it stopped, other envs' rows passed.
  Sink later;
  OutboxPublisher recovered(db_, later.Fn(), EnvOpts(res_.env));
  EXPECT_EQ(recovered.PublishOnce()->published, 2);
  EXPECT_EQ(later.Seqs(), (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(*recovered.Cursor(), 4);
}

TEST_F(PerEnvOutboxTest, ALateCommitInAnotherEnvHoldsThisEnvBackUntilItLands) {
  // Env A's transaction draws seq 1 and stays open; env B's seq 2 commits.
  pqxx::connection conn_a(tdb_.url());
  pqxx::work tx_a(conn_a);
  ASSERT_TRUE(
      EventStore::Record(tx_a, MakeEvent(res_.Connector(), "late.a", std::nullopt, T0()), {}).ok());
  ASSERT_EQ(RecordIn(other_, "late.b").seq, 2);
  // B cannot tell whose seq 1 is: it waits rather than pass it.
  OutboxPublisher b(db_, sink_.Fn(), EnvOpts(other_.env));
  auto held = b.PublishOnce();
  EXPECT_TRUE(held->held_back);
  EXPECT_EQ(held->published, 0);
  tx_a.commit();
  EXPECT_EQ(b.PublishOnce()->published, 1);
  EXPECT_EQ(sink_.Seqs(), (std::vector<std::int64_t>{2}));
  Sink a_sink;
  OutboxPublisher a(db_, a_sink.Fn(), EnvOpts(res_.env));
  EXPECT_EQ(a.PublishOnce()->published, 1);
  EXPECT_EQ(a_sink.Seqs(), (std::vector<std::int64_t>{1}));
}

TEST_F(PerEnvOutboxTest, ABatchThatStopsMidwayKeepsTheRestForTheNextPass) {
  for (int i = 0; i < 3; ++i) {
    RecordIn(other_, "b.n" + std::to_string(i));  // 1, 3, 5
    RecordIn(res_, "a.n" + std::to_string(i));    // 2, 4, 6
  }
  int calls = 0;
  auto opts = EnvOpts(res_.env);
  opts.batch_size = 10;  // all six rows in one batch
  OutboxPublisher pub(
      db_, PublishBatchFn([&](const std::vector<OutboxRecord>& records, common::Status* failure) {
        // The first pass takes only the first of its records.
        if (calls++ == 0) {
          *failure = common::Unavailable("one acked, the rest timed out");
          return std::size_t{1};
        }
        for (const auto& r : records) sink_.got.push_back(r);
        return records.size();
      }),
      opts);
  auto first = pub.PublishOnce();
  EXPECT_EQ(first->published, 1);
  EXPECT_EQ(*pub.Cursor(), 3);  // up to the first record not handed over
  EXPECT_EQ(pub.PublishOnce()->published, 2);
  EXPECT_EQ(sink_.Seqs(), (std::vector<std::int64_t>{4, 6}));
  EXPECT_EQ(*pub.Cursor(), 6);
}

TEST(EventsTopic, OneTopicPerEnvThatNoSourceTopicCanSpell) {
  auto env = common::Uuid::V4();
  auto topic = EnvEventsTopic(env);
  EXPECT_EQ(topic, "connector_events_" + env.ToString());
  EXPECT_EQ(topic.find('.'), std::string::npos);
  EXPECT_EQ(EventsTopicEnv(topic), env);
  EXPECT_NE(EnvEventsTopic(common::Uuid::V4()), topic);
  EXPECT_FALSE(EventsTopicEnv("connector_events"));
  EXPECT_FALSE(EventsTopicEnv("sluice.public.orders"));
  EXPECT_TRUE(ReservedForEvents("connector_events_anything"));
  EXPECT_TRUE(ReservedForEvents(topic));
  EXPECT_FALSE(ReservedForEvents(topic + ".sluice.0123456789ab"));  // a team's republished topic
}

TEST(EventsTopic, TheResourceFilterKeepsOnlyTheTeamsOwnRecords) {
  EXPECT_TRUE(EventRecordOfTeam(R"({"team_id":"t-1","code":"x"})", "t-1"));
  EXPECT_FALSE(EventRecordOfTeam(R"({"team_id":"t-2","code":"x"})", "t-1"));
  EXPECT_FALSE(EventRecordOfTeam(R"({"code":"x"})", "t-1"));
  EXPECT_FALSE(EventRecordOfTeam("not json", "t-1"));
  EXPECT_FALSE(EventRecordOfTeam(R"({"team_id":""})", ""));
}

}  // namespace
}  // namespace sluice::events
