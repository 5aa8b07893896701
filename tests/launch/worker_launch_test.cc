// The worker launch contract (launch/worker_launch.h): what the launcher
// writes, the worker reads back unchanged, and the other way round.
#include "launch/worker_launch.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace sluice::launch {
namespace {

using nlohmann::json;

const std::string kWorker = "0b7d7f0e-3c1a-4b7e-9c3e-5d2f1a6b8c90";
const std::string kConnector = "1e2d3c4b-5a69-4788-9a0b-c1d2e3f40516";
const std::string kGeneration = "7f6e5d4c-3b2a-4190-8f7e-6d5c4b3a2910";

WorkerLaunch Base(std::string kind) {
  WorkerLaunch w;
  w.worker_id = kWorker;
  w.generation = kGeneration;
  w.connector_id = kConnector;
  w.shard = 3;
  w.kind = std::move(kind);
  w.broker = {{"bootstrap_servers", "broker:9092"}, {"sasl_password", "broker-secret"}};
  w.report_database_url = "postgresql://sluice:report-secret@db/sluice";
  w.registry_url = "https://registry:8081";
  w.registry_token = "registry-secret-token";
  w.registry_ca_file = "/etc/sluice/ca.pem";
  w.connect_policy = {{"allow", json::array({"10.0.0.0/8"})}};
  return w;
}

WorkerLaunch PostgresSource() {
  WorkerLaunch w = Base("source");
  PostgresSourceLaunch pg;
  pg.url = "host='db' password='pg-secret' dbname='shop'";
  pg.slot = "sluice_slot_3";
  pg.publication = "sluice_pub_3";
  pg.topic_prefix = "sluice.0123456789ab";
  pg.format = "avro";
  pg.tables = {{"public", "orders"}, {"Größe", "表_🙂"}};
  pg.tables_without_key = "refuse";
  pg.heartbeat_interval_ms = 0;
  pg.slot_lag_warn_bytes = std::numeric_limits<std::int64_t>::max();
  pg.slot_lag_critical_bytes = std::int64_t{10} << 40;
  pg.spool_memory_bytes = 1;
  w.source = pg;
  DatamodelLaunch d;
  d.id = "dm-1";
  d.source_topic = "sluice.0123456789ab.public.orders";
  d.target_topic = "orders.shaped";
  d.consumer_group = "datamodel-dm-1";
  d.transform = {{"rename", {{"naïve", "naive"}}},
                 {"big", std::numeric_limits<std::uint64_t>::max()}};
  d.key = std::vector<std::string>{"id", "ключ"};
  d.format = "avro";
  d.only_team = "team-1";
  w.datamodels = {d};
  w.jsonl_root = "/var/sluice/jsonl";
  return w;
}

WorkerLaunch MysqlSource() {
  WorkerLaunch w = Base("source");
  MysqlSourceLaunch my;
  my.host = "maria";
  my.port = 3307;
  my.user = "repl";
  my.password = "mysql-secret";
  my.database = "shop";
  my.server_id = std::numeric_limits<std::uint32_t>::max();
  my.topic_prefix = "sluice.x";
  my.tables = {{"shop", "orders"}, {"shop", "línea"}};
  my.heartbeat_interval_ms = 3600000;
  my.snapshot_chunk_size = 1000000;
  my.snapshot = false;
  my.resnapshot_when_purged = true;
  my.tables_without_key = "refuse";
  w.source = my;
  return w;
}

WorkerLaunch HttpTarget() {
  WorkerLaunch w = Base("target");
  HttpTargetLaunch h;
  h.url = "https://hooks.example/in";
  h.headers = {{"Authorization", "Bearer http-secret"}};
  h.timeout_ms = 2500;
  w.target = h;
  SubscriptionLaunch s;
  s.id = "sub-1";
  s.name = "Bestellungen → Lager";
  s.topic = "orders.shaped";
  s.consumer_group = "sub-1";
  s.target_table = "orders";
  s.target_schema = "analytics";
  s.transform_config = {{"filter", "amount > 10"}};
  s.error_table = "orders_errors";
  s.error_target_url = "host='err' password='error-secret'";
  s.on_refusal = "skip";
  w.subscriptions = {s};
  return w;
}

// ToJson, written out and read back as the worker reads its file.
WorkerLaunch ThroughFile(const WorkerLaunch& w) {
  auto parsed = WorkerLaunch::FromJson(json::parse(w.ToJson().dump()));
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return parsed.ok() ? *parsed : WorkerLaunch{};
}

TEST(WorkerLaunchContract, postgres_source_round_trips_with_unicode_and_extreme_numbers) {
  WorkerLaunch w = PostgresSource();
  EXPECT_EQ(ThroughFile(w), w);
  auto j = w.ToJson();
  EXPECT_EQ(j["source"]["slot_lag_warn_bytes"].get<std::int64_t>(),
            std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(j["source"]["tables"][1]["table"], "表_🙂");
  EXPECT_EQ(j["datamodels"][0]["transform"]["big"].get<std::uint64_t>(),
            std::numeric_limits<std::uint64_t>::max());
}

TEST(WorkerLaunchContract, mysql_source_round_trips) {
  WorkerLaunch w = MysqlSource();
  EXPECT_EQ(ThroughFile(w), w);
  EXPECT_EQ(w.ToJson()["source"]["server_id"].get<std::uint64_t>(), 4294967295u);
  // Only full or refuse are taken.
  json j = w.ToJson();
  j["source"]["tables_without_key"] = "ignore";
  auto bad = WorkerLaunch::FromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("source.tables_without_key: full or refuse"),
            std::string::npos)
      << bad.status().message();
}

TEST(WorkerLaunchContract, kafka_source_round_trips) {
  WorkerLaunch w = Base("source");
  w.source = KafkaSourceLaunch{"clicks"};
  EXPECT_EQ(ThroughFile(w), w);
  EXPECT_EQ(w.ToJson()["source"], json({{"type", "kafka"}, {"topic", "clicks"}}));
}

TEST(WorkerLaunchContract, every_target_type_round_trips) {
  WorkerLaunch http = HttpTarget();
  EXPECT_EQ(ThroughFile(http), http);
  WorkerLaunch pg = HttpTarget();
  pg.target = PostgresTargetLaunch{"host='t' password='pw'", false};
  EXPECT_EQ(ThroughFile(pg), pg);
  WorkerLaunch jsonl = HttpTarget();
  jsonl.target = JsonlTargetLaunch{"team-1/out", std::int64_t{1} << 40, "/var/sluice/jsonl"};
  EXPECT_EQ(ThroughFile(jsonl), jsonl);
}

TEST(WorkerLaunchContract, json_read_then_written_is_the_same_bytes) {
  for (const auto& w : {PostgresSource(), MysqlSource(), HttpTarget()}) {
    std::string text = w.ToJson().dump();
    auto parsed = WorkerLaunch::FromJson(json::parse(text));
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    EXPECT_EQ(parsed->ToJson().dump(), text);
  }
}

TEST(WorkerLaunchContract, absent_optional_fields_stay_absent) {
  json j = {{"worker_id", kWorker},
            {"connector_id", kConnector},
            {"generation", kGeneration},
            {"kind", "source"},
            {"source",
             {{"type", "postgresql"},
              {"url", "host=db"},
              {"slot", "s"},
              {"publication", "p"},
              {"tables", {{{"table", "t"}}}}}}};
  auto w = WorkerLaunch::FromJson(j);
  ASSERT_TRUE(w.ok()) << w.status().message();
  const auto& pg = std::get<PostgresSourceLaunch>(*w->source);
  EXPECT_FALSE(pg.heartbeat_interval_ms);
  EXPECT_FALSE(pg.tables_without_key);
  EXPECT_FALSE(w->report_database_url);
  EXPECT_FALSE(w->registry_url);
  EXPECT_EQ(pg.tables, (std::vector<TableRef>{{"public", "t"}}));  // schema defaults
  json out = w->ToJson();
  for (const char* key : {"heartbeat_interval_ms", "tables_without_key", "slot_lag_warn_bytes",
                          "slot_lag_critical_bytes", "spool_memory_bytes"})
    EXPECT_FALSE(out["source"].contains(key)) << key;
  for (const char* key : {"report", "registry", "datamodels", "target", "subscriptions",
                          "connect_policy", "jsonl_root"})
    EXPECT_FALSE(out.contains(key)) << key;
}

TEST(WorkerLaunchContract, unknown_keys_are_ignored_and_not_written_back) {
  json j = PostgresSource().ToJson();
  j["backend"] = {{"url", "https://api"}, {"token", "t"}};
  j["from_a_newer_launcher"] = {1, 2, 3};
  j["source"]["unheard_of"] = true;
  auto w = WorkerLaunch::FromJson(j);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(*w, PostgresSource());
  EXPECT_FALSE(w->ToJson().contains("backend"));
  EXPECT_FALSE(w->ToJson().contains("from_a_newer_launcher"));
  EXPECT_FALSE(w->ToJson()["source"].contains("unheard_of"));
}

TEST(WorkerLaunchContract, from_json_names_every_problem) {
  json j = {{"worker_id", "not-a-uuid"},
            {"connector_id", kConnector},
            {"kind", "source"},
            {"source", {{"type", "postgresql"}, {"format", "xml"}, {"heartbeat_interval_ms", -1}}}};
  auto w = WorkerLaunch::FromJson(j);
  ASSERT_FALSE(w.ok());
  const std::string& m = w.status().message();
  for (const char* expected :
       {"worker_id: a UUID is required", "generation: a UUID is required",
        "source.heartbeat_interval_ms: a non-negative integer", "source.format: json or avro",
        "source.url is required", "source.slot is required", "source.tables: at least one table"})
    EXPECT_NE(m.find(expected), std::string::npos) << expected << " not in: " << m;
}

TEST(WorkerLaunchContract, wrong_member_types_are_refused_not_thrown) {
  json j = HttpTarget().ToJson();
  j["report"] = {{"database_url", 42}};
  auto w = WorkerLaunch::FromJson(j);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("launch config:"), std::string::npos);
  EXPECT_FALSE(WorkerLaunch::FromJson(json::array()).ok());
  j = MysqlSource().ToJson();
  j["source"]["server_id"] = std::int64_t{1} << 40;  // over 2^32 - 1
  w = WorkerLaunch::FromJson(j);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("source.server_id: an integer from 1 to 4294967295"),
            std::string::npos)
      << w.status().message();
}

