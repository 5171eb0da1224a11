// tests/fixture_util.h — reading test inputs: the project's own fixtures (tests/fixtures/,
// always present) and the shared corpus of real captures (../shared/fixtures/real, present
// on developer machines and in CI checkouts that carry it).
//
// The rule for the shared corpus: a test skips only when the whole corpus folder is absent;
// when the corpus is there, a file a test names must be there too, or the test fails (a
// renamed or lost fixture never turns into a silent skip). Header-only, for tests.
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "gpuvet/env.h"
#include "gpuvet/facts.h"

namespace gpuvet::testing {

// What a fake CommandRunner answers: a command that exited with `code`.
inline CommandResult exited(int code, std::string out, std::string err = "") {
  CommandResult r;
  r.exit_code = code;
  r.out = std::move(out);
  r.err = std::move(err);
  return r;
}

inline std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The file's text; a missing file is a test failure (and an empty string).
inline std::string read_file(const std::string& path) {
  auto text = read_text(path);
  EXPECT_TRUE(text.has_value()) << "cannot read " << path;
  return text.value_or("");
}

// A project fixture: tests/fixtures/<rel>.
inline std::string fixture(const std::string& rel) {
  return std::string(GPUVET_TEST_DATA) + "/fixtures/" + rel;
}

// The gpuvet program run with `args` (at most `timeout`). With `fake_scenario`, a file of
// tests/scenarios/, live on the fake NVML of that scenario: `--nvml <fake> --no-kernel-log
// --sample-window 0` follow the args (a test of an offline command passes none).
inline CommandResult run_gpuvet(const std::vector<std::string>& args,
                                const std::string& fake_scenario = "",
                                std::chrono::seconds timeout = std::chrono::seconds(30)) {
  std::vector<std::string> argv;
  if (!fake_scenario.empty())
    argv = {"env", "GPUVET_FAKE_NVML_SCENARIO=" + fixture("../scenarios/" + fake_scenario)};
  argv.push_back(GPUVET_BINARY);
  argv.insert(argv.end(), args.begin(), args.end());
  if (!fake_scenario.empty())
    for (const char* a : {"--nvml", GPUVET_FAKE_NVML, "--no-kernel-log", "--sample-window", "0"})
      argv.push_back(a);
  auto r = make_process_runner()->run(argv, timeout);
  EXPECT_TRUE(r.is_ok()) << (r.is_ok() ? "" : r.status().message());
  return r.is_ok() ? r.value() : CommandResult{};
}

inline std::string shared_root() { return GPUVET_SHARED_FIXTURES; }
// A file of the shared corpus: <corpus>/<rel>.
inline std::string shared(const std::string& rel) { return shared_root() + "/" + rel; }
inline bool shared_corpus_present() { return std::filesystem::is_directory(shared_root()); }

inline bool has_note(const Facts& f, std::string_view needle) {
  return std::any_of(f.notes.begin(), f.notes.end(),
                     [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}

inline std::string all_notes(const Facts& f) {
  std::string s;
  for (const auto& n : f.notes) s += n + "\n";
  return s;
}

// A private scratch directory under the system temp directory (prefix names the test),
// removed with everything in it when the test ends.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "gpuvet-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Writes name (creating its folders) and returns its path.
  std::string write(const std::string& name, const std::string& content) const {
    const std::string p = file(name);
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

 private:
  std::string path_;
};

}  // namespace gpuvet::testing

// Skips the test when the shared corpus is absent; when it is present, `path` (a file or a
// folder of it) must exist, or the test fails here.
#define GPUVET_REQUIRE_SHARED(path)                                                           \
  do {                                                                                        \
    if (!::gpuvet::testing::shared_corpus_present())                                          \
      GTEST_SKIP() << "shared corpus absent: " << ::gpuvet::testing::shared_root();           \
    ASSERT_TRUE(std::filesystem::exists(path)) << "named shared fixture missing: " << (path); \
  } while (0)

// `var`: the text of the shared file `rel`, under GPUVET_REQUIRE_SHARED's rule.
#define READ_SHARED_OR_SKIP(var, rel)                                            \
  GPUVET_REQUIRE_SHARED(::gpuvet::testing::shared(rel));                         \
  auto var##_opt = ::gpuvet::testing::read_text(::gpuvet::testing::shared(rel)); \
  ASSERT_TRUE(var##_opt) << "unreadable: " << ::gpuvet::testing::shared(rel);    \
  const std::string& var = *var##_opt

// `var`: the text of the project fixture local(name) (each test file says where its own
// fixtures are with a one-line `local`); a project fixture is always present.
#define READ_LOCAL(var, name)                                           \
  auto var##_opt = ::gpuvet::testing::read_text(local(name));           \
  ASSERT_TRUE(var##_opt) << "project fixture missing: " << local(name); \
  const std::string& var = *var##_opt
