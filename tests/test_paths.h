// Where the tests find their data and the programs they run. The paths live in one generated
// file (build/tests/test_paths.cc, tests/CMakeLists.txt), not on every test file's command
// line: each test file then compiles to the same bytes in any clone of the tree, and ccache
// shares them between folders. Force-included into every file of gpuvet_tests.
#pragma once

namespace gpuvet_test_paths {
const char* test_data();           // <tree>/tests
const char* source_dir();          // <tree>
const char* shared_fixtures();     // <tree>/../shared/fixtures/real
const char* binary();              // the gpuvet program
const char* fake_nvml();           // libnvidia-ml-fake.so
const char* fake_nvml_old();       // the fake without the optional symbols
const char* blocking_load_nvml();  // a library whose load blocks
}  // namespace gpuvet_test_paths

#define GPUVET_TEST_DATA (::gpuvet_test_paths::test_data())
#define GPUVET_SOURCE_DIR (::gpuvet_test_paths::source_dir())
#define GPUVET_SHARED_FIXTURES (::gpuvet_test_paths::shared_fixtures())
#define GPUVET_BINARY (::gpuvet_test_paths::binary())
#define GPUVET_FAKE_NVML (::gpuvet_test_paths::fake_nvml())
#define GPUVET_FAKE_NVML_OLD (::gpuvet_test_paths::fake_nvml_old())
#define GPUVET_BLOCKING_LOAD_NVML (::gpuvet_test_paths::blocking_load_nvml())
