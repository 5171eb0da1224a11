// Tests for check_topology: PCIe, NUMA pairs, P2P, NVLink, fabric, ACS/IOMMU and NCCL's view.
// Article tasks 2, 3, 4 and 12 are imported from their verbatim fixtures.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "import/load.h"
#include "rules/rule.h"
#include "rules/rule_test_util.h"

namespace gpuvet::rules {
namespace {

using namespace testing;

Out run(const Facts& f, const Thresholds& t = {}) { return run_group(check_topology, f, t); }

GpuFacts gpu(int i, const char* name = "NVIDIA A10") {
  GpuFacts g;
  g.index = i;
  g.name = name;
  return g;
}

GpuFacts busy_gpu(int i, const char* name = "NVIDIA A10") {
  GpuFacts g = gpu(i, name);
  g.utilization.gpu_pct = 97;
  g.power.draw_w = 140;
  g.power.limit_w = 150;
  return g;
}

GpuFacts idle_gpu(int i, const char* name = "NVIDIA A10") {
  GpuFacts g = gpu(i, name);
  g.utilization.gpu_pct = 0;
  g.power.draw_w = 20;
  g.power.limit_w = 150;
  return g;
}

GpuPair pair(int a, int b, PathType path) {
  GpuPair p;
  p.a = a;
  p.b = b;
  p.path = path;
  return p;
}

NcclEvent nccl(const char* kind, const char* detail) {
  NcclEvent e;
  e.kind = kind;
  e.detail = detail;
  return e;
}

// ---------------------------------------------------------------- PCIe

TEST(TopologyRules, Task02LinkX8OfX16) {
  Facts f = import_tasks({2});
  ASSERT_EQ(f.gpus.size(), 2u);
  Out o = run(f);
  auto v = with_id(o, "pcie-link-degraded");
  ASSERT_EQ(v.size(), 1u) << dump(o);
  const GpuFacts* g = find_gpu_by_bus(f, "0000:65:00.0");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{gpu_subject(g->index)});
  EXPECT_TRUE(has(v[0].evidence, "Gen4 x8 of max x16")) << v[0].evidence;
  EXPECT_TRUE(has(v[0].evidence, "0000:65:00.0")) << v[0].evidence;
  EXPECT_TRUE(has(v[0].evidence, "15.8 of 31.5 GB/s")) << v[0].evidence;
}

TEST(TopologyRules, IdleGpuAtGen1OfGen5IsBenign) {
  Facts f;
  GpuFacts g = idle_gpu(0, "NVIDIA H100 PCIe");
  g.pcie.gen_current = 1;
  g.pcie.gen_max = 5;
  g.pcie.width_current = 16;
  g.pcie.width_max = 16;
  f.gpus.push_back(g);
  Out o = run(f);
  EXPECT_TRUE(o.findings.empty()) << dump(o);
  EXPECT_TRUE(o.notes.empty()) << dump(o);
}

TEST(TopologyRules, BusyGpuBelowMaxGeneration) {
  Facts f;
  GpuFacts g = busy_gpu(0, "NVIDIA H100 PCIe");
  g.pci_bus_id = "0000:18:00.0";
  g.pcie.gen_current = 3;
  g.pcie.gen_max = 5;
  g.pcie.width_current = 16;
  g.pcie.width_max = 16;
  f.gpus.push_back(g);
  Out o = run(f);
  auto v = with_id(o, "pcie-link-degraded");
  ASSERT_EQ(v.size(), 1u) << dump(o);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU0"});
  EXPECT_TRUE(has(v[0].evidence, "GPU0 PCIe Gen3 of max Gen5 x16 (0000:18:00.0)")) << v[0].evidence;
  EXPECT_TRUE(has(v[0].evidence, "while busy (util 97 %")) << v[0].evidence;
}

TEST(TopologyRules, IdleGpuNarrowLinkStillFires) {
  Facts f;
  GpuFacts g = idle_gpu(1);
  g.pcie.gen_current = 1;
  g.pcie.gen_max = 4;
  g.pcie.width_current = 8;
  g.pcie.width_max = 16;
  f.gpus.push_back(g);
  Out o = run(f);
  auto v = with_id(o, "pcie-link-degraded");
  ASSERT_EQ(v.size(), 1u) << dump(o);
  EXPECT_TRUE(has(v[0].evidence,
                  "GPU1 PCIe Gen1 x8 of max x16: 15.8 of 31.5 GB/s per direction "
                  "at Gen4"))
      << v[0].evidence;
  EXPECT_FALSE(has(v[0].evidence, "of max Gen")) << v[0].evidence;
}

TEST(TopologyRules, VmHidingTheLinkIsANote) {
  Facts f;
  f.host.virtual_machine = true;
  f.gpus.push_back(busy_gpu(0));
  Out o = run(f);
  EXPECT_TRUE(o.findings.empty()) << dump(o);
  ASSERT_EQ(o.notes.size(), 1u) << dump(o);
  EXPECT_EQ(o.notes[0],
            "PCIe link width/generation hidden by the hypervisor on GPU0: link checks skipped");
  // A GPU that stopped answering hides nothing because of the VM: no note blames it.
  f.gpus[0].unresponsive = "timed out after 5 s";
  EXPECT_TRUE(run(f).notes.empty()) << dump(run(f));
  f.gpus[0].unresponsive.reset();
  f.host.virtual_machine = false;
  EXPECT_TRUE(run(f).notes.empty());
}

TEST(TopologyRules, ReplayCounter) {
  Facts f;
  GpuFacts g = gpu(2);
  g.pci_bus_id = "0000:b3:00.0";
  g.pcie.replay_counter = 120;
  f.gpus.push_back(g);
  g.index = 3;
  g.pcie.replay_counter = 0;
  f.gpus.push_back(g);
  g.index = 4;
  g.pci_bus_id = "0000:c3:00.0";
  g.pcie.replay_counter = 9;  // a handful since driver load: noted, not alarmed
  f.gpus.push_back(g);
  Out o = run(f);
  auto v = with_id(o, "pcie-replay-errors");
  ASSERT_EQ(v.size(), 2u) << dump(o);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU2"});
  EXPECT_EQ(v[0].evidence, "GPU2 PCIe replay counter 120 (0000:b3:00.0)");
  EXPECT_EQ(v[1].severity, Severity::kInfo);
  EXPECT_EQ(v[1].subjects, std::vector<std::string>{"GPU4"});
  EXPECT_NE(v[1].evidence.find("watch whether it rises"), std::string::npos) << v[1].evidence;
}

// ---------------------------------------------------------------- NUMA pairs

TEST(TopologyRules, Task03SysPairIsInfo) {
  Facts f = import_tasks({3});
  Out o = run(f);
  auto v = with_id(o, "gpu-pair-crosses-numa");
  ASSERT_EQ(v.size(), 1u) << dump(o);
  EXPECT_EQ(v[0].severity, Severity::kInfo);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU0-GPU1"});
  EXPECT_EQ(v[0].evidence,
            "GPU0-GPU1 path SYS: traffic between them crosses the CPU interconnect (GPU0 on NUMA "
            "node 0, GPU1 on node 1)");
}

TEST(TopologyRules, SysPairWithPoorScalingIsWarning) {
  Facts f = import_tasks({3});
  ScaleRun one;
  one.workload = "train";
  one.preset = "cnn-small";
  one.gpus = 1;
  one.throughput = 1000;
  ScaleRun two = one;
  two.gpus = 2;
  two.throughput = 1100;  // 55 %
  f.scale_runs = {one, two};
  Out o = run(f);
  auto v = with_id(o, "gpu-pair-crosses-numa");
  ASSERT_EQ(v.size(), 1u) << dump(o);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_TRUE(has(v[0].evidence, "scaling efficiency 55 % on 2 GPUs (preset cnn-small)"))
      << v[0].evidence;
  // Good scaling: back to info.
  f.scale_runs[1].throughput = 1900;
  v = with_id(run(f), "gpu-pair-crosses-numa");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kInfo);
  // A run of another preset is no baseline.
  f.scale_runs[1].throughput = 1100;
  f.scale_runs[1].preset = "llm-7b-layer";
  EXPECT_EQ(with_id(run(f), "gpu-pair-crosses-numa")[0].severity, Severity::kInfo);
}

