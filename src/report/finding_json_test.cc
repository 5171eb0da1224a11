// The per-finding keys of the diagnose JSON: each GPU's UUID and bus id beside its subject,
// the observed and expected values, and the action (docs/json-schema.md).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "gpuvet/diagnose.h"
#include "gpuvet/report.h"
#include "report/json_document.h"

namespace gpuvet {
namespace {

Facts gpus_with_ids() {
  Facts f;
  for (int i : {0, 1}) {
    GpuFacts g;
    g.index = i;
    g.uuid = "GPU-aaaa-" + std::to_string(i);
    g.pci_bus_id = "0000:1" + std::to_string(i) + ":00.0";
    f.gpus.push_back(g);
  }
  return f;
}

Finding link_finding() {
  Finding f;
  f.id = "pcie-link-degraded";
  f.severity = Severity::kWarning;
  f.subjects = {"GPU1"};
  f.evidence = "GPU1 PCIe Gen4 x8 of max x16";
  f.observed = FindingValue{"pcie_width", 8, "lanes"};
  f.expected = FindingValue{"pcie_width", 16, "lanes", Bound::kExactly};
  return f;
}

TEST(FindingJson, CarriesGpuIdentitiesValuesAndAction) {
  const auto j = report::finding_json(link_finding(), gpus_with_ids());
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["index"], 1);
  EXPECT_EQ(j["gpus"][0]["uuid"], "GPU-aaaa-1");
  EXPECT_EQ(j["gpus"][0]["pci_bus_id"], "0000:11:00.0");
  EXPECT_EQ(j["observed"]["quantity"], "pcie_width");
  EXPECT_EQ(j["observed"]["value"], 8);
  EXPECT_EQ(j["observed"]["unit"], "lanes");
  EXPECT_FALSE(j["observed"].contains("bound"));
  EXPECT_EQ(j["expected"]["value"], 16);
  EXPECT_EQ(j["expected"]["bound"], "exactly");
  EXPECT_EQ(j["action"], "reseat-or-rma");  // the catalog's
  // The old keys are still there, in their place.
  EXPECT_EQ(j["subjects"][0], "GPU1");
  EXPECT_EQ(j["evidence"], "GPU1 PCIe Gen4 x8 of max x16");
}

TEST(FindingJson, PairsAndNonGpuSubjectsAndNoValues) {
  Finding f;
  f.id = "cpu-saturated";
  f.subjects = {"CPU3"};
  auto j = report::finding_json(f, gpus_with_ids());
  EXPECT_TRUE(j["gpus"].empty());
  EXPECT_TRUE(j["observed"].is_null());
  EXPECT_TRUE(j["expected"].is_null());
  EXPECT_EQ(j["action"], "fix-application");
  f.id = "p2p-unavailable";
  f.subjects = {"GPU0-GPU1"};
  f.action = Action::kNone;  // an instance's own action wins over the catalog's
  j = report::finding_json(f, gpus_with_ids());
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["uuid"], "GPU-aaaa-0");
  EXPECT_EQ(j["gpus"][1]["uuid"], "GPU-aaaa-1");
  EXPECT_EQ(j["action"], "none");
  // Without facts the identities are null, never made up.
  j = report::finding_json(f);
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_TRUE(j["gpus"][0]["uuid"].is_null());
  EXPECT_TRUE(j["gpus"][0]["pci_bus_id"].is_null());
}

TEST(FindingJson, DiagnosisDocumentResolvesFromItsFacts) {
  Diagnosis d;
  d.findings = {link_finding()};
  const auto doc = nlohmann::json::parse(diagnosis_to_json(gpus_with_ids(), d));
  EXPECT_EQ(doc["findings"][0]["gpus"][0]["uuid"], "GPU-aaaa-1");
  EXPECT_EQ(doc["findings"][0]["action"], "reseat-or-rma");
}

}  // namespace
}  // namespace gpuvet
