// Golden tests for the dcgmi importers and for the pasted-fragment inputs of issue 16 that go
// through the whole import path (nvidia-smi -q fragments, grep output, uptime with dmesg,
// benchmark matrices alone). Fixtures: tests/fixtures/dcgmi/ and nvsmi-fragments/ (see the
// READMEs there: written for gpuvet from the tools' own layouts).
#include "import/dcgmi.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "gpuvet/diagnose.h"
#include "gpuvet/import.h"
#include "import/host_tools.h"
#include "import/importer.h"

namespace gpuvet::import {
namespace {

std::string fixture(const std::string& rel) {
  std::ifstream in(std::string(GPUVET_TEST_DATA) + "/fixtures/" + rel, std::ios::binary);
  EXPECT_TRUE(in) << rel;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Facts load(const std::string& text) { return gpuvet::import_text(text, "paste", {}); }

std::string formats(const Facts& f) {
  std::string s;
  for (const auto& i : f.imported) s += i.format + " ";
  return s;
}

std::string all_notes(const Facts& f) {
  std::string s;
  for (const auto& n : f.notes) s += n + "\n";
  return s;
}

const Finding* finding(const Diagnosis& d, std::string_view id) {
  for (const auto& f : d.findings)
    if (f.id == id) return &f;
  return nullptr;
}
// A finding points into its Diagnosis: keep the Diagnosis, not a temporary.
const Finding* finding(Diagnosis&&, std::string_view) = delete;

std::string findings(const Diagnosis& d) {
  std::string s;
  for (const auto& f : d.findings)
    s += f.id + " " + std::string(severity_name(f.severity)) + " " + f.evidence + "\n";
  return s;
}

bool quiet(const Diagnosis& d) {
  return std::none_of(d.findings.begin(), d.findings.end(),
                      [](const Finding& f) { return f.severity >= Severity::kWarning; });
}

// ------------------------------------------------------------------ dcgmi diag

TEST(DcgmiDiag, Level3MemoryFailureOnOneGpu) {
  const std::string text = fixture("dcgmi/dcgmi-diag-r3-8x-h100-gpu-memory-fail-gpu2.txt");
  EXPECT_EQ(sniff_dcgmi_diag(text), 100);
  EXPECT_EQ(sniff_dcgmi_health(text), 0);
  const Facts f = load(text);
  EXPECT_EQ(formats(f), "dcgmi-diag ");
  EXPECT_EQ(f.gpus.size(), 8u) << "the GPU Device IDs line names 8 GPUs";
  EXPECT_EQ(f.host.driver_version.value_or(""), "550.127.08");
  const auto fail = std::find_if(f.health_checks.begin(), f.health_checks.end(),
                                 [](const HealthCheck& h) { return h.result == "fail"; });
  ASSERT_NE(fail, f.health_checks.end());
  EXPECT_EQ(fail->test, "GPU Memory");
  EXPECT_EQ(fail->category, "Hardware");
  EXPECT_EQ(fail->gpu, 2);
  // The 45-character pieces joined as printed: "24 D" + "BE errors" is one word again.
  EXPECT_EQ(fail->message,
            "GPU 2 Error detected during memory test: 24 DBE errors detected in the framebuffer. "
            "Drain the GPU and reset it or reboot the node.");
  EXPECT_EQ(std::count_if(f.health_checks.begin(), f.health_checks.end(),
                          [](const HealthCheck& h) { return h.test == "GPU Memory"; }),
            8);
  EXPECT_NE(all_notes(f).find("dcgmi diag skipped: EUD Test"), std::string::npos) << all_notes(f);

  const Diagnosis d = diagnose(f);
  const Finding* x = finding(d, "dcgm-diag-failed");
  ASSERT_NE(x, nullptr) << findings(d);
  EXPECT_EQ(x->severity, Severity::kCritical);
  EXPECT_EQ(x->subjects, std::vector<std::string>{"GPU2"});
  EXPECT_NE(x->evidence.find("Hardware test \"GPU Memory\": Fail on GPU2"), std::string::npos)
      << x->evidence;
  EXPECT_EQ(std::count_if(d.findings.begin(), d.findings.end(),
                          [](const Finding& one) { return one.id == "dcgm-diag-failed"; }),
            1);
}

TEST(DcgmiDiag, AllPassStaysQuiet) {
  const Facts f = load(fixture("dcgmi/dcgmi-diag-r2-8x-h100-all-pass.txt"));
  EXPECT_EQ(formats(f), "dcgmi-diag ");
  EXPECT_FALSE(f.health_checks.empty());
  EXPECT_TRUE(std::all_of(f.health_checks.begin(), f.health_checks.end(),
                          [](const HealthCheck& h) { return h.result == "pass"; }));
  const Diagnosis d = diagnose(f);
  EXPECT_TRUE(quiet(d)) << findings(d);
  EXPECT_EQ(finding(d, "dcgm-diag-failed"), nullptr);
}

TEST(DcgmiDiag, DeploymentErrorNamesItsGpuBehindAPrompt) {
  const Facts f = load(fixture("dcgmi/dcgmi-diag-r1-row-remap-pending-gpu3-prompt.txt"));
  EXPECT_EQ(formats(f), "dcgmi-diag ");
  const auto fail = std::find_if(f.health_checks.begin(), f.health_checks.end(),
                                 [](const HealthCheck& h) { return h.result == "fail"; });
  ASSERT_NE(fail, f.health_checks.end());
  EXPECT_EQ(fail->test, "Page Retirement/Row Remap");
  EXPECT_EQ(fail->gpu, 3);
  EXPECT_EQ(fail->message, "GPU 3 has uncorrectable memory errors and row remappings are pending");
  const Diagnosis d = diagnose(f);  // kept: the finding points into it
  const Finding* x = finding(d, "dcgm-diag-failed");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->severity, Severity::kCritical);  // a memory verdict, not a setup setting
  EXPECT_EQ(x->subjects, std::vector<std::string>{"GPU3"});
}

TEST(DcgmiDiag, SetupChecksWarnAndGarbageIsRefused) {
  std::string text = fixture("dcgmi/dcgmi-diag-r2-8x-h100-all-pass.txt");
  const std::string row = "| Environment Variables     | Pass ";
  const auto at = text.find(row);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, row.size(), "| Environment Variables     | Fail ");
  const Diagnosis dx = diagnose(load(text));
  const Finding* x = finding(dx, "dcgm-diag-failed");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->severity, Severity::kWarning);
  EXPECT_EQ(x->subjects.size(), 8u);  // node-wide: every GPU the facts know

