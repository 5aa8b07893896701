// Idempotency-Key on creates: replay, payload mismatch, concurrency,
// encryption of the stored response and expiry.
#include <pqxx/pqxx>
#include <thread>

#include "api/api_harness.h"
#include "api/idempotency.h"
#include "model/config_keys.h"

namespace sluice::testing {
namespace {

class IdempotencyApi : public ApiTest {
 protected:
  std::string Path() const { return "/api/v1/teams/" + team_id_ + "/connectors"; }
  Json Body(const std::string& name) {
    return {{"name", name}, {"type", "postgresql-source"}, {"configuration", PgSourceConfig()}};
  }
  long Count(const std::string& sql) {
    pqxx::connection c(url());
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
  pqxx::connection c(url());
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

// The record keeps the response before the API's redaction (encrypted whole),
// and a replay answers exactly what the original did.
class UnredactedRecord : public IdempotencyApi {
 protected:
  struct Stored {
    std::string raw;
    Json plain;
  };
  Stored Record(const std::string& endpoint) {
    pqxx::connection c(url());
    pqxx::work tx(c);
    auto row = tx.exec_params1(
        "SELECT response_body::text FROM idempotency_record WHERE endpoint = $1", endpoint);
    Stored s{row[0].as<std::string>(), nullptr};
    s.plain = model::DecryptStored(Json::parse(s.raw), keys());
    return s;
  }
};

TEST_F(UnredactedRecord, ConnectorCreateReplaysTheRedactedAnswerFromAnUnredactedRecord) {
  auto first = Post(Path(), Body("a"), {{"Idempotency-Key", "k1"}});
  ASSERT_EQ(first.status, 201) << first.body.dump();
  EXPECT_EQ(first.body["configuration"]["password"], "********");
  auto again = Post(Path(), Body("a"), {{"Idempotency-Key", "k1"}});
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(again.body, first.body);
  Stored s = Record("connectors:create");
  EXPECT_EQ(s.raw.find("s3cret-pw"), std::string::npos) << s.raw;
  EXPECT_EQ(s.plain["configuration"]["password"], "s3cret-pw") << s.plain.dump();
  EXPECT_EQ(s.plain["id"], first.body["id"]);
}

TEST_F(UnredactedRecord, WarehouseCreateKeepsTheTokenInTheRecordOnly) {
  Json body = {{"name", "wh"},
               {"warehouse_type", "databricks"},
               {"configuration",
                {{"host", "dbc-1.cloud.databricks.com"},
                 {"http_path", "/sql/1.0/warehouses/x"},
                 {"token", "dapi-secret-token"}}}};
  const std::string path = "/api/v1/teams/" + team_id_ + "/warehouses";
  auto first = Post(path, body, {{"Idempotency-Key", "w1"}});
  ASSERT_EQ(first.status, 201) << first.body.dump();
  EXPECT_EQ(first.body["configuration"]["token"], "********");
  auto again = Post(path, body, {{"Idempotency-Key", "w1"}});
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(again.body, first.body);
  Stored s = Record("warehouses:create");
  EXPECT_EQ(s.raw.find("dapi-secret-token"), std::string::npos);
  EXPECT_EQ(s.plain["configuration"]["token"], "dapi-secret-token") << s.plain.dump();
  EXPECT_EQ(Count("SELECT count(*) FROM warehouse"), 1);
}

TEST_F(UnredactedRecord, WizardReplayRedactsBothInlineConnectors) {
  Json body = {
      {"name", "shop-to-files"},
      {"source",
       {{"name", "shop"}, {"type", "postgresql-source"}, {"configuration", PgSourceConfig()}}},
      {"target",
       {{"name", "files"}, {"type", "jsonl-target"}, {"configuration", {{"directory", "out"}}}}},
      {"tables", {{{"schema", "public"}, {"table", "a"}}}}};
  const std::string path = "/api/v1/teams/" + team_id_ + "/pipeline-wizard";
  auto first = Post(path, body, {{"Idempotency-Key", "z1"}});
  ASSERT_EQ(first.status, 201) << first.body.dump();
  EXPECT_EQ(first.body["source_connector"]["configuration"]["password"], "********");
  auto again = Post(path, body, {{"Idempotency-Key", "z1"}});
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(again.body, first.body);
  Stored s = Record("pipelines:wizard");
  EXPECT_EQ(s.raw.find("s3cret-pw"), std::string::npos);
  EXPECT_EQ(s.plain["source_connector"]["configuration"]["password"], "s3cret-pw");
  EXPECT_EQ(Count("SELECT count(*) FROM pipeline"), 1);
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
    pqxx::connection c(url());
    pqxx::work tx(c);
    tx.exec(
        "UPDATE idempotency_record SET expires_at = expires_at - interval '25 hours' "
        "WHERE key = 'old'");
    tx.commit();
  }
  EXPECT_EQ(api::DeleteExpiredIdempotencyRecords(db()), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM idempotency_record"), 1);
  // A fresh request under the expired key is a new create (here: a name clash).
  EXPECT_EQ(Post(Path(), Body("a"), {{"Idempotency-Key", "old"}}).status, 409);
}

}  // namespace
}  // namespace sluice::testing
