// The worker protocol's wire form of refused records: what became of each
// (error table, skipped, stopped) and its key travel to the back end, which
// words the event by it.
#include <gtest/gtest.h>

#include "common/short_text.h"
#include "dataflow/pod_reports.h"

namespace sluice::dataflow {
namespace {

using nlohmann::json;

// A whole-row key of kilobytes is quoted short in a stop's reason, cut at
// a character (found from outside: worker.reason ran to 7,257 characters).
TEST(ShortenedForMessage, KeepsShortTextAndCutsLongTextAtACharacter) {
  EXPECT_EQ(common::ShortenedForMessage(R"({"id":17})"), R"({"id":17})");
  std::string long_key = "{\"v\":\"" + std::string(193, 'a') + "é" + std::string(5000, 'b');
  auto shortened = common::ShortenedForMessage(long_key);
  EXPECT_EQ(shortened, "{\"v\":\"" + std::string(193, 'a') + "… (" +
                           std::to_string(long_key.size()) + " bytes)");
  EXPECT_EQ(common::ShortenedForMessage(std::string(300, 'x'), 10), "xxxxxxxxxx… (300 bytes)");
}

TEST(RejectedWire, DispositionAndKeyRoundTrip) {
  std::vector<RejectedRef> refs = {
      {"t", 0, 16, "webhook refused the change with 422: no", Disposition::kStopped,
       R"({"id":17})"},
      {"t", 1, 3, "constraint", Disposition::kSkipped, ""},
      {"t", 2, 4, "constraint", Disposition::kErrorTable, R"({"id":4})"}};
  auto back = RejectedFromJson(RejectedToJson(refs));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[0].disposition, Disposition::kStopped);
  EXPECT_EQ((*back)[0].key, R"({"id":17})");
  EXPECT_EQ((*back)[0].offset, 16);
  EXPECT_EQ((*back)[1].disposition, Disposition::kSkipped);
  EXPECT_EQ((*back)[2].disposition, Disposition::kErrorTable);
}

TEST(RejectedWire, AnOlderPodWithoutADispositionMeansTheErrorTable) {
  auto back = RejectedFromJson(
      json::array({{{"topic", "t"}, {"partition", 0}, {"offset", 1}, {"error", "e"}}}));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ((*back)[0].disposition, Disposition::kErrorTable);
}

TEST(RejectedWire, AnUnknownDispositionIsRefused) {
  auto back = RejectedFromJson(json::array({{{"topic", "t"},
                                             {"partition", 0},
                                             {"offset", 1},
                                             {"error", "e"},
                                             {"disposition", "lost"}}}));
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("disposition"), std::string::npos);
}

TEST(OnRefusal, StopOrSkipOnly) {
  EXPECT_EQ(ParseOnRefusal("stop"), SubscriptionSpec::OnRefusal::kStop);
  EXPECT_EQ(ParseOnRefusal("skip"), SubscriptionSpec::OnRefusal::kSkip);
  EXPECT_EQ(ParseOnRefusal("drop"), std::nullopt);
  SubscriptionSpec spec;
  EXPECT_EQ(spec.on_refusal, SubscriptionSpec::OnRefusal::kStop) << "stop is the default";
}

}  // namespace
}  // namespace sluice::dataflow