TEST(TopologyRules, NonSysPairsAreQuiet) {
  Facts f;
  f.gpus = {gpu(0), gpu(1)};
  f.pairs = {pair(0, 1, PathType::kNODE)};
  EXPECT_TRUE(run(f).findings.empty());
}

// ---------------------------------------------------------------- P2P

TEST(TopologyRules, Task04P2pOkIsQuiet) {
  Facts f = import_tasks({4});
  Out o = run(f);
  EXPECT_TRUE(with_id(o, "p2p-unavailable").empty()) << dump(o);
  EXPECT_TRUE(with_id(o, "nvlink-down").empty()) << dump(o);
}

TEST(TopologyRules, P2pNotSupportedIsWarningWithAllStatuses) {
  Facts f;
  f.gpus = {gpu(0), gpu(1)};
  GpuPair p = pair(0, 1, PathType::kPHB);
  p.p2p_read = P2PStatus::kNotSupported;
  p.p2p_write = P2PStatus::kNotSupported;
  p.p2p_atomics = P2PStatus::kNotSupported;
  f.pairs = {p};
  Out o = run(f);
  auto v = with_id(o, "p2p-unavailable");
  ASSERT_EQ(v.size(), 1u) << dump(o);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU0-GPU1"});
  EXPECT_EQ(v[0].evidence, "GPU0-GPU1 P2P read NS, write NS, atomics NS (path PHB)");
}

TEST(TopologyRules, P2pGpuNotSupportedIsInfoOnly) {
  Facts f;
  f.gpus = {gpu(0, "NVIDIA GeForce RTX 4090"), gpu(1, "NVIDIA GeForce RTX 4090")};
  GpuPair p = pair(0, 1, PathType::kPHB);
  p.p2p_read = P2PStatus::kGpuNotSupported;
  p.p2p_write = P2PStatus::kGpuNotSupported;
  f.pairs = {p};
  Out o = run(f);
  ASSERT_EQ(o.findings.size(), 1u) << dump(o);
  EXPECT_EQ(o.findings[0].id, "p2p-unavailable");
  EXPECT_EQ(o.findings[0].severity, Severity::kInfo);
  EXPECT_TRUE(has(o.findings[0].evidence, "read GNS, write GNS")) << o.findings[0].evidence;
}

TEST(TopologyRules, ChipsetNotSupportedDependsOnPath) {
  Facts f;
  f.gpus = {gpu(0), gpu(1)};
  GpuPair p = pair(0, 1, PathType::kSYS);
  p.p2p_read = P2PStatus::kChipsetNotSupported;
  p.p2p_write = P2PStatus::kChipsetNotSupported;
  f.pairs = {p};
  auto v = with_id(run(f), "p2p-unavailable");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kInfo);  // expected across sockets
  f.pairs[0].path = PathType::kPXB;
  v = with_id(run(f), "p2p-unavailable");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_TRUE(has(v[0].evidence, "read CNS, write CNS (path PXB)")) << v[0].evidence;
}

TEST(TopologyRules, NvlinkStatusOnlyMattersWhereNvlinkIs) {
  Facts f;
  f.gpus = {gpu(0), gpu(1)};
  GpuPair p = pair(0, 1, PathType::kPIX);
  p.p2p_read = P2PStatus::kOk;
  p.p2p_write = P2PStatus::kOk;
  p.p2p_nvlink = P2PStatus::kNotSupported;
  f.pairs = {p};
  EXPECT_TRUE(with_id(run(f), "p2p-unavailable").empty());
  f.pairs[0].path = PathType::kNVLink;
  f.pairs[0].nvlinks = 4;
  auto v = with_id(run(f), "p2p-unavailable");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_EQ(v[0].evidence, "GPU0-GPU1 P2P nvlink NS (path NV)");
  // Only "-p2p n" captured, no path: an info, P2P over PCIe unknown.
  f.pairs[0] = pair(0, 1, PathType::kUnknown);
  f.pairs[0].p2p_nvlink = P2PStatus::kNotSupported;
  v = with_id(run(f), "p2p-unavailable");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kInfo);
}

// `topo -p2p p` (the PCIe P2P property) alone: it says what read/write would for PCIe.
TEST(TopologyRules, PciePropertyAloneJudgesThePair) {
  Facts f;
  f.gpus = {gpu(0), gpu(1)};
  GpuPair p = pair(0, 1, PathType::kPXB);
  p.p2p_pcie = P2PStatus::kOk;
  f.pairs = {p};
  EXPECT_TRUE(with_id(run(f), "p2p-unavailable").empty());
  f.pairs[0].p2p_pcie = P2PStatus::kChipsetNotSupported;
  auto v = with_id(run(f), "p2p-unavailable");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_EQ(v[0].evidence, "GPU0-GPU1 P2P pcie CNS (path PXB)");
  f.pairs[0].path = PathType::kSYS;  // across sockets: expected
  v = with_id(run(f), "p2p-unavailable");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kInfo);
  // An NVLink pair's peer traffic does not take PCIe: its PCIe property is no finding.
  f.pairs[0].path = PathType::kNVLink;
  f.pairs[0].nvlinks = 18;
  f.pairs[0].p2p_pcie = P2PStatus::kNotSupported;
  f.pairs[0].p2p_nvlink = P2PStatus::kOk;
  EXPECT_TRUE(with_id(run(f), "p2p-unavailable").empty());
}

