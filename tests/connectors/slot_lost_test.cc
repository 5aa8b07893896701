// A slot the server invalidated (max_slot_wal_keep_size exceeded while its
// worker was away) is dropped, created again and its tables read anew: the
// sink ends equal to the source, and the loss is reported naming the slot.
// It runs on a private cluster: the limit is a server-wide setting the
// shared test cluster must not get.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <pqxx/pqxx>

#include "common/uuid.h"
#include "connectors/postgres/postgres_source.h"
#include "memory_sink.h"
#include "store/embedded_cluster.h"

namespace sluice::connectors::postgres {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::MemorySink;

class LostSlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/sluice-slot-lost-" + common::Uuid::V4().ToString().substr(0, 8);
    store::EmbeddedClusterOptions o;
    o.dir = dir_;
    o.durable = false;
    auto cluster = store::EmbeddedCluster::Start(o);
    ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
    cluster_ = std::move(cluster).value();
    // With the password itself: the source refuses libpq's passfile.
    auto password = cluster_->PasswordOf("postgres");
    ASSERT_TRUE(password.ok()) << password.status().ToString();
    url_ = fmt::format("host=127.0.0.1 port={} dbname=postgres user=postgres password={}",
                       cluster_->port(), *password);
  }
  void TearDown() override {
    if (cluster_) (void)cluster_->Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void Exec(const std::string& sql) {
    pqxx::connection c(url_);
    pqxx::nontransaction(c).exec(sql);
  }
  std::string Query1(const std::string& sql) {
    pqxx::connection c(url_);
    auto r = pqxx::nontransaction(c).exec(sql);
    return r.empty() || r[0][0].is_null() ? "" : r[0][0].c_str();
  }
  std::string WalStatus() {
    return Query1("SELECT wal_status FROM pg_replication_slots WHERE slot_name = 'lost_slot'");
  }
  std::map<std::string, json> TableRows() {
    pqxx::connection c(url_);
    auto rows = pqxx::nontransaction(c).exec(
        "SELECT json_build_object('id', id)::text, row_to_json(t)::text FROM items t");
    std::map<std::string, json> out;
    for (const auto& r : rows) out[json::parse(r[0].c_str()).dump()] = json::parse(r[1].c_str());
    return out;
  }
  PostgresSourceOptions Options() {
    PostgresSourceOptions o;
    o.url = url_;
    o.slot_name = "lost_slot";
    o.publication_name = "lost_pub";
    o.tables = {{"public", "items"}};
    o.status_interval = 100ms;
    o.heartbeat_interval = 200ms;
    return o;
  }
  template <typename Pred>
  void PollUntil(PostgresSource& source, Pred done) {
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!done()) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "condition not reached";
      auto st = source.Poll(50ms);
      ASSERT_TRUE(st.ok()) << st.ToString();
    }
  }

  std::string dir_;
  std::unique_ptr<store::EmbeddedCluster> cluster_;
  std::string url_;
};

TEST_F(LostSlotTest, ALostSlotIsCreatedAgainAndItsTablesAreReadAgain) {
  Exec("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'");
  Exec("SELECT pg_reload_conf()");
  Exec(
      "CREATE TABLE items (id int PRIMARY KEY, v text); "
      "INSERT INTO items SELECT g, 'first' FROM generate_series(1, 100) g");
  {
    MemorySink sink;
    PostgresSource source(Options(), &sink);
    auto st = source.Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    PollUntil(source, [&] { return sink.Materialize("sluice.public.items") == TableRows(); });
    source.Stop();
  }
  // While no worker streams: changes the slot will never deliver, then WAL
  // past the limit and checkpoints, which invalidate the slot.
  Exec(
      "INSERT INTO items SELECT g, 'later' FROM generate_series(101, 200) g; "
      "UPDATE items SET v = 'changed' WHERE id <= 10; DELETE FROM items WHERE id = 50");
  Exec("CREATE TABLE filler (x text)");
  for (int i = 0; i < 20 && WalStatus() != "lost"; ++i) {
    Exec("INSERT INTO filler SELECT repeat('x', 1000) FROM generate_series(1, 3000)");
    Exec("SELECT pg_switch_wal()");
    Exec("CHECKPOINT");
  }
  ASSERT_EQ(WalStatus(), "lost");

  MemorySink sink;
  std::vector<std::string> lost;
  auto o = Options();
  o.on_slot_lost = [&](const std::string& slot, const std::string& reason) {
    lost.push_back(slot);
    EXPECT_NE(reason.find("lost"), std::string::npos) << reason;
  };
  PostgresSource source(o, &sink);
  auto st = source.Start();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(lost, std::vector<std::string>{"lost_slot"});
  EXPECT_EQ(WalStatus(), "reserved");
  PollUntil(source, [&] { return sink.Materialize("sluice.public.items") == TableRows(); });
  EXPECT_EQ(sink.Materialize("sluice.public.items").size(), 199u);
  // And the stream goes on from the new slot.
  Exec("INSERT INTO items VALUES (500, 'after')");
  PollUntil(source, [&] { return sink.Materialize("sluice.public.items") == TableRows(); });
  source.Stop();
}

}  // namespace
}  // namespace sluice::connectors::postgres
