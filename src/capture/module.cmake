list(APPEND GPUVET_SOURCES src/capture/gpuvet_json.cc)
list(APPEND GPUVET_TESTS src/capture/gpuvet_json_test.cc)