TEST(TopologyRules, SingleGpuHasNoPairFindings) {
  Facts f;
  f.gpus = {busy_gpu(0)};
  f.host.iommu.active = true;
  Out o = run(f);
  EXPECT_TRUE(o.findings.empty()) << dump(o);
}

// ---------------------------------------------------------------- NVLink

std::vector<NvLink> links(int n, int inactive_from = 99) {
  std::vector<NvLink> v;
  for (int i = 0; i < n; ++i) {
    NvLink l;
    l.link = i;
    l.active = i < inactive_from;
    v.push_back(l);
  }
  return v;
}

TEST(TopologyRules, SomeNvlinksInactive) {
  Facts f;
  f.gpus = {gpu(0, "NVIDIA H100 80GB HBM3"), gpu(1, "NVIDIA H100 80GB HBM3")};
  f.gpus[0].nvlinks = links(18, 14);
  f.gpus[1].nvlinks = links(18);
  Out o = run(f);
  auto v = with_id(o, "nvlink-down");
  ASSERT_EQ(v.size(), 1u) << dump(o);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU0"});
  EXPECT_EQ(v[0].evidence,
            "GPU0 NVLink: 4 of 18 links inactive (links 14, 15, 16, 17) while 14 are active");
}

TEST(TopologyRules, AllNvlinksDownOnOneGpu) {
  Facts f;
  f.gpus = {gpu(0, "NVIDIA A100-SXM4-80GB"), gpu(1, "NVIDIA A100-SXM4-80GB")};
  f.gpus[0].nvlinks = links(12);
  f.gpus[1].nvlinks = links(12, 0);
  auto v = with_id(run(f), "nvlink-down");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU1"});
  EXPECT_EQ(v[0].evidence, "NVLink: GPU1 all 12 links inactive while GPU0 has active links");
  // Nobody has NVLink up and nothing says it should be: quiet (e.g. NVL cards without bridges).
  f.gpus[0].nvlinks = links(12, 0);
  EXPECT_TRUE(with_id(run(f), "nvlink-down").empty());
}

TEST(TopologyRules, NvlinkDisabledByDriver) {
  Facts f;
  f.host.nvlink_disabled_by_driver = true;
  f.gpus = {gpu(0, "NVIDIA H100 80GB HBM3")};
  Out one = run(f);
  EXPECT_TRUE(one.findings.empty()) << dump(one);  // one GPU: nothing to lose
  ASSERT_EQ(one.notes.size(), 1u);
  EXPECT_TRUE(has(one.notes[0], "NvLinkDisable=1")) << one.notes[0];

  f.gpus.push_back(gpu(1, "NVIDIA H100 80GB HBM3"));
  f.gpus[0].nvlinks = links(18, 0);
  f.gpus[1].nvlinks = links(18, 0);
  Out two = run(f);
  auto v = with_id(two, "nvlink-down");
  ASSERT_EQ(v.size(), 1u) << dump(two);  // the all-inactive links are not reported again
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_EQ(v[0].subjects, (std::vector<std::string>{"GPU0", "GPU1"}));
  EXPECT_TRUE(has(v[0].evidence, "NvLinkDisable=1 in /proc/driver/nvidia/params")) << v[0].evidence;

  // PCIe cards without NVLink: the parameter changes nothing.
  f.gpus = {gpu(0, "NVIDIA A10"), gpu(1, "NVIDIA A10")};
  EXPECT_TRUE(run(f).findings.empty());
  // "NVL" PCIe cards are sold with bridges.
  f.gpus = {gpu(0, "NVIDIA H100 NVL"), gpu(1, "NVIDIA H100 NVL")};
  EXPECT_EQ(with_id(run(f), "nvlink-down").size(), 1u);
}

TEST(TopologyRules, UnevenNvlinkCountsInAFullMesh) {
  Facts f;
  for (int i = 0; i < 4; ++i) f.gpus.push_back(gpu(i, "NVIDIA H100 80GB HBM3"));
  for (int a = 0; a < 4; ++a)
    for (int b = a + 1; b < 4; ++b) {
      GpuPair p = pair(a, b, PathType::kNVLink);
      p.nvlinks = 18;
      f.pairs.push_back(p);
    }
  EXPECT_TRUE(with_id(run(f), "nvlink-down").empty());
  f.pairs[0].nvlinks = 12;  // GPU0-GPU1
  auto v = with_id(run(f), "nvlink-down");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU0-GPU1"});
  EXPECT_EQ(v[0].evidence,
            "GPU0-GPU1 NV12 while the other pairs of this fully NVLink-connected box have NV18");
  // A hybrid mesh (some pairs over PCIe) legitimately mixes NV1/NV2: quiet.
  f.pairs[1].path = PathType::kSYS;
  f.pairs[1].nvlinks.reset();
  EXPECT_TRUE(with_id(run(f), "nvlink-down").empty());
  // So does a 4-GPU V100 subset where every pair has NVLink (AWS p3.8xlarge: NV1 and NV2).
  for (auto& p : f.pairs) {
    p.path = PathType::kNVLink;
    p.nvlinks = 2;
  }
  f.pairs[0].nvlinks = 1;
  EXPECT_TRUE(with_id(run(f), "nvlink-down").empty());
}

// ---------------------------------------------------------------- fabric

TEST(TopologyRules, FabricStates) {
  Facts f;
  for (int i = 0; i < 3; ++i) f.gpus.push_back(gpu(i, "NVIDIA H100 80GB HBM3"));
  f.gpus[0].fabric.state = "completed";
  f.gpus[0].fabric.status = "SUCCESS";
  f.gpus[1].fabric.state = "in_progress";
  f.gpus[2].fabric.state = "in_progress";
  Out o = run(f);
  auto v = with_id(o, "fabric-degraded");
  ASSERT_EQ(v.size(), 1u) << dump(o);
  EXPECT_EQ(v[0].subjects, (std::vector<std::string>{"GPU1", "GPU2"}));
  EXPECT_EQ(v[0].evidence, "GPU1, GPU2: fabric state in_progress");

  f.gpus[1].fabric.state = "not_supported";
  f.gpus[2].fabric.state = "completed";
  f.gpus[2].fabric.status = "INSUFFICIENT_RESOURCES";
  v = with_id(run(f), "fabric-degraded");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU2"});
  EXPECT_TRUE(has(v[0].evidence, "status INSUFFICIENT_RESOURCES")) << v[0].evidence;

  f.gpus[2].fabric.status = "Success";
  EXPECT_TRUE(with_id(run(f), "fabric-degraded").empty());
}

// ---------------------------------------------------------------- ACS / IOMMU

