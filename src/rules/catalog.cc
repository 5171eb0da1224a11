// The catalog's lookups and enum names; the tables themselves are rules/catalog_table.h.
#include <algorithm>
#include <span>
#include <string_view>

#include "gpuvet/diagnose.h"
#include "rules/catalog_table.h"

namespace gpuvet {

using rules::kCatalog;
using rules::kSymptoms;

const char* bottleneck_name(Bottleneck b) {
  switch (b) {
    case Bottleneck::kNone:
      return "none";
    case Bottleneck::kUnknown:
      return "unknown";
    case Bottleneck::kComms:
      return "comms";
    case Bottleneck::kCpu:
      return "cpu";
    case Bottleneck::kIo:
      return "io";
    case Bottleneck::kThermal:
      return "thermal";
    case Bottleneck::kMapping:
      return "mapping";
    case Bottleneck::kHardware:
      return "hardware";
    case Bottleneck::kCompute:
      return "compute";
    case Bottleneck::kMemory:
      return "memory";
  }
  return "unknown";
}

const char* triage_step_name(TriageStep s) {
  switch (s) {
    case TriageStep::kConfirm:
      return "confirm";
    case TriageStep::kClassify:
      return "classify";
    case TriageStep::kTopology:
      return "topology";
    case TriageStep::kSystem:
      return "system";
    case TriageStep::kFramework:
      return "framework";
  }
  return "unknown";
}

std::span<const CatalogEntry> finding_catalog() { return kCatalog; }

const CatalogEntry* find_catalog_entry(std::string_view id) {
  for (const auto& e : kCatalog)
    if (id == e.id) return &e;
  return nullptr;
}

bool finding_measured_by(std::string_view id, MeasuredBy command) {
  const CatalogEntry* e = find_catalog_entry(id);
  return e && (e->measured_by & command) != 0;
}

std::span<const SymptomPattern> symptom_catalog() { return kSymptoms; }

}  // namespace gpuvet
