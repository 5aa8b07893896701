// Join requests and invitations: who may move them, and that settled
// requests never move again.
#include <gtest/gtest.h>

#include "auth/roles.h"

namespace sluice::auth {
namespace {

RequestParties Join(bool from, bool admin) { return {false, from, from, admin}; }
RequestParties Invite(bool from, bool to, bool admin) { return {true, from, to, admin}; }

TEST(RequestLifecycle, AdminAnswersAJoinRequest) {
  EXPECT_EQ(*Transition(RequestStatus::kPending, RequestVerb::kAccept, Join(false, true)),
            RequestStatus::kAccepted);
  EXPECT_EQ(*Transition(RequestStatus::kPending, RequestVerb::kDecline, Join(false, true)),
            RequestStatus::kDeclined);
}

TEST(RequestLifecycle, RequesterCannotAcceptTheirOwnJoinRequest) {
  auto r = Transition(RequestStatus::kPending, RequestVerb::kAccept, Join(true, false));
  EXPECT_EQ(r.status().code(), common::Code::kPermissionDenied);
}

TEST(RequestLifecycle, OnlyTheInviteeAnswersAnInvitation) {
  EXPECT_EQ(*Transition(RequestStatus::kPending, RequestVerb::kAccept, Invite(false, true, false)),
            RequestStatus::kAccepted);
  // Not even another admin accepts on the invitee's behalf.
  auto r = Transition(RequestStatus::kPending, RequestVerb::kAccept, Invite(false, false, true));
  EXPECT_EQ(r.status().code(), common::Code::kPermissionDenied);
  auto self = Transition(RequestStatus::kPending, RequestVerb::kAccept, Invite(true, false, true));
  EXPECT_EQ(self.status().code(), common::Code::kPermissionDenied);
}

TEST(RequestLifecycle, AuthorOrAdminCancels) {
  EXPECT_EQ(*Transition(RequestStatus::kPending, RequestVerb::kCancel, Join(true, false)),
            RequestStatus::kCancelled);
  EXPECT_EQ(*Transition(RequestStatus::kPending, RequestVerb::kCancel, Invite(false, false, true)),
            RequestStatus::kCancelled);
  auto r = Transition(RequestStatus::kPending, RequestVerb::kCancel, Invite(false, true, false));
  EXPECT_EQ(r.status().code(), common::Code::kPermissionDenied);
}

TEST(RequestLifecycle, SettledRequestsAreFinal) {
  for (auto s : {RequestStatus::kAccepted, RequestStatus::kDeclined, RequestStatus::kCancelled}) {
    for (auto v : {RequestVerb::kAccept, RequestVerb::kDecline, RequestVerb::kCancel}) {
      auto r = Transition(s, v, Invite(true, true, true));
      EXPECT_EQ(r.status().code(), common::Code::kConflict);
    }
  }
}

TEST(RequestLifecycle, StatusNamesRoundTrip) {
  for (auto s : {RequestStatus::kPending, RequestStatus::kAccepted, RequestStatus::kDeclined,
                 RequestStatus::kCancelled}) {
    EXPECT_EQ(ParseRequestStatus(RequestStatusName(s)), s);
  }
  EXPECT_FALSE(ParseRequestStatus("done"));
}

}  // namespace
}  // namespace sluice::auth