TEST(TopologyRules, AcsRedirect) {
  Facts f;
  f.gpus = {gpu(0), gpu(1)};
  f.gpus[1].acs_redirects_p2p = true;
  f.gpus[1].acs_bridges = {"0000:15:00.0", "0000:16:01.0"};
  f.gpus[0].acs_redirects_p2p = false;
  auto v = with_id(run(f), "acs-blocks-p2p");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU1"});
  EXPECT_TRUE(has(v[0].evidence, "GPU1 behind 0000:15:00.0, 0000:16:01.0")) << v[0].evidence;
  f.gpus.pop_back();
  f.gpus[0].acs_redirects_p2p = true;
  EXPECT_TRUE(with_id(run(f), "acs-blocks-p2p").empty());  // one GPU: no peer
}

TEST(TopologyRules, IommuTranslatingWithP2pRefused) {
  Facts f;
  f.gpus = {gpu(0), gpu(1)};
  f.host.iommu.active = true;
  f.host.iommu.passthrough = false;
  f.host.iommu.cmdline_hint = "intel_iommu=on";
  GpuPair p = pair(0, 1, PathType::kPXB);
  p.p2p_read = P2PStatus::kChipsetNotSupported;
  p.p2p_write = P2PStatus::kChipsetNotSupported;
  f.pairs = {p};
  auto v = with_id(run(f), "acs-blocks-p2p");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU0-GPU1"});
  EXPECT_TRUE(has(v[0].evidence, "cmdline: intel_iommu=on")) << v[0].evidence;
  EXPECT_TRUE(has(v[0].evidence, "GPU0-GPU1 read CNS, write CNS")) << v[0].evidence;
  f.host.iommu.passthrough = true;
  EXPECT_TRUE(with_id(run(f), "acs-blocks-p2p").empty());
  f.host.iommu.passthrough = false;
  f.pairs[0].p2p_read = P2PStatus::kOk;
  f.pairs[0].p2p_write = P2PStatus::kOk;
  EXPECT_TRUE(with_id(run(f), "acs-blocks-p2p").empty());  // P2P works: IOMMU not in the way
}

// ---------------------------------------------------------------- NCCL

TEST(TopologyRules, Task12NcclSeesX8) {
  Facts f = import_tasks({12});
  Out o = run(f);
  auto v = with_id(o, "nccl-degraded-path");
  ASSERT_EQ(v.size(), 1u) << dump(o);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU0"});
  EXPECT_EQ(v[0].evidence,
            "NCCL sees GPU0 (CUDA Dev 0) at PCIe/Gen4 x8 while the widest GPU link in the log "
            "is x16");
}

TEST(TopologyRules, Task02And12NcclAndLinkAgree) {
  Facts f = import_tasks({2, 12});
  Out o = run(f);
  auto v = with_id(o, "nccl-degraded-path");
  ASSERT_EQ(v.size(), 1u) << dump(o);
  EXPECT_TRUE(has(v[0].evidence, "below the GPU's max x16")) << v[0].evidence;
  EXPECT_EQ(with_id(o, "pcie-link-degraded").size(), 1u) << dump(o);
}

TEST(TopologyRules, NcclTopologyDumpNarrowUpstream) {
  Facts f;
  NcclEvent a = nccl("link",
                     "GPU dev 0 sm 90: PCI link 32.0 GT/s PCIe x16; narrowest link on the "
                     "path x16 at 0000:15:00.0");
  a.pci_bus_id = "0000:18:00.0";
  NcclEvent b = nccl("link",
                     "GPU dev 1 sm 90: PCI link 32.0 GT/s PCIe x16; narrowest link on the "
                     "path x8 at 0000:95:00.0");
  b.pci_bus_id = "0000:9a:00.0";
  NcclEvent nic = nccl("link",
                       "NIC mlx5_0 port 1 speed 400000 Mb/s gdr 1: PCI link 32.0 GT/s "
                       "PCIe x4");
  f.nccl_events = {a, b, nic};
  GpuFacts g0 = gpu(0), g1 = gpu(1);
  g0.pci_bus_id = "0000:18:00.0";
  g1.pci_bus_id = "0000:9a:00.0";
  f.gpus = {g0, g1};
  auto v = with_id(run(f), "nccl-degraded-path");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU1"});
  EXPECT_TRUE(has(v[0].evidence, "PCIe Gen5 x16, x8 upstream")) << v[0].evidence;
}

TEST(TopologyRules, NcclFallbacks) {
  Facts f;
  NcclEvent p2p = nccl("fallback", "NCCL_P2P_DISABLE set by environment to 1.");
  p2p.host = "node-a";
  f.nccl_events = {p2p};
  auto v = with_id(run(f), "nccl-degraded-path");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"node-a"});
  EXPECT_TRUE(has(v[0].evidence, "NCCL_P2P_DISABLE")) << v[0].evidence;

  // No IB on a single-node job (only P2P transports): nothing lost.
  f.nccl_events = {nccl("fallback", "NET/IB : No device found."),
                   nccl("transport", "0[0] -> 1[1] via P2P/IPC/read")};
  EXPECT_TRUE(with_id(run(f), "nccl-degraded-path").empty());
  // Inter-node traffic over sockets: degraded.
  f.nccl_events.push_back(nccl("transport", "1[1] -> 2[0] [send] via NET/Socket/0"));
  v = with_id(run(f), "nccl-degraded-path");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_TRUE(has(v[0].evidence, "TCP sockets")) << v[0].evidence;
  // No transport lines: cannot tell, info.
  f.nccl_events = {nccl("fallback", "NET/IB : No device found.")};
  v = with_id(run(f), "nccl-degraded-path");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kInfo);
}

TEST(TopologyRules, NcclShmBetweenLocalGpus) {
  Facts f;
  f.gpus = {gpu(0), gpu(1)};
  GpuPair p = pair(0, 1, PathType::kPHB);
  p.p2p_read = P2PStatus::kOk;
  p.p2p_write = P2PStatus::kOk;
  f.pairs = {p};
  f.nccl_events = {nccl("transport", "0[0] -> 1[1] via SHM/direct/direct"),
                   nccl("transport", "1[1] -> 0[0] via SHM/direct/direct")};
  auto v = with_id(run(f), "nccl-degraded-path");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU0-GPU1"});
  EXPECT_TRUE(has(v[0].evidence, "instead of P2P between GPU0-GPU1 (2 connections"))
      << v[0].evidence;
  // Across sockets NCCL picks SHM on purpose.
  f.pairs[0].path = PathType::kSYS;
  EXPECT_TRUE(with_id(run(f), "nccl-degraded-path").empty());
  // Nothing says whether P2P could work: info.
  f.pairs.clear();
  v = with_id(run(f), "nccl-degraded-path");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kInfo);
  EXPECT_TRUE(has(v[0].evidence, "not captured")) << v[0].evidence;
  // NCCL_P2P_DISABLE=1 explains the SHM connections: only that finding.
  f.nccl_events.push_back(nccl("fallback", "NCCL_P2P_DISABLE set by environment to 1."));
  v = with_id(run(f), "nccl-degraded-path");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_TRUE(has(v[0].evidence, "NCCL_P2P_DISABLE")) << v[0].evidence;
}

