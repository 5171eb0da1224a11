// The action of every catalog entry and of rule instances whose severity changes it, and the
// observed/expected numbers the rules record beside their evidence.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "gpuvet/diagnose.h"
#include "gpuvet/facts.h"
#include "rules/rule.h"

namespace gpuvet::rules {
namespace {

constexpr std::int64_t kNow = 1768297262;
constexpr std::int64_t kDay = 86400;

std::vector<Finding> run(void (*group)(const Context&, Emitter&), const Facts& f,
                         const DiagnoseOptions& o = {}) {
  Context c{f, o.thresholds, o};
  Emitter e;
  group(c, e);
  return e.take_findings();
}

const Finding* first(const std::vector<Finding>& v, const std::string& id) {
  for (const auto& f : v)
    if (f.id == id) return &f;
  return nullptr;
}

GpuFacts gpu(int index) {
  GpuFacts g;
  g.index = index;
  g.name = "NVIDIA H200";
  g.pci_bus_id = "0000:1" + std::to_string(index) + ":00.0";
  g.clocks.sm_max_mhz = 1980;
  g.power.limit_w = 700;
  g.power.enforced_limit_w = 700;
  g.power.default_limit_w = 700;
  g.thermal.slowdown_c = 90;
  return g;
}

XidEvent xid(int code, std::int64_t at, int on) {
  XidEvent x;
  x.code = code;
  x.gpu = on;
  x.pci_bus_id = "0000:1" + std::to_string(on) + ":00.0";
  x.unix_time = at;
  x.message = "Ch 0000000b";
  return x;
}

TEST(CatalogActions, EveryEntryHasAnActionOfTheFixedSet) {
  const std::set<std::string> allowed = {"none",          "watch", "fix-config",
                                         "reseat-or-rma", "drain", "fix-application"};
  for (const auto& e : finding_catalog()) {
    EXPECT_NE(e.action, Action::kUnset) << e.id << " has no action";
    EXPECT_TRUE(allowed.count(action_name(e.action))) << e.id;
    EXPECT_EQ(parse_action(action_name(e.action)), e.action) << e.id;
  }
  EXPECT_FALSE(parse_action(""));
  EXPECT_FALSE(parse_action("reboot"));
  // Spot checks of the choices the operators rely on.
  EXPECT_EQ(find_catalog_entry("gpu-unresponsive")->action, Action::kDrain);
  EXPECT_EQ(find_catalog_entry("pcie-link-degraded")->action, Action::kReseatOrRma);
  EXPECT_EQ(find_catalog_entry("numa-misbinding")->action, Action::kFixApplication);
  EXPECT_EQ(find_catalog_entry("data-corruption")->action, Action::kDrain);
}

TEST(FindingAction, InstanceOverridesCatalogAndUnknownIdIsNone) {
  Finding f;
  f.id = "xid-error";
  EXPECT_EQ(finding_action(f), Action::kWatch);
  f.action = Action::kDrain;
  EXPECT_EQ(finding_action(f), Action::kDrain);
  Finding unknown;
  unknown.id = "no-such-finding";
  EXPECT_EQ(finding_action(unknown), Action::kNone);
}

TEST(FindingAction, XidByAgeAndOrigin) {
  DiagnoseOptions o;
  o.now_unix = kNow;
  Facts f;
  f.gpus = {gpu(0), gpu(1)};
  f.kernel_log.xids = {xid(79, kNow - 60, 0)};
  const auto out1 = run(check_gpu_health, f, o);
  const Finding* lost = first(out1, "xid-error");
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->severity, Severity::kCritical);
  EXPECT_EQ(finding_action(*lost), Action::kDrain);

  f.kernel_log.xids = {xid(79, kNow - 40 * kDay, 0)};  // history: explained, not alarming
  const auto out2 = run(check_gpu_health, f, o);
  const Finding* old = first(out2, "xid-error");
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->severity, Severity::kInfo);
  EXPECT_EQ(finding_action(*old), Action::kWatch);

  f.kernel_log.xids = {xid(31, kNow - 60, 1)};  // an MMU fault: the application's
  const auto out3 = run(check_gpu_health, f, o);
  const Finding* app = first(out3, "xid-error");
  ASSERT_NE(app, nullptr);
  EXPECT_EQ(finding_action(*app), Action::kFixApplication);
}

TEST(FindingValues, PcieWidthAndGeneration) {
  Facts f;
  GpuFacts g = gpu(0);
  g.pcie.gen_max = 5;
  g.pcie.width_max = 16;
  g.pcie.gen_current = 5;
  g.pcie.width_current = 8;
  f.gpus = {g};
  const auto out4 = run(check_topology, f);
  const Finding* link = first(out4, "pcie-link-degraded");
  ASSERT_NE(link, nullptr);
  ASSERT_TRUE(link->observed && link->expected);
  EXPECT_EQ(link->observed->quantity, "pcie_width");
  EXPECT_EQ(link->observed->value, 8);
  EXPECT_EQ(link->expected->value, 16);
  EXPECT_EQ(link->observed->unit, "lanes");

  f.gpus[0].pcie.width_current = 16;
  f.gpus[0].pcie.gen_current = 3;
  f.gpus[0].utilization.gpu_pct = 100;  // busy: the generation counts
  const auto out5 = run(check_topology, f);
  const Finding* gen = first(out5, "pcie-link-degraded");
  ASSERT_NE(gen, nullptr);
  ASSERT_TRUE(gen->observed && gen->expected);
  EXPECT_EQ(gen->observed->quantity, "pcie_gen");
  EXPECT_EQ(gen->observed->value, 3);
  EXPECT_EQ(gen->expected->value, 5);
}

