// Tests of the GPU rule groups (rules_gpu.cc): each rule fires on what it must, with the
// severity, subject and numbers the reader needs, and stays silent on benign states.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "gpuvet/diagnose.h"
#include "gpuvet/facts.h"
#include "import/load.h"
#include "rules/rule.h"

namespace gpuvet::rules {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::int64_t kNow = 1768297262;  // 2026-01-13 09:41:02 UTC (the article's Xid)
constexpr std::int64_t kDay = 86400;

struct Out {
  std::vector<Finding> findings;
  std::vector<std::string> notes;

  std::vector<const Finding*> all(const std::string& id) const {
    std::vector<const Finding*> v;
    for (const auto& f : findings)
      if (f.id == id) v.push_back(&f);
    return v;
  }
  // The one finding with this id about this subject, or null.
  const Finding* find(const std::string& id, const std::string& subject) const {
    for (const auto& f : findings)
      if (f.id == id &&
          std::find(f.subjects.begin(), f.subjects.end(), subject) != f.subjects.end())
        return &f;
    return nullptr;
  }
  std::string dump() const {
    std::string s;
    for (const auto& f : findings)
      s += f.id + " [" + severity_name(f.severity) + "] " + f.evidence + "\n";
    return s;
  }
};

Out health(const Facts& f, const DiagnoseOptions& o = {}) {
  Context c{f, o.thresholds, o};
  Emitter e;
  check_gpu_health(c, e);
  return {e.take_findings(), e.take_notes()};
}

Out inventory(const Facts& f, const DiagnoseOptions& o = {}) {
  Context c{f, o.thresholds, o};
  Emitter e;
  check_inventory(c, e);
  return {e.take_findings(), e.take_notes()};
}

GpuFacts h200(int index) {
  GpuFacts g;
  g.index = index;
  g.name = "NVIDIA H200";
  g.uuid = "GPU-0000000" + std::to_string(index);
  g.vbios = "96.00.AF.00.01";
  g.pci_bus_id = "0000:1" + std::to_string(index) + ":00.0";
  g.clocks.sm_max_mhz = 1980;
  g.clocks.mem_max_mhz = 3201;
  g.power.limit_w = 700;
  g.power.enforced_limit_w = 700;
  g.power.default_limit_w = 700;
  g.thermal.slowdown_c = 90;
  g.thermal.shutdown_c = 95;
  g.ecc.enabled = true;
  g.ecc.pending_enabled = true;
  g.ecc.volatile_counts = {0, 0};
  g.ecc.aggregate_counts = {0, 0};
  g.ecc.remapping_pending = false;
  g.ecc.remapping_failed = false;
  return g;
}

// Idle: downclocked, "idle" as the only reason, cool, drawing little.
GpuFacts idle_h200(int index, int pstate = 0) {
  GpuFacts g = h200(index);
  g.utilization.gpu_pct = 0;
  g.pstate = pstate;
  g.clocks.sm_mhz = 345;
  g.clock_events.active = {"idle"};
  g.clock_events.active_mask = 0x1;
  g.thermal.gpu_c = 45;
  g.thermal.margin_c = 40;
  g.power.draw_w = 70;
  return g;
}

// Busy and healthy: full clock, under the power cap, no reason.
GpuFacts busy_h200(int index) {
  GpuFacts g = h200(index);
  g.utilization.gpu_pct = 100;
  g.pstate = 0;
  g.clocks.sm_mhz = 1980;
  g.clock_events.active_mask = 0;
  g.thermal.gpu_c = 60;
  g.thermal.margin_c = 25;
  g.power.draw_w = 650;
  return g;
}

// The article's task 5 CSV: no utilisation column, no limits beyond power.limit.
Facts article_task5() {
  Facts f;
  GpuFacts g0;
  g0.index = 0;
  g0.thermal.gpu_c = 84;
  g0.power.draw_w = 147.23;
  g0.power.limit_w = 150;
  g0.clocks.sm_max_mhz = 1710;
  g0.clocks.mem_mhz = 5001;
  g0.clocks.sm_mhz = 1410;
  GpuFacts g1 = g0;
  g1.index = 1;
  g1.thermal.gpu_c = 72;
  g1.power.draw_w = 132.10;
  g1.clocks.sm_mhz = 1680;
  f.gpus = {g0, g1};
  return f;
}

XidEvent xid(int code, const std::string& bus, std::optional<std::int64_t> unix_time,
             std::optional<int> gpu = std::nullopt) {
  XidEvent x;
  x.code = code;
  x.pci_bus_id = bus;
  x.gpu = gpu;
  x.unix_time = unix_time;
  x.message = "Ch 0000000b, engmask 00000101, intr 10000000";
  return x;
}

// ================================================================ GpuHealthRules

TEST(GpuHealthRules, IdleH200ProducesNothing) {
  for (int pstate : {0, 8}) {
    Facts f;
    f.gpus = {idle_h200(0, pstate), idle_h200(1, pstate)};
    f.gpus[0].pcie.gen_current = 1;  // idle downshift: not this group's business anyway
    f.gpus[0].pcie.gen_max = 5;
    const Out h = health(f);
    EXPECT_TRUE(h.findings.empty()) << h.dump();
    const Out i = inventory(f);
    EXPECT_TRUE(i.findings.empty()) << i.dump();
  }
}

TEST(GpuHealthRules, BusyHealthyH200ProducesNothing) {
  Facts f;
  f.gpus = {busy_h200(0), busy_h200(1)};
  const Out h = health(f);
  EXPECT_TRUE(h.findings.empty()) << h.dump();
  EXPECT_TRUE(inventory(f).findings.empty());
}

TEST(GpuHealthRules, ArticleTask5FlagsHotCappedSlowGpu0Only) {
  const Out o = health(article_task5());
  const Finding* clocks = o.find("clocks-below-target", "GPU0");
  ASSERT_NE(clocks, nullptr) << o.dump();
  EXPECT_EQ(clocks->severity, Severity::kWarning);
  EXPECT_THAT(clocks->evidence, HasSubstr("1410 MHz of max 1710 MHz (82 %)"));
  EXPECT_THAT(clocks->evidence, HasSubstr("thermal-throttle"));
  const Finding* power = o.find("power-throttle", "GPU0");
  ASSERT_NE(power, nullptr) << o.dump();
  EXPECT_EQ(power->severity, Severity::kWarning);
  EXPECT_THAT(power->evidence, HasSubstr("147.23/150 W (98 %)"));
  const Finding* thermal = o.find("thermal-throttle", "GPU0");
  ASSERT_NE(thermal, nullptr) << o.dump();
  EXPECT_EQ(thermal->severity, Severity::kWarning);
  EXPECT_THAT(thermal->evidence, HasSubstr("84 °C"));
  EXPECT_THAT(thermal->evidence, HasSubstr("83 °C"));
  for (const auto& f : o.findings)
    EXPECT_THAT(f.subjects, Not(::testing::Contains("GPU1"))) << f.id << ": " << f.evidence;
  EXPECT_EQ(o.findings.size(), 3u) << o.dump();
}

TEST(GpuHealthRules, ThermalReasonActiveFires) {
  Facts f;
  GpuFacts g = busy_h200(3);
  g.clock_events.active = {"hw_slowdown", "hw_thermal_slowdown"};
  g.thermal.gpu_c = 70;  // the reason alone is enough
  f.gpus = {g};
  const Out o = health(f);
  const Finding* t = o.find("thermal-throttle", "GPU3");
  ASSERT_NE(t, nullptr) << o.dump();
  EXPECT_EQ(t->severity, Severity::kWarning);
  EXPECT_THAT(t->evidence, HasSubstr("hw_thermal_slowdown active"));
  EXPECT_THAT(t->evidence, HasSubstr("70 °C"));
  // hw_slowdown with a thermal cause belongs to the thermal finding, not to power.
  EXPECT_EQ(o.find("power-throttle", "GPU3"), nullptr) << o.dump();
}

TEST(GpuHealthRules, ThermalMarginAndSlowdownHeadroomFire) {
  Facts f;
  GpuFacts a = busy_h200(0);
  a.thermal.margin_c = 3;
  GpuFacts b = busy_h200(1);
  b.thermal.margin_c.reset();
  b.thermal.gpu_c = 88;  // slowdown at 90, headroom 3
  f.gpus = {a, b};
  const Out o = health(f);
  const Finding* ta = o.find("thermal-throttle", "GPU0");
  ASSERT_NE(ta, nullptr) << o.dump();
  EXPECT_THAT(ta->evidence, HasSubstr("T.Limit margin 3 °C"));
  const Finding* tb = o.find("thermal-throttle", "GPU1");
  ASSERT_NE(tb, nullptr) << o.dump();
  EXPECT_THAT(tb->evidence, HasSubstr("88 °C, within 3 °C of the slowdown temperature 90 °C"));
}

TEST(GpuHealthRules, HotWithKnownLimitsIsNotFlaggedByTheGenericTarget) {
  Facts f;
  GpuFacts g = busy_h200(0);
  g.thermal.gpu_c = 84;  // above 83, but the GPU says it has 20 °C left
  g.thermal.margin_c = 20;
  g.thermal.slowdown_c = 104;
  f.gpus = {g};
  EXPECT_EQ(health(f).find("thermal-throttle", "GPU0"), nullptr);
}

TEST(GpuHealthRules, AccumulatedThermalTimeAloneIsInfo) {
  Facts f;
  GpuFacts g = idle_h200(2);
  g.clock_events.accumulated_ns["thermal"] = 12'300'000'000ULL;
  g.clock_events.accumulated_ns["power"] = 5'000'000'000ULL;
  f.gpus = {g};
  const Out o = health(f);
  ASSERT_EQ(o.findings.size(), 1u) << o.dump();
  const Finding& t = o.findings[0];
  EXPECT_EQ(t.id, "thermal-throttle");
  EXPECT_EQ(t.severity, Severity::kInfo);
  EXPECT_EQ(t.subjects, std::vector<std::string>{"GPU2"});
  EXPECT_THAT(t.evidence, HasSubstr("thermal 12.3 s"));
}

TEST(GpuHealthRules, SwPowerCapIsBenignWhenIdleAndFiresWhenBusy) {
  Facts f;
  GpuFacts idle = idle_h200(0);
  idle.clock_events.active = {"idle", "sw_power_cap"};
  GpuFacts busy = busy_h200(1);
  busy.clock_events.active = {"sw_power_cap"};
  busy.power.draw_w = 600;
  f.gpus = {idle, busy};
  const Out o = health(f);
  EXPECT_EQ(o.find("power-throttle", "GPU0"), nullptr) << o.dump();
  const Finding* p = o.find("power-throttle", "GPU1");
  ASSERT_NE(p, nullptr) << o.dump();
  // At its rated default limit (700 W) this is how a healthy GPU runs heavy kernels: info.
  EXPECT_EQ(p->severity, Severity::kInfo);
  EXPECT_THAT(p->evidence, HasSubstr("sw_power_cap active while busy"));
  EXPECT_THAT(p->evidence, HasSubstr("600/700 W"));
  EXPECT_THAT(p->evidence, HasSubstr("rated default"));
}

TEST(GpuHealthRules, SwPowerCapWithoutKnownDefaultWarnsAdminLoweredLimitInforms) {
  Facts f;
  GpuFacts unknown_default = busy_h200(0);
  unknown_default.clock_events.active = {"sw_power_cap"};
  unknown_default.power.default_limit_w.reset();
  GpuFacts lowered = busy_h200(1);
  lowered.clock_events.active = {"sw_power_cap"};
  lowered.power.limit_w = 500;
  lowered.power.enforced_limit_w = 500;
  lowered.power.draw_w = 498;
  f.gpus = {unknown_default, lowered};
  const Out o = health(f);
  const Finding* a = o.find("power-throttle", "GPU0");
  const Finding* b = o.find("power-throttle", "GPU1");
  ASSERT_NE(a, nullptr) << o.dump();
  ASSERT_NE(b, nullptr) << o.dump();
  EXPECT_EQ(a->severity, Severity::kWarning);
  // Requested and enforced both 500 W of a 700 W default: an operator's nvidia-smi -pl, a
  // choice, not a fault.
  EXPECT_EQ(b->severity, Severity::kInfo);
  EXPECT_THAT(b->evidence, HasSubstr("set below the default 700 W"));
  EXPECT_THAT(b->evidence, HasSubstr("an administrator's setting"));
  // Its clocks under that cap are explained by it, as info.
  f.gpus[1].clocks.sm_mhz = 1400;
  const Finding* k = health(f).find("clocks-below-target", "GPU1");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->severity, Severity::kInfo);
  EXPECT_THAT(k->evidence, HasSubstr("lower power limit an administrator set"));
}

