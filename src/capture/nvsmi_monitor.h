// capture/nvsmi_monitor.h — offline importers for nvidia-smi's scrolling monitors:
// `nvidia-smi pmon` (per process) and `nvidia-smi dmon` (per device).
//
// Each format is a sniff/import pair matching capture/importer.h (SniffFn, ParseFn):
//   "nvidia-smi-pmon"  "# gpu pid type sm mem … command" tables (any -s/-o column set: the
//                      header names the columns; the command is the rest of the line, so
//                      truncated Windows names with spaces survive). Repeated samples (-c N)
//                      and repeated headers give one ProcessFacts per (gpu, pid): host_pid,
//                      gpu, name (first seen), used_memory_bytes from an "fb" column (MiB, last
//                      sample). Rows with pid "-" (no process) only show that the GPU exists.
//   "nvidia-smi-dmon"  "# gpu pwr gtemp mtemp sm mem … mclk pclk" tables (columns from the
//                      header; old "temp" is the GPU temperature). Per GPU the LAST sample
//                      fills power.draw_w, thermal.gpu_c / memory_c, utilization.gpu_pct /
//                      memory_pct, clocks.sm_mhz (pclk) / mem_mhz (mclk), memory.used_bytes
//                      (fb, MiB); a "-" cell leaves the value of the last sample that had one.
//                      A note gives the sample count and the power / SM ranges seen.
// "-" cells are unknown, never zero. Linear time, bounded memory, safe on garbage.
// Stateless free functions; thread-safe.
#pragma once

#include <string_view>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::capture {

int sniff_pmon(std::string_view text);
Status import_pmon(std::string_view text, Facts& out);

int sniff_dmon(std::string_view text);
Status import_dmon(std::string_view text, Facts& out);

}  // namespace gpuvet::capture
