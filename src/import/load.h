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
// GPUs that one input puts on one bus id with different UUIDs are not merged:
// they stay apart and are an input problem (Facts::input_problems).
// import_path refuses (invalid_input) files that describe several machines (import/machines.h):
// merging them would make one imaginary box of all their GPUs.
// Stateless free functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/facts.h"
#include "gpuvet/import.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

// The public entry points (gpuvet/import.h), named here as the importers use them.
using gpuvet::import_path;
using gpuvet::import_text;
using gpuvet::ImportOptions;

// One command's output inside a pasted session.
struct SessionPart {
  std::string command;    // the prompt line's command ("nvidia-smi topo -m"), empty if none
  std::string_view text;  // its output (a view into the input)
};

// Splits at prompt lines ("$ nvidia-smi -q", "root@node:~# dmesg", "[me@n1 ~]$ lscpu")
// whose command is one gpuvet knows; text without such lines is one part.
std::vector<SessionPart> split_session(std::string_view text);

// Merges `from` (one input's facts) into `into`. Conflicts on stable facts are
// added to into.notes with both origins.
void merge_facts(Facts& into, Facts&& from, const std::string& origin);

// Adds what one recognised input gave (`one`, parsed with status `st`) to `into`: its notes and
// the parse's failure under `record` and prefixed with `where`, its measurements' origin
// (`origin` where unset), then the facts (merge_facts). Ranks are not named here.
void add_parsed(Facts& into, Facts&& one, const Status& st, ImportedFile record,
                const std::string& where, const std::string& origin);

}  // namespace gpuvet::import