TEST(GpuHealthRules, H200CappedAtRatedLimitUnderLoadIsInfoOnly) {
  // The lent H200 under a bf16 GEMM: 695/700 W, sw_power_cap, 1500 of 1980 MHz.
  Facts f;
  GpuFacts g = busy_h200(0);
  g.clock_events.active = {"sw_power_cap"};
  g.power.draw_w = 695.4;
  g.clocks.sm_mhz = 1500;
  g.clocks.sm_max_mhz = 1980;
  f.gpus = {g};
  const Out o = health(f);
  for (const auto& x : o.findings) EXPECT_LT(x.severity, Severity::kWarning) << o.dump();
  const Finding* clocks = o.find("clocks-below-target", "GPU0");
  ASSERT_NE(clocks, nullptr) << o.dump();
  EXPECT_THAT(clocks->evidence, HasSubstr("rated power limit"));
}

TEST(GpuHealthRules, PowerLimitBelowDefaultFiresEvenIdle) {
  Facts f;
  GpuFacts g = idle_h200(0);
  g.power.limit_w = 250;
  g.power.enforced_limit_w = 250;
  g.power.default_limit_w = 350;
  f.gpus = {g};
  Out o = health(f);
  const Finding* p = o.find("power-throttle", "GPU0");
  ASSERT_NE(p, nullptr) << o.dump();
  EXPECT_EQ(p->severity, Severity::kInfo);  // requested = enforced: an administrator's setting
  EXPECT_THAT(p->evidence, HasSubstr("power limit 250 W set below the default 350 W"));
  // Only the enforced limit below the default, nothing requested known: origin unknown, warn.
  f.gpus[0].power.limit_w.reset();
  o = health(f);
  p = o.find("power-throttle", "GPU0");
  ASSERT_NE(p, nullptr) << o.dump();
  EXPECT_EQ(p->severity, Severity::kWarning);
  EXPECT_THAT(p->evidence, HasSubstr("power limit 250 W below the default 350 W"));
}

