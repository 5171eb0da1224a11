#include "import/nvsmi_topo.h"

#include <gtest/gtest.h>

#include "fixture_util.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "import/nvsmi_monitor.h"

namespace gpuvet::import {
namespace {

using namespace gpuvet::testing;

std::string local(const std::string& name) {
  return std::string(GPUVET_TEST_DATA) + "/fixtures/capture/topo/" + name;
}

Facts import_ok(Status (*fn)(std::string_view, Facts&), std::string_view text) {
  Facts f;
  Status s = fn(text, f);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return f;
}

const GpuFacts* gpu(const Facts& f, int index) {
  for (const auto& g : f.gpus)
    if (g.index == index) return &g;
  return nullptr;
}

const GpuPair* pair_of(const Facts& f, int a, int b) {
  for (const auto& p : f.pairs)
    if (p.a == a && p.b == b) return &p;
  return nullptr;
}

std::optional<PathType> nic_path(const Facts& f, const std::string& nic, int g) {
  for (const auto& n : f.nic_paths)
    if (n.nic == nic && n.gpu == g) return n.path;
  return std::nullopt;
}

std::vector<int> range(int lo, int hi) {
  std::vector<int> v;
  for (int i = lo; i <= hi; ++i) v.push_back(i);
  return v;
}

std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// ------------------------------------------------------------------ topo -m

TEST(TopoM, PrincetonEightH100Nv18SixNicsEmptyCpuAffinity) {
  READ_SHARED_OR_SKIP(text, "topo/princeton-della-8xh100-nv18-6nic-topo-m-empty-cpu-affinity.txt");
  EXPECT_GE(sniff_topo_m(text), 90);
  Facts f = import_ok(import_topo_m, text);
  ASSERT_EQ(f.gpus.size(), 8u);
  ASSERT_EQ(f.pairs.size(), 28u);
  for (const auto& p : f.pairs) {
    EXPECT_LT(p.a, p.b);
    EXPECT_EQ(p.path, PathType::kNVLink);
    EXPECT_EQ(p.nvlinks, 18);
  }
  EXPECT_EQ(f.nic_paths.size(), 6u * 8u);
  // NICn renamed through the NIC Legend.
  EXPECT_EQ(nic_path(f, "mlx5_0", 0), PathType::kPIX);
  EXPECT_EQ(nic_path(f, "mlx5_1", 0), PathType::kPIX);
  EXPECT_EQ(nic_path(f, "mlx5_0", 1), PathType::kNODE);
  EXPECT_EQ(nic_path(f, "mlx5_2", 3), PathType::kPIX);
  EXPECT_EQ(nic_path(f, "mlx5_5", 6), PathType::kPIX);
  EXPECT_FALSE(nic_path(f, "NIC0", 0).has_value());
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(gpu(f, i)->cpu_affinity.empty()) << i;
    EXPECT_EQ(gpu(f, i)->numa_node, 0) << i;
  }
  for (int i = 4; i < 8; ++i) {
    EXPECT_EQ(gpu(f, i)->cpu_affinity, std::vector<int>{1}) << i;
    EXPECT_EQ(gpu(f, i)->numa_node, 1) << i;
  }
  EXPECT_TRUE(has_note(f, "CPU Affinity empty for GPU0, GPU1, GPU2, GPU3"));
}

TEST(TopoM, H100VmAnsiHeaderOneGpu) {
  READ_LOCAL(text, "nvgpuexp-h100-80gb-hbm3-1gpu-vm-topo-m.txt");
  EXPECT_GE(sniff_topo_m(text), 90);
  Facts f = import_ok(import_topo_m, text);
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].index, 0);
  EXPECT_EQ(f.gpus[0].cpu_affinity, range(0, 19));
  EXPECT_EQ(f.gpus[0].numa_node, 0);
  EXPECT_TRUE(f.pairs.empty());
  EXPECT_TRUE(f.nic_paths.empty());
}

TEST(TopoM, WindowsTabOnlyEmptyCells) {
  READ_LOCAL(text, "nvgpuexp-rtx2080super-windows-topo-m.txt");
  Facts f = import_ok(import_topo_m, text);
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_TRUE(f.gpus[0].cpu_affinity.empty());
  EXPECT_FALSE(f.gpus[0].numa_node.has_value());
  EXPECT_TRUE(has_note(f, "CPU Affinity empty for GPU0"));
}