  Facts junk;
  EXPECT_FALSE(import_dcgmi_diag("| a | b |\n| c | d |\n", junk).is_ok());
  EXPECT_EQ(sniff_dcgmi_diag("+----+\n| x |\n"), 0);
}

// ------------------------------------------------------------------ dcgmi health -c

TEST(DcgmiHealth, PcieReplayIncidentIsPcieReplayErrors) {
  const std::string text = fixture("dcgmi/dcgmi-health-c-pcie-replays-gpu0.txt");
  const Facts f = load(text);
  EXPECT_EQ(formats(f), "dcgmi-health ");
  ASSERT_EQ(f.health_checks.size(), 1u);
  EXPECT_EQ(f.health_checks[0].test, "PCIe system");
  EXPECT_EQ(f.health_checks[0].gpu, 0);
  EXPECT_EQ(f.health_checks[0].result, "warn");
  EXPECT_EQ(f.health_checks[0].message.rfind(
                "Detected more than 8 PCIe replays per minute for GPU 0 : 13 Reconnect", 0),
            0u)
      << f.health_checks[0].message;
  const Diagnosis d = diagnose(f);
  const Finding* x = finding(d, "pcie-replay-errors");
  ASSERT_NE(x, nullptr) << findings(d);
  EXPECT_EQ(x->severity, Severity::kWarning);
  EXPECT_EQ(x->subjects, std::vector<std::string>{"GPU0"});
  EXPECT_EQ(finding(d, "dcgm-health-incident"), nullptr);
}

