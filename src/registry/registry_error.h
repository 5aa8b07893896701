// Registry failures carry Confluent Schema Registry's error codes, because
// its clients branch on them (e.g. 40401 "subject not found").
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace sluice::registry {

namespace error_code {
inline constexpr int kSubjectNotFound = 40401;
inline constexpr int kVersionNotFound = 40402;
inline constexpr int kSchemaNotFound = 40403;
inline constexpr int kSubjectSoftDeleted = 40404;
inline constexpr int kSubjectNotSoftDeleted = 40405;
inline constexpr int kVersionSoftDeleted = 40406;
inline constexpr int kVersionNotSoftDeleted = 40407;
inline constexpr int kSubjectLevelCompatibilityNotConfigured = 40408;
inline constexpr int kIncompatibleSchema = 409;
inline constexpr int kInvalidSchema = 42201;
inline constexpr int kInvalidVersion = 42202;
inline constexpr int kInvalidCompatibilityLevel = 42203;
inline constexpr int kStoreError = 50001;
}  // namespace error_code

struct RegistryError {
  int code = error_code::kStoreError;
  std::string message;

  // The HTTP status Confluent answers with: the code's first three digits.
  int http_status() const { return code < 1000 ? code : code / 100; }
};

// A value or the RegistryError explaining why there is none.
template <typename T>
class Outcome {
 public:
  Outcome(T value) : value_(std::move(value)) {}              // NOLINT: implicit by design
  Outcome(RegistryError error) : error_(std::move(error)) {}  // NOLINT

  bool ok() const { return value_.has_value(); }
  const RegistryError& error() const { return error_; }
  const T& value() const { return *value_; }
  T& value() { return *value_; }
  const T& operator*() const { return *value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  RegistryError error_;
};

}  // namespace sluice::registry