TEST(TopoM, Dgx1MixedNv1Nv2WithUnsortedMlx5Columns) {
  READ_LOCAL(text, "msccl-dgx1-8xv100-nv1-nv2-4x-mlx5-topo-m.txt");
  Facts f = import_ok(import_topo_m, text);
  ASSERT_EQ(f.gpus.size(), 8u);
  ASSERT_EQ(f.pairs.size(), 28u);
  EXPECT_EQ(pair_of(f, 0, 1)->nvlinks, 1);
  EXPECT_EQ(pair_of(f, 0, 3)->nvlinks, 2);
  EXPECT_EQ(pair_of(f, 0, 4)->path, PathType::kNVLink);
  EXPECT_EQ(pair_of(f, 0, 4)->nvlinks, 2);
  EXPECT_EQ(pair_of(f, 0, 5)->path, PathType::kSYS);
  EXPECT_FALSE(pair_of(f, 0, 5)->nvlinks.has_value());
  EXPECT_EQ(pair_of(f, 6, 7)->nvlinks, 2);
  // Columns are mlx5_0, mlx5_2, mlx5_1, mlx5_3: names follow the header, not position.
  EXPECT_EQ(nic_path(f, "mlx5_0", 0), PathType::kPIX);
  EXPECT_EQ(nic_path(f, "mlx5_1", 0), PathType::kPHB);
  EXPECT_EQ(nic_path(f, "mlx5_2", 0), PathType::kSYS);
  EXPECT_EQ(nic_path(f, "mlx5_2", 4), PathType::kPIX);
  EXPECT_EQ(nic_path(f, "mlx5_3", 7), PathType::kPIX);
  EXPECT_EQ(f.nic_paths.size(), 32u);
  EXPECT_EQ(gpu(f, 0)->cpu_affinity, concat(range(0, 19), range(40, 59)));
  EXPECT_EQ(gpu(f, 7)->cpu_affinity, concat(range(20, 39), range(60, 79)));
  EXPECT_FALSE(gpu(f, 0)->numa_node.has_value());  // no NUMA Affinity column
}

TEST(TopoM, AliyunHybridCubeMeshNoNuma) {
  READ_LOCAL(text, "aliyun-8xv100-nv1-nv2-hybrid-cube-mesh-no-numa-topo-m.txt");
  Facts f = import_ok(import_topo_m, text);
  ASSERT_EQ(f.pairs.size(), 28u);
  EXPECT_EQ(pair_of(f, 0, 6)->nvlinks, 2);
  EXPECT_EQ(pair_of(f, 0, 4)->path, PathType::kSYS);
  EXPECT_EQ(pair_of(f, 2, 4)->nvlinks, 1);
  for (const auto& g : f.gpus) {
    EXPECT_EQ(g.cpu_affinity, range(0, 95));
    EXPECT_FALSE(g.numa_node.has_value());
  }
  EXPECT_TRUE(f.nic_paths.empty());
}

TEST(TopoM, DgxA100Nps4TwelveOldStyleMlx5Columns) {
  READ_LOCAL(text, "gengwg-dgx-a100-8gpu-nv12-12x-mlx5-nps4-topo-m.txt");
  Facts f = import_ok(import_topo_m, text);
  ASSERT_EQ(f.gpus.size(), 8u);
  for (const auto& p : f.pairs) EXPECT_EQ(p.nvlinks, 12);
  EXPECT_EQ(f.nic_paths.size(), 96u);
  EXPECT_EQ(nic_path(f, "mlx5_0", 0), PathType::kPXB);
  EXPECT_EQ(nic_path(f, "mlx5_2", 0), PathType::kSYS);
  EXPECT_EQ(nic_path(f, "mlx5_9", 7), PathType::kPXB);
  EXPECT_EQ(nic_path(f, "mlx5_11", 7), PathType::kSYS);
  const std::vector<int> numa = {3, 3, 1, 1, 7, 7, 5, 5};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(gpu(f, i)->numa_node, numa[i]) << i;
  EXPECT_EQ(gpu(f, 0)->cpu_affinity, concat(range(48, 63), range(176, 191)));
  EXPECT_EQ(gpu(f, 4)->cpu_affinity, concat(range(112, 127), range(240, 255)));
}

TEST(TopoM, PcieOnlyMatrixMp) {
  READ_LOCAL(text, "gengwg-dgx1-topo-mp-pcie-only-matrix.txt");
  EXPECT_GT(sniff_topo_m(text), 0);
  Facts f = import_ok(import_topo_m, text);
  EXPECT_EQ(pair_of(f, 0, 1)->path, PathType::kPIX);
  EXPECT_EQ(pair_of(f, 0, 2)->path, PathType::kPHB);
  EXPECT_EQ(pair_of(f, 3, 4)->path, PathType::kSYS);
  EXPECT_EQ(nic_path(f, "mlx5_1", 2), PathType::kPIX);
  EXPECT_EQ(gpu(f, 5)->numa_node, 1);
}

