list(APPEND GPUVET_SOURCES src/capture/importers.cc src/capture/load.cc src/capture/bundle.cc)
list(APPEND GPUVET_TESTS src/capture/load_test.cc src/capture/bundle_test.cc tests/corpus_test.cc)
