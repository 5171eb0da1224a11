// gpuvet/html_report.h — `gpuvet report --html`: one self-contained HTML page (inline CSS and
// SVG, no script, nothing fetched) drawn from gpuvet's own JSON documents.
//
// Each input is recognised by its content: a gpuvet.report/1 document (`diagnose --json`,
// `facts --json`, a `watch --record` file with its series), gpuvet.gate/1 (`gate --json`),
// gpuvet.bench/1 (`bench --json`), gpuvet.scale/1 (`scale --json`), or gpuvet.watch/1 JSON
// lines (`watch --json`). The page shows the findings worst first with evidence, meaning and
// decision, the coverage, the GPU table, the topology and P2P matrices, the bandwidth heat
// maps against their expectations, scaling as 1-vs-N bars with p50/p99, and the watched
// series (SM clock, temperature, power per GPU) with the clock-event reasons shaded
// (docs/html-report.md). Everything taken from an input is escaped. Pure functions of their
// input (the page carries no time of its own), except the file functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "gpuvet/status.h"

namespace gpuvet {

struct HtmlReportInput {
  std::string name;  // how the page names it (the path given)
  std::string text;  // its content
};

// The page. kInvalidInput naming the input when one is empty, not JSON, or not a document
// the report draws (an unknown schema, a fleet report).
Result<std::string> render_html_report(const std::vector<HtmlReportInput>& inputs);

// The inputs read from files (regular files of at most 1 GiB: a FIFO or a directory is refused
// without blocking), then render_html_report.
Result<std::string> html_report_from_files(const std::vector<std::string>& paths);

// `text` written to `path` atomically: a temporary file in the same directory, then a rename,
// so `path` is either its old self or the whole new page. kInvalidInput with a sentence when
// the directory is missing or not writable.
Status write_file_atomically(const std::string& path, const std::string& text);

}  // namespace gpuvet