TEST(TopoM, SpaceAlignedClippedCopyWithNicRowsOnly) {
  READ_LOCAL(text, "llmaction-8x-h800-nv8-4nic-topo-matrix-terminal-clipped.txt");
  EXPECT_GE(sniff_topo_m(text), 90);
  Facts f = import_ok(import_topo_m, text);
  ASSERT_EQ(f.gpus.size(), 8u);
  ASSERT_EQ(f.pairs.size(), 28u);
  for (const auto& p : f.pairs) EXPECT_EQ(p.nvlinks, 8);
  // The GPU rows have no NIC columns here: the NIC rows give the paths, legend-renamed.
  EXPECT_EQ(f.nic_paths.size(), 32u);
  EXPECT_EQ(nic_path(f, "mlx5_0", 1), PathType::kPIX);
  EXPECT_EQ(nic_path(f, "mlx5_0", 0), PathType::kNODE);
  EXPECT_EQ(nic_path(f, "mlx5_1", 3), PathType::kPIX);
  EXPECT_EQ(nic_path(f, "mlx5_3", 7), PathType::kPIX);
  EXPECT_EQ(nic_path(f, "mlx5_3", 0), PathType::kSYS);
  // "-31,64-95" lost its leading 0 in the copy: not a CPU list, so unknown and noted.
  EXPECT_TRUE(gpu(f, 0)->cpu_affinity.empty());
  EXPECT_TRUE(has_note(f, "\"-31,64-95\" of GPU0, GPU1, GPU2, GPU3 is not a CPU list"));
  EXPECT_EQ(gpu(f, 0)->numa_node, 0);
  EXPECT_EQ(gpu(f, 4)->cpu_affinity, concat(range(32, 63), range(96, 127)));
  EXPECT_EQ(gpu(f, 7)->numa_node, 1);
}

TEST(TopoM, SpaceAlignedWithGpuNumaId) {
  READ_SHARED_OR_SKIP(text, "topo/autodl-2x-rtx2080ti-pix-topo-m.txt");
  Facts f = import_ok(import_topo_m, text);
  ASSERT_EQ(f.pairs.size(), 1u);
  EXPECT_EQ(f.pairs[0].path, PathType::kPIX);
  EXPECT_EQ(gpu(f, 1)->cpu_affinity, concat(range(24, 47), range(72, 95)));
  EXPECT_EQ(gpu(f, 1)->numa_node, 1);
}

TEST(TopoM, EmptyNumaCellFollowedByExtraNa) {
  READ_SHARED_OR_SKIP(text, "topo/aws-p3.8xlarge-4xv100-nv1-nv2-topo-m.txt");
  Facts f = import_ok(import_topo_m, text);
  ASSERT_EQ(f.gpus.size(), 4u);
  EXPECT_EQ(pair_of(f, 0, 3)->nvlinks, 2);
  EXPECT_EQ(gpu(f, 2)->cpu_affinity, range(0, 31));
  EXPECT_FALSE(gpu(f, 2)->numa_node.has_value());
}

TEST(TopoM, Power9NonContiguousNumaIds) {
  READ_SHARED_OR_SKIP(text, "topo/princeton-traverse-power9-4xv100-nv3-numa8-topo-m.txt");
  Facts f = import_ok(import_topo_m, text);
  EXPECT_EQ(pair_of(f, 0, 1)->nvlinks, 3);
  EXPECT_EQ(pair_of(f, 1, 2)->path, PathType::kSYS);
  EXPECT_EQ(gpu(f, 2)->numa_node, 8);
  EXPECT_EQ(gpu(f, 3)->cpu_affinity, range(64, 127));
  EXPECT_EQ(nic_path(f, "mlx5_2", 3), PathType::kNODE);
}

TEST(TopoM, TwoA100SysAcrossSockets) {
  READ_SHARED_OR_SKIP(text, "topo/princeton-della-2xa100-pcie-sys-mlx5-topo-m.txt");
  Facts f = import_ok(import_topo_m, text);
  ASSERT_EQ(f.pairs.size(), 1u);
  EXPECT_EQ(f.pairs[0].path, PathType::kSYS);
  EXPECT_EQ(nic_path(f, "mlx5_1", 1), PathType::kNODE);
  EXPECT_EQ(gpu(f, 1)->cpu_affinity, range(64, 127));
  EXPECT_EQ(gpu(f, 1)->numa_node, 1);
}

