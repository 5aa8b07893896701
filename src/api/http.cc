#include "api/http.h"

namespace sluice::api {

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

common::Uuid Request::PathUuid(const std::string& name) const {
  auto it = params.find(name);
  std::optional<common::Uuid> id;
  if (it != params.end()) id = common::Uuid::Parse(it->second);
  if (!id) throw ApiError(404, "not_found", name + " not found");
  return *id;
}

std::optional<std::string> Request::Query(const std::string& name) const {
  if (!raw.has_param(name.c_str())) return std::nullopt;
  return raw.get_param_value(name.c_str());
}

Json Request::Body() const {
  Json j = Json::parse(raw.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ApiError(400, "invalid_json", "request body is not valid JSON");
  if (!j.is_object()) throw ApiError(400, "invalid_json", "request body must be a JSON object");
  return j;
}

Json ErrorBody(const std::string& code, const std::string& message) {
  return {{"error", {{"code", code}, {"message", message}}}};
}

}  // namespace sluice::api
