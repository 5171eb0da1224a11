list(APPEND GPUVET_SOURCES src/rules/rules_gpu.cc)
list(APPEND GPUVET_TESTS src/rules/rules_gpu_test.cc)
