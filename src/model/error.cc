#include "model/error.h"

namespace sluice::model {

int HttpStatusFor(common::Code code) {
  switch (code) {
    case common::Code::kOk:
      return 200;
    case common::Code::kInvalidArgument:
      return 422;
    case common::Code::kNotFound:
      return 404;
    case common::Code::kAlreadyExists:
      return 409;
    case common::Code::kConflict:
      return 409;
    case common::Code::kFailedPrecondition:
      return 409;
    case common::Code::kPermissionDenied:
      return 403;
    case common::Code::kUnauthenticated:
      return 401;
    case common::Code::kUnavailable:
      return 503;
    case common::Code::kInternal:
      return 500;
  }
  return 500;
}

ApiError::ApiError(const common::Status& status)
    : std::runtime_error(status.message()),
      http_status_(HttpStatusFor(status.code())),
      code_(common::CodeName(status.code())) {}

}  // namespace sluice::model