TEST(DcgmiHealth, IncidentsMapToTheirFindings) {
  const Facts f = load(fixture("dcgmi/dcgmi-health-c-gpu1-dbe-infoROM-gpu5-nvlink-crc.txt"));
  ASSERT_EQ(f.health_checks.size(), 3u);
  const Diagnosis d = diagnose(f);
  const Finding* ecc = finding(d, "ecc-errors");
  ASSERT_NE(ecc, nullptr) << findings(d);
  EXPECT_EQ(ecc->severity, Severity::kCritical);
  EXPECT_EQ(ecc->subjects, std::vector<std::string>{"GPU1"});
  int incidents = 0;
  for (const auto& x : d.findings)
    if (x.id == "dcgm-health-incident") {
      ++incidents;
      EXPECT_EQ(x.severity, Severity::kWarning);
    }
  EXPECT_EQ(incidents, 2) << findings(d);  // InfoROM on GPU1, NVLink CRC on GPU5
}

TEST(DcgmiHealth, OldLayoutThermal) {
  const std::string text = fixture("dcgmi/dcgmi-health-c-old-layout-thermal-gpu2.txt");
  EXPECT_GE(sniff_dcgmi_health(text), 80);
  const Facts f = load(text);
  ASSERT_EQ(f.health_checks.size(), 1u);
  EXPECT_EQ(f.health_checks[0].test, "Thermal system");
  EXPECT_EQ(f.health_checks[0].gpu, 2);
  EXPECT_EQ(f.health_checks[0].message,
            "Clocks throttling for GPU 2 because of thermal violation for 4.2 seconds");
  const Diagnosis dx = diagnose(f);
  const Finding* x = finding(dx, "thermal-throttle");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->subjects, std::vector<std::string>{"GPU2"});
}

TEST(DcgmiHealth, HealthyStaysQuiet) {
  const Facts f = load(fixture("dcgmi/dcgmi-health-c-healthy.txt"));
  EXPECT_EQ(formats(f), "dcgmi-health ");
  const Diagnosis d = diagnose(f);
  EXPECT_TRUE(quiet(d)) << findings(d);
}

// ------------------------------------------------------------------ -q fragments

TEST(NvsmiFragment, PerformanceSectionBehindAPromptFiresThermal) {
  const Facts f =
      load(fixture("nvsmi-fragments/q-d-performance-section-hw-thermal-slowdown-prompt.txt"));
  EXPECT_EQ(formats(f), "nvidia-smi-q ");
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].pstate, 0);
  const auto& active = f.gpus[0].clock_events.active;
  EXPECT_NE(std::find(active.begin(), active.end(), "hw_thermal_slowdown"), active.end());
  const Diagnosis d = diagnose(f);
  const Finding* x = finding(d, "thermal-throttle");
  ASSERT_NE(x, nullptr) << findings(d);
  EXPECT_EQ(x->severity, Severity::kWarning);
  EXPECT_TRUE(
      quiet(diagnose(load(fixture("nvsmi-fragments/q-d-performance-section-healthy.txt")))));
}

TEST(NvsmiFragment, FabricBlockAlone) {
  const Facts f = load(fixture("nvsmi-fragments/q-fabric-block-in-progress.txt"));
  EXPECT_EQ(formats(f), "nvidia-smi-q ");
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].fabric.state.value_or(""), "in_progress");
  const Diagnosis d6 = diagnose(f);
  EXPECT_NE(finding(d6, "fabric-degraded"), nullptr);
  const Facts ok = load(fixture("nvsmi-fragments/q-fabric-block-completed.txt"));
  ASSERT_EQ(ok.gpus.size(), 1u);
  EXPECT_EQ(ok.gpus[0].fabric.clique_id, 32766u);
  EXPECT_TRUE(quiet(diagnose(ok)));
}

