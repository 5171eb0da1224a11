// article_tasks_test.cc — the example outputs of the seed article's "Tâches
// pratiques" (tests/fixtures/article/task-NN.txt, copied verbatim with the
// command as a "$ " prompt line) must be recognised and yield the facts the
// article reads from them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "import/load.h"

namespace gpuvet::import {
namespace {

constexpr std::uint64_t kMiB = 1024ull * 1024ull;

std::string read_task(int n) {
  char name[32];
  std::snprintf(name, sizeof name, "task-%02d.txt", n);
  const std::string path = std::string(GPUVET_TEST_DATA) + "/fixtures/article/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string describe(const Facts& f) {
  std::string s;
  for (const auto& i : f.imported) {
    s += i.path + " -> " + i.format + "\n";
    for (const auto& n : i.notes) s += "  note: " + n + "\n";
  }
  for (const auto& n : f.notes) s += "note: " + n + "\n";
  return s;
}

// Imports task NN and checks every part was recognised.
Facts import_task(int n) {
  const std::string text = read_task(n);
  Facts f = import_text(text, "task-" + std::to_string(n));
  EXPECT_FALSE(f.imported.empty()) << describe(f);
  for (const auto& i : f.imported) EXPECT_NE(i.format, "unrecognised") << describe(f);
  return f;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

const GpuFacts* gpu_by_bus(const Facts& f, const std::string& bus) {
  for (const auto& g : f.gpus)
    if (g.pci_bus_id && lower(*g.pci_bus_id) == lower(bus)) return &g;
  return nullptr;
}

const GpuFacts* gpu_by_index(const Facts& f, int index) {
  for (const auto& g : f.gpus)
    if (g.index == index) return &g;
  return nullptr;
}

const GpuPair* pair_of(const Facts& f, int a, int b) {
  for (const auto& p : f.pairs)
    if (p.a == a && p.b == b) return &p;
  return nullptr;
}

bool any_note_contains(const Facts& f, const std::string& needle) {
  for (const auto& n : f.notes)
    if (n.find(needle) != std::string::npos) return true;
  for (const auto& i : f.imported)
    for (const auto& n : i.notes)
      if (n.find(needle) != std::string::npos) return true;
  return false;
}

// kB/s as sysstat prints it: kilobytes of 1024 bytes (older sysstat) or 1000.
bool is_kb_per_s(double bytes_per_s, double kb) {
  return std::abs(bytes_per_s - kb * 1024) < 1 || std::abs(bytes_per_s - kb * 1000) < 1;
}

TEST(ArticleTask, Task01ListsBothGpus) {
  Facts f = import_task(1);
  ASSERT_EQ(f.gpus.size(), 2u) << describe(f);
  const GpuFacts* g0 = gpu_by_index(f, 0);
  const GpuFacts* g1 = gpu_by_index(f, 1);
  ASSERT_TRUE(g0 && g1);
  EXPECT_EQ(g0->name.value_or(""), "NVIDIA A10");
  EXPECT_EQ(g1->name.value_or(""), "NVIDIA A10");
  EXPECT_EQ(g0->uuid.value_or(""), "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
  EXPECT_EQ(g1->uuid.value_or(""), "GPU-ffffffff-1111-2222-3333-444444444444");
}

TEST(ArticleTask, Task02PcieLinkX8OfX16) {
  Facts f = import_task(2);
  ASSERT_EQ(f.gpus.size(), 2u) << describe(f);
  const GpuFacts* a = gpu_by_bus(f, "0000:65:00.0");
  const GpuFacts* b = gpu_by_bus(f, "0000:b3:00.0");
  ASSERT_TRUE(a && b) << describe(f);
  EXPECT_EQ(a->pcie.gen_current, 4);
  EXPECT_EQ(a->pcie.gen_max, 4);
  EXPECT_EQ(a->pcie.width_current, 8);
  EXPECT_EQ(a->pcie.width_max, 16);
  EXPECT_EQ(b->pcie.gen_current, 4);
  EXPECT_EQ(b->pcie.width_current, 16);
  EXPECT_EQ(b->pcie.width_max, 16);
}

TEST(ArticleTask, Task03NumaAffinityAndSysPath) {
  Facts f = import_task(3);
  const GpuPair* p = pair_of(f, 0, 1);
  ASSERT_NE(p, nullptr) << describe(f);
  EXPECT_EQ(p->path, PathType::kSYS);
  const GpuFacts* g0 = gpu_by_index(f, 0);
  const GpuFacts* g1 = gpu_by_index(f, 1);
  ASSERT_TRUE(g0 && g1) << describe(f);
  EXPECT_EQ(g0->numa_node, 0);
  EXPECT_EQ(g1->numa_node, 1);
  ASSERT_EQ(g0->cpu_affinity.size(), 32u);
  EXPECT_EQ(g0->cpu_affinity.front(), 0);
  EXPECT_EQ(g0->cpu_affinity.back(), 31);
  ASSERT_EQ(g1->cpu_affinity.size(), 32u);
  EXPECT_EQ(g1->cpu_affinity.front(), 32);
  EXPECT_EQ(g1->cpu_affinity.back(), 63);
}

TEST(ArticleTask, Task04P2pNvlinkOk) {
  Facts f = import_task(4);
  const GpuPair* p = pair_of(f, 0, 1);
  ASSERT_NE(p, nullptr) << describe(f);
  // "-p2p n" asks for the NVLink capability.
  EXPECT_EQ(p->p2p_nvlink, P2PStatus::kOk);
}

TEST(ArticleTask, Task05ClocksPowerThermals) {
  Facts f = import_task(5);
  ASSERT_EQ(f.gpus.size(), 2u) << describe(f);
  const GpuFacts* g0 = gpu_by_index(f, 0);
  const GpuFacts* g1 = gpu_by_index(f, 1);
  ASSERT_TRUE(g0 && g1);
  EXPECT_EQ(g0->thermal.gpu_c, 84);
  EXPECT_EQ(g1->thermal.gpu_c, 72);
  ASSERT_TRUE(g0->power.draw_w);
  EXPECT_NEAR(*g0->power.draw_w, 147.23, 0.01);
  ASSERT_TRUE(g0->power.limit_w);
  EXPECT_NEAR(*g0->power.limit_w, 150.0, 0.01);
  ASSERT_TRUE(g1->power.draw_w);
  EXPECT_NEAR(*g1->power.draw_w, 132.10, 0.01);
  EXPECT_EQ(g0->clocks.mem_mhz, 5001);
  // The article reads clocks.current.sm as the SM clock GPU0 really runs at.
  EXPECT_EQ(g0->clocks.sm_mhz, 1410);
  EXPECT_EQ(g1->clocks.sm_mhz, 1680);
  // …and clocks.sm (1710) as the target both should hold.
  EXPECT_EQ(g0->clocks.sm_max_mhz, 1710);
  EXPECT_EQ(g1->clocks.sm_max_mhz, 1710);
}

TEST(ArticleTask, Task06EccAggregateSingleBit) {
  Facts f = import_task(6);
  ASSERT_EQ(f.gpus.size(), 1u) << describe(f);
  const Ecc& e = f.gpus[0].ecc;
  EXPECT_EQ(e.enabled, true);
  EXPECT_EQ(e.pending_enabled, true);
  EXPECT_EQ(e.volatile_counts.corrected, 0u);
  EXPECT_EQ(e.volatile_counts.uncorrected, 0u);
  EXPECT_EQ(e.aggregate_counts.corrected, 2u);
  EXPECT_EQ(e.aggregate_counts.uncorrected, 0u);
}

TEST(ArticleTask, Task07Xid31AndFallenOffBus) {
  Facts f = import_task(7);
  ASSERT_EQ(f.kernel_log.xids.size(), 1u) << describe(f);
  const XidEvent& x = f.kernel_log.xids[0];
  EXPECT_EQ(x.code, 31);
  ASSERT_TRUE(x.pci_bus_id) << describe(f);
  EXPECT_EQ(x.pci_bus_id->rfind("0000:65:00", 0), 0u) << *x.pci_bus_id;
  ASSERT_EQ(f.kernel_log.fallen_off_bus.size(), 1u) << describe(f);
  EXPECT_NE(f.kernel_log.fallen_off_bus[0].find("0000:65:00.0"), std::string::npos);
}

TEST(ArticleTask, Task08CoresSaturated) {
  Facts f = import_task(8);
  ASSERT_TRUE(f.host.pressure) << describe(f);
  const auto& cores = f.host.pressure->cores;
  auto find = [&](int cpu) -> const CpuCoreLoad* {
    for (const auto& c : cores)
      if (c.cpu == cpu) return &c;
    return nullptr;
  };
  const CpuCoreLoad* c0 = find(0);
  const CpuCoreLoad* c32 = find(32);
  ASSERT_TRUE(c0 && c32) << describe(f);
  EXPECT_NEAR(c0->busy_pct, 100.0, 0.5);   // 98 usr + 2 sys, 0 idle
  EXPECT_NEAR(c32->busy_pct, 100.0, 0.5);  // 96 usr + 4 sys
  ASSERT_TRUE(f.host.pressure->iowait_pct);
  EXPECT_NEAR(*f.host.pressure->iowait_pct, 0.40, 0.01);
}

TEST(ArticleTask, Task09IowaitAndNvmeUtil) {
  Facts f = import_task(9);
  ASSERT_TRUE(f.host.pressure) << describe(f);
  const auto& p = *f.host.pressure;
  ASSERT_TRUE(p.iowait_pct) << describe(f);
  EXPECT_NEAR(*p.iowait_pct, 18.70, 0.01);
  ASSERT_EQ(p.disks.size(), 1u) << describe(f);
  EXPECT_EQ(p.disks[0].device, "nvme0n1");
  EXPECT_NEAR(p.disks[0].util_pct, 92.0, 0.01);
  EXPECT_TRUE(is_kb_per_s(p.disks[0].read_bytes_per_s, 86500.0)) << p.disks[0].read_bytes_per_s;
  EXPECT_TRUE(is_kb_per_s(p.disks[0].write_bytes_per_s, 22000.0)) << p.disks[0].write_bytes_per_s;
}

TEST(ArticleTask, Task10NicRxTx) {
  Facts f = import_task(10);
  ASSERT_TRUE(f.host.pressure) << describe(f);
  const auto& nics = f.host.pressure->nics;
  ASSERT_EQ(nics.size(), 1u) << describe(f);
  EXPECT_EQ(nics[0].device, "eth0");
  EXPECT_TRUE(is_kb_per_s(nics[0].rx_bytes_per_s, 930000.0)) << nics[0].rx_bytes_per_s;
  EXPECT_TRUE(is_kb_per_s(nics[0].tx_bytes_per_s, 210000.0)) << nics[0].tx_bytes_per_s;
}

TEST(ArticleTask, Task11TwoProcessesOnGpu0) {
  Facts f = import_task(11);
  ASSERT_EQ(f.processes.size(), 2u) << describe(f);
  for (const auto& p : f.processes) {
    EXPECT_EQ(p.gpu, 0);
    EXPECT_EQ(p.name.value_or(""), "python");
  }
  std::vector<int> pids;
  for (const auto& p : f.processes) pids.push_back(p.host_pid);
  std::sort(pids.begin(), pids.end());
  EXPECT_EQ(pids, (std::vector<int>{24819, 24820}));
  // GPU1 is shown but runs nothing: it is still a GPU of the node (index only).
  for (const auto& p : f.processes) EXPECT_NE(p.gpu, 1);
  ASSERT_EQ(f.gpus.size(), 2u) << describe(f);
  ASSERT_TRUE(gpu_by_index(f, 0) && gpu_by_index(f, 1));
  EXPECT_FALSE(gpu_by_index(f, 1)->pci_bus_id.has_value());
  EXPECT_FALSE(gpu_by_index(f, 1)->name.has_value());
}

TEST(ArticleTask, Task12NcclSeesX8Link) {
  Facts f = import_task(12);
  bool x8 = false, x16 = false;
  for (const auto& e : f.nccl_events) {
    if (e.kind != "link") continue;
    if (e.detail.find("PCIe/Gen4 x8") != std::string::npos) x8 = true;
    if (e.detail.find("PCIe/Gen4 x16") != std::string::npos) x16 = true;
  }
  EXPECT_TRUE(x8) << describe(f);
  EXPECT_TRUE(x16) << describe(f);
}

TEST(ArticleTask, Task13MemoryNearOomOnGpu0) {
  Facts f = import_task(13);
  ASSERT_EQ(f.gpus.size(), 2u) << describe(f);
  const GpuFacts* g0 = gpu_by_index(f, 0);
  const GpuFacts* g1 = gpu_by_index(f, 1);
  ASSERT_TRUE(g0 && g1);
  EXPECT_EQ(g0->memory.total_bytes, 24564 * kMiB);
  EXPECT_EQ(g0->memory.used_bytes, 23890 * kMiB);
  EXPECT_EQ(g1->memory.total_bytes, 24564 * kMiB);
  EXPECT_EQ(g1->memory.used_bytes, 1200 * kMiB);
}

TEST(ArticleTask, Task14NumactlBinding) {
  Facts f = import_task(14);
  EXPECT_TRUE(any_note_contains(f, "physcpubind 0-15")) << describe(f);
  EXPECT_TRUE(any_note_contains(f, "membind 0")) << describe(f);
  ASSERT_EQ(f.numa_bindings.size(), 1u) << describe(f);
  const NumaBinding& b = f.numa_bindings[0];
  EXPECT_FALSE(b.pid.has_value());
  std::vector<int> cpus(16);
  for (int i = 0; i < 16; ++i) cpus[i] = i;
  EXPECT_EQ(b.cpus, cpus);
  EXPECT_EQ(b.mems, std::vector<int>{0});
  EXPECT_EQ(b.source, "numactl --show");
}

}  // namespace
}  // namespace gpuvet::import
