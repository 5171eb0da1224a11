// import/step_log.h — a training log's own step times, one JobRank (source "step-log") per rank
// it shows.
//
// Two built-in forms are recognised by content: Megatron-LM's iteration lines ("iteration
// 100/ 5000 | … | elapsed time per iteration (ms): 1523.4 | …") and nanoGPT's ("iter 100: loss
// 4.2081, time 123.45ms, mfu 30.21%"). Any other log is read with a pattern the user gives
// (`--step-regex`), an RE2 expression (linear time, no backtracking) with named groups: `ms` or
// `s` (the step's time) or `items_per_s` (its throughput), and optionally `step` (its number;
// else lines are counted) and `rank` (else torchrun's "[rank3]:" / "[default3]:" prefix, srun
// -l's "3: ", or the file name).
//
// Lines longer than kMaxStepLineBytes are not matched (said in a note); at most kMaxStepRanks
// ranks and, per rank, kMaxJobSteps steps are kept (each cut said). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

inline constexpr std::size_t kMaxStepLineBytes = 4096;
inline constexpr std::size_t kMaxStepRanks = 100'000;

int sniff_step_log(std::string_view text);
// The built-in forms.
Status parse_step_log(std::string_view text, Facts& out);

// The lines of `text` that match `pattern` (checked), as steps; nothing added when none does.
// Returns how many lines matched.
std::size_t parse_step_log_with(std::string_view text, const std::string& pattern, Facts& out);

}  // namespace gpuvet::import
