// report/coverage.h — the coverage part of the diagnosis report: the line under the verdict
// that says what was and was not checked, the "Coverage" section, and its JSON array.
// Internal to src/report.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

#include "gpuvet/diagnose.h"
#include "report/terminal_text.h"

namespace gpuvet::report {

// Every check the node's state needs was checked (or has nothing to check here); optional
// ones (measurements) do not count.
bool coverage_complete(const Diagnosis& d);

// The line under the verdict, never an all-clear about checks that did not run: "OK for what
// was checked (topology, P2P; partly: clocks); not checked: ECC, Xid, host — see Coverage",
// "Checked: …; not checked: … — see Coverage" when a finding or an incomplete input stands.
// Empty when coverage_complete.
std::string coverage_headline(const Diagnosis& d);

// The "Coverage" section: checked items in one line, then each partial and not-checked one
// with what is missing and the command that gives it. `verbose` adds the evidence of each.
void render_coverage_text(TerminalText& o, const Diagnosis& d, bool verbose, bool color,
                          std::size_t width);

// The "coverage" array of the gpuvet.report/1 diagnose document (docs/json-schema.md).
nlohmann::ordered_json coverage_json(const Diagnosis& d);

}  // namespace gpuvet::report