TEST(TopoM, OurH200Output) {
  auto text = read_text(std::string(GPUVET_TEST_DATA) +
                        "/../docs/results/h200-2026-12-02/nvidia-smi-topo-m.txt");
  ASSERT_TRUE(text) << "docs/results H200 output missing";
  EXPECT_GE(sniff_topo_m(*text), 90);
  Facts f = import_ok(import_topo_m, *text);
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].cpu_affinity, range(0, 15));
  EXPECT_EQ(f.gpus[0].numa_node, 0);
}

TEST(TopoM, CrlfLegacySocAndGpuNumaIdFallback) {
  const std::string text =
      "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\r\n"
      "GPU0\t X \tSOC\t0-3\tN/A\t\t4\r\n"
      "GPU1\tSOC\t X \t4-7\t1\t\t5\r\n";
  Facts f = import_ok(import_topo_m, text);
  ASSERT_EQ(f.pairs.size(), 1u);
  EXPECT_EQ(f.pairs[0].path, PathType::kSYS);
  EXPECT_EQ(gpu(f, 0)->numa_node, 4);  // from GPU NUMA ID, NUMA Affinity being N/A
  EXPECT_EQ(gpu(f, 1)->numa_node, 1);  // NUMA Affinity wins
  EXPECT_EQ(gpu(f, 1)->cpu_affinity, range(4, 7));
  EXPECT_TRUE(has_note(f, "GPU NUMA ID"));
}

TEST(TopoM, AsymmetricMatrixNoted) {
  const std::string text =
      "\tGPU0\tGPU1\tCPU Affinity\n"
      "GPU0\t X \tNV4\t0-3\n"
      "GPU1\tPIX\t X \t0-3\n";
  Facts f = import_ok(import_topo_m, text);
  ASSERT_EQ(f.pairs.size(), 1u);
  EXPECT_EQ(f.pairs[0].path, PathType::kNVLink);
  EXPECT_EQ(f.pairs[0].nvlinks, 4);
  EXPECT_TRUE(has_note(f, "differs by direction"));
}

TEST(TopoM, NoRowsIsInvalidInputWithNote) {
  Facts f;
  EXPECT_FALSE(import_topo_m("\tGPU0\tGPU1\tCPU Affinity\n", f).is_ok());
  EXPECT_FALSE(f.notes.empty());
  Facts g;
  EXPECT_FALSE(import_topo_m("hello\nworld\n", g).is_ok());
  EXPECT_FALSE(g.notes.empty());
}

// ------------------------------------------------------------------ topo -p2p

TEST(P2pMatrix, EightH100AllOkTakenAsRead) {
  READ_SHARED_OR_SKIP(text, "p2p/mleng-8x-h100-topo-p2p-r-all-ok.txt");
  EXPECT_GE(sniff_topo_p2p(text), 90);
  EXPECT_EQ(sniff_topo_m(text), 0);
  Facts f = import_ok(import_topo_p2p, text);
  ASSERT_EQ(f.gpus.size(), 8u);
  ASSERT_EQ(f.pairs.size(), 28u);
  for (const auto& p : f.pairs) {
    EXPECT_EQ(p.p2p_read, P2PStatus::kOk);
    EXPECT_FALSE(p.p2p_write.has_value());
    EXPECT_EQ(p.path, PathType::kUnknown);  // the p2p matrix says nothing of the path
  }
  EXPECT_TRUE(has_note(f, "taken as P2P read"));
}

TEST(P2pMatrix, ChipsetNotSupportedWithoutLegend) {
  READ_SHARED_OR_SKIP(text, "p2p/mleng-2x-l4-topo-p2p-r-cns-chipset-not-supported.txt");
  EXPECT_GT(sniff_topo_p2p(text), 0);
  Facts f = import_ok(import_topo_p2p, text);
  ASSERT_EQ(f.pairs.size(), 1u);
  EXPECT_EQ(f.pairs[0].p2p_read, P2PStatus::kChipsetNotSupported);
}

TEST(P2pMatrix, GpuNotSupportedTabsAndSpaces) {
  for (const char* rel :
       {"p2p/club3090-issue1229-2x-rtx5090-topo-p2p-rw-gns.txt",
        "p2p/club3090-issue1130-2x-rtx5090-pcie5-x8-topo-p2p-rw-gns-space-aligned.txt"}) {
    READ_SHARED_OR_SKIP(text, rel);
    EXPECT_GE(sniff_topo_p2p(text), 90) << rel;
    Facts f = import_ok(import_topo_p2p, text);
    ASSERT_EQ(f.pairs.size(), 1u) << rel;
    EXPECT_EQ(f.pairs[0].a, 0);
    EXPECT_EQ(f.pairs[0].b, 1);
    EXPECT_EQ(f.pairs[0].p2p_read, P2PStatus::kGpuNotSupported) << rel;
  }
}

