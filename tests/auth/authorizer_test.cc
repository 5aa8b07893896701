// The whole role matrix of the one decision point: every combination of
// superuser flag, env role and team membership against every action.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "auth/authorizer.h"

namespace sluice::auth {
namespace {

constexpr Decision A = Decision::kAllow;
constexpr Decision H = Decision::kHidden;
constexpr Decision D = Decision::kDenied;

struct Caller {
  std::string label;
  std::optional<EnvRole> env_role;
  std::optional<bool> team_admin;
};

// Columns: Superuser, EnvRead, EnvAct, EnvManage, TeamRead, TeamManage,
// TeamResourceRead, TeamResourceWrite.
struct Row {
  Caller caller;
  std::vector<Decision> expected;
};

const std::vector<Action> kActions = {
    Action::kSuperuser, Action::kEnvRead,    Action::kEnvAct,           Action::kEnvManage,
    Action::kTeamRead,  Action::kTeamManage, Action::kTeamResourceRead, Action::kTeamResourceWrite};

const std::vector<Row> kMatrix = {
    // Outside the env nothing in it exists, whatever team rows say.
    {{"outsider", std::nullopt, std::nullopt}, {D, H, H, H, H, H, H, H}},
    {{"team member without env role", std::nullopt, false}, {D, H, H, H, H, H, H, H}},
    {{"team admin without env role", std::nullopt, true}, {D, H, H, H, H, H, H, H}},
    // Readers read.
    {{"reader", EnvRole::kReader, std::nullopt}, {D, A, D, D, A, D, H, H}},
    {{"reader in team", EnvRole::kReader, false}, {D, A, D, D, A, D, A, D}},
    {{"reader team admin", EnvRole::kReader, true}, {D, A, D, D, A, D, A, D}},
    // Members act; team-owned writes need the team.
    {{"member", EnvRole::kMember, std::nullopt}, {D, A, A, D, A, D, H, H}},
    {{"member in team", EnvRole::kMember, false}, {D, A, A, D, A, D, A, A}},
    {{"member team admin", EnvRole::kMember, true}, {D, A, A, D, A, A, A, A}},
    // Admins manage the env and its teams, but write team resources only as members.
    {{"admin", EnvRole::kAdmin, std::nullopt}, {D, A, A, A, A, A, A, D}},
    {{"admin in team", EnvRole::kAdmin, false}, {D, A, A, A, A, A, A, A}},
    {{"admin team admin", EnvRole::kAdmin, true}, {D, A, A, A, A, A, A, A}},
};

TEST(Authorizer, RoleMatrixDecidesEveryAction) {
  for (const auto& row : kMatrix) {
    ASSERT_EQ(row.expected.size(), kActions.size());
    for (size_t i = 0; i < kActions.size(); ++i) {
      Subject s{false, row.caller.env_role, row.caller.team_admin};
      EXPECT_EQ(Decide(s, kActions[i]), row.expected[i]) << row.caller.label << ", action #" << i;
    }
  }
}

TEST(Authorizer, SuperuserBypassesEnvAndTeamChecks) {
  for (const auto& row : kMatrix) {
    for (Action a : kActions) {
      Subject s{true, row.caller.env_role, row.caller.team_admin};
      EXPECT_EQ(Decide(s, a), Decision::kAllow) << row.caller.label;
    }
  }
}

TEST(Authorizer, HiddenBecomesNotFoundAndDeniedBecomesPermissionDenied) {
  EXPECT_EQ(Check({false, std::nullopt, std::nullopt}, Action::kEnvRead, "env").code(),
            common::Code::kNotFound);
  EXPECT_EQ(Check({false, EnvRole::kReader, std::nullopt}, Action::kEnvManage, "env").code(),
            common::Code::kPermissionDenied);
  EXPECT_TRUE(Check({false, EnvRole::kAdmin, std::nullopt}, Action::kEnvManage, "env").ok());
}

TEST(EnvRole, ParsesOnlyTheThreeRolesInOrder) {
  EXPECT_EQ(ParseEnvRole("admin"), EnvRole::kAdmin);
  EXPECT_EQ(ParseEnvRole("member"), EnvRole::kMember);
  EXPECT_EQ(ParseEnvRole("reader"), EnvRole::kReader);
  EXPECT_FALSE(ParseEnvRole("owner"));
  EXPECT_FALSE(ParseEnvRole("Admin"));
  EXPECT_LT(EnvRole::kReader, EnvRole::kMember);
  EXPECT_LT(EnvRole::kMember, EnvRole::kAdmin);
}

}  // namespace
}  // namespace sluice::auth
