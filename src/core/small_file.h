// core/small_file.h — reading a small configuration file (thresholds, a baseline) without ever
// blocking: only a regular file, at most max_bytes, refused before it is opened for reading
// when it is a FIFO, a device, a socket or a directory.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "gpuvet/status.h"

namespace gpuvet {

// `what` names the file in messages: "thresholds file", "baseline file". Errors are
// kInvalidInput: "baseline file x.toml is a FIFO (named pipe), not a regular file".
Result<std::string> read_small_file(const std::string& path, std::size_t max_bytes,
                                    std::string_view what);

}  // namespace gpuvet
