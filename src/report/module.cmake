list(APPEND GPUVET_SOURCES src/report/json.cc src/report/text.cc src/core/names.cc)
list(APPEND GPUVET_TESTS src/report/json_test.cc)