TEST(P2pMatrix, NotSupportedOnPixPair) {
  READ_SHARED_OR_SKIP(text, "p2p/autodl-2x-rtx2080ti-topo-p2p-p-not-supported.txt");
  Facts f = import_ok(import_topo_p2p, text);
  ASSERT_EQ(f.pairs.size(), 1u);
  EXPECT_EQ(f.pairs[0].p2p_read, P2PStatus::kNotSupported);
}

TEST(P2pMatrix, CapabilityFromCommandLine) {
  const std::string text =
      "$ nvidia-smi topo -p2p w\n"
      " \tGPU0\tGPU1\tGPU2\t\n"
      " GPU0\tX\tOK\tDR\t\n"
      " GPU1\tOK\tX\tTNS\t\n"
      " GPU2\tDR\tTNS\tX\t\n";
  EXPECT_GT(sniff_topo_p2p(text), 0);
  Facts f = import_ok(import_topo_p2p, text);
  ASSERT_EQ(f.pairs.size(), 3u);
  EXPECT_EQ(pair_of(f, 0, 1)->p2p_write, P2PStatus::kOk);
  EXPECT_EQ(pair_of(f, 0, 2)->p2p_write, P2PStatus::kDisabledByRegkey);
  EXPECT_EQ(pair_of(f, 1, 2)->p2p_write, P2PStatus::kTopologyNotSupported);
  EXPECT_FALSE(pair_of(f, 0, 1)->p2p_read.has_value());
  EXPECT_FALSE(has_note(f, "not stated"));
}

TEST(P2pMatrix, AtomicsAndNvlinkTitles) {
  Facts f = import_ok(import_topo_p2p,
                      "nvidia-smi topo -p2p a\n\tGPU0\tGPU1\nGPU0\tX\tNS\nGPU1\tNS\tX\n");
  ASSERT_EQ(f.pairs.size(), 1u);
  EXPECT_EQ(f.pairs[0].p2p_atomics, P2PStatus::kNotSupported);
  Facts g = import_ok(import_topo_p2p, "NVLink P2P status\n\tGPU0\tGPU1\nGPU0\tX\tU\nGPU1\tU\tX\n");
  EXPECT_EQ(g.pairs[0].p2p_nvlink, P2PStatus::kUnknown);
}

TEST(P2pMatrix, PciePropertyIsItsOwnField) {
  // Both directions given; the weaker is kept, for the PCIe property as for the others.
  Facts f = import_ok(import_topo_p2p,
                      "nvidia-smi topo -p2p p\n\tGPU0\tGPU1\nGPU0\tX\tOK\nGPU1\tCNS\tX\n");
  ASSERT_EQ(f.pairs.size(), 1u);
  EXPECT_EQ(f.pairs[0].p2p_pcie, P2PStatus::kChipsetNotSupported);
  EXPECT_FALSE(f.pairs[0].p2p_read.has_value());
  EXPECT_FALSE(has_note(f, "not stated"));
  EXPECT_FALSE(has_note(f, "no field"));
}

TEST(P2pMatrix, AsymmetricKeepsTheWeakerDirection) {
  Facts f = import_ok(import_topo_p2p, "\tGPU0\tGPU1\nGPU0\tX\tOK\nGPU1\tCNS\tX\n");
  ASSERT_EQ(f.pairs.size(), 1u);
  EXPECT_EQ(f.pairs[0].p2p_read, P2PStatus::kChipsetNotSupported);
  EXPECT_TRUE(has_note(f, "differs by direction"));
}

TEST(P2pMatrix, PropertyMatrixBehindACommentIsThePcieField) {
  Facts f = import_ok(import_topo_p2p,
                      "# nvidia-smi topo -p2p p\n\tGPU0\tGPU1\nGPU0\tX\tNS\nGPU1\tNS\tX\n");
  ASSERT_EQ(f.pairs.size(), 1u);
  EXPECT_EQ(f.pairs[0].p2p_pcie, P2PStatus::kNotSupported);
  EXPECT_FALSE(f.pairs[0].p2p_read.has_value());
}

// ------------------------------------------------------------------ nvlink -s

TEST(NvlinkStatus, H100EighteenLinks) {
  READ_LOCAL(text, "nvgpuexp-h100-80gb-hbm3-nvlink-s.txt");
  EXPECT_GE(sniff_nvlink_status(text), 90);
  Facts f = import_ok(import_nvlink_status, text);
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(f.gpus[0].uuid, "GPU-00000000-0000-0000-0000-000000000000");
  ASSERT_EQ(f.gpus[0].nvlinks.size(), 18u);
  for (int i = 0; i < 18; ++i) {
    EXPECT_EQ(f.gpus[0].nvlinks[i].link, i);
    EXPECT_EQ(f.gpus[0].nvlinks[i].active, true);
    EXPECT_DOUBLE_EQ(*f.gpus[0].nvlinks[i].speed_gbps, 26.562);
  }
}