TEST(GpuHealthRules, EnforcedBelowRequestedIsAnOutsideCapBusyOrIdle) {
  // A BMC caps the GPU at 450 W while the driver was asked for (and defaults to) 700 W.
  for (bool busy : {false, true}) {
    Facts f;
    GpuFacts g = busy ? busy_h200(0) : idle_h200(0);
    g.power.enforced_limit_w = 450;
    if (busy) g.power.draw_w = 440;
    f.gpus = {g};
    const Out o = health(f);
    const Finding* p = o.find("power-throttle", "GPU0");
    ASSERT_NE(p, nullptr) << o.dump();
    EXPECT_EQ(p->severity, Severity::kWarning) << busy;
    EXPECT_THAT(p->evidence, HasSubstr("enforced power limit 450 W below the requested 700 W"));
    EXPECT_THAT(p->evidence, HasSubstr("BMC/IPMI"));
  }
  // Healthy: enforced = requested = default, idle or at the cap under load.
  Facts f;
  f.gpus = {idle_h200(0)};
  EXPECT_EQ(health(f).find("power-throttle", "GPU0"), nullptr);
}

TEST(GpuHealthRules, OutsideCapThroughTheNvidiaSmiQImporter) {
  // An nvidia-smi -q Power Readings block as R535+ prints it (written for this test after
  // nvidia-smi's documented fields): requested 700 W, default 700 W, enforced 500 W.
  const std::string paste =
      "==============NVSMI LOG==============\n\n"
      "Timestamp                                 : Mon Jan 13 09:41:02 2026\n"
      "Driver Version                            : 535.161.08\n"
      "CUDA Version                              : 12.2\n\n"
      "Attached GPUs                             : 1\n"
      "GPU 00000000:18:00.0\n"
      "    Product Name                          : NVIDIA H100 80GB HBM3\n"
      "    Utilization\n"
      "        Gpu                               : 0 %\n"
      "        Memory                            : 0 %\n"
      "    Power Readings\n"
      "        Power Draw                        : 70.12 W\n"
      "        Current Power Limit               : 500.00 W\n"
      "        Requested Power Limit             : 700.00 W\n"
      "        Default Power Limit               : 700.00 W\n"
      "        Min Power Limit                   : 200.00 W\n"
      "        Max Power Limit                   : 700.00 W\n";
  const Facts f = import::import_text(paste, "q.txt");
  ASSERT_EQ(f.gpus.size(), 1u);
  const Out o = health(f);
  const Finding* p = o.find("power-throttle", "GPU0");
  ASSERT_NE(p, nullptr) << o.dump();
  EXPECT_EQ(p->severity, Severity::kWarning);
  EXPECT_THAT(p->evidence, HasSubstr("enforced power limit 500 W below the requested 700 W"));
}

TEST(GpuHealthRules, PowerBrakeOnEveryGpuIsOneNodeLevelFinding) {
  Facts f;
  for (int i = 0; i < 8; ++i) {
    GpuFacts g = idle_h200(i);
    g.clock_events.active = {"idle", "hw_slowdown", "hw_power_brake_slowdown"};
    g.power.draw_w = 68 + (i % 5);
    f.gpus.push_back(g);
  }
  Out o = health(f);
  const auto all = o.all("power-throttle");
  ASSERT_EQ(all.size(), 1u) << o.dump();
  EXPECT_EQ(all[0]->severity, Severity::kWarning);
  EXPECT_EQ(all[0]->subjects.size(), 8u);
  EXPECT_EQ(all[0]->subjects.front(), "GPU0");
  EXPECT_EQ(all[0]->subjects.back(), "GPU7");
  EXPECT_THAT(all[0]->evidence, HasSubstr("all 8 GPUs of the node (GPU0–GPU7)"));
  EXPECT_THAT(all[0]->evidence, HasSubstr("at idle (68–72 W)"));
  EXPECT_THAT(all[0]->evidence, HasSubstr("power delivery"));
  EXPECT_THAT(all[0]->evidence, Not(HasSubstr("power ceiling")));
  ASSERT_TRUE(all[0]->decision_note.has_value());
  EXPECT_THAT(*all[0]->decision_note, HasSubstr("PSU"));
  // The action agrees with the text: the node is out until its power is checked, no GPU is
  // reseated; and the decision shown is not the catalog's per-GPU one.
  EXPECT_EQ(finding_action(*all[0]), Action::kDrain);
  EXPECT_THAT(finding_decision(*all[0]), Not(HasSubstr("reseat")));
  // One GPU without the brake: per-GPU findings again, the healthy one quiet.
  f.gpus[3].clock_events.active = {"idle"};
  o = health(f);
  EXPECT_EQ(o.all("power-throttle").size(), 7u) << o.dump();
  EXPECT_EQ(o.find("power-throttle", "GPU3"), nullptr);
}

TEST(GpuHealthRules, XidCausedByPreviousXidTakesTheCausesCategory) {
  // The driver's own words (R560+): Xid 45 "caused by previous Xid 149" on an NVLink5 node.
  Facts f;
  f.gpus = {h200(0), h200(1)};
  XidEvent a = xid(45, "0000:10:00.0", kNow - 60, 0);
  a.message = "pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149";
  XidEvent b = xid(45, "0000:11:00.0", kNow - 50, 1);
  b.message = "pid=1818992, name=python3, Ch 0000000c";  // no cause named, none before it
  f.kernel_log.xids = {a, b};
  const Out o = health(f);
  const Finding* x0 = o.find("xid-error", "GPU0");
  ASSERT_NE(x0, nullptr) << o.dump();
  EXPECT_EQ(x0->severity, Severity::kWarning);  // Xid 149's
  EXPECT_THAT(x0->evidence, HasSubstr("following Xid 149 (NVLINK: NETIR Error; nvlink)"));
  ASSERT_TRUE(x0->bottleneck.has_value());
  EXPECT_EQ(*x0->bottleneck, Bottleneck::kComms);
  // The Xid 45 with no cause stays the application's: info, no "hardware" class.
  const Finding* x1 = o.find("xid-error", "GPU1");
  ASSERT_NE(x1, nullptr);
  EXPECT_EQ(x1->severity, Severity::kInfo);
  ASSERT_TRUE(x1->bottleneck.has_value());
  EXPECT_EQ(*x1->bottleneck, Bottleneck::kNone);
}

