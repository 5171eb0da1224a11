// import/paste_machines.h — one pasted file that holds the outputs of several machines
// ("node A:" then one nvidia-smi -q, "node B:" then another), told apart from one machine's
// file that shows the same output twice (a loop, a before and after).
//
// The text is cut into segments: the parts of a pasted session (at its prompt lines), and
// inside a part, at each further start of an output that lists the machine's GPUs when it
// starts more than once there (the NVSMI LOG banner of -q, the version line of the nvidia-smi
// table, the <?xml line of -q -x, "GPU 0:" of -L). Each segment is imported on its own and
// gives a MachineIdentity (machines.h) with its GPU listing; group_by_machine then says how
// many machines the segments describe. A text of one segment is not imported again.
// Stateless free functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/import.h"
#include "import/machines.h"

namespace gpuvet::import {

struct PasteSegment {
  std::string label;  // "<origin>, lines 12–140"
  std::string text;   // the segment, with the prompt line of its part in front
};

// The segments of one text, in order (one segment, the whole text, when it has no prompt line
// and no output that starts twice).
std::vector<PasteSegment> paste_segments(std::string_view text, const std::string& origin);

// Which machines the segments of `text` describe (inputs named by PasteSegment::label).
MachineSplit machines_in_paste(std::string_view text, const std::string& origin,
                               const ImportOptions& options = {});

// The refusal when machines_in_paste finds two or more.
std::string several_machines_in_paste_message(const MachineSplit& split, const std::string& origin);

}  // namespace gpuvet::import
