#include <gtest/gtest.h>

#include "license/license.h"

namespace sluice::license {
namespace {

using namespace std::chrono_literals;

TEST(License, NoVerdictDeniesByDefault) {
  License license(std::nullopt, 3600s);
  EXPECT_FALSE(license.AllowsStart(common::Clock::now()).ok());
}

TEST(License, TheCommunityVerdictPermitsStartsAndSaysWhenItEnds) {
  auto now = common::Clock::now();
  auto verdict = CommunityVerdict(now);
  EXPECT_TRUE(verdict.active);
  ASSERT_TRUE(verdict.expires_at.has_value());
  EXPECT_EQ(*verdict.expires_at, now + kCommunityTerm);
  EXPECT_TRUE(License(verdict, 3600s).AllowsStart(now).ok());
  // Not renewed (a back end that stopped refreshing): it ends like any other.
  EXPECT_FALSE(License(verdict, kCommunityTerm * 2).AllowsStart(now + kCommunityTerm + 1s).ok());
}

TEST(License, ActiveVerdictInsideGraceAllowsStarts) {
  auto now = common::Clock::now();
  License license(LicenseVerdict{true, now + 24h, now - 10min}, 3600s);
  EXPECT_TRUE(license.AllowsStart(now).ok());
  EXPECT_FALSE(license.RequiresPause(now));
}

TEST(License, PastTheGraceWindowStartsAreRefusedAndWorkersPause) {
  auto now = common::Clock::now();
  License license(LicenseVerdict{true, now + 24h, now - 2h}, 3600s);
  auto status = license.AllowsStart(now);
  EXPECT_EQ(status.code(), common::Code::kFailedPrecondition);
  EXPECT_NE(status.message().find("grace window"), std::string::npos);
  EXPECT_TRUE(license.RequiresPause(now));
}

TEST(License, InactiveVerdictRefusesEvenWhenFresh) {
  auto now = common::Clock::now();
  License license(LicenseVerdict{false, std::nullopt, now}, 3600s);
  EXPECT_FALSE(license.AllowsStart(now).ok());
}

TEST(License, ExpiredLicenseRefuses) {
  auto now = common::Clock::now();
  License license(LicenseVerdict{true, now - 1s, now}, 3600s);
  EXPECT_NE(license.AllowsStart(now).message().find("expired"), std::string::npos);
}

}  // namespace
}  // namespace sluice::license
