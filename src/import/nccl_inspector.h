// import/nccl_inspector.h — NCCL Inspector output (NCCL's profiler plugin, NCCL 2.28+): JSON
// Lines, one completed collective or point-to-point operation per line, per process
// (`<host>-pid<pid>.log`), as docs/nccl-inspector-format.md describes it.
//
// One JobRank (source "nccl-inspector") per communicator and rank in the text, its collectives
// aggregated per type and message size: count, median time and median bus bandwidth. A size of
// 2^63 or more (the plugin's uint8 defect) is unknown; lines that are not Inspector records are
// counted in a note. At most kMaxInspectorLines lines are read. Pure; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

inline constexpr std::size_t kMaxInspectorLines = 5'000'000;

int sniff_nccl_inspector(std::string_view text);
Status parse_nccl_inspector(std::string_view text, Facts& out);

}  // namespace gpuvet::import
