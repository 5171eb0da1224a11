// libFuzzer target for the offline importers and the rules. The target is chosen by
// GPUVET_FUZZ_FORMAT:
//   <format id>  one importer's sniff and parse (the ids of import/importers.cc, as
//                `gpuvet formats` lists them), then the facts as JSON;
//   all (unset)  the whole path a pasted file takes: session splitting, every sniffer, the
//                chosen parser, merging, JSON rendering;
//   diagnose     that path, then the rules (diagnose) and both diagnosis renderings.
// GPUVET_FUZZ_LIST=1 prints every target, one a line, from the importer registry itself,
// and exits: scripts/fuzz fuzzes exactly that list, so a new importer is never skipped.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "gpuvet/diagnose.h"
#include "gpuvet/report.h"
#include "import/importer.h"
#include "import/load.h"

namespace {
const gpuvet::import::Importer* g_importer = nullptr;
bool g_diagnose = false;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* l = std::getenv("GPUVET_FUZZ_LIST"); l && *l) {
    for (const auto& imp : gpuvet::import::importers()) std::printf("%s\n", imp.format);
    std::printf("all\ndiagnose\n");
    std::fflush(stdout);
    std::exit(0);
  }
  const char* f = std::getenv("GPUVET_FUZZ_FORMAT");
  if (!f || !*f || std::strcmp(f, "all") == 0) return 0;
  if (std::strcmp(f, "diagnose") == 0) {
    g_diagnose = true;
    return 0;
  }
  for (const auto& imp : gpuvet::import::importers())
    if (std::strcmp(imp.format, f) == 0) g_importer = &imp;
  if (!g_importer) {
    std::fprintf(stderr, "unknown GPUVET_FUZZ_FORMAT %s (GPUVET_FUZZ_LIST=1 lists them)\n", f);
    std::abort();
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
    return 0;
  }
  auto facts = gpuvet::import::import_text(text, "fuzz");
  (void)gpuvet::facts_to_json(facts);
  if (g_diagnose) {
    // Default options, as `gpuvet diagnose --from` uses them offline.
    const auto diagnosis = gpuvet::diagnose(facts);
    (void)gpuvet::render_diagnosis_text(facts, diagnosis);
    (void)gpuvet::diagnosis_to_json(facts, diagnosis);
  }
  return 0;
}