TEST(NvlinkStatus, EightA100TwelveLinksNoTrailingNewline) {
  READ_LOCAL(text, "gpud-8x-a100-sxm4-80gb-nvlink-s.txt");
  Facts f = import_ok(import_nvlink_status, text);
  ASSERT_EQ(f.gpus.size(), 8u);
  for (const auto& g : f.gpus) {
    ASSERT_EQ(g.nvlinks.size(), 12u) << g.index;
    EXPECT_DOUBLE_EQ(*g.nvlinks[11].speed_gbps, 25.0);
  }
  EXPECT_EQ(f.gpus[3].uuid, "GPU-6e4fbadc-10d9-a63a-8988-9a0d320ff1a0");
}

TEST(NvlinkStatus, ElidedGpusNoted) {
  READ_LOCAL(text, "llmaction-8x-h800-nvlink-status-8links-elided.txt");
  Facts f = import_ok(import_nvlink_status, text);
  ASSERT_EQ(f.gpus.size(), 3u);
  EXPECT_EQ(f.gpus[2].index, 7);
  EXPECT_EQ(f.gpus[2].nvlinks.size(), 8u);
  EXPECT_TRUE(has_note(f, "elided"));
}

TEST(NvlinkStatus, NoNvlinkDeviceKeptWithoutLinks) {
  READ_LOCAL(text, "nvgpuexp-l40s-nvlink-s-unsupported.txt");
  EXPECT_GE(sniff_nvlink_status(text), 80);
  Facts f = import_ok(import_nvlink_status, text);
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].name, "NVIDIA L40S");
  EXPECT_TRUE(f.gpus[0].nvlinks.empty());
  EXPECT_TRUE(has_note(f, "GPU0: \"Device does not have or support Nvlink\""));
}

TEST(NvlinkStatus, MixedActiveAndInactive) {
  READ_SHARED_OR_SKIP(text, "nvlink/hpe-dl380a-2x-h100-pcie-nvlink-s-6-inactive-links.txt");
  Facts f = import_ok(import_nvlink_status, text);
  ASSERT_EQ(f.gpus.size(), 2u);
  for (const auto& g : f.gpus) {
    ASSERT_EQ(g.nvlinks.size(), 18u);
    int active = 0;
    for (const auto& l : g.nvlinks) {
      if (*l.active) {
        ++active;
        EXPECT_DOUBLE_EQ(*l.speed_gbps, 26.562);
      } else {
        EXPECT_FALSE(l.speed_gbps.has_value());
      }
    }
    EXPECT_EQ(active, 12);
    EXPECT_EQ(g.nvlinks[4].active, false);
    EXPECT_EQ(g.nvlinks[17].active, false);
  }
}

TEST(NvlinkStatus, AllLinksInactiveMessage) {
  READ_SHARED_OR_SKIP(text, "nvlink/hpe-dl380-2x-a100-pcie-nvlink-s-all-links-inactive.txt");
  Facts f = import_ok(import_nvlink_status, text);
  ASSERT_EQ(f.gpus.size(), 2u);
  EXPECT_TRUE(f.gpus[1].nvlinks.empty());
  EXPECT_TRUE(has_note(f, "GPU0, GPU1: NVML could not read NVLink information"));
}

TEST(NvlinkStatus, RemoteMapFillsRemoteBusIds) {
  READ_SHARED_OR_SKIP(text, "nvlink/hpe-dl380a-2x-h100-pcie-nvlink-R-remote.txt");
  EXPECT_GT(sniff_nvlink_status(text), 0);
  Facts f = import_ok(import_nvlink_status, text);
  ASSERT_EQ(f.gpus.size(), 2u);
  ASSERT_EQ(f.gpus[0].nvlinks.size(), 12u);
  EXPECT_EQ(f.gpus[0].nvlinks[4].remote_pci_bus_id, "0000:d5:00.0");
  EXPECT_EQ(f.gpus[1].nvlinks[11].remote_pci_bus_id, "0000:c2:00.0");
  EXPECT_FALSE(f.gpus[0].nvlinks[0].active.has_value());
}