TEST(NvsmiFragment, GrepOfEightGpusIsEightGpus) {
  const Facts f = load(fixture("nvsmi-fragments/q-grep-slowdown-8gpu-one-power-brake.txt"));
  EXPECT_EQ(formats(f), "nvidia-smi-q ");
  ASSERT_EQ(f.gpus.size(), 8u) << all_notes(f);
  for (const auto& g : f.gpus) {
    EXPECT_EQ(g.thermal.slowdown_c, 87);
    EXPECT_EQ(g.clock_events.accumulated_ns.count("hw_thermal"), 1u);
  }
  const Diagnosis d = diagnose(f);
  const Finding* x = finding(d, "power-throttle");
  ASSERT_NE(x, nullptr) << findings(d);
  EXPECT_EQ(x->subjects, std::vector<std::string>{"GPU3"});
  EXPECT_EQ(finding(d, "thermal-throttle"), nullptr) << findings(d);
  const Diagnosis healthy =
      diagnose(load(fixture("nvsmi-fragments/q-grep-slowdown-8gpu-healthy.txt")));
  EXPECT_TRUE(quiet(healthy)) << findings(healthy);
}

TEST(NvsmiFragment, GrepContextWithSeparators) {
  const Facts f = load(fixture("nvsmi-fragments/q-grep-A-remapped-rows-separators.txt"));
  ASSERT_EQ(f.gpus.size(), 2u) << all_notes(f);
  EXPECT_EQ(f.gpus[1].pci_bus_id.value_or(""), "0000:0f:00.0");
  EXPECT_EQ(f.gpus[1].ecc.remapping_pending, true);
  EXPECT_EQ(f.gpus[0].ecc.remapping_pending, false);
  const Diagnosis dx = diagnose(f);
  const Finding* x = finding(dx, "ecc-errors");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->subjects, std::vector<std::string>{"GPU1"});

  const Facts g = load(fixture("nvsmi-fragments/q-grep-C-remapped-rows-no-header.txt"));
  ASSERT_EQ(g.gpus.size(), 2u) << all_notes(g);
  EXPECT_EQ(g.gpus[1].ecc.remapped_rows_uncorrectable, 2);
  EXPECT_EQ(g.gpus[1].ecc.remapping_pending, true);
}

TEST(NvsmiFragment, OneGrepLineNeedsItsCommand) {
  const std::string line = "        HW Slowdown                       : Active\n";
  // Alone, one line is too little to tell; the prompt above it says what it is.
  EXPECT_EQ(load(line).gpus.size(), 0u);
  const Facts f = load("$ nvidia-smi -q | grep 'HW Slowdown'\n" + line);
  ASSERT_EQ(f.gpus.size(), 1u) << all_notes(f);
  const Diagnosis d7 = diagnose(f);
  EXPECT_NE(finding(d7, "power-throttle"), nullptr);
}

// ------------------------------------------------------------------ uptime

TEST(Uptime, Lines) {
  EXPECT_EQ(parse_uptime_line(" 14:02:11 up 40 days,  2:03,  1 user,  load average: 0.00, 0.01"),
            40 * 86400.0 + 2 * 3600 + 3 * 60);
  EXPECT_EQ(parse_uptime_line(" 09:15:01 up  5:12,  2 users,  load average: 1.0, 1.0, 1.0"),
            5 * 3600.0 + 12 * 60);
  EXPECT_EQ(parse_uptime_line(" 09:15:01 up 12 min,  1 user,  load average: 0.1, 0.2, 0.3"),
            12 * 60.0);
  EXPECT_EQ(parse_uptime_line(" 09:15:01 up 1 day, 7 min,  0 users,  load average: 0, 0, 0"),
            86400.0 + 7 * 60);
  EXPECT_EQ(parse_uptime_line("up 5 weeks, 3 days, 2 hours, 1 minute"),
            (5 * 7 + 3) * 86400.0 + 2 * 3600 + 60);
  EXPECT_FALSE(parse_uptime_line("the service is up and running"));
  EXPECT_FALSE(parse_uptime_line("[ 12.3] eth0: link up"));
  Facts f;
  EXPECT_TRUE(import_uptime("3456789.12 123456.78\n", f).is_ok());
  EXPECT_EQ(f.host.uptime_s, 3456789.12);
}