TEST(TopologyRules, NcclTimeoutsAndErrors) {
  Facts f;
  NcclEvent t1 = nccl("timeout",
                      "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, "
                      "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600020 ms");
  t1.rank = 1;
  NcclEvent t0 = t1;
  t0.rank = 0;
  NcclEvent benign = nccl("warn", "socketProgress: Connection closed by remote peer node-a<43642>");
  f.nccl_events = {t1, t0, benign};
  Out o = run(f);
  auto v = with_id(o, "nccl-error");
  ASSERT_EQ(v.size(), 1u) << dump(o);
  const CatalogEntry* entry = find_catalog_entry("nccl-error");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(v[0].severity, entry->default_severity);
  EXPECT_EQ(v[0].severity, Severity::kCritical);
  EXPECT_EQ(v[0].subjects, (std::vector<std::string>{"rank 0", "rank 1"}));
  EXPECT_TRUE(has(v[0].evidence, "2 NCCL timeouts, first (rank 1)")) << v[0].evidence;
  EXPECT_TRUE(has(v[0].evidence, "Timeout(ms)=600000")) << v[0].evidence;

  f.nccl_events = {nccl("error", "unhandled system error, NCCL version 2.18.3"),
                   nccl("warn", "Call to ibv_reg_mr timed out")};
  o = run(f);
  v = with_id(o, "nccl-error");
  ASSERT_EQ(v.size(), 2u) << dump(o);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"NCCL"});
  EXPECT_TRUE(has(v[0].evidence, "1 NCCL error")) << v[0].evidence;
  EXPECT_TRUE(has(v[1].evidence, "timed out")) << v[1].evidence;

  f.nccl_events = {benign};
  EXPECT_TRUE(run(f).findings.empty());
}

}  // namespace
}  // namespace gpuvet::rules

namespace gpuvet::rules {
namespace {

using namespace testing;

Facts two_gpus_below_a_switch() {
  Facts f;
  for (int i = 0; i < 2; ++i) {
    GpuFacts g;
    g.index = i;
    g.pci_bus_id = i == 0 ? "0000:18:00.0" : "0000:19:00.0";
    f.gpus.push_back(g);
  }
  auto dev = [](const char* bdf, std::optional<std::string> up) {
    PciDevice d;
    d.bdf = bdf;
    d.upstream = std::move(up);
    return d;
  };
  f.pci_devices = {dev("0000:15:01.0", std::nullopt),   dev("0000:16:00.0", "0000:15:01.0"),
                   dev("0000:17:00.0", "0000:16:00.0"), dev("0000:17:01.0", "0000:16:00.0"),
                   dev("0000:18:00.0", "0000:17:00.0"), dev("0000:19:00.0", "0000:17:01.0"),
                   dev("0000:cb:00.0", std::nullopt)};
  return f;
}

DeviceErrorLog aer(const char* kind, const char* bdf, std::uint64_t count) {
  DeviceErrorLog r;
  r.kind = kind;
  r.pci_bus_id = bdf;
  r.count = count;
  r.details = {"Physical Layer", "RxErr"};
  r.first_uptime_s = 5000;
  r.last_uptime_s = 5600;
  return r;
}

TEST(TopologyRulesAer, SeverityFollowsTheKindAndTheRate) {
  Facts f = two_gpus_below_a_switch();
  f.kernel_log.pcie_aer = {
      aer("corrected", "0000:19:00.0", 12), aer("corrected", "0000:18:00.0", 2),
      aer("uncorrected-fatal", "0000:17:01.0", 1), aer("uncorrected-nonfatal", "0000:16:00.0", 1)};
  const Out o = run(f);
  const auto v = with_id(o, "pcie-aer-errors");
  ASSERT_EQ(v.size(), 4u) << dump(o);
  EXPECT_EQ(v[0].severity, Severity::kWarning) << "12 corrected on GPU1: at the threshold";
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU1"});
  EXPECT_TRUE(has(v[0].evidence, "12 PCIe AER corrected errors on GPU1 (0000:19:00.0)"))
      << v[0].evidence;
  EXPECT_TRUE(has(v[0].evidence, "RxErr")) << v[0].evidence;
  EXPECT_EQ(v[1].severity, Severity::kInfo) << "2 corrected: watch";
  EXPECT_EQ(v[2].severity, Severity::kCritical);
  EXPECT_EQ(v[2].subjects, std::vector<std::string>{"GPU1"}) << "the port above GPU1";
  EXPECT_TRUE(has(v[2].evidence, "0000:17:01.0, the port above GPU1")) << v[2].evidence;
  EXPECT_EQ(v[3].severity, Severity::kWarning);
  EXPECT_EQ(v[3].subjects, (std::vector<std::string>{"GPU0", "GPU1"})) << "the switch";

  Thresholds t;
  t.pcie_aer_corrected_warn_count = 20;
  EXPECT_EQ(with_id(run(f, t), "pcie-aer-errors")[0].severity, Severity::kInfo);
}

TEST(TopologyRulesAer, ErrorsOffTheGpusPathsAreInfoAndUnknownDevicesKeepFatalCritical) {
  Facts f = two_gpus_below_a_switch();
  f.kernel_log.pcie_aer = {aer("corrected", "0000:cb:00.0", 500),
                           aer("uncorrected-fatal", "0000:cb:00.0", 1)};
  auto v = with_id(run(f), "pcie-aer-errors");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].severity, Severity::kInfo);
  EXPECT_EQ(v[1].severity, Severity::kWarning) << "fatal, known to be off every GPU's path";
  Facts log_only;
  log_only.kernel_log.pcie_aer = {aer("uncorrected-fatal", "0000:cb:00.0", 1)};
  v = with_id(run(log_only), "pcie-aer-errors");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kCritical) << "a kernel log alone: which device is unknown";
  EXPECT_TRUE(has(v[0].evidence, "not known to be a GPU")) << v[0].evidence;
}

