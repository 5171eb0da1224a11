// libFuzzer target for the offline importers. GPUVET_FUZZ_FORMAT=<format id>
// (see `gpuvet formats`… or import/importers.cc) fuzzes one importer's sniff
// and parse; unset, it fuzzes the whole path a pasted file takes (session
// splitting, every sniffer, the chosen parser, merging, JSON rendering).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "gpuvet/report.h"
#include "import/importer.h"
#include "import/load.h"

namespace {
const gpuvet::import::Importer* g_importer = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* f = std::getenv("GPUVET_FUZZ_FORMAT"); f && *f) {
    for (const auto& imp : gpuvet::import::importers())
      if (std::strcmp(imp.format, f) == 0) g_importer = &imp;
    if (!g_importer) {
      std::fprintf(stderr, "unknown GPUVET_FUZZ_FORMAT %s\n", f);
      std::abort();
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (g_importer) {
    (void)g_importer->sniff(text);
    gpuvet::Facts facts;
    (void)g_importer->parse(text, facts);
    (void)gpuvet::facts_to_json(facts);
  } else {
    auto facts = gpuvet::import::import_text(text, "fuzz");
    (void)gpuvet::facts_to_json(facts);
  }
  return 0;
}
