#include <gtest/gtest.h>

#include "metrics/snapshot.h"

namespace sluice::metrics {
namespace {

constexpr std::int64_t kNow = 1'773'144'000'000;  // 2026-03-10 12:00 UTC

ProductionSnapshot Good() {
  ProductionSnapshot s;
  s.from_ts = kNow - 10'000;
  s.to_ts = kNow;
  s.topic = "pg.public.orders";
  s.events = {10, 1, 5, 3, 1, std::nullopt};
  return s;
}

ConsumptionSnapshot GoodConsumption() {
  ConsumptionSnapshot s;
  s.subscription_id = common::Uuid::V4();
  s.topic = "pg.public.orders";
  s.from_ts = kNow - 10'000;
  s.to_ts = kNow;
  s.consumed = 10;
  s.delivered = 8;
  s.skipped = 1;
  s.errored = 1;
  return s;
}

TEST(ProductionSnapshot, WellFormedSnapshotIsAccepted) { EXPECT_TRUE(Good().Validate(kNow).ok()); }

TEST(ProductionSnapshot, ToBeforeFromIsRejected) {
  auto s = Good();
  s.to_ts = s.from_ts - 1;
  auto st = s.Validate(kNow);
  EXPECT_EQ(st.code(), common::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("before from_ts"), std::string::npos) << st.message();
}

TEST(ProductionSnapshot, ZeroLengthIntervalIsAccepted) {
  auto s = Good();
  s.to_ts = s.from_ts;
  EXPECT_TRUE(s.Validate(kNow).ok());
}

TEST(ProductionSnapshot, FromFarInTheFutureIsRejected) {
  auto s = Good();
  s.from_ts = kNow + 3'600'000;
  s.to_ts = s.from_ts + 1000;
  auto st = s.Validate(kNow);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("future"), std::string::npos) << st.message();
}

TEST(ProductionSnapshot, SmallClockSkewIsAccepted) {
  auto s = Good();
  s.from_ts = kNow + 30'000;
  s.to_ts = s.from_ts + 1000;
  EXPECT_TRUE(s.Validate(kNow).ok());
}

TEST(ProductionSnapshot, NegativeCountIsRejected) {
  auto s = Good();
  s.events.u = -3;
  s.events.c = 11;
  auto st = s.Validate(kNow);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("events.u is negative"), std::string::npos) << st.message();
}

TEST(ProductionSnapshot, TotalBelowTheSumOfItsPartsIsRejected) {
  auto s = Good();
  s.events.total = 9;
  auto st = s.Validate(kNow);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("below r+c+u+d"), std::string::npos) << st.message();
}

TEST(ProductionSnapshot, TotalAboveItsPartsCountsTruncatesAndIsAccepted) {
  auto s = Good();
  s.events.total = 11;  // one truncate: counted in total, no column of its own
  EXPECT_TRUE(s.Validate(kNow).ok());
}

TEST(ProductionSnapshot, TopicKafkaWouldRefuseIsRejected) {
  auto s = Good();
  s.topic = "orders topic";
  EXPECT_FALSE(s.Validate(kNow).ok());
  s.topic = "";
  EXPECT_FALSE(s.Validate(kNow).ok());
}

TEST(ProductionSnapshot, JsonWithBytesParses) {
  auto j = nlohmann::json::parse(R"({"from_ts": 1, "to_ts": 2, "topic": "t",
      "events": {"total": 3, "r": 0, "c": 1, "u": 1, "d": 1, "bytes": 99}})");
  auto s = ProductionSnapshot::FromJson(j);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->events.bytes, 99);
  EXPECT_EQ(s->events.ToJson()["bytes"], 99);
}

TEST(ProductionSnapshot, JsonMissingACountIsRejected) {
  auto j = nlohmann::json::parse(
      R"({"from_ts": 1, "to_ts": 2, "topic": "t", "events": {"total": 3, "r": 0, "c": 1, "u": 1}})");
  auto s = ProductionSnapshot::FromJson(j);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("d is missing"), std::string::npos);
}

TEST(ProductionSnapshot, JsonWithFractionalTimestampIsRejected) {
  auto j = nlohmann::json::parse(
      R"({"from_ts": 1.5, "to_ts": 2, "topic": "t", "events": {"total": 0, "r": 0, "c": 0, "u": 0, "d": 0}})");
  EXPECT_FALSE(ProductionSnapshot::FromJson(j).ok());
}

TEST(ConsumptionSnapshot, WellFormedSnapshotWithoutLagIsAccepted) {
  EXPECT_TRUE(GoodConsumption().Validate(kNow).ok());
}

TEST(ConsumptionSnapshot, NegativeLagIsRejected) {
  auto s = GoodConsumption();
  s.consumer_lag = -1;
  EXPECT_FALSE(s.Validate(kNow).ok());
}

TEST(ConsumptionSnapshot, NegativeDeliveredIsRejected) {
  auto s = GoodConsumption();
  s.delivered = -1;
  EXPECT_FALSE(s.Validate(kNow).ok());
}

TEST(ConsumptionSnapshot, DeliveringMoreThanConsumedInOneIntervalIsAccepted) {
  // A retry delivers in this interval what an earlier one consumed.
  auto s = GoodConsumption();
  s.delivered = 50;
  EXPECT_TRUE(s.Validate(kNow).ok());
}

TEST(ConsumptionSnapshot, NilSubscriptionIsRejected) {
  auto s = GoodConsumption();
  s.subscription_id = common::Uuid();
  EXPECT_FALSE(s.Validate(kNow).ok());
}

TEST(ConsumptionSnapshot, JsonWithNullLagParsesAsUnmeasured) {
  auto j = nlohmann::json::parse(R"({"subscription_id": "2b1f7c1e-8d3a-4e55-9a7b-1c2d3e4f5a6b",
      "topic": "t", "from_ts": 1, "to_ts": 2, "consumed": 1, "delivered": 1, "skipped": 0,
      "errored": 0, "consumer_lag": null})");
  auto s = ConsumptionSnapshot::FromJson(j);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_FALSE(s->consumer_lag.has_value());
}

TEST(ConsumptionSnapshot, JsonWithBadSubscriptionIdIsRejected) {
  auto j = nlohmann::json::parse(R"({"subscription_id": "nope", "topic": "t", "from_ts": 1,
      "to_ts": 2, "consumed": 1, "delivered": 1, "skipped": 0, "errored": 0})");
  EXPECT_FALSE(ConsumptionSnapshot::FromJson(j).ok());
}

}  // namespace
}  // namespace sluice::metrics