TEST(TopologyRulesAer, LspciStatusBitsOnAGpusPath) {
  Facts f = two_gpus_below_a_switch();
  f.pci_devices[5].aer_corrected = {"RxErr", "BadTLP"};    // GPU1
  f.pci_devices[3].aer_uncorrected = {"CmpltTO"};          // the port above GPU1
  f.pci_devices[0].aer_uncorrected = {"UnsupReq", "DLP"};  // the root port
  f.pci_devices[0].aer_uncorrected_fatal = {"DLP"};
  f.pci_devices[4].aer_uncorrected = {"UnsupReq"};  // GPU0: benign alone
  f.pci_devices[4].aer_corrected = {"AdvNonFatalErr"};
  f.pci_devices[6].aer_uncorrected = {"DLP"};  // not on a GPU's path
  f.pci_devices[6].aer_uncorrected_fatal = {"DLP"};
  const Out o = run(f);
  const auto v = with_id(o, "pcie-aer-errors");
  ASSERT_EQ(v.size(), 3u) << dump(o);
  EXPECT_EQ(v[0].severity, Severity::kCritical);  // root port, fatal DLP
  EXPECT_EQ(v[0].subjects, (std::vector<std::string>{"GPU0", "GPU1"}));
  EXPECT_TRUE(has(v[0].evidence, "fatal severity: DLP")) << v[0].evidence;
  EXPECT_FALSE(has(v[0].evidence, "UnsupReq")) << v[0].evidence;
  EXPECT_EQ(v[1].severity, Severity::kWarning);  // CmpltTO above GPU1
  EXPECT_EQ(v[2].severity, Severity::kInfo);     // corrected bits on GPU1
  EXPECT_EQ(v[2].subjects, std::vector<std::string>{"GPU1"});
}

TEST(TopologyRulesIommu, FaultsOnAGpuWarnOthersInform) {
  Facts f = two_gpus_below_a_switch();
  DeviceErrorLog on_gpu = aer("dma-read", "0000:18:00.0", 3);
  on_gpu.details = {"PTE Read access is not set"};
  DeviceErrorLog nic = aer("io-page-fault", "0000:cb:00.0", 1);
  DeviceErrorLog by_driver = aer("io-page-fault", "0000:41:00.0", 1);
  by_driver.driver = "nvidia";
  DeviceErrorLog unnamed = aer("fault", "0000:00:00.0", 1);
  unnamed.pci_bus_id.reset();
  f.kernel_log.iommu_faults = {on_gpu, nic, by_driver, unnamed};
  const Out o = run(f);
  const auto v = with_id(o, "iommu-fault");
  ASSERT_EQ(v.size(), 4u) << dump(o);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU0"});
  EXPECT_TRUE(has(v[0].evidence, "3 IOMMU DMA read faults on GPU0 (0000:18:00.0)"))
      << v[0].evidence;
  EXPECT_TRUE(has(v[0].evidence, "PTE Read access is not set")) << v[0].evidence;
  EXPECT_EQ(v[1].severity, Severity::kInfo);
  EXPECT_EQ(v[2].severity, Severity::kWarning) << "printed by the nvidia driver";
  EXPECT_EQ(v[3].severity, Severity::kInfo);
  EXPECT_EQ(v[3].subjects, std::vector<std::string>{"PCIe"});
}

TEST(TopologyRulesAcs, RedirectingBridgesNotTiedToAGpuAreInfoForTheNode) {
  Facts f;
  f.host.acs_redirect_unplaced = {"ACSCtl line 1 (RR,CR)"};
  auto v = with_id(run(f), "acs-blocks-p2p");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kInfo);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"PCIe"});
  EXPECT_TRUE(has(v[0].evidence, "which GPUs sit below them is not known")) << v[0].evidence;
  // Once a GPU is known to be behind a redirecting bridge, the GPU finding says it all.
  f = two_gpus_below_a_switch();
  f.host.acs_redirect_unplaced = {"0000:cb:00.0 (RR,CR)"};
  f.gpus[0].acs_redirects_p2p = true;
  f.gpus[0].acs_bridges = {"0000:17:00.0 (RR,CR)"};
  v = with_id(run(f), "acs-blocks-p2p");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
}

