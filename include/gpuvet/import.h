// gpuvet/import.h — offline input: the saved outputs of triage commands, read into Facts.
//
// A path is a file or a directory (walked recursively, links not followed); a text is one
// file's contents or a pasted terminal session. Each part is recognised by content (never by
// file name) among the formats listed by import_formats(), imported into the same Facts model
// the live probes fill, and merged: inputs that describe the same GPU are joined, and a
// disagreement on a stable fact is a note naming both origins. Stateless free functions;
// thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet {

struct ImportOptions {
  std::size_t max_file_bytes = 512u << 20;  // larger files are listed, not read
  std::size_t max_files = 20000;
  int min_confidence = 20;  // sniff score below which a part is "unrecognised"
  // --step-regex: an RE2 pattern whose named groups read a training log's step times (ms, s or
  // items_per_s; step; rank), applied to every input besides the format it is recognised as.
  // Checked by check_step_regex (import/step_log.h) before use.
  std::string step_regex;
};

// Checks a --step-regex before use: it compiles (RE2) and names `ms`, `s` or `items_per_s`.
// kInvalidInput says what is wrong.
Status check_step_regex(const std::string& pattern);

// One recognised input format, for help and docs (docs/formats.md is made from these).
struct FormatInfo {
  const char* format;       // stable id: "nvidia-smi-q-xml", "topo-m", "dmesg", …
  const char* description;  // "nvidia-smi -q -x (XML)"
  const char* fills;        // the facts it can fill
};

// Every format gpuvet recognises, in registry order. Static data: valid for the process.
std::span<const FormatInfo> import_formats();

// Recognises and imports one text (file contents), splitting pasted sessions at prompt
// lines. `origin` names it in notes and in Facts::imported.
Facts import_text(std::string_view text, const std::string& origin,
                  const ImportOptions& options = {});

// import_text, refused (kInvalidInput, naming each machine and its lines) when the text holds
// the outputs of several machines ("node A:" … "node B:"); one machine's output shown twice is
// imported. import_path makes the same check on each file it reads.
Result<Facts> import_paste(std::string_view text, const std::string& origin,
                           const ImportOptions& options = {});

// Reads `path` (file or directory). Fails (kNotFound / kPermissionDenied / kInvalidInput, with
// the real reason: over the size limit, the system's error text) only when the path itself
// cannot be read or no file in it could be. A directory is listed in full and its first
// max_files files in name order are read; a note says how many were left out, and one names
// each subdirectory that could not be listed. Facts::input_problems says when the directory
// looks like a capture bundle without its manifest.json, or when one input gives one PCI bus
// id to GPUs with different UUIDs (they stay separate GPUs).
Result<Facts> import_path(const std::string& path, const ImportOptions& options = {});

// import_path for each of `paths`, merged in order (a hung job's per-rank logs given one by
// one). The first path that cannot be read fails the whole, with its own message.
Result<Facts> import_paths(const std::vector<std::string>& paths,
                           const ImportOptions& options = {});

}  // namespace gpuvet
