// fuzz/file_targets.h — the fuzz targets that read one of gpuvet's own files rather than a tool's
// output (the importers' targets are their formats): one list, for the fuzz binary and for the
// test that checks fuzz/kept.tar.xz holds a corpus for every target.
#pragma once

#include <array>
#include <string_view>

namespace gpuvet::fuzz {

// baseline: a baseline file and the gate against it; config: the configuration file; fleet:
// fleet documents; html: `report --html` inputs; advise: advise's workload, candidates and
// scale evidence.
inline constexpr std::array<std::string_view, 5> kFileTargets = {"baseline", "config", "fleet",
                                                                 "html", "advise"};

}  // namespace gpuvet::fuzz