TEST(TopologyRulesAer, HealthyLspciPasteStaysQuiet) {
  std::ifstream in(std::string(GPUVET_TEST_DATA) +
                       "/fixtures/lspci/lspci-vvv-2x-h100-pcie-gen5-switch-healthy.txt",
                   std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  const Facts f = import_text(ss.str(), "lspci.txt", ImportOptions{});
  ASSERT_EQ(f.gpus.size(), 2u);
  const Out o = run(f);
  for (const auto& x : o.findings) EXPECT_EQ(x.severity, Severity::kInfo) << dump(o);
  EXPECT_TRUE(with_id(o, "pcie-aer-errors").empty()) << dump(o);
  EXPECT_TRUE(with_id(o, "acs-blocks-p2p").empty()) << dump(o);
  EXPECT_TRUE(with_id(o, "pcie-link-degraded").empty()) << dump(o);
}

TEST(TopologyRulesAer, DowngradedLspciPasteFiresTheLiveRules) {
  std::ifstream in(std::string(GPUVET_TEST_DATA) +
                       "/fixtures/lspci/lspci-vvv-2x-h100-pcie-x8-downgraded-acs-redirect-aer.txt",
                   std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  const Facts f = import_text(ss.str(), "lspci.txt", ImportOptions{});
  const Out o = run(f);
  const auto link = with_id(o, "pcie-link-degraded");
  ASSERT_EQ(link.size(), 1u) << dump(o);
  EXPECT_EQ(link[0].subjects, std::vector<std::string>{"GPU1"});
  EXPECT_TRUE(has(link[0].evidence, "x8 of max x16")) << link[0].evidence;
  const auto acs = with_id(o, "acs-blocks-p2p");
  ASSERT_EQ(acs.size(), 1u) << dump(o);
  EXPECT_EQ(acs[0].severity, Severity::kWarning);
  const auto bits = with_id(o, "pcie-aer-errors");
  ASSERT_EQ(bits.size(), 1u) << dump(o);
  EXPECT_EQ(bits[0].severity, Severity::kWarning) << "CmpltTO on GPU1, non-fatal";
}

// ---------------------------------------------------------------- issue-16 rule gaps

// A 2-card box's `nvidia-smi nvlink -s` and `topo -m` as pasted (written for this test after
// nvidia-smi's documented layout): an H100 PCIe pair whose three bridges carry 12 of the 18
// links the die lists.
std::string h100_pcie_nvlink_paste(int active_per_gpu) {
  std::string s;
  for (int g = 0; g < 2; ++g) {
    s += "GPU " + std::to_string(g) + ": NVIDIA H100 PCIe (UUID: GPU-0000000" + std::to_string(g) +
         "-1111-2222-3333-444455556666)\n";
    int up = 0;
    for (int l = 0; l < 18; ++l) {
      const bool bridged = l % 6 < 4 && up < active_per_gpu;  // links 0-3, 6-9, 12-15
      if (bridged) ++up;
      s += "\t Link " + std::to_string(l) + ": " + (bridged ? "26.562 GB/s" : "<inactive>") + "\n";
    }
  }
  return s;
}

TEST(TopologyRulesNvlinkConfig, H100PcieBridgedWithTwelveOfEighteenIsHealthy) {
  const Facts f = import_text(h100_pcie_nvlink_paste(12), "nvlink-s.txt", ImportOptions{});
  ASSERT_EQ(f.gpus.size(), 2u);
  const Out o = run(f);
  EXPECT_TRUE(with_id(o, "nvlink-down").empty()) << dump(o);
  bool noted = false;
  for (const auto& n : o.notes) noted = noted || has(n, "every NVLink that an H100 PCIe/NVL");
  EXPECT_TRUE(noted) << dump(o);
}

TEST(TopologyRulesNvlinkConfig, H100PcieWithABridgeMissingIsDown) {
  const Facts f = import_text(h100_pcie_nvlink_paste(8), "nvlink-s.txt", ImportOptions{});
  const auto v = with_id(run(f), "nvlink-down");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_TRUE(has(v[0].evidence, "8 links active, fewer than the 12 of an H100 PCIe/NVL"))
      << v[0].evidence;
}

TEST(TopologyRulesNvlinkConfig, BaseboardGpusStillWantEveryLink) {
  // The same 12 of 18 on an SXM H100 is 6 links down.
  Facts f;
  f.gpus = {gpu(0, "NVIDIA H100 80GB HBM3"), gpu(1, "NVIDIA H100 80GB HBM3")};
  f.gpus[0].nvlinks = links(18, 12);
  f.gpus[1].nvlinks = links(18, 12);
  EXPECT_EQ(with_id(run(f), "nvlink-down").size(), 2u);
}

TEST(TopologyRulesNvlinkConfig, WorkstationTwoGpuBridges) {
  // Four RTX A6000, a bridge on GPU0-GPU1 only: the unbridged pair is an info, not a fault.
  Facts f;
  for (int i = 0; i < 4; ++i) f.gpus.push_back(gpu(i, "NVIDIA RTX A6000"));
  f.gpus[0].nvlinks = links(4);
  f.gpus[1].nvlinks = links(4);
  f.gpus[2].nvlinks = links(4, 0);
  f.gpus[3].nvlinks = links(4, 0);
  Out o = run(f);
  auto v = with_id(o, "nvlink-down");
  ASSERT_EQ(v.size(), 1u) << dump(o);
  EXPECT_EQ(v[0].severity, Severity::kInfo);
  EXPECT_EQ(v[0].subjects, (std::vector<std::string>{"GPU2", "GPU3"}));
  // Both bridges fitted: quiet.
  f.gpus[2].nvlinks = links(4);
  f.gpus[3].nvlinks = links(4);
  EXPECT_TRUE(with_id(run(f), "nvlink-down").empty());
  // A 3090 bridge with 2 of its 4 links up is a fault.
  for (auto& g : f.gpus) g.name = "NVIDIA GeForce RTX 3090";
  f.gpus[1].nvlinks = links(4, 2);
  v = with_id(run(f), "nvlink-down");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU1"});
}

TEST(TopologyRulesNvlinkConfig, BridgedPairNvCountFromTopo) {
  Facts f;
  f.gpus = {gpu(0, "NVIDIA H100 NVL"), gpu(1, "NVIDIA H100 NVL")};
  f.pairs = {pair(0, 1, PathType::kNVLink)};
  f.pairs[0].nvlinks = 12;
  EXPECT_TRUE(with_id(run(f), "nvlink-down").empty());
  f.pairs[0].nvlinks = 8;
  const auto v = with_id(run(f), "nvlink-down");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU0-GPU1"});
  EXPECT_TRUE(has(v[0].evidence, "NV8: fewer links than the 12")) << v[0].evidence;
}

TEST(TopologyRulesSys, SameNumaNodeSysSaysRootComplexesNotSockets) {
  Facts f;
  f.gpus = {gpu(0), gpu(1)};
  f.gpus[0].numa_node = 0;
  f.gpus[1].numa_node = 0;
  f.pairs = {pair(0, 1, PathType::kSYS)};
  auto v = with_id(run(f), "gpu-pair-crosses-numa");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_TRUE(has(v[0].evidence, "both GPUs report NUMA node 0")) << v[0].evidence;
  EXPECT_TRUE(has(v[0].evidence, "root complexes")) << v[0].evidence;
  EXPECT_FALSE(has(v[0].evidence, "crosses the CPU interconnect")) << v[0].evidence;
  EXPECT_FALSE(has(v[0].evidence, "on node 0")) << v[0].evidence;
  // Two nodes: the cross-socket text.
  f.gpus[1].numa_node = 1;
  v = with_id(run(f), "gpu-pair-crosses-numa");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_TRUE(has(v[0].evidence,
                  "crosses the CPU interconnect (GPU0 on NUMA node 0, GPU1 on "
                  "node 1)"))
      << v[0].evidence;
}

TEST(TopologyRulesP2p, GeForcePcieRefusalIsExpected) {
  Facts f;
  f.gpus = {gpu(0, "NVIDIA GeForce RTX 2080 Ti"), gpu(1, "NVIDIA GeForce RTX 2080 Ti")};
  GpuPair p = pair(0, 1, PathType::kPIX);
  p.p2p_read = P2PStatus::kNotSupported;
  p.p2p_write = P2PStatus::kNotSupported;
  f.pairs = {p};
  auto v = with_id(run(f), "p2p-unavailable");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kInfo);
  EXPECT_TRUE(has(v[0].evidence, "GeForce cards")) << v[0].evidence;
  // Datacenter cards on the same path: a warning.
  f.gpus = {gpu(0, "NVIDIA L40S"), gpu(1, "NVIDIA L40S")};
  v = with_id(run(f), "p2p-unavailable");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  // GeForce over an NVLink bridge should have P2P: a refusal there is a warning.
  f.gpus = {gpu(0, "NVIDIA GeForce RTX 3090"), gpu(1, "NVIDIA GeForce RTX 3090")};
  f.pairs[0].path = PathType::kNVLink;
  f.pairs[0].nvlinks = 4;
  v = with_id(run(f), "p2p-unavailable");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kWarning);
}

// nvbandwidth's plain output as each era prints a waived testcase (written for this test after
// nvbandwidth's output code: "Waiving <key>.", "<key> Waived.", "Waived: ").
std::string nvbandwidth_paste(const std::string& gpu_name, int gpus, const std::string& waived) {
  std::string s = "nvbandwidth Version: v0.4\nBuilt from Git version: \n\n";
  s += "CUDA Runtime Version: 12040\nCUDA Driver Version: 12040\nDriver Version: 550.54.15\n\n";
  for (int i = 0; i < gpus; ++i)
    s += "Device " + std::to_string(i) + ": " + gpu_name + " (00000000:" + std::to_string(17 + i) +
         ":00)\n";
  // The host → device matrix has one column per GPU (a matrix alone gives the GPU count).
  s += "\nRunning host_to_device_memcpy_ce.\n"
       "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n"
       "    ";
  for (int i = 0; i < gpus; ++i) s += "       " + std::to_string(i) + "  ";
  s += "\n 0";
  for (int i = 0; i < gpus; ++i) s += "     24.51";
  s += "\n\nSUM host_to_device_memcpy_ce " + std::to_string(24.51 * gpus) + "\n\n";
  s += waived;
  return s;
}

