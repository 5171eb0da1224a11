list(APPEND GPUVET_SOURCES src/rules/rules_topology.cc)
list(APPEND GPUVET_TESTS src/rules/rules_topology_test.cc)
