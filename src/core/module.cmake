list(APPEND GPUVET_SOURCES src/core/status.cc src/core/util.cc src/core/env.cc)
list(APPEND GPUVET_TESTS src/core/util_test.cc src/core/env_test.cc src/cli/cli_test.cc)
