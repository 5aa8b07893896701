// Idempotency-Key on creates: replay, payload mismatch, concurrency,
// encryption of the stored response and expiry.
#include <pqxx/pqxx>
#include <thread>

#include "api/idempotency.h"
#include "config_api/api_harness.h"

namespace sluice::testing {
namespace {

class IdempotencyApi : public ApiHarness {
 protected:
  std::string Path() const { return "/api/v1/teams/" + team_id_ + "/connectors"; }
  Json Body(const std::string& name) {
    return {{"name", name}, {"type", "postgresql-source"}, {"configuration", PgSourceConfig()}};
  }
  long Count(const std::string& sql) {
    pqxx::connection c(tdb_->url());
    pqxx::work tx(c);
    return tx.exec1(sql)[0].as<long>();
  }
};

TEST_F(IdempotencyApi, ReplayReturnsTheOriginalStatusAndBody) {
  auto first = Post(Path(), Body("a"), {{"Idempotency-Key", "k1"}});
  ASSERT_EQ(first.status, 201) << first.body.dump();
  auto again = Post(Path(), Body("a"), {{"Idempotency-Key", "k1"}});
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(Count("SELECT count(*) FROM connector"), 1);
}

TEST_F(IdempotencyApi, SameKeyWithAnotherPayloadIs422) {
  ASSERT_EQ(Post(Path(), Body("a"), {{"Idempotency-Key", "k1"}}).status, 201);
  auto other = Post(Path(), Body("b"), {{"Idempotency-Key", "k1"}});
  EXPECT_EQ(other.status, 422);
  EXPECT_EQ(Count("SELECT count(*) FROM connector"), 1);
}

TEST_F(IdempotencyApi, KeysAreScopedPerEndpoint) {
  ASSERT_EQ(Post(Path(), Body("a"), {{"Idempotency-Key", "k1"}}).status, 201);
  auto p = Post("/api/v1/teams/" + team_id_ + "/pipelines", {{"name", "p"}},
                {{"Idempotency-Key", "k1"}});
  EXPECT_EQ(p.status, 201);
}

TEST_F(IdempotencyApi, StoredResponseIsEncryptedWhole) {
  ASSERT_EQ(Post(Path(), Body("a"), {{"Idempotency-Key", "k1"}}).status, 201);
  pqxx::connection c(tdb_->url());
  pqxx::work tx(c);
  auto row = tx.exec1(
      "SELECT endpoint, response_status, response_body::text, request_hash, "
      "expires_at - created_at FROM idempotency_record");
  EXPECT_EQ(row[0].as<std::string>(), "connectors:create");
  EXPECT_EQ(row[1].as<int>(), 201);
  Json body = Json::parse(row[2].as<std::string>());
  EXPECT_EQ(body["enc"], "v1");
  EXPECT_EQ(row[2].as<std::string>().find("db.internal"), std::string::npos);
  EXPECT_EQ(row[3].as<std::string>().size(), 64u);
  EXPECT_EQ(row[4].as<std::string>(), "1 day");
}

TEST_F(IdempotencyApi, ConcurrentDuplicatesProduceOneResource) {
  std::vector<std::thread> threads;
  std::vector<int> statuses(4);
  std::vector<std::string> ids(4);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto r = Post(Path(), Body("same"), {{"Idempotency-Key", "race"}});
      statuses[i] = r.status;
      ids[i] = r.body.value("id", "");
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(statuses[i], 201);
    EXPECT_EQ(ids[i], ids[0]);
  }
  EXPECT_EQ(Count("SELECT count(*) FROM connector"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM idempotency_record"), 1);
}

TEST_F(IdempotencyApi, ExpiredRecordsAreDeletedAndNoLongerReplay) {
  ASSERT_EQ(Post(Path(), Body("a"), {{"Idempotency-Key", "old"}}).status, 201);
  ASSERT_EQ(Post(Path(), Body("b"), {{"Idempotency-Key", "new"}}).status, 201);
  {
    pqxx::connection c(tdb_->url());
    pqxx::work tx(c);
    tx.exec(
        "UPDATE idempotency_record SET expires_at = expires_at - interval '25 hours' "
        "WHERE key = 'old'");
    tx.commit();
  }
  EXPECT_EQ(api::DeleteExpiredIdempotencyRecords(*db_), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM idempotency_record"), 1);
  // A fresh request under the expired key is a new create (here: a name clash).
  EXPECT_EQ(Post(Path(), Body("a"), {{"Idempotency-Key", "old"}}).status, 409);
}

}  // namespace
}  // namespace sluice::testing
