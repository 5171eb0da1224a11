list(APPEND GPUVET_SOURCES src/rules/rules_host.cc)
list(APPEND GPUVET_TESTS src/rules/rules_host_test.cc)
