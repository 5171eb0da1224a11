// import/psi.h — Linux pressure stall information (PSI): the files /proc/pressure/cpu, io and
// memory (kernel 4.20+, CONFIG_PSI, not booted with psi=0), live and as pasted.
//
// One file holds a "some" line and, for io and memory (and cpu since 5.13), a "full" line:
//     some avg10=28.05 avg60=11.52 avg300=3.01 total=81234567
// avg10/avg60/avg300 are the kernel's running averages of the share of wall time (percent) in
// which some task (some) or every non-idle task at once (full) was stalled on the resource;
// total is the stall time in microseconds since boot, so two readings a window apart give the
// share over that window exactly.
//
// parse_psi_file reads one file's text (the live probe, probe/pressure.cc). The importer reads
// what people paste, where the resource is named by the text around the lines:
//     grep -H . /proc/pressure/*     /proc/pressure/io:some avg10=… (grep . with several files)
//     head /proc/pressure/*          ==> /proc/pressure/io <==
//     $ cat /proc/pressure/io        a shell command line above the lines
//     /proc/pressure/io              a path alone on a line (for f in …; do echo $f; cat $f)
// Lines whose resource is not named are not used (a note says so), nor are a cgroup's own
// pressure files (…/io.pressure: a container's stalls, not the host's).
//
// Hand-written scanner, linear, safe on any input; stateless, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

struct PsiFile {
  PsiReading averages;  // some_/full_avg10 and avg60; the window shares stay empty
  std::optional<std::uint64_t> some_total_us;
  std::optional<std::uint64_t> full_total_us;
};

// One /proc/pressure/<resource> file; empty when no well-formed some/full line is in it.
std::optional<PsiFile> parse_psi_file(std::string_view text);

// "psi": pasted /proc/pressure files → host.pressure.psi_cpu / psi_io / psi_memory (averages).
int sniff_psi(std::string_view text);
Status import_psi(std::string_view text, Facts& out);

}  // namespace gpuvet::import