TEST(GpuHealthRules, XidFollowUpTakesThePrecedingFaultOnTheSameGpu) {
  Facts f;
  f.gpus = {h200(0), h200(1)};
  // Xid 48 (DBE) then 45 on GPU0 within seconds: one memory fault, critical.
  XidEvent dbe = xid(48, "0000:10:00.0", kNow - 100, 0);
  XidEvent cleanup = xid(45, "0000:10:00.0", kNow - 98, 0);
  // Xid 79 then 154 "Node Reboot Required" on GPU1.
  XidEvent lost = xid(79, "0000:11:00.0", kNow - 30, 1);
  XidEvent action = xid(154, "0000:11:00.0", kNow - 30, 1);
  action.message = "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)";
  // An Xid 45 an hour after a 13 on GPU0: not its consequence.
  XidEvent app = xid(13, "0000:10:00.0", kNow - 7200, 0);
  XidEvent late = xid(45, "0000:10:00.0", kNow - 3600, 0);
  f.kernel_log.xids = {app, late, dbe, cleanup, lost, action};
  const Out o = health(f);
  std::vector<const Finding*> x45;
  for (const auto* x : o.all("xid-error"))
    if (x->evidence.rfind("Xid 45", 0) == 0) x45.push_back(x);
  ASSERT_EQ(x45.size(), 2u) << o.dump();
  const Finding* chained =
      x45[0]->evidence.find("following Xid 48") != std::string::npos ? x45[0] : x45[1];
  const Finding* alone = chained == x45[0] ? x45[1] : x45[0];
  EXPECT_EQ(chained->severity, Severity::kCritical) << chained->evidence;
  EXPECT_EQ(*chained->bottleneck, Bottleneck::kHardware);
  EXPECT_EQ(alone->severity, Severity::kInfo) << alone->evidence;
  const Finding* x154 = nullptr;
  for (const auto* x : o.all("xid-error"))
    if (x->evidence.rfind("Xid 154", 0) == 0) x154 = x;
  ASSERT_NE(x154, nullptr) << o.dump();
  EXPECT_EQ(x154->severity, Severity::kCritical);
  EXPECT_THAT(x154->evidence, HasSubstr("following Xid 79"));
  EXPECT_THAT(x154->evidence, HasSubstr("recovery action now: Node Reboot Required"));
}

TEST(GpuHealthRules, ApplicationXidIsNotAHardwareBottleneck) {
  for (int code : {13, 31, 43}) {
    Facts f;
    f.gpus = {h200(0)};
    f.kernel_log.xids = {xid(code, "0000:10:00.0", kNow - 60, 0)};
    DiagnoseOptions opt;
    opt.now_unix = kNow;
    const Diagnosis d = diagnose(f, opt);
    EXPECT_NE(d.bottleneck, Bottleneck::kHardware) << code << ": " << d.bottleneck_reason;
  }
  // A hardware Xid keeps the hardware class.
  Facts f;
  f.gpus = {h200(0)};
  f.kernel_log.xids = {xid(79, "0000:10:00.0", kNow - 60, 0)};
  DiagnoseOptions opt;
  opt.now_unix = kNow;
  EXPECT_EQ(diagnose(f, opt).bottleneck, Bottleneck::kHardware);
}

TEST(GpuHealthRules, HardwareSlowdownAndPowerBrakeFireEvenIdle) {
  Facts f;
  GpuFacts a = idle_h200(0);
  a.clock_events.active = {"idle", "hw_slowdown"};
  GpuFacts b = idle_h200(1);
  b.clock_events.active = {"hw_slowdown", "hw_power_brake_slowdown"};
  f.gpus = {a, b};
  const Out o = health(f);
  const Finding* pa = o.find("power-throttle", "GPU0");
  ASSERT_NE(pa, nullptr) << o.dump();
  EXPECT_THAT(pa->evidence, HasSubstr("hw_slowdown active"));
  const Finding* pb = o.find("power-throttle", "GPU1");
  ASSERT_NE(pb, nullptr) << o.dump();
  EXPECT_THAT(pb->evidence, HasSubstr("hw_power_brake_slowdown active"));
}

TEST(GpuHealthRules, ClocksBelowTargetWithoutExplanationNamesTheReasons) {
  Facts f;
  GpuFacts a = busy_h200(0);
  a.utilization.gpu_pct = 97;
  a.clocks.sm_mhz = 1410;
  a.power.draw_w = 400;
  GpuFacts b = a;
  b.index = 1;
  b.clock_events.active = {"applications_clocks_setting"};
  f.gpus = {a, b};
  const Out o = health(f);
  const Finding* ca = o.find("clocks-below-target", "GPU0");
  ASSERT_NE(ca, nullptr) << o.dump();
  EXPECT_EQ(ca->severity, Severity::kWarning);
  EXPECT_THAT(ca->evidence, HasSubstr("GPU0 SM clock 1410 MHz of max 1980 MHz (71 %) while busy"));
  EXPECT_THAT(ca->evidence, HasSubstr("util 97 %, 400/700 W"));
  EXPECT_THAT(ca->evidence, HasSubstr("no clock-event reason"));
  const Finding* cb = o.find("clocks-below-target", "GPU1");
  ASSERT_NE(cb, nullptr) << o.dump();
  EXPECT_THAT(cb->evidence, HasSubstr("applications_clocks_setting"));
  EXPECT_EQ(o.findings.size(), 2u) << o.dump();
}

TEST(GpuHealthRules, ClocksBelowTargetNeverOnIdleOrUnknownMax) {
  Facts f;
  GpuFacts idle = idle_h200(0);  // 345 of 1980 MHz, util 0
  GpuFacts light = busy_h200(1);
  light.utilization.gpu_pct = 3;  // at or under the idle threshold
  light.clocks.sm_mhz = 600;
  light.power.draw_w = 120;
  GpuFacts nomax = busy_h200(2);
  nomax.clocks.sm_mhz = 900;
  nomax.clocks.sm_max_mhz.reset();
  GpuFacts only_idle_reason = busy_h200(3);
  only_idle_reason.utilization.gpu_pct = 60;
  only_idle_reason.clocks.sm_mhz = 900;
  only_idle_reason.power.draw_w = 400;
  only_idle_reason.clock_events.active = {"idle"};
  f.gpus = {idle, light, nomax, only_idle_reason};
  const Out o = health(f);
  EXPECT_TRUE(o.all("clocks-below-target").empty()) << o.dump();
}

TEST(GpuHealthRules, UtilizationMisleadingWhenBusyButIdlePowerAndClock) {
  Facts f;
  GpuFacts g = busy_h200(0);
  g.utilization.gpu_pct = 100;
  g.power.draw_w = 80;
  g.clocks.sm_mhz = 345;
  f.gpus = {g};
  const Out o = health(f);
  const Finding* m = o.find("utilization-misleading", "GPU0");
  ASSERT_NE(m, nullptr) << o.dump();
  EXPECT_EQ(m->severity, Severity::kWarning);
  EXPECT_THAT(m->evidence, HasSubstr("reports 100 % utilisation but draws 80/700 W (11 %)"));
  EXPECT_THAT(m->evidence, HasSubstr("345 MHz"));
  // The low clock is the waiting, not a throttle: no clocks-below-target on top.
  EXPECT_EQ(o.find("clocks-below-target", "GPU0"), nullptr) << o.dump();
}

