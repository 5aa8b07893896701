// Connection parameters are libpq keywords: a crafted host stays one host
// name and adds no parameter, and Pin sends libpq to the checked address.
#include <gtest/gtest.h>

#include "guard/postgres_conninfo.h"

namespace sluice::guard {
namespace {

nlohmann::json Config(const std::string& host) {
  return {{"host", host},  {"port", 5432},           {"database", "shop"},
          {"user", "app"}, {"password", "p'w\\d x"}, {"sslmode", "require"}};
}

TEST(Conninfo, ACraftedHostAddsNoParameter) {
  for (const std::string host :
       {"h?sslmode=disable&host=127.0.0.1", "x dbname=sluice", "x' dbname='sluice",
        "x\\' host=127.0.0.1 dbname=sluice", "db/sluice?user=postgres"}) {
    auto kw = ParseConninfo(ConninfoFromConfig(Config(host)));
    ASSERT_TRUE(kw.ok()) << host << ": " << kw.status().message();
    EXPECT_EQ((*kw)["host"], host);
    EXPECT_EQ((*kw)["dbname"], "shop") << host;
    EXPECT_EQ((*kw)["sslmode"], "require") << host;
    EXPECT_EQ((*kw)["user"], "app") << host;
    EXPECT_EQ((*kw)["password"], "p'w\\d x") << host;
    EXPECT_EQ(kw->count("hostaddr"), 0u) << host;
  }
}

TEST(Conninfo, ADestinationIsOneTcpHostAndItsDatabase) {
  auto d = PostgresDestination(ConninfoFromConfig(Config("db.internal")));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->host, "db.internal");
  EXPECT_EQ(d->port, 5432);
  EXPECT_EQ(*d->database, "shop");
  // libpq's default database is the user's name.
  EXPECT_EQ(*PostgresDestination("host=db user=sluice")->database, "sluice");
  EXPECT_EQ(*PostgresDestination("postgresql://u@db:6000/x")->database, "x");
  EXPECT_EQ(PostgresDestination("postgresql://u@db:6000/x")->port, 6000);
  for (const char* refused :
       {"host=/var/run/postgresql dbname=x", "dbname=x", "host=a,b dbname=x",
        "host=db dbname=x service=prod", "host=db dbname=x passfile=/root/.pgpass",
        "host=db dbname=x sslkey=/etc/sluice/key", "postgresql://%2Ftmp/x"}) {
    auto r = PostgresDestination(refused);
    EXPECT_FALSE(r.ok()) << refused;
    EXPECT_TRUE(IsRefusal(r.status())) << refused << ": " << r.status().message();
  }
}

TEST(Conninfo, PinSendsLibpqToTheCheckedAddress) {
  ConnectPolicy open;
  auto pinned = PinPostgres(open, ConninfoFromConfig(Config("localhost")));
  ASSERT_TRUE(pinned.ok()) << pinned.status().message();
  auto kw = *ParseConninfo(*pinned);
  EXPECT_EQ(kw["host"], "localhost");
  EXPECT_TRUE(kw["hostaddr"] == "127.0.0.1" || kw["hostaddr"] == "::1") << kw["hostaddr"];
  EXPECT_EQ(kw["dbname"], "shop");
  EXPECT_EQ(kw["password"], "p'w\\d x");
  // A hostaddr given by the caller is what is checked, not the name.
  auto p = *ConnectPolicy::FromLists({}, {"10.9.0.0/16"});
  EXPECT_TRUE(IsRefusal(PinPostgres(p, "host=db.example hostaddr=10.9.0.1 dbname=x").status()));
}

TEST(Conninfo, TheControlDatabaseEndpointComesFromItsUrl) {
  auto e = ControlDatabaseEndpoint("postgresql://sluice@127.0.0.1:5544/sluice");
  EXPECT_EQ(e.rule, "control-database");
  EXPECT_EQ(e.port, 5544);
  EXPECT_EQ(*e.database, "sluice");
  EXPECT_TRUE(e.any_local);
  ConnectPolicy p;
  p.Protect(e);
  auto st = PinPostgres(
      p,
      ConninfoFromConfig(
          {{"host", "localhost"}, {"port", 5544}, {"database", "sluice"}, {"user", "postgres"}}));
  EXPECT_TRUE(IsRefusal(st.status())) << st.status().message();
  // Over a socket: every local address at that port.
  auto socket = ControlDatabaseEndpoint("host=/tmp/pg port=6543 dbname=plane user=x");
  EXPECT_TRUE(socket.any_local);
  EXPECT_EQ(socket.port, 6543);
  EXPECT_EQ(*socket.database, "plane");
}

}  // namespace
}  // namespace sluice::guard
