// GET /api/v1/health/ready, the readiness a Kubernetes probe asks: 200 while
// the data-plane database answers, 503 naming it while it does not (the
// replica takes no traffic; its liveness stays green), and 200 again once
// it is back. The database is made unreachable for real: it stops accepting
// connections and the server's open ones are terminated.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <pqxx/pqxx>
#include <thread>

#include "api_harness.h"

namespace sluice::testing {
namespace {

using namespace std::chrono_literals;

// As the cluster's superuser, from another database: `dbname` refuses
// (allow = false) or accepts connections again, and its open ones are cut.
void SetAcceptingConnections(const std::string& dbname, bool allow) {
  pqxx::connection admin(ClusterUrl("postgres"));
  pqxx::nontransaction tx(admin);
  tx.exec(fmt::format("ALTER DATABASE {} ALLOW_CONNECTIONS {}", tx.quote_name(dbname),
                      allow ? "true" : "false"));
  if (!allow)
    tx.exec_params(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE datname = $1 AND pid <> pg_backend_pid()",
        dbname);
}

TEST(HealthReady, IsA503NamingTheDatabaseWhileItIsUnreachableAndA200OnceItIsBack) {
  ApiHarness api;
  const std::string dbname = pqxx::connection(api.url()).dbname();
  auto ready = api.Call("GET", "/api/v1/health/ready");
  ASSERT_EQ(ready.status, 200) << ready.raw;
  EXPECT_EQ(ready.body, (Json{{"status", "ok"}, {"database", "ok"}}));

  SetAcceptingConnections(dbname, false);
  // The first answers may meet a pooled connection the server cut (its
  // words name no database); the pool drops it and the next connection
  // attempt meets the refusal, which names it. Every answer is a 503.
  HttpResult down;
  bool named = false;
  for (int i = 0; i < 20 && !named; ++i) {
    down = api.Call("GET", "/api/v1/health/ready");
    ASSERT_EQ(down.status, 503) << down.raw;
    ASSERT_EQ(down.body["error"]["code"], "database_unavailable") << down.raw;
    named = down.body["error"]["message"].get<std::string>().find(dbname) != std::string::npos;
  }
  EXPECT_TRUE(named) << "no 503 named the database " << dbname << ": " << down.raw;
  // Liveness does not depend on the database.
  EXPECT_EQ(api.Call("GET", "/api/v1/health").status, 200);

  SetAcceptingConnections(dbname, true);
  HttpResult back;
  for (int i = 0; i < 50; ++i) {
    back = api.Call("GET", "/api/v1/health/ready");
    if (back.status == 200) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(back.status, 200) << back.raw;
  EXPECT_EQ(back.body, (Json{{"status", "ok"}, {"database", "ok"}}));
}

}  // namespace
}  // namespace sluice::testing
