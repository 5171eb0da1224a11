// Corpus-wide: every real output in ../shared/fixtures/real is recognised by
// content (whatever its folder or name says), or is on the list below with the
// reason it is not. Skips when the corpus is not there (CI's clean clone).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "import/load.h"

namespace gpuvet::import {
namespace {

namespace fs = std::filesystem;

// file (relative to the corpus) → why gpuvet deliberately does not read it.
const std::map<std::string, std::string> kUnsupported = {
    {"PROVENANCE.md", "the corpus' own index: prose that quotes log lines, not an output"},
    {"topo/gengwg-dgx-a100-topo-c-cpu-affinity-query.txt",
     "`nvidia-smi topo -c` lists GPUs near one CPU, not a per-GPU fact"},
    {"nvlink/llmaction-h800-nvlink-capabilities.txt",
     "`nvlink -c` capabilities: no field in the facts model"},
    {"nvlink/llmaction-h800-nvlink-gt-d-r-idle-vs-training-counters.txt",
     "`nvlink -gt` traffic counters: no field in the facts model"},
};

TEST(CorpusTest, EveryRealOutputIsRecognisedOrListed) {
  const fs::path root = GPUVET_SHARED_FIXTURES;
  if (!fs::is_directory(root)) GTEST_SKIP() << root << " not present";
  // Every file this test names must still be there: a lost fixture fails, it does not skip.
  for (const auto& [rel, why] : kUnsupported)
    EXPECT_TRUE(fs::exists(root / rel))
        << "named corpus file missing: " << rel << " (" << why << ")";
  int files = 0, recognised = 0;
  std::map<std::string, int> by_format;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    const std::string rel = fs::relative(entry.path(), root).string();
    ++files;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    Facts f = import_text(ss.str(), rel);
    bool ok = !f.imported.empty();
    for (const auto& imp : f.imported) {
      ok = ok && imp.format != "unrecognised";
      ++by_format[imp.format];
    }
    if (kUnsupported.count(rel)) {
      if (ok && rel != "PROVENANCE.md")
        ADD_FAILURE() << rel
                      << " is listed as unsupported but is now recognised: take it off the list";
      continue;
    }
    EXPECT_TRUE(ok) << rel << " is not recognised";
    recognised += ok ? 1 : 0;
  }
  EXPECT_GT(files, 100);
  std::string summary;
  for (const auto& [format, n] : by_format) summary += format + "=" + std::to_string(n) + " ";
  std::printf("%d files, %d recognised, %zu deliberately unsupported; parts by format: %s\n", files,
              recognised, kUnsupported.size(), summary.c_str());
}

}  // namespace
}  // namespace gpuvet::import