TEST(WorkerLaunchContract, redacted_json_carries_no_secret) {
  for (const auto& w : {PostgresSource(), MysqlSource(), HttpTarget()}) {
    std::string full = w.ToJson().dump();
    std::string logged = w.RedactedJson().dump();
    for (const char* secret : {"pg-secret", "mysql-secret", "http-secret", "error-secret",
                               "registry-secret-token", "broker-secret", "report-secret"}) {
      EXPECT_EQ(logged.find(secret), std::string::npos) << secret << " in " << logged;
    }
    // The worker itself needs them: ToJson keeps them.
    EXPECT_NE(full.find("secret"), std::string::npos);
    EXPECT_NE(logged.find("<redacted>"), std::string::npos);
  }
}

TEST(SourceLaunch, postgres_from_connector_suffixes_configured_names_per_shard) {
  json config = {{"host", "db"},
                 {"database", "shop"},
                 {"user", "u"},
                 {"password", "p"},
                 {"slot_name", "mine"},
                 {"heartbeat_interval_seconds", 7},
                 {"slot_lag_warn_bytes", 5}};
  auto s0 = PostgresSourceLaunch::FromConnector(config, 0, "default", "pre", "json", {});
  auto s2 = PostgresSourceLaunch::FromConnector(config, 2, "default", "pre", "json", {});
  EXPECT_EQ(s0.slot, "mine");
  EXPECT_EQ(s0.publication, "mine");
  EXPECT_EQ(s2.slot, "mine_2");
  EXPECT_EQ(s2.publication, "mine_2");  // the suffixed slot name
  EXPECT_EQ(s0.heartbeat_interval_ms, 7000);
  EXPECT_EQ(s0.slot_lag_warn_bytes, 5);
  EXPECT_FALSE(s0.slot_lag_critical_bytes);
  config.erase("slot_name");
  EXPECT_EQ(PostgresSourceLaunch::FromConnector(config, 2, "sluice_x_2", "pre", "json", {}).slot,
            "sluice_x_2");
}

