// hw/test_facts.h — small Facts builders shared by the tests of the expectations and of the
// measurement rules (tests only).
#pragma once

#include <optional>

#include "gpuvet/facts.h"

namespace gpuvet::hw::test {

// A GPU whose PCIe link runs at the generation and width it supports.
inline GpuFacts gpu(int index, const char* name, int gen_max, int width_max) {
  GpuFacts g;
  g.index = index;
  g.name = name;
  g.pcie.gen_max = gen_max;
  g.pcie.width_max = width_max;
  g.pcie.gen_current = gen_max;
  g.pcie.width_current = width_max;
  return g;
}

inline GpuPair pair(int a, int b, PathType path, std::optional<int> nvlinks = std::nullopt) {
  GpuPair p;
  p.a = a;
  p.b = b;
  p.path = path;
  p.nvlinks = nvlinks;
  return p;
}

}  // namespace gpuvet::hw::test
