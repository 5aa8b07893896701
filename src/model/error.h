// The one error type the model throws, carrying the HTTP status and code the
// API renders it with. Throwing inside Database::Transact rolls the write
// back, so a rejected request changes nothing.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/status.h"

namespace sluice::model {

using Json = nlohmann::json;

// Rendered as {"error":{"code":..., "message":...}} with http_status.
class ApiError : public std::runtime_error {
 public:
  ApiError(int http_status, std::string code, const std::string& message)
      : std::runtime_error(message), http_status_(http_status), code_(std::move(code)) {}
  explicit ApiError(const common::Status& status);

  int http_status() const { return http_status_; }
  const std::string& code() const { return code_; }

 private:
  int http_status_;
  std::string code_;
};

int HttpStatusFor(common::Code code);
inline void ThrowIfError(const common::Status& s) {
  if (!s.ok()) throw ApiError(s);
}
template <typename T>
T ValueOrThrow(common::Result<T> r) {
  if (!r.ok()) throw ApiError(r.status());
  return std::move(r).value();
}

}  // namespace sluice::model
