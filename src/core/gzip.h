// core/gzip.h — gzip-compressed input (a `.json.gz` profiler trace, a compressed log) read into
// memory with zlib, bounded: never more than max_bytes of output, so a small file that inflates
// to gigabytes (a "zip bomb") is refused rather than exhausting memory. Thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "gpuvet/status.h"

namespace gpuvet {

// The two magic bytes every gzip member starts with.
bool looks_gzipped(std::string_view data);

// The decompressed bytes of every member of `data`. Invalid input: not gzip, corrupt or cut
// short (the message says which), or more than max_bytes once inflated.
Result<std::string> gunzip(std::string_view data, std::size_t max_bytes);

// As much of what the start of a gzip stream holds as `data` gives, at most max_bytes: for
// sniffing a compressed file's format from its first bytes. Empty when nothing inflates.
std::string gunzip_prefix(std::string_view data, std::size_t max_bytes);

}  // namespace gpuvet
