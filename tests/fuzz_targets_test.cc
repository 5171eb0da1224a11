// tests/fuzz_targets_test.cc — every importer in the registry is fuzzed.
//
// scripts/fuzz takes its target list from the fuzz binary, which prints the importer
// registry (GPUVET_FUZZ_LIST=1), so a new importer is fuzzed without editing the script.
// What can still be missed is running it: the committed distilled corpus, fuzz/kept.tar.xz,
// has one folder per target that a soak reached. These tests fail when an importer in
// import/importers.cc has no kept corpus (it was added and never fuzzed, or a script
// skipped it), and when the kept corpus holds a folder for a target that no longer exists.
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../fuzz/file_targets.h"
#include "import/importer.h"

namespace gpuvet {
namespace {

// The fuzz targets: one per importer, then the whole import path and the rules.
std::vector<std::string> fuzz_targets() {
  std::vector<std::string> t;
  for (const auto& imp : import::importers()) t.emplace_back(imp.format);
  t.emplace_back("all");
  t.emplace_back("diagnose");
  for (const auto name : fuzz::kFileTargets) t.emplace_back(name);
  return t;
}

// Files per top-level folder of the kept corpus ("kept/<target>/<file>").
std::map<std::string, int> kept_corpus_folders(std::string& error) {
  std::map<std::string, int> files;
  const std::string cmd =
      std::string("tar tJf '") + GPUVET_SOURCE_DIR + "/fuzz/kept.tar.xz' 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    error = "cannot run tar";
    return files;
  }
  std::string line;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) {
    line = buf;
    if (!line.empty() && line.back() == '\n') line.pop_back();
    if (line.rfind("kept/", 0) != 0) continue;
    const auto rest = line.substr(5);
    const auto slash = rest.find('/');
    if (slash == std::string::npos || slash == 0) continue;
    auto& n = files[rest.substr(0, slash)];
    if (slash + 1 < rest.size()) ++n;  // a file, not the folder entry itself
  }
  const int rc = ::pclose(p);
  if (rc != 0) error = "tar tJf fuzz/kept.tar.xz failed (status " + std::to_string(rc) + ")";
  return files;
}

TEST(FuzzTargets, EveryImporterHasADistilledFuzzCorpus) {
  std::string error;
  const auto kept = kept_corpus_folders(error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_FALSE(kept.empty()) << "fuzz/kept.tar.xz holds no kept/<target>/ folder";
  for (const auto& t : fuzz_targets()) {
    const auto it = kept.find(t);
    EXPECT_TRUE(it != kept.end() && it->second > 0)
        << "importer or target '" << t
        << "' has no fuzzed corpus in fuzz/kept.tar.xz: run scripts/fuzz, then scripts/fuzz-keep";
  }
}

TEST(FuzzTargets, KeptCorpusNamesOnlyExistingTargets) {
  std::string error;
  const auto kept = kept_corpus_folders(error);
  ASSERT_TRUE(error.empty()) << error;
  const auto targets = fuzz_targets();
  const std::set<std::string> known(targets.begin(), targets.end());
  for (const auto& [folder, n] : kept)
    EXPECT_TRUE(known.count(folder)) << "fuzz/kept.tar.xz has kept/" << folder << "/ (" << n
                                     << " files) but no importer or target has that name";
}

TEST(FuzzTargets, RegistryIdsAreUniqueAndUsableAsFolderNames) {
  std::set<std::string> seen;
  for (const auto& t : fuzz_targets()) {
    EXPECT_TRUE(seen.insert(t).second) << "duplicate target " << t;
    EXPECT_FALSE(t.empty());
    EXPECT_EQ(
        t.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."),
        std::string::npos)
        << "target '" << t << "' cannot be a corpus folder name";
  }
}

}  // namespace
}  // namespace gpuvet