TEST(SourceLaunch, mysql_from_connector_gives_each_shard_its_server_id) {
  json config = {{"host", "maria"},
                 {"database", "shop"},
                 {"user", "u"},
                 {"password", "p"},
                 {"heartbeat_interval_seconds", 2},
                 {"on_purged_position", "resnapshot"},
                 {"tables_without_key", "refuse"}};
  // The default id is already shard 2's own (derived from connector and shard).
  auto s = MysqlSourceLaunch::FromConnector(config, 2, 1000, "pre", "json", {{"shop", "t"}});
  EXPECT_EQ(s.server_id, 1000u);
  EXPECT_EQ(s.port, 3306);
  EXPECT_EQ(s.heartbeat_interval_ms, 2000);
  EXPECT_TRUE(s.resnapshot_when_purged);
  EXPECT_EQ(s.tables_without_key, "refuse");
  config["server_id"] = 40;
  EXPECT_EQ(MysqlSourceLaunch::FromConnector(config, 1, 1000, "pre", "json", {}).server_id, 41u);
}

TEST(TargetLaunch, from_connector_keeps_only_what_the_runtime_reads) {
  auto http = TargetFromConnector(
      "http", {{"url", "https://h"}, {"headers", {{"X", "y"}}}, {"batch_size", 9}}, "team");
  ASSERT_TRUE(http.ok());
  EXPECT_EQ(TargetToJson(*http),
            json({{"type", "http"}, {"url", "https://h"}, {"headers", {{"X", "y"}}}}));
  auto jsonl = TargetFromConnector("jsonl", {{"directory", "out"}, {"rotate_bytes", 10}}, "team");
  ASSERT_TRUE(jsonl.ok());
  EXPECT_EQ(std::get<JsonlTargetLaunch>(*jsonl).rotate_bytes, 10);
  auto none = TargetFromConnector("kafka", json::object(), "team");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "no runtime for target type kafka");
}

}  // namespace
}  // namespace sluice::launch