// A utilisation reading on a GPU with no process (the list is known: GPU1 has one) and no memory
// in use describes no program: nothing is waiting there. The same GPU with memory in use, or
// with no process list at all, is still judged.
TEST(GpuHealthRules, UtilizationMisleadingNeedsAProgramOnTheGpu) {
  Facts f;
  GpuFacts g = busy_h200(0);
  g.utilization.gpu_pct = 96;
  g.power.draw_w = 53;
  g.memory.total_bytes = 4742ull << 20;
  g.memory.used_bytes = 0;
  f.gpus = {g, busy_h200(1)};
  ProcessFacts p;
  p.host_pid = 5193;
  p.gpu = 1;
  f.processes = {p};
  EXPECT_EQ(health(f).find("utilization-misleading", "GPU0"), nullptr) << health(f).dump();
  f.gpus[0].memory.used_bytes = 2000ull << 20;
  EXPECT_NE(health(f).find("utilization-misleading", "GPU0"), nullptr);
  f.gpus[0].memory.used_bytes = 0;
  f.processes.clear();
  EXPECT_NE(health(f).find("utilization-misleading", "GPU0"), nullptr);
}

TEST(GpuHealthRules, UtilizationMisleadingNotOnRealWork) {
  Facts f;
  GpuFacts g = busy_h200(0);  // 100 %, 650/700 W, 1980 MHz
  GpuFacts mid = busy_h200(1);
  mid.utilization.gpu_pct = 80;  // under 90 %: not a claim of being fully busy
  mid.power.draw_w = 100;
  mid.clocks.sm_mhz = 1900;
  f.gpus = {g, mid};
  EXPECT_TRUE(health(f).all("utilization-misleading").empty());
}

TEST(GpuHealthRules, ArticleTask6AggregateSingleBitIsWarning) {
  Facts f;
  GpuFacts g = busy_h200(0);
  g.ecc.volatile_counts = {0, 0};
  g.ecc.aggregate_counts = {2, 0};
  f.gpus = {g};
  const Out o = health(f);
  const Finding* ecc = o.find("ecc-errors", "GPU0");
  ASSERT_NE(ecc, nullptr) << o.dump();
  EXPECT_EQ(ecc->severity, Severity::kWarning);
  EXPECT_THAT(ecc->evidence, HasSubstr("2 lifetime (aggregate)"));
  EXPECT_THAT(ecc->evidence, HasSubstr("0 since the driver loaded (volatile)"));
}

TEST(GpuHealthRules, EccUncorrectableOrFailedRemapIsCritical) {
  Facts f;
  GpuFacts a = busy_h200(0);
  a.ecc.volatile_counts = {0, 3};
  GpuFacts b = busy_h200(1);
  b.ecc.remapping_failed = true;
  GpuFacts c = busy_h200(2);
  c.ecc.retired_pages_dbe = 4;
  f.gpus = {a, b, c};
  const Out o = health(f);
  const Finding* ea = o.find("ecc-errors", "GPU0");
  ASSERT_NE(ea, nullptr) << o.dump();
  EXPECT_EQ(ea->severity, Severity::kCritical);
  EXPECT_THAT(ea->evidence, HasSubstr("3 uncorrectable errors since the driver loaded"));
  const Finding* eb = o.find("ecc-errors", "GPU1");
  ASSERT_NE(eb, nullptr) << o.dump();
  EXPECT_EQ(eb->severity, Severity::kCritical);
  EXPECT_THAT(eb->evidence, HasSubstr("row remapping failed"));
  const Finding* ec = o.find("ecc-errors", "GPU2");
  ASSERT_NE(ec, nullptr) << o.dump();
  EXPECT_EQ(ec->severity, Severity::kCritical);
  EXPECT_THAT(ec->evidence, HasSubstr("4 pages retired for double-bit errors"));
}

TEST(GpuHealthRules, EccPendingRemapIsWarningToReset) {
  Facts f;
  GpuFacts g = busy_h200(5);
  g.ecc.remapping_pending = true;
  f.gpus = {g};
  const Out o = health(f);
  const Finding* e = o.find("ecc-errors", "GPU5");
  ASSERT_NE(e, nullptr) << o.dump();
  EXPECT_EQ(e->severity, Severity::kWarning);
  EXPECT_THAT(e->evidence, HasSubstr("reset the GPU to apply"));
}

TEST(GpuHealthRules, EccDisabledOrUnsupportedIsBenign) {
  Facts f;
  GpuFacts consumer = busy_h200(0);  // a GeForce: no ECC at all
  consumer.ecc = Ecc{};
  GpuFacts off = busy_h200(1);
  off.ecc.enabled = false;
  off.ecc.pending_enabled = true;
  off.ecc.aggregate_counts = {7, 0};  // stale counters from when it was on
  f.gpus = {consumer, off};
  const Out o = health(f);
  EXPECT_TRUE(o.all("ecc-errors").empty()) << o.dump();
  EXPECT_THAT(o.notes, ::testing::Contains(HasSubstr("GPU1: ECC is off now")));
}

TEST(GpuHealthRules, ArticleTask7Xid31IsApplicationWarning) {
  Facts f;
  GpuFacts g = busy_h200(0);
  g.pci_bus_id = "0000:65:00.0";
  f.gpus = {g};
  f.kernel_log.readable = true;
  f.kernel_log.xids = {xid(31, "0000:65:00.0", kNow)};  // no gpu index: matched by bus id
  f.kernel_log.fallen_off_bus = {
      "[Mon Jan 13 09:41:02 2026] NVRM: GPU 0000:65:00.0: GPU has fallen off the bus."};
  const Out o = health(f);
  const Finding* x = o.find("xid-error", "GPU0");
  ASSERT_NE(x, nullptr) << o.dump();
  EXPECT_EQ(
      x->severity,
      Severity::kWarning);  // 31 is the program's (info), but the GPU fell off the bus with it
  EXPECT_THAT(x->evidence, HasSubstr("Xid 31 ×1 on GPU0 (0000:65:00.0)"));
  EXPECT_THAT(x->evidence, HasSubstr("the same GPU was lost from the bus"));
  EXPECT_THAT(x->evidence, HasSubstr("GPU memory page fault"));
  EXPECT_THAT(x->evidence, HasSubstr("usually the application"));
  EXPECT_THAT(x->evidence, HasSubstr("2026-01-13 09:41:02 UTC"));
  ASSERT_TRUE(x->decision_note.has_value());
  EXPECT_THAT(*x->decision_note, HasSubstr("RESTART_APP"));

  const Out inv = inventory(f);
  const Finding* u = inv.find("gpu-unresponsive", "GPU0");
  ASSERT_NE(u, nullptr) << inv.dump();
  EXPECT_EQ(u->severity, Severity::kCritical);
  EXPECT_THAT(u->evidence, HasSubstr("fell off the bus (1 line)"));
  EXPECT_THAT(u->evidence, HasSubstr("0000:65:00.0"));
}

TEST(GpuHealthRules, OldXid79IsHistory) {
  Facts f;
  f.gpus = {busy_h200(0)};
  f.kernel_log.xids = {xid(79, "0000:10:00.0", kNow - 40 * kDay, 0)};
  DiagnoseOptions opt;
  opt.now_unix = kNow;
  const Out o = health(f, opt);
  const Finding* x = o.find("xid-error", "GPU0");
  ASSERT_NE(x, nullptr) << o.dump();
  EXPECT_EQ(x->severity, Severity::kInfo);
  EXPECT_THAT(x->evidence, HasSubstr("history"));
  EXPECT_THAT(x->evidence, HasSubstr("40 days before now"));
  EXPECT_THAT(x->evidence, HasSubstr("GPU has fallen off the bus"));
}

