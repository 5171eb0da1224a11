// libFuzzer target for the offline importers and the rules. The target is chosen by
// GPUVET_FUZZ_FORMAT:
//   <format id>  one importer's sniff and parse (the ids of import/importers.cc, as
//                `gpuvet formats` lists them), then the facts as JSON;
//   all (unset)  the whole path a pasted file takes: session splitting, every sniffer, the
//                chosen parser, merging, JSON rendering;
//   diagnose     that path, then the rules (diagnose) and both diagnosis renderings;
//   baseline     a baseline file (parse_baseline), and the gate against it;
//   config       the configuration file's [thresholds] and [gate] tables;
//   fleet        fleet documents (gate, report and bench JSON, arrays, JSON lines);
//   html         `report --html`'s reader of gpuvet's JSON documents, then the page;
//   advise       advise's inputs: a workload TOML, candidates, a scale JSON.
// GPUVET_FUZZ_LIST=1 prints every target, one a line, from the importer registry itself,
// and exits: scripts/fuzz fuzzes exactly that list, so a new importer is never skipped.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>

#include "file_targets.h"
#include "gpuvet/advise.h"
#include "gpuvet/baseline.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/fleet.h"
#include "gpuvet/gate.h"
#include "gpuvet/html_report.h"
#include "gpuvet/report.h"
#include "import/importer.h"
#include "import/load.h"

namespace {
const gpuvet::import::Importer* g_importer = nullptr;
bool g_diagnose = false;

// The readers of gpuvet's own files (not pasted outputs): each a target of its own.
using Reader = void (*)(std::string_view);

void read_baseline(std::string_view text) {
  auto b = gpuvet::parse_baseline(text, "fuzz.toml");
  if (!b.is_ok()) return;
  gpuvet::Facts facts;  // an empty node against whatever the baseline pins
  const auto r = gpuvet::judge_gate(b.value(), facts, gpuvet::diagnose(facts), {}, {});
  (void)gpuvet::render_gate_text(r);
  (void)gpuvet::gate_junit_xml(r);
}
void read_config(std::string_view text) {
  (void)gpuvet::parse_thresholds(text, "fuzz.toml");
  (void)gpuvet::parse_gate_config(text, "fuzz.toml");
}
void read_fleet(std::string_view text) {
  gpuvet::DocumentOrigin origin{"fuzz.json", "fuzz", 1764669600, 1764669600};
  auto docs = gpuvet::fleet_documents(text, origin);
  if (docs.is_ok()) (void)gpuvet::fleet_report(docs.value(), {});
}
void read_html(std::string_view text) {
  (void)gpuvet::render_html_report({{"fuzz.json", std::string(text)}});
}
void read_advise(std::string_view text) {
  std::string candidates;
  (void)gpuvet::parse_workload_toml(text, "fuzz.toml", &candidates);
  (void)gpuvet::parse_candidates(text.substr(0, 4096));
  (void)gpuvet::scale_evidence_json(text, "fuzz.json");
}

// In the order of fuzz/file_targets.h, whose names they take.
constexpr Reader kFileReaderFns[] = {read_baseline, read_config, read_fleet, read_html,
                                     read_advise};
static_assert(std::size(kFileReaderFns) == gpuvet::fuzz::kFileTargets.size());
Reader g_reader = nullptr;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* l = std::getenv("GPUVET_FUZZ_LIST"); l && *l) {
    for (const auto& imp : gpuvet::import::importers()) std::printf("%s\n", imp.format);
    std::printf("all\ndiagnose\n");
    for (const auto name : gpuvet::fuzz::kFileTargets)
      std::printf("%.*s\n", static_cast<int>(name.size()), name.data());
    std::fflush(stdout);
    std::exit(0);
  }
  const char* f = std::getenv("GPUVET_FUZZ_FORMAT");
  if (!f || !*f || std::strcmp(f, "all") == 0) return 0;
  if (std::strcmp(f, "diagnose") == 0) {
    g_diagnose = true;
    return 0;
  }
  for (std::size_t i = 0; i < gpuvet::fuzz::kFileTargets.size(); ++i)
    if (gpuvet::fuzz::kFileTargets[i] == f) {
      g_reader = kFileReaderFns[i];
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
  if (g_reader) {
    g_reader(text);
    return 0;
  }
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