TEST(FindingValues, ClocksTemperaturePowerAndEcc) {
  Facts f;
  GpuFacts g = gpu(0);
  g.utilization.gpu_pct = 100;
  g.clocks.sm_mhz = 1200;
  g.thermal.gpu_c = 89;
  g.power.draw_w = 400;
  g.power.enforced_limit_w = 450;  // a cap from outside: the requested limit is 700
  g.ecc.enabled = true;
  g.ecc.volatile_counts = {0, 2};  // corrected, uncorrected
  f.gpus = {g};
  const auto out = run(check_gpu_health, f);

  const Finding* clocks = first(out, "clocks-below-target");
  ASSERT_NE(clocks, nullptr);
  ASSERT_TRUE(clocks->observed && clocks->expected);
  EXPECT_EQ(clocks->observed->value, 1200);
  EXPECT_EQ(clocks->observed->unit, "MHz");
  EXPECT_DOUBLE_EQ(clocks->expected->value, 0.85 * 1980);
  EXPECT_EQ(clocks->expected->bound, Bound::kAtLeast);

  const Finding* hot = first(out, "thermal-throttle");
  ASSERT_NE(hot, nullptr);
  ASSERT_TRUE(hot->observed && hot->expected);
  EXPECT_EQ(hot->observed->quantity, "temperature");
  EXPECT_EQ(hot->observed->value, 89);
  EXPECT_EQ(hot->expected->value, 87);  // slowdown 90 less the 3 °C headroom
  EXPECT_EQ(hot->expected->bound, Bound::kAtMost);

  const Finding* power = first(out, "power-throttle");
  ASSERT_NE(power, nullptr);
  ASSERT_TRUE(power->observed && power->expected);
  EXPECT_EQ(power->observed->quantity, "power_limit");
  EXPECT_EQ(power->observed->value, 450);
  EXPECT_EQ(power->expected->value, 700);
  EXPECT_EQ(finding_action(*power), Action::kFixConfig);

  const Finding* ecc = first(out, "ecc-errors");
  ASSERT_NE(ecc, nullptr);
  EXPECT_EQ(ecc->severity, Severity::kCritical);
  ASSERT_TRUE(ecc->observed && ecc->expected);
  EXPECT_EQ(ecc->observed->quantity, "ecc_uncorrected");
  EXPECT_EQ(ecc->observed->value, 2);
  EXPECT_EQ(ecc->expected->value, 0);
  EXPECT_EQ(finding_action(*ecc), Action::kDrain);

  // Corrected errors only: watched, not drained.
  f.gpus[0].ecc.volatile_counts = {5, 0};
  const auto out6 = run(check_gpu_health, f);
  const Finding* corrected = first(out6, "ecc-errors");
  ASSERT_NE(corrected, nullptr);
  EXPECT_EQ(corrected->observed->quantity, "ecc_corrected");
  EXPECT_EQ(finding_action(*corrected), Action::kWatch);
}

TEST(FindingValues, HealthyGpuHasNoFindingAndInfoPowerNeedsNothing) {
  Facts f;
  GpuFacts g = gpu(0);
  g.utilization.gpu_pct = 100;
  g.clocks.sm_mhz = 1500;
  g.power.draw_w = 699;  // capping at the rated default: normal on heavy kernels
  g.thermal.gpu_c = 60;
  f.gpus = {g};
  const auto out = run(check_gpu_health, f);
  for (const auto& x : out) EXPECT_LE(x.severity, Severity::kInfo) << x.id << ": " << x.evidence;
  if (const Finding* p = first(out, "power-throttle")) {
    EXPECT_EQ(finding_action(*p), Action::kNone);
    ASSERT_TRUE(p->observed);
    EXPECT_EQ(p->observed->quantity, "power_draw");
  }
}

TEST(FindingValues, MissingDriverIsAConfigurationAction) {
  Facts f;
  f.gpu_facts_unavailable = true;
  SourceInfo nvml;
  nvml.name = "nvml";
  nvml.ok = false;
  nvml.detail = "NVIDIA driver library libnvidia-ml.so.1 not found: no such file";
  f.sources = {nvml};
  DiagnoseOptions o;
  o.expect_gpus = 8;
  const auto out7 = run(check_inventory, f, o);
  const Finding* missing = first(out7, "gpu-missing");
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(finding_action(*missing), Action::kFixConfig);
  ASSERT_TRUE(missing->observed && missing->expected);
  EXPECT_EQ(missing->observed->value, 0);
  EXPECT_EQ(missing->expected->value, 8);
  // The driver loaded and sees fewer GPUs than expected: the hardware, drain.
  Facts seen;
  seen.gpus = {gpu(0)};
  const auto out8 = run(check_inventory, seen, o);
  const Finding* fewer = first(out8, "gpu-missing");
  ASSERT_NE(fewer, nullptr);
  EXPECT_EQ(finding_action(*fewer), Action::kDrain);
  EXPECT_EQ(fewer->observed->value, 1);
}

}  // namespace
}  // namespace gpuvet::rules