TEST(GpuHealthRules, RecentXid79IsCriticalAndRepeatsAreGrouped) {
  Facts f;
  f.gpus = {busy_h200(0), busy_h200(1)};
  f.host.collected_unix = kNow;  // the capture's own clock is the reference
  f.kernel_log.xids = {
      xid(79, "0000:10:00.0", kNow - 3600, 0), xid(79, "0000:10:00.0", kNow - 1800, 0),
      xid(79, "0000:10:00.0", kNow - 600, 0), xid(13, "0000:11:00.0", kNow - 60, 1)};
  const Out o = health(f);
  ASSERT_EQ(o.all("xid-error").size(), 2u) << o.dump();
  const Finding* x79 = o.find("xid-error", "GPU0");
  ASSERT_NE(x79, nullptr);
  EXPECT_EQ(x79->severity, Severity::kCritical);
  EXPECT_THAT(x79->evidence, HasSubstr("Xid 79 ×3 on GPU0 (0000:10:00.0)"));
  EXPECT_THAT(x79->evidence, HasSubstr("(hardware)"));
  EXPECT_THAT(x79->evidence, HasSubstr("10 min before the capture"));  // the latest of the three
  const Finding* x13 = o.find("xid-error", "GPU1");
  ASSERT_NE(x13, nullptr);
  // NVIDIA's catalog puts Xid 13 in its RESTART_APP bucket: the program's, info for the node.
  EXPECT_EQ(x13->severity, Severity::kInfo);
  EXPECT_EQ(finding_action(*x13), Action::kFixApplication);
  EXPECT_THAT(x13->evidence, HasSubstr("usually the application"));
}

TEST(GpuHealthRules, XidWindowIsTwentyFourHoursByWallClock) {
  // Default window 24 h: an Xid 79 of 23 h ago keeps the table's critical, one of 25 h ago is
  // history (info).
  constexpr std::int64_t kHour = 3600;
  for (const auto& [age_h, expected] :
       {std::pair{23, Severity::kCritical}, std::pair{25, Severity::kInfo}}) {
    Facts f;
    f.gpus = {busy_h200(0)};
    f.kernel_log.xids = {xid(79, "0000:10:00.0", kNow - age_h * kHour, 0)};
    DiagnoseOptions opt;
    opt.now_unix = kNow;
    const Out o = health(f, opt);
    const Finding* x = o.find("xid-error", "GPU0");
    ASSERT_NE(x, nullptr) << o.dump();
    EXPECT_EQ(x->severity, expected) << age_h << " h: " << x->evidence;
    EXPECT_EQ(x->evidence.find("history") != std::string::npos, expected == Severity::kInfo)
        << age_h << " h: " << x->evidence;
  }
}

TEST(GpuHealthRules, XidWindowIsTwentyFourHoursByUptime) {
  // The same boundary when only kernel uptime stamps place the event.
  for (const auto& [age_h, expected] :
       {std::pair{23.0, Severity::kCritical}, std::pair{25.0, Severity::kInfo}}) {
    Facts f;
    f.gpus = {busy_h200(0)};
    XidEvent x = xid(79, "0000:10:00.0", std::nullopt, 0);
    x.uptime_s = 1000;
    f.kernel_log.xids = {x};
    DiagnoseOptions opt;
    opt.now_uptime_s = 1000 + age_h * 3600;
    const Out o = health(f, opt);
    const Finding* xf = o.find("xid-error", "GPU0");
    ASSERT_NE(xf, nullptr) << o.dump();
    EXPECT_EQ(xf->severity, expected) << age_h << " h: " << xf->evidence;
  }
}

TEST(GpuHealthRules, XidFromAnEarlierBootIsHistory) {
  Facts f;
  f.gpus = {busy_h200(0)};
  XidEvent x = xid(79, "0000:10:00.0", std::nullopt, 0);
  x.uptime_s = 900000;  // later than the current uptime: the previous boot's log
  f.kernel_log.xids = {x};
  DiagnoseOptions opt;
  opt.now_uptime_s = 3600;
  const Out o = health(f, opt);
  const Finding* xf = o.find("xid-error", "GPU0");
  ASSERT_NE(xf, nullptr) << o.dump();
  EXPECT_EQ(xf->severity, Severity::kInfo);
  EXPECT_THAT(xf->evidence, HasSubstr("earlier boot"));
}

TEST(GpuHealthRules, XidByUptimeWithinWindowKeepsTableSeverity) {
  Facts f;
  f.gpus = {busy_h200(0)};
  XidEvent x = xid(48, "0000:10:00.0", std::nullopt, 0);
  x.uptime_s = 3000;
  f.kernel_log.xids = {x};
  f.host.uptime_s = 3600;
  const Out o = health(f);
  const Finding* xf = o.find("xid-error", "GPU0");
  ASSERT_NE(xf, nullptr) << o.dump();
  EXPECT_EQ(xf->severity, Severity::kCritical);
  EXPECT_THAT(xf->evidence, HasSubstr("10 min before the capture"));
}

TEST(GpuHealthRules, XidWithoutTimeOrKnownGpuOrKnownCode) {
  Facts f;
  f.gpus = {busy_h200(0)};
  XidEvent unplaced = xid(79, "0000:99:00.0", std::nullopt);  // not one of ours, no time
  XidEvent nobus;
  nobus.code = 200;  // not in the table
  f.kernel_log.xids = {unplaced, nobus};
  const Out o = health(f);
  const Finding* a = o.find("xid-error", "0000:99:00.0");
  ASSERT_NE(a, nullptr) << o.dump();
  EXPECT_EQ(a->severity, Severity::kCritical);
  EXPECT_THAT(a->evidence, HasSubstr("time unknown"));
  const Finding* b = o.find("xid-error", "kernel log");
  ASSERT_NE(b, nullptr) << o.dump();
  EXPECT_EQ(b->severity, Severity::kWarning);
  EXPECT_THAT(b->evidence, HasSubstr("Xid 200"));
  EXPECT_THAT(b->evidence, HasSubstr("unknown Xid code"));
}

std::vector<GpuSample> series(int gpu, int n, double step_s, int sm_from, int sm_to, int util,
                              int temp_from = 60, int temp_to = 60) {
  std::vector<GpuSample> v;
  for (int i = 0; i < n; ++i) {
    GpuSample s;
    s.gpu = gpu;
    s.t_s = i * step_s;
    s.sm_mhz = sm_from + (sm_to - sm_from) * i / (n - 1);
    s.util_pct = util;
    s.gpu_c = temp_from + (temp_to - temp_from) * i / (n - 1);
    s.power_w = 650;
    v.push_back(s);
  }
  return v;
}

TEST(GpuHealthRules, ClocksDegradeOverTimeFires) {
  Facts f;
  f.gpus = {busy_h200(0)};
  f.samples = series(0, 40, 15, 1980, 1600, 99, 62, 84);  // 10 min under load
  const Out o = health(f);
  const Finding* d = o.find("clocks-degrade-over-time", "GPU0");
  ASSERT_NE(d, nullptr) << o.dump();
  EXPECT_EQ(d->severity, Severity::kWarning);
  EXPECT_THAT(d->evidence, HasSubstr("median 19"));
  EXPECT_THAT(d->evidence, HasSubstr("across 9.8 min of load"));
  EXPECT_THAT(d->evidence, HasSubstr("temperature 6"));
  EXPECT_THAT(d->evidence, HasSubstr("°C"));
}

