list(APPEND GPUVET_SOURCES src/capture/importers.cc src/capture/load.cc)
list(APPEND GPUVET_TESTS src/capture/load_test.cc)