TEST(NvlinkStatus, DcgmiGrid) {
  READ_SHARED_OR_SKIP(text, "nvlink/dcgm-exporter-issue576-dcgmi-nvlink-s-8xh100.txt");
  EXPECT_GE(sniff_nvlink_status(text), 90);
  Facts f = import_ok(import_nvlink_status, text);
  ASSERT_EQ(f.gpus.size(), 8u);
  for (const auto& g : f.gpus) {
    ASSERT_EQ(g.nvlinks.size(), 18u);
    EXPECT_EQ(g.nvlinks[0].active, true);
  }
  Facts d = import_ok(import_nvlink_status, "GPUs:\n    gpuId 0:\n        U D X _ U\n");
  ASSERT_EQ(d.gpus.size(), 1u);
  ASSERT_EQ(d.gpus[0].nvlinks.size(), 4u);  // "_" is not a link
  EXPECT_EQ(d.gpus[0].nvlinks[1].active, false);
  EXPECT_EQ(d.gpus[0].nvlinks[2].active, false);
  EXPECT_EQ(d.gpus[0].nvlinks[3].link, 4);
}

TEST(NvlinkStatus, CapabilitiesAndCountersAreNotStatus) {
  READ_LOCAL(caps, "llmaction-h800-nvlink-capabilities.txt");
  READ_LOCAL(counters, "llmaction-h800-nvlink-gt-d-r-idle-vs-training-counters.txt");
  EXPECT_EQ(sniff_nvlink_status(caps), 0);
  EXPECT_EQ(sniff_nvlink_status(counters), 0);
  // `nvidia-smi -L` has the same "GPU n: … (UUID: …)" lines and no link lines.
  EXPECT_EQ(sniff_nvlink_status("GPU 0: NVIDIA H200 (UUID: GPU-1234)\n"
                                "GPU 1: NVIDIA H200 (UUID: GPU-5678)\n"),
            0);
  Facts f;
  EXPECT_FALSE(import_nvlink_status(counters, f).is_ok());
  EXPECT_TRUE(has_note(f, "counter"));
}

// ------------------------------------------------------------------ every real sample

using Sniff = int (*)(std::string_view);
using Parse = Status (*)(std::string_view, Facts&);
struct Format {
  const char* id;
  Sniff sniff;
  Parse parse;
};
const std::vector<Format>& formats() {
  static const std::vector<Format> f = {
      {"topo-m", sniff_topo_m, import_topo_m},
      {"topo-p2p", sniff_topo_p2p, import_topo_p2p},
      {"nvlink-status", sniff_nvlink_status, import_nvlink_status},
      {"nvidia-smi-pmon", sniff_pmon, import_pmon},
      {"nvidia-smi-dmon", sniff_dmon, import_dmon}};
  return f;
}

// Files of the shared folders that none of these importers accepts, on purpose.
const std::map<std::string, std::string>& deliberately_unsupported() {
  static const std::map<std::string, std::string> m = {
      {"topo/gengwg-dgx-a100-topo-c-cpu-affinity-query.txt",
       "topo -c: GPUs near one CPU, not a per-GPU affinity"},
      {"nvlink/llmaction-h800-nvlink-capabilities.txt", "nvlink -c: no capability field"},
      {"nvlink/llmaction-h800-nvlink-gt-d-r-idle-vs-training-counters.txt",
       "nvlink -gt d/r: traffic counters, no field"},
  };
  return m;
}

std::size_t fact_count(const Facts& f) {
  std::size_t n = f.gpus.size() + f.pairs.size() + f.nic_paths.size() + f.processes.size();
  for (const auto& g : f.gpus) n += g.nvlinks.size();
  return n;
}

void check_folder(const std::string& folder, const std::string& dir) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << dir;
  for (const auto& p : files) {
    if (p.filename() == "README.md") continue;
    const std::string rel = folder + "/" + p.filename().string();
    auto text = read_text(p.string());
    ASSERT_TRUE(text) << rel;
    int best = 0;
    const Format* winner = nullptr;
    int positives = 0;
    for (const auto& fmt : formats()) {
      const int s = fmt.sniff(*text);
      EXPECT_GE(s, 0);
      EXPECT_LE(s, 100);
      if (s > 0) ++positives;
      if (s > best) {
        best = s;
        winner = &fmt;
      }
    }
    if (deliberately_unsupported().count(rel)) {
      EXPECT_EQ(positives, 0) << rel << " should be rejected by every sniff";
      continue;
    }
    ASSERT_NE(winner, nullptr) << rel << " recognised by no importer";
    EXPECT_EQ(positives, 1) << rel << " claimed by several importers";
    EXPECT_GE(best, 20) << rel;
    Facts f;
    Status s = winner->parse(*text, f);
    EXPECT_TRUE(s.is_ok()) << rel << ": " << s.to_string();
    EXPECT_GE(fact_count(f), 1u) << rel;
    const std::string expect = folder == "topo"     ? "topo-m"
                               : folder == "p2p"    ? "topo-p2p"
                               : folder == "nvlink" ? "nvlink-status"
                               : p.filename().string().find("pmon") != std::string::npos
                                   ? "nvidia-smi-pmon"
                                   : "nvidia-smi-dmon";
    EXPECT_EQ(winner->id, expect) << rel;
  }
}