TEST(GpuHealthRules, ClocksDegradeOverTimeIgnoresSteadyShortAndIdleSeries) {
  Facts f;
  f.gpus = {busy_h200(0), busy_h200(1), busy_h200(2)};
  auto steady = series(0, 40, 15, 1980, 1950, 99);  // −1.5 %
  auto shorter = series(1, 7, 15, 1980, 1500, 99);  // too few points
  auto idle = series(2, 40, 15, 1980, 1980, 99);
  // The last part of GPU2's run is idle and downclocked: not a drift under load.
  for (std::size_t i = 30; i < idle.size(); ++i) {
    idle[i].util_pct = 0;
    idle[i].sm_mhz = 345;
  }
  f.samples = steady;
  f.samples.insert(f.samples.end(), shorter.begin(), shorter.end());
  f.samples.insert(f.samples.end(), idle.begin(), idle.end());
  const Out o = health(f);
  EXPECT_TRUE(o.all("clocks-degrade-over-time").empty()) << o.dump();
}

TEST(GpuHealthRules, ThresholdsComeFromOptions) {
  Facts f = article_task5();
  DiagnoseOptions opt;
  opt.thresholds.hot_temp_c = 90;
  opt.thresholds.power_at_limit_fraction = 0.99;
  opt.thresholds.clocks_below_fraction = 0.8;
  EXPECT_TRUE(health(f, opt).findings.empty()) << health(f, opt).dump();
}

// ================================================================ InventoryRules

TEST(InventoryRules, FewerGpusThanExpectedIsCritical) {
  Facts f;
  GpuFacts a;
  a.index = 0;
  a.name = "NVIDIA A10";
  GpuFacts b = a;
  b.index = 1;
  f.gpus = {a, b};
  DiagnoseOptions opt;
  opt.expect_gpus = 4;
  const Out o = inventory(f, opt);
  const auto m = o.all("gpu-missing");
  ASSERT_EQ(m.size(), 1u) << o.dump();
  EXPECT_EQ(m[0]->severity, Severity::kCritical);
  EXPECT_THAT(m[0]->evidence,
              HasSubstr("2 of 4 expected GPUs visible (GPU0 NVIDIA A10, GPU1 NVIDIA A10)"));
  opt.expect_gpus = 2;
  EXPECT_TRUE(inventory(f, opt).findings.empty());
}

TEST(InventoryRules, MoreGpusThanExpectedIsANote) {
  Facts f;
  f.gpus = {busy_h200(0), busy_h200(1), busy_h200(2)};
  DiagnoseOptions opt;
  opt.expect_gpus = 2;
  const Out o = inventory(f, opt);
  EXPECT_TRUE(o.findings.empty()) << o.dump();
  EXPECT_THAT(o.notes, ::testing::Contains(HasSubstr("3 GPUs visible, more than the 2 expected")));
}

TEST(InventoryRules, DriverFailureIsCritical) {
  Facts f;
  f.gpu_facts_unavailable = true;
  f.notes = {"procfs: /proc/driver/nvidia/params unreadable",
             "NVML: driver/library version mismatch"};
  f.sources = {{"procfs", true, "root /", 1, {}},
               {"nvml", false, "nvmlInit: Driver/library version mismatch", 12, {}}};
  const Out o = inventory(f);
  const auto m = o.all("gpu-missing");
  ASSERT_EQ(m.size(), 1u) << o.dump();
  EXPECT_EQ(m[0]->severity, Severity::kCritical);
  EXPECT_THAT(m[0]->evidence, HasSubstr("Driver/library version mismatch"));
  // Without a source record, the note that names the driver is the evidence.
  f.sources.clear();
  const Out n = inventory(f);
  ASSERT_EQ(n.all("gpu-missing").size(), 1u);
  EXPECT_THAT(n.all("gpu-missing")[0]->evidence,
              HasSubstr("NVML: driver/library version mismatch"));
}

TEST(InventoryRules, LiveDriverWithNoGpuIsCritical) {
  Facts f;
  f.sources = {{"nvml", true, "libnvidia-ml.so.1", 30, {}}};
  const Out o = inventory(f);
  ASSERT_EQ(o.all("gpu-missing").size(), 1u) << o.dump();
  EXPECT_THAT(o.all("gpu-missing")[0]->evidence, HasSubstr("0 GPUs"));
}

TEST(InventoryRules, OfflineInputWithoutGpusIsANoteNotAFinding) {
  Facts f;
  f.imported = {{"dmesg.txt", "kernel-log", {}}};
  Out o = inventory(f);
  EXPECT_TRUE(o.findings.empty()) << o.dump();
  EXPECT_THAT(o.notes, ::testing::Contains("no GPU inventory in the input: GPU checks skipped"));
  // The directory loader marks the same situation gpu_facts_unavailable: still a gap in the
  // input, not a driver failure.
  f.gpu_facts_unavailable = true;
  f.notes = {"no input describes a GPU (no nvidia-smi, topo or gpuvet output among the files)"};
  o = inventory(f);
  EXPECT_TRUE(o.findings.empty()) << o.dump();
}

TEST(InventoryRules, UnresponsiveGpuAndFallenOffLinesMergePerGpu) {
  Facts f;
  GpuFacts lost = busy_h200(1);
  lost.unresponsive = "timed out after 5.0 s in nvmlDeviceGetPowerUsage";
  lost.pci_bus_id = "0000:b3:00.0";
  f.gpus = {busy_h200(0), lost};
  f.kernel_log.fallen_off_bus = {
      "[ 1234.5] NVRM: GPU 0000:b3:00.0: GPU has fallen off the bus.",
      "[ 1240.1] NVRM: GPU 0000:b3:00.0: GPU has fallen off the bus.",
      "[ 1250.0] NVRM: GPU 0000:da:00.0: GPU has fallen off the bus."};  // not one we list
  const Out o = inventory(f);
  ASSERT_EQ(o.all("gpu-unresponsive").size(), 2u) << o.dump();
  const Finding* g1 = o.find("gpu-unresponsive", "GPU1");
  ASSERT_NE(g1, nullptr) << o.dump();
  EXPECT_EQ(g1->severity, Severity::kCritical);
  EXPECT_THAT(g1->evidence, HasSubstr("timed out after 5.0 s"));
  EXPECT_THAT(g1->evidence, HasSubstr("fell off the bus (2 lines)"));
  const Finding* other = o.find("gpu-unresponsive", "0000:da:00.0");
  ASSERT_NE(other, nullptr) << o.dump();
  EXPECT_EQ(other->severity, Severity::kCritical);
  // The timestamp "09:41:02" must not be read as a bus id.
  f.kernel_log.fallen_off_bus = {
      "[Mon Jan 13 09:41:02 2026] NVRM: GPU 0000:10:00.0: GPU has fallen off the bus."};
  f.gpus[1].unresponsive.reset();
  const Out t = inventory(f);
  EXPECT_NE(t.find("gpu-unresponsive", "GPU0"), nullptr) << t.dump();
}

