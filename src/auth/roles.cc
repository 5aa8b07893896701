#include "auth/roles.h"

#include <string>

namespace sluice::auth {

std::optional<EnvRole> ParseEnvRole(std::string_view text) {
  if (text == "reader") return EnvRole::kReader;
  if (text == "member") return EnvRole::kMember;
  if (text == "admin") return EnvRole::kAdmin;
  return std::nullopt;
}

const char* EnvRoleName(EnvRole role) {
  switch (role) {
    case EnvRole::kReader:
      return "reader";
    case EnvRole::kMember:
      return "member";
    case EnvRole::kAdmin:
      return "admin";
  }
  return "reader";
}

std::optional<RequestStatus> ParseRequestStatus(std::string_view text) {
  if (text == "pending") return RequestStatus::kPending;
  if (text == "accepted") return RequestStatus::kAccepted;
  if (text == "declined") return RequestStatus::kDeclined;
  if (text == "cancelled") return RequestStatus::kCancelled;
  return std::nullopt;
}

const char* RequestStatusName(RequestStatus status) {
  switch (status) {
    case RequestStatus::kPending:
      return "pending";
    case RequestStatus::kAccepted:
      return "accepted";
    case RequestStatus::kDeclined:
      return "declined";
    case RequestStatus::kCancelled:
      return "cancelled";
  }
  return "pending";
}

common::Result<RequestStatus> Transition(RequestStatus current, RequestVerb verb,
                                         const RequestParties& who) {
  if (current != RequestStatus::kPending) {
    return common::Conflict(std::string("request is already ") + RequestStatusName(current));
  }
  switch (verb) {
    case RequestVerb::kCancel:
      if (who.caller_is_from || who.caller_manages_scope) return RequestStatus::kCancelled;
      return common::PermissionDenied("only the author or an admin may cancel this request");
    case RequestVerb::kAccept:
    case RequestVerb::kDecline: {
      bool may = who.is_invite ? who.caller_is_to : who.caller_manages_scope;
      if (!may) {
        return common::PermissionDenied(who.is_invite
                                            ? "only the invited user may answer an invitation"
                                            : "only an admin may answer a join request");
      }
      return verb == RequestVerb::kAccept ? RequestStatus::kAccepted : RequestStatus::kDeclined;
    }
  }
  return common::Internal("unknown request verb");
}

}  // namespace sluice::auth
