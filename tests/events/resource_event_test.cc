#include "events/resource_event.h"

#include <set>

#include "events_fixture.h"

namespace sluice::events {
namespace {

using namespace std::chrono_literals;

TEST(ResourceEvent, FingerprintIs32LowerCaseHexCharacters) {
  Resources res;
  auto fp = MakeEvent(res.Connector(), "worker.oom_killed", "OOMKilled", T0()).Fingerprint();
  ASSERT_EQ(fp.size(), 32u);
  for (char c : fp) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << fp;
}

TEST(ResourceEvent, CrashLoopRepeatsShareOneFingerprint) {
  Resources res;
  auto a = MakeEvent(res.Connector(), "worker.crash_loop",
                     "Back-off restarting failed container sluice-worker in pod "
                     "orders-pg-6d4cf56db6-x7k2p (restart 3) at 2026-03-10T12:00:01.123Z",
                     T0());
  auto b = MakeEvent(res.Connector(), "worker.crash_loop",
                     "Back-off restarting failed container sluice-worker in pod "
                     "orders-pg-7f8e9a0b1c-q2w9z (restart 214) at 2026-03-10T13:41:59Z",
                     T0() + 2h);
  b.details = {{"restart_count", 214}};
  b.level = Level::kCritical;
  b.resource.connector_name = "orders-pg-renamed";
  EXPECT_EQ(a.Fingerprint(), b.Fingerprint());
}

TEST(ResourceEvent, ReasonNormalisationStripsVolatileParts) {
  EXPECT_EQ(NormaliseReason("  lsn 0x1A2B3C  offset 123456 for "
                            "2b1f7c1e-8d3a-4e55-9a7b-1c2d3e4f5a6b at 12:00:01.5 "
                            "commit deadbeef12 "),
            "lsn <hex> offset <n> for <uuid> at <ts> commit <hex>");
  EXPECT_EQ(NormaliseReason("connection refused"), "connection refused");
}

TEST(ResourceEvent, DifferentCodeResourceOrReasonWordsDoNotFold) {
  Resources res;
  auto base = MakeEvent(res.Connector(), "worker.crash_loop", "connection refused", T0());
  auto other_code = base;
  other_code.code = "worker.oom_killed";
  auto other_reason = base;
  other_reason.reason = "permission denied for table orders";
  auto on_subscription = base;
  on_subscription.resource = res.Subscription();
  auto on_datamodel = base;
  on_datamodel.resource = res.Datamodel();
  auto no_reason = base;
  no_reason.reason.reset();
  std::set<std::string> fps = {base.Fingerprint(),         other_code.Fingerprint(),
                               other_reason.Fingerprint(), on_subscription.Fingerprint(),
                               on_datamodel.Fingerprint(), no_reason.Fingerprint()};
  EXPECT_EQ(fps.size(), 6u);
}

TEST(ResourceEvent, MessageIsRenderedFromSubjectSummaryReasonAndActor) {
  Resources res;
  auto e = MakeEvent(res.Subscription(), "subscription.paused", std::nullopt, T0(), Level::kInfo);
  e.type = Type::kLifecycle;
  e.summary = "Paused";
  e.actor_email = "ada@example.com";
  EXPECT_EQ(e.RenderMessage(),
            "Subscription 'orders-to-warehouse' of connector 'orders-pg': Paused (by "
            "ada@example.com)");
  auto c = MakeEvent(res.Connector(), "worker.oom_killed", "OOMKilled", T0());
  c.summary = "Worker was OOM-killed";
  EXPECT_EQ(c.RenderMessage(), "Connector 'orders-pg': Worker was OOM-killed — OOMKilled");
  auto d = MakeEvent(res.Datamodel(), "datamodel.schema_changed", std::nullopt, T0());
  d.summary = "Schema changed";
  EXPECT_EQ(d.RenderMessage(),
            "Data model 'public.orders' of connector 'orders-pg': Schema changed");
}

TEST(ResourceEvent, InvalidFieldsAreRejected) {
  Resources res;
  auto ok = MakeEvent(res.Connector(), "worker.oom_killed", "x", T0());
  EXPECT_TRUE(ok.Validate().ok());
  auto bad = ok;
  bad.code = "Worker OOM";
  EXPECT_FALSE(bad.Validate().ok());
  bad = ok;
  bad.code = std::string(65, 'a');
  EXPECT_FALSE(bad.Validate().ok());
  bad = ok;
  bad.resource.connector_id = common::Uuid();
  EXPECT_FALSE(bad.Validate().ok());
  bad = ok;
  bad.details = nlohmann::json::array();
  EXPECT_FALSE(bad.Validate().ok());
  bad = ok;
  bad.actor_email = std::string(321, 'a');
  EXPECT_FALSE(bad.Validate().ok());
}

TEST(ResourceEvent, LevelsAndTypesRoundTripTheirStoredNames) {
  for (Level l : {Level::kCritical, Level::kError, Level::kWarn, Level::kInfo}) {
    EXPECT_EQ(ParseLevel(LevelName(l)), l);
  }
  for (Type t : {Type::kLifecycle, Type::kConnector, Type::kDlq}) {
    EXPECT_EQ(ParseType(TypeName(t)), t);
  }
  EXPECT_FALSE(ParseLevel("fatal").has_value());
  EXPECT_LE(std::string(TypeName(Type::kLifecycle)).size(), 9u);  // VARCHAR(9)
}

}  // namespace
}  // namespace sluice::events
