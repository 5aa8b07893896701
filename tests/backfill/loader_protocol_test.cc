// The loader's API path, over real HTTP against the back end's API with a
// real `sluice loader --item ID --api URL` process: the token of the item's
// live attempt completes the item; a requeued attempt's token, another item's
// token, a user's token and a forged one are refused; no response but the
// launch carries connection details.
#include <gtest/gtest.h>

#include "backfill/repository.h"
#include "protocol_fixture.h"

namespace sluice::backfill {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class LoaderProtocolTest : public testing::ProtocolFixture {
 protected:
  // The item as the launcher leaves it: checked and running, one attempt.
  std::int64_t Start(const common::Uuid& item_id) {
    std::int64_t attempt = 0;
    db().Transact([&](pqxx::work& tx) {
      auto item = *Repository::FindItem(tx, item_id);
      item.checked_at = common::Clock::now();
      ASSERT_TRUE(item.Launch(common::Clock::now(), LoaderJobsName(item_id)).ok());
      Repository::UpdateItem(tx, item);
      attempt = Micros(*item.started_at);
    });
    return attempt;
  }
  static std::string LoaderJobsName(const common::Uuid& id) {
    return "sluice-loader-" + id.ToString();
  }
  common::ProcessResult RunLoader(const common::Uuid& item_id, const std::string& token) {
    return common::RunProcess({"/usr/bin/env", "SLUICE_LOADER_TOKEN=" + token,
                               std::getenv("SLUICE_BIN"), "loader", "--item", item_id.ToString(),
                               "--api", ApiUrl()});
  }
  httplib::Result Call(const std::string& method, const std::string& path, const std::string& token,
                       const json& body = nullptr) {
    httplib::Client cli("127.0.0.1", server_->port());
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    if (method == "GET") return cli.Get(path, h);
    return cli.Post(path, h, body.dump(), "application/json");
  }
  static std::string Launch(const common::Uuid& id) {
    return "/api/v1/loader/items/" + id.ToString() + "/launch";
  }
  static std::string Reports(const common::Uuid& id) {
    return "/api/v1/loader/items/" + id.ToString() + "/reports";
  }
};

TEST_F(LoaderProtocolTest, ALoaderWithItsAttemptsTokenCompletesTheItemOverTheApi) {
  CreateSourceTable("p", 3000);
  auto runs = Trigger({AddPair("p", "p_copy")});
  auto item_id = runs[0].items[0].id;
  auto attempt = Start(item_id);
  auto r = RunLoader(item_id, TokenFor(item_id, attempt));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto item = Item(item_id);
  EXPECT_EQ(item.status, ItemStatus::kCompleted);
  EXPECT_EQ(item.rows_written, 3000);
  EXPECT_TRUE(item.last_report_at.has_value());
  EXPECT_EQ(Digest(target_url(), "p_copy"), Digest(source_url(), "p"));
}

TEST_F(LoaderProtocolTest, ARequeuedAttemptsTokenIsRefusedAndItsLoaderWritesNothing) {
  CreateSourceTable("q", 500);
  auto runs = Trigger({AddPair("q", "q_copy")});
  auto item_id = runs[0].items[0].id;
  auto old_attempt = Start(item_id);
  auto old_token = TokenFor(item_id, old_attempt);
  // The attempt is lost and requeued, then launched again: a new attempt.
  db().Transact([&](pqxx::work& tx) {
    auto item = *Repository::FindItem(tx, item_id);
    ASSERT_TRUE(item.Requeue().ok());
    Repository::UpdateItem(tx, item);
  });
  std::this_thread::sleep_for(2ms);
  auto new_attempt = Start(item_id);
  ASSERT_NE(new_attempt, old_attempt);
  EXPECT_EQ(Call("GET", Launch(item_id), old_token)->status, 409);
  auto at = Micros(common::Clock::now());
  EXPECT_EQ(Call("POST", Reports(item_id), old_token,
                 {{"kind", "complete"}, {"rows", 7}, {"at_micros", at}})
                ->status,
            409);
  auto r = RunLoader(item_id, old_token);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_EQ(Scalar(target_url(), "SELECT count(*) FROM pg_tables WHERE tablename = 'q_copy'"), 0)
      << "the refused loader created nothing";
  auto item = Item(item_id);
  EXPECT_EQ(item.status, ItemStatus::kRunning);
  EXPECT_FALSE(item.rows_written.has_value()) << "the old token reported nothing";
  // The live attempt's token still works.
  auto ok = RunLoader(item_id, TokenFor(item_id, new_attempt));
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_EQ(Item(item_id).status, ItemStatus::kCompleted);
}

TEST_F(LoaderProtocolTest, OtherTokensAreUnauthenticated) {
  CreateSourceTable("o", 10);
  CreateSourceTable("o2", 10);
  auto runs = Trigger({AddPair("o", "o_copy"), AddPair("o2", "o2_copy")});
  ASSERT_EQ(runs[0].items.size(), 2u);
  auto a = runs[0].items[0].id, b = runs[0].items[1].id;
  auto attempt_a = Start(a);
  Start(b);
  auto token_a = TokenFor(a, attempt_a);
  // Another item's token.
  EXPECT_EQ(Call("GET", Launch(b), token_a)->status, 401);
  EXPECT_EQ(Call("POST", Reports(b), token_a, {{"kind", "claim"}})->status, 401);
  // No token, a forged one, one signed by another deployment's key.
  EXPECT_EQ(Call("GET", Launch(a), "")->status, 401);
  EXPECT_EQ(Call("GET", Launch(a), token_a + "x")->status, 401);
  auth::TokenSigner other(auth::SecretKey::Random());
  auth::TokenClaims c{
      auth::TokenKind::kLoader, a, std::nullopt, std::to_string(attempt_a), std::time(nullptr),
      std::time(nullptr) + 3600};
  EXPECT_EQ(Call("GET", Launch(a), other.Sign(c))->status, 401);
  // A user's access token is not a loader token, and a loader token opens
  // nothing else.
  auth::TokenClaims user{auth::TokenKind::kAccess, common::Uuid::V4(),       std::nullopt, "",
                         std::time(nullptr),       std::time(nullptr) + 3600};
  EXPECT_EQ(Call("GET", Launch(a), server_->context().signer.Sign(user))->status, 401);
  EXPECT_EQ(Call("GET", "/api/v1/backfills/" + runs[0].run.id.ToString(), token_a)->status, 401);
  EXPECT_EQ(Call("GET", "/api/v1/worker/launch", token_a)->status, 401);
  EXPECT_EQ(Item(a).status, ItemStatus::kRunning);
}

TEST_F(LoaderProtocolTest, OnlyTheLaunchCarriesConnectionDetails) {
  CreateSourceTable("s", 10);
  auto runs = Trigger({AddPair("s", "s_copy")});
  auto item_id = runs[0].items[0].id;
  auto attempt = Start(item_id);
  auto token = TokenFor(item_id, attempt);
  auto launch = Call("GET", Launch(item_id), token);
  ASSERT_EQ(launch->status, 200) << launch->body;
  auto config = json::parse(launch->body)["config"];
  EXPECT_EQ(config["source"]["url"], source_url());
  EXPECT_EQ(config["item_id"], item_id.ToString());
  EXPECT_EQ(config["attempt_micros"], attempt);
  EXPECT_FALSE(config.contains("report")) << "a Job never learns the database";
  EXPECT_EQ(launch->body.find(plane_url()), std::string::npos);
  auto at = Micros(common::Clock::now());
  std::vector<json> reports = {{{"kind", "claim"}},
                               {{"kind", "progress"}, {"rows", 4}, {"at_micros", at}},
                               {{"kind", "truncated"}, {"at_micros", at}},
                               {{"kind", "complete"}, {"rows", 10}, {"at_micros", at + 1}}};
  for (const auto& body : reports) {
    auto r = Call("POST", Reports(item_id), token, body);
    EXPECT_EQ(r->status, 204) << body.dump() << " " << r->body;
    EXPECT_TRUE(r->body.empty()) << r->body;
  }
  auto item = Item(item_id);
  EXPECT_EQ(item.status, ItemStatus::kCompleted);
  EXPECT_EQ(item.rows_written, 10);
  EXPECT_TRUE(item.truncated_at.has_value()) << "stamped from the loader's report";
  // Finished: the attempt no longer takes reports, and refusals name no secret.
  auto late = Call("POST", Reports(item_id), token,
                   {{"kind", "progress"}, {"rows", 1}, {"at_micros", at + 2}});
  EXPECT_EQ(late->status, 409);
  EXPECT_EQ(late->body.find(source_url()), std::string::npos);
  // A check report is not taken over the API, nor a malformed one.
  EXPECT_EQ(Call("POST", Reports(item_id), token, {{"kind", "checked"}, {"at_micros", at}})->status,
            422);
  EXPECT_EQ(Call("POST", Reports(item_id), token, {{"kind", "progress"}, {"rows", "x"}})->status,
            422);
  EXPECT_EQ(Call("POST", Reports(item_id), token, {{"kind", 3}})->status, 422);
  EXPECT_EQ(Call("POST", Reports(item_id), token, json::array({1}))->status, 400);
}

}  // namespace
}  // namespace sluice::backfill