TEST(TopologyRulesP2p, NvbandwidthWaivingPeerTestsIsP2pUnavailable) {
  const std::string old_era =
      "Waiving device_to_device_memcpy_read_ce.\n\nWaiving device_to_device_memcpy_write_ce.\n\n";
  Facts f = import_text(nvbandwidth_paste("NVIDIA L40S", 2, old_era), "nvbw.txt", {});
  ASSERT_EQ(f.gpus.size(), 2u);
  auto v = with_id(run(f), "p2p-unavailable");
  ASSERT_EQ(v.size(), 1u) << dump(run(f));
  EXPECT_EQ(v[0].severity, Severity::kWarning);
  EXPECT_EQ(v[0].subjects, (std::vector<std::string>{"GPU0", "GPU1"}));
  EXPECT_TRUE(has(v[0].evidence,
                  "waived device_to_device_memcpy_read_ce, "
                  "device_to_device_memcpy_write_ce"))
      << v[0].evidence;
  // The middle era and the newest one (no name) say the same.
  for (const char* waived : {"device_to_device_memcpy_read_ce Waived.\n\n", "Waived: \n\n"}) {
    f = import_text(nvbandwidth_paste("NVIDIA L40S", 2, waived), "nvbw.txt", {});
    v = with_id(run(f), "p2p-unavailable");
    ASSERT_EQ(v.size(), 1u) << waived;
    EXPECT_EQ(v[0].severity, Severity::kWarning) << waived;
  }
  // GeForce: expected, info.
  f = import_text(nvbandwidth_paste("NVIDIA GeForce RTX 4090", 2, old_era), "nvbw.txt", {});
  v = with_id(run(f), "p2p-unavailable");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].severity, Severity::kInfo);
  EXPECT_TRUE(has(v[0].evidence, "GeForce cards")) << v[0].evidence;
  // One GPU: no peer to reach, a note only.
  f = import_text(nvbandwidth_paste("NVIDIA L40S", 1, old_era), "nvbw.txt", {});
  Out o = run(f);
  EXPECT_TRUE(with_id(o, "p2p-unavailable").empty()) << dump(o);
  // Peer tests that ran: quiet.
  const std::string ran =
      "Running device_to_device_memcpy_read_ce.\n"
      "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\n"
      "           0         1\n"
      " 0       N/A     40.12\n"
      " 1     40.20       N/A\n\n";
  f = import_text(nvbandwidth_paste("NVIDIA L40S", 2, ran), "nvbw.txt", {});
  o = run(f);
  EXPECT_TRUE(with_id(o, "p2p-unavailable").empty()) << dump(o);
}

TEST(TopologyRulesP2p, NcclPeerAccessFailureBehindLauncherPrefixes) {
  // As Ray, torchrun and a timestamping logger print NCCL's lines (written for this test after
  // NCCL's "host:pid:tid [dev] file:line NCCL WARN" format).
  for (const char* prefix : {"(pid=909608) ", "[rank1]: ", "2024-03-30 12:01:02,345 ", ""}) {
    const std::string p = prefix;
    const std::string log =
        p + "z-pc:909608:910337 [0] NCCL INFO Channel 00/02 :    0   1\n" + p +
        "z-pc:909608:910337 [0] NCCL INFO Channel 00 : 0[2d000] -> 1[2e000] via P2P/IPC\n" + p +
        "\n" + p +
        "z-pc:909608:910337 [0] transport/p2p.cc:238 NCCL WARN failed to open CUDA IPC handle : "
        "217 peer access is not supported between these two devices\n" +
        p + "z-pc:909608:910337 [0] NCCL INFO transport.cc:68 -> 1\n";
    Facts f = import_text(log, "nccl.log", {});
    Out o = run(f);
    auto v = with_id(o, "p2p-unavailable");
    ASSERT_EQ(v.size(), 1u) << prefix << "\n" << dump(o);
    EXPECT_EQ(v[0].severity, Severity::kWarning) << prefix;
    EXPECT_TRUE(has(v[0].evidence, "peer access is not supported")) << v[0].evidence;
    EXPECT_TRUE(has(v[0].evidence, "on z-pc")) << v[0].evidence;
  }
  // With the GPUs known as GeForce cards (bus ids match): the pair, info.
  Facts f = import_text(
      "z-pc:1:2 [0] NCCL INFO Channel 00 : 0[2d000] -> 1[2e000] via P2P/IPC\n"
      "z-pc:1:2 [0] transport/p2p.cc:238 NCCL WARN Cuda failure 'peer access is not supported "
      "between these two devices'\n",
      "nccl.log", {});
  f.gpus = {gpu(0, "NVIDIA GeForce RTX 3080"), gpu(1, "NVIDIA GeForce RTX 3080")};
  f.gpus[0].pci_bus_id = "0000:2d:00.0";
  f.gpus[1].pci_bus_id = "0000:2e:00.0";
  auto v = with_id(run(f), "p2p-unavailable");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].subjects, std::vector<std::string>{"GPU0-GPU1"});
  EXPECT_EQ(v[0].severity, Severity::kInfo);
  // A healthy P2P log: quiet.
  f = import_text("z-pc:1:2 [0] NCCL INFO Channel 00 : 0[2d000] -> 1[2e000] via P2P/IPC\n",
                  "nccl.log", {});
  EXPECT_TRUE(with_id(run(f), "p2p-unavailable").empty());
}

TEST(TopologyRulesSys, SameNumaNodeSysThroughTheTopoImporter) {
  // `nvidia-smi topo -m` of a box whose two GPUs are SYS apart yet on one NUMA node (written
  // for this test after nvidia-smi's layout).
  const std::string topo =
      "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
      "GPU0\t X \tSYS\t0-31\t0\n"
      "GPU1\tSYS\t X \t0-31\t0\n\n"
      "Legend:\n\n"
      "  X    = Self\n"
      "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes "
      "(e.g., QPI/UPI)\n";
  const Facts f = import_text(topo, "topo.txt", {});
  ASSERT_EQ(f.gpus.size(), 2u);
  const auto v = with_id(run(f), "gpu-pair-crosses-numa");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_TRUE(has(v[0].evidence, "both GPUs report NUMA node 0")) << v[0].evidence;
  EXPECT_FALSE(has(v[0].evidence, "node 0, GPU1 on node 0")) << v[0].evidence;
}

}  // namespace
}  // namespace gpuvet::rules
