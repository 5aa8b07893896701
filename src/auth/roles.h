// Access domain types: environment roles and the join/invite request
// lifecycle. The rules live here; persistence and HTTP only apply them.
#pragma once

#include <optional>
#include <string_view>

#include "common/status.h"

namespace sluice::auth {

// Ordered: each role can do everything the one before it can.
enum class EnvRole { kReader = 0, kMember = 1, kAdmin = 2 };

std::optional<EnvRole> ParseEnvRole(std::string_view text);
const char* EnvRoleName(EnvRole role);

enum class RequestStatus { kPending, kAccepted, kDeclined, kCancelled };

std::optional<RequestStatus> ParseRequestStatus(std::string_view text);
const char* RequestStatusName(RequestStatus status);

enum class RequestVerb { kAccept, kDecline, kCancel };

// Who is acting on a request. A join request has from == to (the user asks
// for themself); an invitation has from = the inviting admin.
struct RequestParties {
  bool is_invite = false;
  bool caller_is_from = false;
  bool caller_is_to = false;
  bool caller_manages_scope = false;  // admin of the env/team, or superuser
};

// The status `verb` moves a pending request to. Conflict once it is settled;
// PermissionDenied when the caller is not the party who may do it: the
// invitee answers an invitation, an admin answers a join request, and the
// author (or an admin) cancels.
common::Result<RequestStatus> Transition(RequestStatus current, RequestVerb verb,
                                         const RequestParties& who);

}  // namespace sluice::auth