// The same Xid 79 at uptime 1234 s: with `uptime` saying 40 days it is history (info); with
// `uptime` saying 25 minutes it is current (critical).
TEST(Uptime, DatesTheKernelLog) {
  const std::string xid =
      "[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, name=, GPU has fallen off the "
      "bus.\n";
  const std::string old_boot =
      "$ uptime\n 10:15:01 up 40 days,  3:02,  1 user,  load average: 0.10, 0.20, 0.30\n"
      "$ dmesg | grep -i xid\n" +
      xid;
  const Facts o = load(old_boot);
  EXPECT_EQ(o.host.uptime_s, 40 * 86400.0 + 3 * 3600 + 2 * 60) << formats(o);
  const Diagnosis dx = diagnose(o);
  const Finding* x = finding(dx, "xid-error");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->severity, Severity::kInfo) << x->evidence;
  EXPECT_NE(x->evidence.find("before the capture"), std::string::npos) << x->evidence;

  // No prompt at all: the uptime line inside the kernel-log paste is read too.
  const std::string fresh = " 10:15:01 up 25 min,  1 user,  load average: 0.10, 0.20, 0.30\n" + xid;
  const Facts n = load(fresh);
  EXPECT_EQ(n.host.uptime_s, 25 * 60.0) << formats(n);
  const Diagnosis dy = diagnose(n);
  const Finding* y = finding(dy, "xid-error");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->severity, Severity::kCritical) << y->evidence;
  EXPECT_NE(y->evidence.find("min before the capture"), std::string::npos) << y->evidence;
}

// ------------------------------------------------------------------ matrices alone

TEST(MatrixAlone, GivesTheGpuCount) {
  const std::string p2p =
      "Unidirectional P2P=Enabled Bandwidth Matrix (GB/s)\n"
      "   D\\D     0      1      2      3\n"
      "     0 770.19  19.54  19.55  19.46\n"
      "     1  19.58 771.44  19.52  19.50\n"
      "     2  19.56  19.51 772.06  19.55\n"
      "     3  19.49  19.53  19.52 770.92\n";
  const Facts f = load(p2p);
  EXPECT_EQ(formats(f), "p2pBandwidthLatencyTest ");
  ASSERT_EQ(f.gpus.size(), 4u) << all_notes(f);
  EXPECT_FALSE(f.gpus[3].name);
  DiagnoseOptions opt;
  opt.expect_gpus = 8;
  const Diagnosis dx = diagnose(f, opt);
  const Finding* x = finding(dx, "gpu-missing");
  ASSERT_NE(x, nullptr);
  opt.expect_gpus = 4;
  const Diagnosis d8 = diagnose(f, opt);
  EXPECT_EQ(finding(d8, "gpu-missing"), nullptr);

  const std::string nvb =
      "Running device_to_device_memcpy_read_ce.\n"
      "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\n"
      "           0         1\n"
      " 0       N/A    276.54\n"
      " 1    276.61       N/A\n";
  const Facts g = load(nvb);
  EXPECT_EQ(formats(g), "nvbandwidth ");
  EXPECT_EQ(g.gpus.size(), 2u) << all_notes(g);
}

}  // namespace
}  // namespace gpuvet::import
