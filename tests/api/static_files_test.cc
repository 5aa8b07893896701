// The web UI's files as the API listener answers them: files by type,
// deep links get index.html, nothing outside the directory, and a page
// saying how to build the UI when there is none.
#include "api/static_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/uuid.h"

namespace sluice::api {
namespace {

namespace fs = std::filesystem;

class StaticFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("sluice-ui-" + common::Uuid::V4().ToString());
    fs::create_directories(root_ / "dist" / "assets");
    Write("dist/index.html", "<div id=\"root\"></div>");
    Write("dist/assets/index-abc.js", "console.log(1)");
    Write("secret.txt", "outside");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    std::ofstream(root_ / rel) << text;
  }
  std::optional<std::string> dist() const { return (root_ / "dist").string(); }
  fs::path root_;
};

TEST_F(StaticFiles, ServesFilesWithTheirTypeAndCachesHashedAssets) {
  auto js = AnswerUiPath(dist(), "/assets/index-abc.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.body, "console.log(1)");
  EXPECT_EQ(js.content_type, "text/javascript; charset=utf-8");
  EXPECT_TRUE(js.immutable);
  auto index = AnswerUiPath(dist(), "/");
  EXPECT_EQ(index.status, 200);
  EXPECT_EQ(index.content_type, "text/html; charset=utf-8");
  EXPECT_FALSE(index.immutable);
}

TEST_F(StaticFiles, DeepLinksGetTheAppButMissingAssetsAre404) {
  auto deep = AnswerUiPath(dist(), "/pipelines/1234");
  EXPECT_EQ(deep.status, 200);
  EXPECT_EQ(deep.body, "<div id=\"root\"></div>");
  EXPECT_EQ(AnswerUiPath(dist(), "/assets/old-bundle.js").status, 404);
}

TEST_F(StaticFiles, NeverReadsOutsideTheDirectory) {
  for (const char* path : {"/../secret.txt", "/assets/../../secret.txt", "/./../secret.txt"}) {
    auto a = AnswerUiPath(dist(), path);
    EXPECT_EQ(a.body.find("outside"), std::string::npos) << path;
  }
}

TEST_F(StaticFiles, WithoutABuiltUiThePageSaysHowToBuildIt) {
  auto a = AnswerUiPath(std::nullopt, "/");
  EXPECT_EQ(a.status, 503);
  EXPECT_NE(a.body.find("npm run build"), std::string::npos);
  EXPECT_FALSE(FindUiDir((root_ / "nowhere").string()).has_value());
  EXPECT_EQ(FindUiDir(*dist()), fs::absolute(*dist()).string());
}

}  // namespace
}  // namespace sluice::api
