// The JSONL root: a directory is relative inside it, a table one file name.
#include "guard/jsonl_path.h"

#include <gtest/gtest.h>

namespace sluice::guard {
namespace {

TEST(JsonlPath, ADirectoryStaysUnderTheRoot) {
  EXPECT_TRUE(CheckJsonlDirectory("exports").ok());
  EXPECT_TRUE(CheckJsonlDirectory("team/exports/").ok());
  for (const char* bad : {"/etc", "../x", "a/../../x", "a/..", "./a", "a//b", "", "\\x"})
    EXPECT_FALSE(CheckJsonlDirectory(bad).ok()) << bad;
  auto dir = JsonlDirectory("/var/sluice/jsonl", "t1/exports", "orders");
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(dir->string(), "/var/sluice/jsonl/t1/exports");
  EXPECT_FALSE(JsonlDirectory("", "x", "orders").ok());
}

TEST(JsonlPath, ATableNameIsOneFileName) {
  EXPECT_TRUE(CheckJsonlTableName("public.orders").ok());
  for (const char* bad : {"../orders", "a/b", "/etc/passwd", "..", ".", "", "a\\b"})
    EXPECT_FALSE(CheckJsonlTableName(bad).ok()) << bad;
  EXPECT_FALSE(JsonlDirectory("/r", "x", "../../etc/cron.d/x").ok());
  EXPECT_NE(CheckJsonlTableName("a/b").message().find("jsonl-root"), std::string::npos);
}

TEST(JsonlPath, EachTeamHasItsOwnPartOfTheRoot) {
  EXPECT_EQ(TeamJsonlDirectory("t-a", "out"), "t-a/out");
  EXPECT_NE(TeamJsonlDirectory("t-a", "out"), TeamJsonlDirectory("t-b", "out"));
}

}  // namespace
}  // namespace sluice::guard