TEST(TopoRealSamples, EverySharedFileParsesOrIsDeliberatelyRejected) {
  const std::string root = GPUVET_SHARED_FIXTURES;
  GPUVET_REQUIRE_SHARED(root);
  for (const char* folder : {"topo", "p2p", "nvlink", "pmon-dmon"})
    check_folder(folder, root + "/" + folder);
}

TEST(TopoRealSamples, EveryCopiedFileParsesOrIsDeliberatelyRejected) {
  // The copied files, with the folder their provenance line names.
  const std::string dir = std::string(GPUVET_TEST_DATA) + "/fixtures/capture/topo";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name == "README.md") continue;
    auto text = read_text(e.path().string());
    ASSERT_TRUE(text);
    int positives = 0;
    for (const auto& fmt : formats()) positives += fmt.sniff(*text) > 0;
    bool rejected = false;
    for (const auto& [rel, why] : deliberately_unsupported())
      if (rel.size() > name.size() && rel.substr(rel.size() - name.size()) == name) rejected = true;
    EXPECT_EQ(positives, rejected ? 0 : 1) << name;
  }
}

// ------------------------------------------------------------------ hostile input

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

TEST(TopoRobustness, RandomBytesAndEmptyAreNotRecognised) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    const std::string junk = random_bytes(4096, seed);
    for (const auto& fmt : formats()) {
      EXPECT_EQ(fmt.sniff(junk), 0) << fmt.id;
      Facts f;
      (void)fmt.parse(junk, f);
    }
  }
  for (const auto& fmt : formats()) {
    EXPECT_EQ(fmt.sniff(""), 0) << fmt.id;
    Facts f;
    EXPECT_FALSE(fmt.parse("", f).is_ok()) << fmt.id;
  }
}

TEST(TopoRobustness, EveryPrefixOfRealSamplesIsSafe) {
  for (const char* name :
       {"llmaction-8x-h800-nv8-4nic-topo-matrix-terminal-clipped.txt",
        "gengwg-dgx-a100-8gpu-nv12-12x-mlx5-nps4-topo-m.txt",
        "llmaction-8x-h800-nvlink-status-8links-elided.txt",
        "nvgpuexp-h100-80gb-hbm3-load-pmon.txt", "nvgpuexp-l40s-load-dmon.txt"}) {
    READ_LOCAL(text, name);
    for (std::size_t n = 0; n <= text.size(); n += 7) {
      const std::string_view cut(text.data(), n);
      for (const auto& fmt : formats()) {
        const int s = fmt.sniff(cut);
        EXPECT_GE(s, 0);
        Facts f;
        (void)fmt.parse(cut, f);
        for (const auto& p : f.pairs) EXPECT_LT(p.a, p.b);
      }
    }
  }
}

TEST(TopoRobustness, TenMegabyteInputsInBoundedTime) {
  std::vector<std::string> inputs;
  inputs.push_back(random_bytes(10u << 20, 7));
  std::string header_storm;
  while (header_storm.size() < (10u << 20)) header_storm += "\tGPU0\tGPU1\tCPU Affinity\n";
  inputs.push_back(header_storm);
  std::string row;
  row = "\tGPU0";
  for (int i = 1; i < 2000; ++i) row += "\tGPU" + std::to_string(i);
  row += "\n";
  std::string big = row;
  while (big.size() < (10u << 20)) big += "GPU3\t X \tNV18\tNV18\tPIX\tSYS\t0-3\t0\n";
  inputs.push_back(big);
  std::string one_line(10u << 20, 'N');  // one huge line
  inputs.push_back(one_line);
  std::string links = "GPU 0: X (UUID: GPU-1)\n";
  while (links.size() < (10u << 20)) links += "\t Link 7: 26.562 GB/s\n";
  inputs.push_back(links);
  std::string pmon = "# gpu pid type sm mem command\n";
  for (int i = 0; pmon.size() < (10u << 20); ++i)
    pmon += "0 " + std::to_string(i) + " C 1 1 proc" + std::to_string(i) + "\n";
  inputs.push_back(pmon);
  for (const auto& in : inputs) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& fmt : formats()) {
      (void)fmt.sniff(in);
      Facts f;
      (void)fmt.parse(in, f);
      EXPECT_LE(f.notes.size(), 64u);
      EXPECT_LE(f.gpus.size(), 1024u);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(s, 10.0);
  }
}

}  // namespace
}  // namespace gpuvet::import
