// The loader launch contract (launch/loader_launch.h).
#include "launch/loader_launch.h"

#include <gtest/gtest.h>

#include <limits>

namespace sluice::launch {
namespace {

using nlohmann::json;

TEST(LoaderLaunchContract, round_trips_every_field) {
  LoaderLaunch c;
  c.item_id = "item-ü";
  c.attempt_micros = std::numeric_limits<std::int64_t>::max();
  c.source_url = "host='db' password='s'";
  c.source_table = "public.\"Größe\"";
  c.target_type = "jsonl";
  c.target = {{"type", "jsonl"}, {"directory", "t/out"}, {"root", "/r"}};
  c.target_schema = "analytics";
  c.target_table = "表";
  c.truncate_history = true;
  c.already_truncated = true;
  c.partition_column = "id";
  c.sequential_read = true;
  c.transforms = {json::object(), {{"filter", "x > 1"}}};
  c.report_database_url = "postgresql://db/sluice";
  c.partitions = 7;
  c.chunk_rows = 123;
  c.connect_policy = {{"deny", json::array({"169.254.0.0/16"})}};
  auto back = LoaderLaunch::FromJson(json::parse(c.ToJson().dump()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, c);
}

TEST(LoaderLaunchContract, a_mysql_source_round_trips_and_an_unknown_source_type_is_refused) {
  LoaderLaunch c;
  c.item_id = "i";
  c.source_type = "mysql";
  c.mysql = LoaderMysqlSource{"maria.example", 65535, "us`er", "pa'ss\"w 😀", "db-ü"};
  c.source_table = "t.with.dots";
  c.target_type = "postgresql";
  c.target = {{"type", "postgresql"}, {"url", "host=x"}};
  c.target_table = "t";
  auto j = c.ToJson();
  EXPECT_EQ(j["source"]["type"], "mysql");
  EXPECT_FALSE(j["source"].contains("url"));
  auto back = LoaderLaunch::FromJson(json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, c);
  j["source"]["type"] = "oracle";
  auto refused = LoaderLaunch::FromJson(j);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("no loader for a oracle source"), std::string::npos)
      << refused.status().message();
}

TEST(LoaderLaunchContract, missing_optionals_take_defaults_and_unknown_keys_are_ignored) {
  json j = {{"item_id", "i"},
            {"source", {{"url", "u"}, {"table", "public.t"}}},
            {"target", {{"type", "http"}, {"url", "https://h"}}},
            {"target_table", "t"},
            {"from_the_future", 1}};
  auto c = LoaderLaunch::FromJson(j);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->target_type, "http");
  EXPECT_EQ(c->target_schema, "public");
  EXPECT_EQ(c->partitions, 4);
  EXPECT_FALSE(c->attempt_micros);
  EXPECT_FALSE(c->partition_column);
  EXPECT_FALSE(c->ToJson().contains("from_the_future"));
  EXPECT_FALSE(c->ToJson().contains("report"));
}

TEST(LoaderLaunchContract, a_missing_required_field_is_refused) {
  auto c = LoaderLaunch::FromJson({{"item_id", "i"}});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("bad loader config"), std::string::npos);
}

}  // namespace
}  // namespace sluice::launch