TEST(InventoryRules, HeterogeneousModelsAndSettingsAreListed) {
  Facts f;
  GpuFacts a = busy_h200(0);
  GpuFacts b = busy_h200(1);
  b.name = "NVIDIA H100 80GB HBM3";
  b.vbios = "96.00.99.00.01";
  b.power.default_limit_w = 600;
  b.ecc.enabled = false;
  f.gpus = {a, b};
  const Out o = inventory(f);
  const auto h = o.all("heterogeneous-gpus");
  ASSERT_EQ(h.size(), 1u) << o.dump();
  EXPECT_EQ(h[0]->severity, Severity::kWarning);
  EXPECT_EQ(h[0]->subjects, (std::vector<std::string>{"GPU0", "GPU1"}));
  EXPECT_THAT(h[0]->evidence,
              HasSubstr("model: NVIDIA H200 (GPU0) vs NVIDIA H100 80GB HBM3 (GPU1)"));
  EXPECT_THAT(h[0]->evidence, HasSubstr("VBIOS: 96.00.AF.00.01 (GPU0) vs 96.00.99.00.01 (GPU1)"));
  EXPECT_THAT(h[0]->evidence, HasSubstr("default power limit: 700 W (GPU0) vs 600 W (GPU1)"));
  EXPECT_THAT(h[0]->evidence, HasSubstr("ECC mode: on (GPU0) vs off (GPU1)"));
}

TEST(InventoryRules, AlikeGpusOrUnknownFieldsAreNotHeterogeneous) {
  Facts f;
  for (int i = 0; i < 8; ++i) f.gpus.push_back(busy_h200(i));
  EXPECT_TRUE(inventory(f).findings.empty());
  // A power limit 2 % off is rounding, not a different setting.
  f.gpus[3].power.default_limit_w = 686;
  // VBIOS unknown on one GPU: the field is not compared at all.
  f.gpus[4].vbios.reset();
  f.gpus[5].vbios = "96.00.AF.00.02";
  const Out o = inventory(f);
  EXPECT_TRUE(o.findings.empty()) << o.dump();
}

TEST(InventoryRules, SlowDriverCallsAreAFinding) {
  Facts f;
  f.gpus = {busy_h200(0)};
  SourceInfo nvml{"nvml", true, "libnvidia-ml.so.1", 5600, {}};
  nvml.timings_ms = {{"nvmlInit", 4200}, {"nvmlDeviceGetName", 1300}, {"nvmlDeviceGetUUID", 12}};
  f.sources = {nvml};
  const Out o = inventory(f);
  const Finding* d = o.find("driver-slow", "nvml");
  ASSERT_NE(d, nullptr) << o.dump();
  EXPECT_EQ(d->severity, Severity::kWarning);
  EXPECT_THAT(d->evidence, HasSubstr("nvmlInit took 4.2 s"));
  EXPECT_THAT(d->evidence, HasSubstr("nvmlDeviceGetName took 1.3 s"));
  EXPECT_THAT(d->evidence, Not(HasSubstr("nvmlDeviceGetUUID")));
  f.sources[0].timings_ms = {{"nvmlInit", 180}};
  EXPECT_TRUE(inventory(f).findings.empty());
}

TEST(GpuHealthRules, NodeLevelPowerBrakeThroughTheNvidiaSmiQImporter) {
  // Two GPUs of an nvidia-smi -q paste (written for this test after the R535 layout), both
  // idle with the power brake asserted.
  std::string paste =
      "==============NVSMI LOG==============\n\n"
      "Driver Version                            : 535.161.08\n\n"
      "Attached GPUs                             : 2\n";
  for (int i = 0; i < 2; ++i)
    paste += "GPU 00000000:1" + std::to_string(i) +
             ":00.0\n"
             "    Product Name                          : NVIDIA H100 80GB HBM3\n"
             "    Performance State                     : P0\n"
             "    Clocks Event Reasons\n"
             "        Idle                              : Active\n"
             "        Applications Clocks Setting       : Not Active\n"
             "        SW Power Cap                      : Not Active\n"
             "        HW Slowdown                       : Active\n"
             "            HW Thermal Slowdown           : Not Active\n"
             "            HW Power Brake Slowdown       : Active\n"
             "        Sync Boost                        : Not Active\n"
             "        SW Thermal Slowdown               : Not Active\n"
             "    Utilization\n"
             "        Gpu                               : 0 %\n"
             "    Power Readings\n"
             "        Power Draw                        : " +
             std::string(i == 0 ? "68.41" : "71.90") +
             " W\n"
             "        Current Power Limit               : 700.00 W\n"
             "        Requested Power Limit             : 700.00 W\n"
             "        Default Power Limit               : 700.00 W\n";
  const Facts f = import::import_text(paste, "q.txt");
  ASSERT_EQ(f.gpus.size(), 2u);
  const Out o = health(f);
  const auto all = o.all("power-throttle");
  ASSERT_EQ(all.size(), 1u) << o.dump();
  EXPECT_EQ(all[0]->subjects, (std::vector<std::string>{"GPU0", "GPU1"}));
  EXPECT_THAT(all[0]->evidence, HasSubstr("all 2 GPUs of the node"));
  EXPECT_THAT(all[0]->evidence, HasSubstr("at idle (68–72 W)"));
}

TEST(GpuHealthRules, XidChainThroughTheKernelLogImporter) {
  // dmesg lines as the driver prints them (written for this test): a DBE, then the cleanup
  // of the channels it killed, then a 45 naming an NVLink cause.
  const std::string log =
      "[ 5123.401122] NVRM: Xid (PCI:0000:18:00): 48, pid=4242, name=python3, An uncorrectable "
      "double bit error (DBE) has been detected on GPU in the framebuffer at partition 2, "
      "subpartition 0.\n"
      "[ 5123.402001] NVRM: Xid (PCI:0000:18:00): 45, pid=4242, name=python3, Ch 00000010\n"
      "[ 6000.000000] NVRM: Xid (PCI:0000:2a:00): 45, pid=4300, name=python3, Ch 00000003 "
      "caused by previous Xid 145\n";
  const Facts f = import::import_text(log, "dmesg.txt");
  ASSERT_EQ(f.kernel_log.xids.size(), 3u);
  const Out o = health(f);
  const Finding* dbe_cleanup = nullptr;
  const Finding* nvlink = nullptr;
  for (const auto* x : o.all("xid-error")) {
    if (x->evidence.find("Xid 45") == 0 &&
        x->evidence.find("following Xid 48") != std::string::npos)
      dbe_cleanup = x;
    if (x->evidence.find("following Xid 145") != std::string::npos) nvlink = x;
  }
  ASSERT_NE(dbe_cleanup, nullptr) << o.dump();
  EXPECT_EQ(dbe_cleanup->severity, Severity::kCritical);
  ASSERT_NE(nvlink, nullptr) << o.dump();
  EXPECT_EQ(nvlink->severity, Severity::kWarning);
  EXPECT_EQ(*nvlink->bottleneck, Bottleneck::kComms);
}

}  // namespace
}  // namespace gpuvet::rules
