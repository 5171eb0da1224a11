// import/load.h — offline input: read files a user saved, recognise each by
// content, import and merge them into one Facts.
//
// A path is a file or a directory (walked recursively, links not followed).
// Each file may hold several outputs one after another (a pasted terminal
// session): it is split at shell-prompt lines that run a known command, and each
// part is recognised on its own. File names carry no meaning. Inputs that
// describe the same GPU (bus id, then UUID, then index) are merged; when two
// inputs disagree on a stable fact (name, UUID, link width max, power limit …)
// the first is kept and the disagreement is a note, never silently resolved.
// Stateless free functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

struct ImportOptions {
  std::size_t max_file_bytes = 512u << 20;  // larger files are listed, not read
  std::size_t max_files = 20000;
  int min_confidence = 20;  // sniff score below which a part is "unrecognised"
};

// One command's output inside a pasted session.
struct SessionPart {
  std::string command;    // the prompt line's command ("nvidia-smi topo -m"), empty if none
  std::string_view text;  // its output (a view into the input)
};

// Splits at prompt lines ("$ nvidia-smi -q", "root@node:~# dmesg", "[me@n1 ~]$ lscpu")
// whose command is one gpuvet knows; text without such lines is one part.
std::vector<SessionPart> split_session(std::string_view text);

// Recognises and imports one text (file contents), splitting sessions. `origin`
// names it in notes and in Facts::imported.
Facts import_text(std::string_view text, const std::string& origin,
                  const ImportOptions& options = {});

// Reads `path` (file or directory). Fails (kNotFound / kPermissionDenied /
// kInvalidInput) only when the path itself cannot be read or holds no file.
Result<Facts> import_path(const std::string& path, const ImportOptions& options = {});

// Merges `from` (one input's facts) into `into`. Conflicts on stable facts are
// added to into.notes with both origins.
void merge_facts(Facts& into, Facts&& from, const std::string& origin);

}  // namespace gpuvet::import
