// import/kineto_trace.h — a PyTorch profiler trace (Kineto's Chrome trace JSON, as
// torch.profiler's export_chrome_trace and tensorboard_trace_handler write it) read into one
// JobRank: who the rank is (distributedInfo, deviceProperties), its steps (ProfilerStep#N)
// split into compute, exposed communication, copies and idle with the idle's causes
// (job_timeline.h), its kernels, launch calls, pageable copies and collectives.
//
// The JSON is read with a SAX handler in one pass, without a document tree: memory holds the
// text (or, from a file, one chunk of it) and one small record per GPU or host span kept (24
// bytes), never the events' strings.
// At most kMaxTraceSpans spans and kMaxJobSteps steps are kept; each cut is a note.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

inline constexpr std::size_t kMaxTraceSpans = 20'000'000;
inline constexpr std::size_t kMaxJobSteps = 100'000;

int sniff_kineto_trace(std::string_view text);
// One JobRank (source "pytorch-trace") into out.job_ranks. A trace cut short keeps what was
// read with a note; a text with no event at all is invalid input.
Status parse_kineto_trace(std::string_view text, Facts& out);
// The same, from a file read in 1 MiB chunks through zlib (gzip or plain): memory holds one chunk
// and the spans, never the text. At most max_bytes are read (once inflated); a cut is an input
// problem.
Status parse_kineto_trace_file(const std::string& path, std::size_t max_bytes, Facts& out);

}  // namespace gpuvet::import
