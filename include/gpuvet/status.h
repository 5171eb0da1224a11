// gpuvet/status.h — the one error model of gpuvet's API.
//
// A Status is either ok or an error with a code and a human-readable message
// (what failed and why, ready to print). Result<T> carries a value or a Status.
// Both are [[nodiscard]] value types; safe to copy between threads.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace gpuvet {

enum class StatusCode {
  kOk = 0,
  kNotFound,          // the file, library, device or entry does not exist
  kPermissionDenied,  // it exists but we may not read it
  kInvalidInput,      // malformed file, garbage library, bad argument
  kUnavailable,       // the source exists but cannot answer (driver not loaded, GPU lost)
  kTimeout,           // the probe did not answer within its deadline
  kNotSupported,      // the device or library does not offer this
  kInternal,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  static Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status permission_denied(std::string m) {
    return {StatusCode::kPermissionDenied, std::move(m)};
  }
  static Status invalid_input(std::string m) { return {StatusCode::kInvalidInput, std::move(m)}; }
  static Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status timeout(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
  static Status not_supported(std::string m) { return {StatusCode::kNotSupported, std::move(m)}; }
  static Status internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "not found: /proc/driver/nvidia/params" style, for logs and notes.
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A failed system call as a Status: "what: strerror(err)", with ENOENT/ENOTDIR as
// kNotFound, EACCES/EPERM as kPermissionDenied, anything else kUnavailable.
Status status_from_errno(const std::string& what, int err);

namespace detail {
// Prints "gpuvet: internal error: Result::value() on an error: <status>" and aborts.
[[noreturn]] void die_on_unchecked_result(const Status& status);
}  // namespace detail

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT

  bool is_ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  // The value; on an error this stops the process with the status text (never undefined
  // behaviour): check is_ok() first.
  T& value() & { return check(), *value_; }
  const T& value() const& { return check(), *value_; }
  T&& value() && { return check(), std::move(*value_); }
  T* operator->() { return check(), &*value_; }
  const T* operator->() const { return check(), &*value_; }
  T value_or(T fallback) const { return value_ ? *value_ : std::move(fallback); }
  // The value as an optional: what facts fields want when a read may fail.
  std::optional<T> ok_value() const { return value_; }

 private:
  void check() const {
    if (!value_) detail::die_on_unchecked_result(status_);
  }
  std::optional<T> value_;
  Status status_;
};

}  // namespace gpuvet
