list(APPEND GPUVET_SOURCES src/probe/nvml_library.cc src/probe/nvml_probe.cc src/probe/hwloc_topology.cc
     src/probe/collect.cc)
list(APPEND GPUVET_TESTS src/probe/hwloc_topology_test.cc src/probe/nvml_probe_test.cc src/probe/collect_test.cc
     tests/fake_nvml_test.cc)
