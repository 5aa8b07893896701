// How every fallible call in Sluice reports failure: an error is a value that
// carries a stable code and the failing system's own words, never a bool.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace sluice::common {

enum class Code {
  kOk = 0,
  kInvalidArgument,  // the caller sent something malformed
  kNotFound,         // absent, or invisible to this caller
  kAlreadyExists,    // a uniqueness rule refused it
  kConflict,         // valid, but clashes with the current state
  kFailedPrecondition,
  kPermissionDenied,
  kUnauthenticated,
  kUnavailable,  // a dependency (database, broker) could not be reached
  kInternal,
};

const char* CodeName(Code code);

// The first line of a multi-line error (libpq's carry LINE/HINT detail after it).
std::string FirstLine(const std::string& text);

class Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  // Verbatim words of whatever failed; the spec keeps these as they arrived.
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status AlreadyExists(std::string m) { return {Code::kAlreadyExists, std::move(m)}; }
inline Status Conflict(std::string m) { return {Code::kConflict, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {Code::kFailedPrecondition, std::move(m)};
}
inline Status PermissionDenied(std::string m) { return {Code::kPermissionDenied, std::move(m)}; }
inline Status Unauthenticated(std::string m) { return {Code::kUnauthenticated, std::move(m)}; }
inline Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
inline Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }

// A value or the Status explaining why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace sluice::common

#define SLUICE_RETURN_IF_ERROR(expr)       \
  do {                                     \
    ::sluice::common::Status _st = (expr); \
    if (!_st.ok()) return _st;             \
  } while (0)
