// import/nvsmi_monitor.h — offline importers for nvidia-smi's scrolling monitors:
// `nvidia-smi pmon` (per process) and `nvidia-smi dmon` (per device).
//
// Each format is a sniff/import pair matching capture/importer.h (SniffFn, ParseFn):
//   "nvidia-smi-pmon"  "# gpu pid type sm mem … command" tables (any -s/-o column set: the
//                      header names the columns; the command is the rest of the line, so
//                      truncated Windows names with spaces survive). Repeated samples (-c N)
//                      and repeated headers give one ProcessFacts per (gpu, pid): host_pid,
//                      gpu, name (first seen), used_memory_bytes from an "fb" column (MiB, last
//                      sample). Every GPU index seen, with processes or with a pid "-" row
//                      (no process), becomes a GpuFacts holding its index only; merge_facts
//                      joins it to a fuller description of the same index from another input.
//   "nvidia-smi-dmon"  "# gpu pwr gtemp mtemp sm mem … mclk pclk" tables (columns from the
//                      header; old "temp" is the GPU temperature). Per GPU the LAST sample
//                      fills power.draw_w, thermal.gpu_c / memory_c, utilization.gpu_pct /
//                      memory_pct, clocks.sm_mhz (pclk) / mem_mhz (mclk), memory.used_bytes
//                      (fb, MiB); a "-" cell leaves the value of the last sample that had one.
//                      A note gives the sample count and the power / SM ranges seen.
//                      Several samples of a GPU also become Facts::samples (see SampleSeries):
//                      t_s from the -o D/T "Date"/"Time" columns when present, else the row
//                      order × the -d delay of a "nvidia-smi dmon … -d N" prompt line in the
//                      text, else the row order in seconds (dmon's default delay); a note says
//                      which.
// "-" cells are unknown, never zero. Linear time, bounded memory, safe on garbage.
// Stateless free functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

int sniff_pmon(std::string_view text);
Status import_pmon(std::string_view text, Facts& out);

int sniff_dmon(std::string_view text);
Status import_dmon(std::string_view text, Facts& out);

// ------------------------------------------------------------------ time series helpers
// Shared by the dmon and --query-gpu CSV importers: one GpuSample per sampled row, appended
// to Facts::samples as the rows come, then finished into one time series.
class SampleSeries {
 public:
  // Facts::samples as a whole holds at most this many; rows past it still update the GPU's
  // last values but add no sample (and finish() says so).
  static constexpr std::size_t kMaxSamples = 1000000;

  // `tool` prefixes the notes ("dmon", "nvidia-smi --query-gpu CSV").
  SampleSeries(Facts& out, std::string tool);

  // Room for `rows` more samples (capped), when the row count is known up front.
  void reserve(std::size_t rows);

  // One row of `sample.gpu`; `abs_s` is its wall-clock time in seconds on any fixed origin
  // (empty when the row has no readable timestamp). sample.t_s is set by finish().
  void add(const GpuSample& sample, std::optional<double> abs_s);

  // Sets t_s and orders the new samples by (gpu, t_s); adds one note saying where t_s came from
  // (`time_source` names the timestamp column(s)), and one when the cap was reached. When no
  // GPU has two samples (a single snapshot) the samples are dropped again and nothing is said.
  // `interval_s`: the sampling interval when known (row order × interval when timestamps are
  // missing).
  void finish(std::string_view time_source, std::optional<double> interval_s);

  // Helpers for the timestamp cells, exposed for the tests.
  // Days since 1970-01-01 of a proleptic Gregorian date; empty when out of range.
  static std::optional<std::int64_t> days_from_civil(std::int64_t y, int m, int d);
  // "09:41:02" or "09:41:02.123" → seconds since midnight; empty on junk.
  static std::optional<double> clock_seconds(std::string_view hh_mm_ss);

 private:
  Facts& out_;
  std::string tool_;
  std::size_t first_ = 0;      // index in out_.samples of this series' first sample
  std::vector<double> abs_s_;  // per added sample; NaN when unknown
  std::size_t dropped_ = 0;
};

}  // namespace gpuvet::import
