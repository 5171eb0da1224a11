#include "gpuvet/status.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpuvet {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kPermissionDenied:
      return "permission denied";
    case StatusCode::kInvalidInput:
      return "invalid input";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kTimeout:
      return "timed out";
    case StatusCode::kNotSupported:
      return "not supported";
    case StatusCode::kInternal:
      return "internal error";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(status_code_name(code_)) + ": " + message_;
}

Status status_from_errno(const std::string& what, int err) {
  std::string msg = what + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return Status::not_found(msg);
    case EACCES:
    case EPERM:
      return Status::permission_denied(msg);
    default:
      return Status::unavailable(msg);
  }
}

namespace detail {

void die_on_unchecked_result(const Status& status) {
  std::fprintf(stderr, "gpuvet: internal error: Result::value() on an error: %s\n",
               status.to_string().c_str());
  std::abort();
}

}  // namespace detail

}  // namespace gpuvet
