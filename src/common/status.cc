#include "common/status.h"

namespace sluice::common {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "ok";
    case Code::kInvalidArgument:
      return "invalid_argument";
    case Code::kNotFound:
      return "not_found";
    case Code::kAlreadyExists:
      return "already_exists";
    case Code::kConflict:
      return "conflict";
    case Code::kFailedPrecondition:
      return "failed_precondition";
    case Code::kPermissionDenied:
      return "permission_denied";
    case Code::kUnauthenticated:
      return "unauthenticated";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string FirstLine(const std::string& text) {
  auto end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(CodeName(code_)) + ": " + message_;
}

}  // namespace sluice::common
