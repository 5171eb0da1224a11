// Coverage: which checks ran on what, from live-like facts, from real pastes (the plain
// nvidia-smi table, a topo -m alone, lspci -vvv) and from facts with holes in them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gpuvet/diagnose.h"
#include "gpuvet/import.h"

namespace gpuvet {
namespace {

const std::string kShared = GPUVET_SHARED_FIXTURES;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const CoverageItem& item(const std::vector<CoverageItem>& cov, const std::string& check) {
  for (const auto& c : cov)
    if (c.check == check) return c;
  static CoverageItem none;
  ADD_FAILURE() << "no coverage item " << check;
  return none;
}

CoverageStatus status(const std::vector<CoverageItem>& cov, const std::string& check) {
  return item(cov, check).status;
}

std::string dump(const std::vector<CoverageItem>& cov) {
  std::string s;
  for (const auto& c : cov)
    s += c.check + " " + coverage_status_name(c.status) + " [" + c.evidence + "] " + c.missing +
         " | " + c.how_to_get + "\n";
  return s;
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Two H100 SXM GPUs as a root run of `gpuvet diagnose` sees them: NVML, sysfs (ACS, IOMMU,
// NUMA), the kernel log and a host pressure window.
Facts live_like() {
  Facts f;
  f.sources.push_back({"nvml", true, "libnvidia-ml.so.1", 12, {}});
  f.sources.push_back({"sysfs", true, "PCI, NUMA, ACS per GPU", 1, {}});
  f.kernel_log.source = "/dev/kmsg";
  f.kernel_log.readable = true;
  f.host.iommu.active = false;
  f.host.numa_nodes = {{0, {0, 1}, {}, {}}, {1, {2, 3}, {}, {}}};
  HostPressure p;
  p.window_s = 2;
  p.cores = {{0, 10, 0, 0}, {1, 12, 0, 0}};
  p.iowait_pct = 0.5;
  p.disks = {{"nvme0n1", 3, 0, 0}};
  p.nics = {{"eth0", 1e6, 1e6, 100000, 1}};
  f.host.pressure = p;
  for (int i = 0; i < 2; ++i) {
    GpuFacts g;
    g.index = i;
    g.name = "NVIDIA H100 80GB HBM3";
    g.uuid = "GPU-" + std::to_string(i);
    g.pci_bus_id = i == 0 ? "0000:18:00.0" : "0000:2a:00.0";
    g.pcie = {5, 5, 5, 16, 16, 0};
    g.numa_node = i;
    g.clocks = {1980, 2619, 1980, 2619};
    g.clock_events.active_mask = 1;
    g.clock_events.active = {"idle"};
    g.thermal.gpu_c = 30;
    g.thermal.slowdown_c = 90;
    g.power = {70, 700, 700, 700};
    g.ecc.enabled = true;
    g.ecc.volatile_counts = {0, 0};
    g.ecc.aggregate_counts = {0, 0};
    g.ecc.remapped_rows_uncorrectable = 0;
    g.utilization = {0, 0};
    g.acs_redirects_p2p = false;
    for (int l = 0; l < 18; ++l) g.nvlinks.push_back({l, true, 4, std::nullopt, 1 - i, 26.6});
    f.gpus.push_back(g);
  }
  GpuPair pair;
  pair.a = 0;
  pair.b = 1;
  pair.path = PathType::kNVLink;
  pair.nvlinks = 18;
  pair.p2p_read = pair.p2p_write = P2PStatus::kOk;
  f.pairs.push_back(pair);
  return f;
}

TEST(Coverage, LiveLikeFactsHaveEveryCheckOfTheNodeChecked) {
  const auto cov = compute_coverage(live_like());
  for (const auto& c : cov) {
    if (c.optional) continue;
    EXPECT_EQ(c.status, CoverageStatus::kChecked) << c.check << "\n" << dump(cov);
    EXPECT_TRUE(c.how_to_get.empty()) << c.check;
    EXPECT_FALSE(c.evidence.empty()) << c.check;
  }
  EXPECT_EQ(item(cov, "gpu-inventory").evidence, "live NVML");
  EXPECT_EQ(item(cov, "xid").evidence, "/dev/kmsg");
  // Nothing measured: said, but it is the one optional check.
  EXPECT_EQ(status(cov, "measurements"), CoverageStatus::kNotChecked);
  EXPECT_TRUE(item(cov, "measurements").optional);
  EXPECT_FALSE(acs_unknown_note(live_like()));
}

TEST(Coverage, AGpuWithoutTheFactsMakesTheCheckPartialAndNamesIt) {
  Facts f = live_like();
  f.gpus[1].clocks = {};
  f.gpus[1].thermal = {};
  f.gpus[1].power.default_limit_w.reset();
  auto cov = compute_coverage(f);
  EXPECT_EQ(status(cov, "clocks-throttle"), CoverageStatus::kPartial) << dump(cov);
  EXPECT_TRUE(has(item(cov, "clocks-throttle").missing, "SM clock")) << dump(cov);
  EXPECT_TRUE(has(item(cov, "clocks-throttle").missing, "GPU1")) << dump(cov);
  EXPECT_FALSE(has(item(cov, "clocks-throttle").missing, "GPU0")) << dump(cov);
  EXPECT_TRUE(has(item(cov, "clocks-throttle").how_to_get, "nvidia-smi -q -d CLOCK")) << dump(cov);
  EXPECT_EQ(status(cov, "power"), CoverageStatus::kPartial) << dump(cov);
  EXPECT_TRUE(has(item(cov, "power").missing, "default power limit")) << dump(cov);
  // Its clock-event reasons still tell the thermal check something.
  EXPECT_EQ(status(cov, "thermal"), CoverageStatus::kPartial) << dump(cov);

  // No GPU has them: not checked at all.
  for (auto& g : f.gpus) g.clocks = {}, g.clock_events = {}, g.pstate.reset(), g.utilization = {};
  cov = compute_coverage(f);
  EXPECT_EQ(status(cov, "clocks-throttle"), CoverageStatus::kNotChecked) << dump(cov);
}

TEST(Coverage, LiveNotSupportedIsAnAnswerButAFailedReadIsNot) {
  // A GeForce card: NVML answers NOT_SUPPORTED for ECC and NVLink, which leaves no failure.
  Facts f = live_like();
  for (auto& g : f.gpus) g.ecc = {}, g.nvlinks.clear();
  auto cov = compute_coverage(f);
  EXPECT_EQ(status(cov, "ecc"), CoverageStatus::kChecked) << dump(cov);
  EXPECT_EQ(status(cov, "nvlink"), CoverageStatus::kChecked) << dump(cov);
  // A read that failed (timeout, unknown error) is recorded, and the check did not run there.
  f.gpus[1].unreadable.push_back("ecc.aggregate.uncorrected: UNKNOWN");
  f.gpus[0].unreadable.push_back("nvlink.state: TIMEOUT");
  cov = compute_coverage(f);
  EXPECT_EQ(status(cov, "ecc"), CoverageStatus::kPartial) << dump(cov);
  EXPECT_TRUE(has(item(cov, "ecc").missing, "GPU1")) << dump(cov);
  EXPECT_NE(status(cov, "nvlink"), CoverageStatus::kChecked) << dump(cov);
  // Offline, an empty ECC field is just not in the input.
  Facts offline = live_like();
  offline.sources.clear();
  offline.imported.push_back({"topo.txt", "topo-m", {}});
  for (auto& g : offline.gpus) g.ecc = {};
  EXPECT_EQ(status(compute_coverage(offline), "ecc"), CoverageStatus::kNotChecked);
}

TEST(Coverage, LiveWithoutRootOrSampleWindowSaysHowToGetIt) {
  Facts f = live_like();
  f.kernel_log = {};
  f.kernel_log.source = "/dev/kmsg";
  f.kernel_log.why_unreadable = "permission denied";
  f.host.pressure.reset();
  for (auto& g : f.gpus) g.acs_redirects_p2p.reset();
  const auto cov = compute_coverage(f);
  EXPECT_EQ(status(cov, "xid"), CoverageStatus::kNotChecked) << dump(cov);
  EXPECT_TRUE(has(item(cov, "xid").missing, "permission denied")) << dump(cov);
  EXPECT_TRUE(has(item(cov, "xid").how_to_get, "root")) << dump(cov);
  for (const char* h : {"host-cpu", "host-io", "host-network"}) {
    EXPECT_EQ(status(cov, h), CoverageStatus::kNotChecked) << h << "\n" << dump(cov);
    EXPECT_TRUE(has(item(cov, h).how_to_get, "--sample-window")) << h;
  }
  // IOMMU mode known from sysfs, ACS not: partial, and the fix is root.
  EXPECT_EQ(status(cov, "acs-iommu"), CoverageStatus::kPartial) << dump(cov);
  EXPECT_TRUE(has(item(cov, "acs-iommu").how_to_get, "root")) << dump(cov);
}

TEST(Coverage, OneGpuHasNoPairToCheck) {
  Facts f = live_like();
  f.gpus.pop_back();
  f.gpus[0].nvlinks.clear();
  f.pairs.clear();
  const auto cov = compute_coverage(f);
  for (const char* c : {"topology", "p2p", "nvlink", "acs-iommu"})
    EXPECT_EQ(status(cov, c), CoverageStatus::kNotApplicable) << c << "\n" << dump(cov);
  EXPECT_EQ(status(cov, "clocks-throttle"), CoverageStatus::kChecked);
}

TEST(Coverage, OfflineInputWithoutGpusChecksNoGpu) {
  Facts f = import_text(
      "[    0.000000] Linux version 6.1.0-18-amd64\n"
      "[    1.000000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05\n",
      "dmesg.txt");
  const auto cov = compute_coverage(f);
  EXPECT_EQ(status(cov, "gpu-inventory"), CoverageStatus::kNotChecked) << dump(cov);
  EXPECT_TRUE(has(item(cov, "gpu-inventory").how_to_get, "nvidia-smi -q")) << dump(cov);
  EXPECT_EQ(status(cov, "topology"), CoverageStatus::kNotChecked) << dump(cov);
  EXPECT_EQ(status(cov, "xid"), CoverageStatus::kChecked) << dump(cov);
  EXPECT_EQ(item(cov, "xid").evidence, "kernel-log") << dump(cov);
}

// The most pasted output of all: what it checks and what it cannot.
TEST(Coverage, PlainNvidiaSmiTableGivesPartialClocksAndEccAndNoAcsXidOrHost) {
  const std::string path = kShared + "/nvsmi-text/gpud-8x-h100-default-table-drv550.txt";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared corpus absent";
  const Facts f = import_text(read(path), "table.txt");
  ASSERT_EQ(f.gpus.size(), 8u);
  const auto cov = compute_coverage(f);
  EXPECT_EQ(status(cov, "gpu-inventory"), CoverageStatus::kChecked) << dump(cov);
  EXPECT_EQ(item(cov, "gpu-inventory").evidence, "nvidia-smi") << dump(cov);
  EXPECT_EQ(status(cov, "clocks-throttle"), CoverageStatus::kPartial) << dump(cov);
  EXPECT_EQ(status(cov, "ecc"), CoverageStatus::kPartial) << dump(cov);
  EXPECT_TRUE(has(item(cov, "ecc").missing, "aggregate")) << dump(cov);
  EXPECT_TRUE(has(item(cov, "ecc").missing, "GPU0–7")) << dump(cov);
  EXPECT_EQ(status(cov, "processes"), CoverageStatus::kChecked) << dump(cov);
  EXPECT_EQ(status(cov, "topology"), CoverageStatus::kNotChecked) << dump(cov);
  EXPECT_TRUE(has(item(cov, "topology").how_to_get, "nvidia-smi topo -m")) << dump(cov);
  const auto& acs = item(cov, "acs-iommu");
  EXPECT_EQ(acs.status, CoverageStatus::kNotChecked) << dump(cov);
  EXPECT_TRUE(has(acs.how_to_get, "`sudo lspci -vvv`")) << dump(cov);
  EXPECT_TRUE(has(acs.how_to_get, "`dmesg | grep -i -e DMAR -e IOMMU`")) << dump(cov);
  EXPECT_EQ(status(cov, "xid"), CoverageStatus::kNotChecked) << dump(cov);
  EXPECT_TRUE(has(item(cov, "xid").how_to_get, "dmesg")) << dump(cov);
  EXPECT_EQ(status(cov, "host-cpu"), CoverageStatus::kNotChecked) << dump(cov);
  EXPECT_TRUE(has(item(cov, "host-cpu").how_to_get, "mpstat")) << dump(cov);
  EXPECT_EQ(status(cov, "host-io"), CoverageStatus::kNotChecked) << dump(cov);
  EXPECT_TRUE(has(item(cov, "host-io").how_to_get, "iostat")) << dump(cov);
  EXPECT_EQ(status(cov, "host-network"), CoverageStatus::kNotChecked) << dump(cov);
}

TEST(Coverage, TopoAloneWithPixPairGetsTheAcsNote) {
  const std::string path = kShared + "/topo/autodl-2x-rtx2080ti-pix-topo-m.txt";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared corpus absent";
  const Facts f = import_text(read(path), "topo.txt");
  const auto cov = compute_coverage(f);
  EXPECT_EQ(status(cov, "topology"), CoverageStatus::kChecked) << dump(cov);
  EXPECT_EQ(item(cov, "topology").evidence, "topo-m");
  EXPECT_EQ(status(cov, "p2p"), CoverageStatus::kNotChecked) << dump(cov);
  EXPECT_EQ(status(cov, "numa-affinity"), CoverageStatus::kChecked) << dump(cov);
  EXPECT_EQ(status(cov, "ecc"), CoverageStatus::kNotChecked) << dump(cov);
  const auto note = acs_unknown_note(f);
  ASSERT_TRUE(note);
  EXPECT_TRUE(has(*note, "GPU0-GPU1 (PIX)")) << *note;
  EXPECT_TRUE(has(*note, "ACS/IOMMU signature")) << *note;
  EXPECT_TRUE(has(*note, "`sudo lspci -vvv`")) << *note;
  EXPECT_TRUE(has(*note, "DMAR")) << *note;
  // diagnose() says it among its notes.
  const Diagnosis d = diagnose(f);
  EXPECT_TRUE(std::any_of(d.notes.begin(), d.notes.end(),
                          [&](const std::string& n) { return n == *note; }));
  EXPECT_EQ(d.coverage.size(), cov.size());
}

TEST(Coverage, NoAcsNoteForSysOrNvlinkPairs) {
  Facts f = live_like();
  for (auto& g : f.gpus) g.acs_redirects_p2p.reset();
  EXPECT_FALSE(acs_unknown_note(f));  // NV18: peer traffic does not cross PCIe
  f.pairs[0].path = PathType::kSYS;
  EXPECT_FALSE(acs_unknown_note(f));
  for (PathType t : {PathType::kPIX, PathType::kPXB, PathType::kNODE}) {
    f.pairs[0].path = t;
    const auto note = acs_unknown_note(f);
    ASSERT_TRUE(note) << path_type_name(t);
    EXPECT_TRUE(has(*note, "root")) << *note;  // live: the fix is running as root
  }
  // One GPU of the pair known is not enough.
  f.gpus[0].acs_redirects_p2p = false;
  EXPECT_TRUE(acs_unknown_note(f));
  f.gpus[1].acs_redirects_p2p = true;
  EXPECT_FALSE(acs_unknown_note(f));
}

// lspci -vvv of two GPUs below one switch: the pair is PIX, and the bridges' ACS control is in
// it, so no note; the same paste without its ACS lines gets the note.
TEST(Coverage, LspciWithAcsLinesRemovesTheNote) {
  const std::string text = read(std::string(GPUVET_TEST_DATA) +
                                "/fixtures/lspci/lspci-vvv-2x-h100-pcie-gen5-switch-healthy.txt");
  ASSERT_FALSE(text.empty());
  const Facts with = import_text(text, "lspci.txt");
  ASSERT_EQ(with.gpus.size(), 2u);
  ASSERT_FALSE(with.pairs.empty());
  EXPECT_FALSE(acs_unknown_note(with)) << *acs_unknown_note(with);
  const auto cov = compute_coverage(with);
  // ACS known; the IOMMU side needs the kernel log.
  EXPECT_EQ(status(cov, "acs-iommu"), CoverageStatus::kPartial) << dump(cov);
  EXPECT_TRUE(has(item(cov, "acs-iommu").how_to_get, "DMAR")) << dump(cov);
  EXPECT_FALSE(has(item(cov, "acs-iommu").how_to_get, "lspci")) << dump(cov);
  EXPECT_EQ(status(cov, "pcie-link"), CoverageStatus::kPartial) << dump(cov);
  EXPECT_TRUE(has(item(cov, "pcie-link").missing, "replay")) << dump(cov);

  std::string stripped;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find("ACSCap") == std::string::npos && line.find("ACSCtl") == std::string::npos)
      stripped += line + "\n";
  const Facts without = import_text(stripped, "lspci-no-acs.txt");
  ASSERT_FALSE(without.pairs.empty());
  const auto note = acs_unknown_note(without);
  ASSERT_TRUE(note);
  EXPECT_TRUE(has(*note, "GPU0-GPU1")) << *note;
}

TEST(Coverage, MeasurementsAndKernelLogInTheInputAreChecked) {
  Facts f = live_like();
  f.sources.clear();
  f.imported.push_back({"nccl.log", "nccl-tests", {}});
  f.imported.push_back({"dmesg.txt", "kernel-log", {}});
  Measurement m;
  m.tool = "nccl-tests";
  m.test = "all_reduce_perf";
  m.busbw_gbps = 300;
  f.measurements.push_back(m);
  const auto cov = compute_coverage(f);
  EXPECT_EQ(status(cov, "measurements"), CoverageStatus::kChecked) << dump(cov);
  EXPECT_EQ(item(cov, "measurements").evidence, "nccl-tests") << dump(cov);
  EXPECT_EQ(item(cov, "xid").evidence, "kernel-log") << dump(cov);
  // Offline, host pressure is judged per tool: no NIC sampled is no network check.
  f.host.pressure->nics.clear();
  EXPECT_EQ(status(compute_coverage(f), "host-network"), CoverageStatus::kNotChecked);
}

}  // namespace
}  // namespace gpuvet
