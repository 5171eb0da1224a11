// hw/expectations_test.cc — the theoretical figures: PCIe from transfer rate, width and line
// encoding with the TLP/DLLP protocol ceiling, NVLink from the published per-link rates, device
// memory from data sheets. Literal figures, so a changed rate, encoding, factor or row fails.
#include "hw/expectations.h"

#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "hw/facts_query.h"
#include "hw/test_facts.h"

namespace gpuvet::hw {
namespace {

using test::gpu;
using test::pair;

bool has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// ---------------------------------------------------------------- PCIe

TEST(Expectations, PcieTheoreticalIsRateTimesWidthTimesEncoding) {
  auto theoretical = [](int gen, int width) { return expected_pcie(gen, width)->theoretical_gbps; };
  // 2.5 GT/s × 16 × 8/10 / 8 = 4.0; 5 GT/s × 16 × 8/10 / 8 = 8.0 (8b/10b).
  EXPECT_NEAR(theoretical(1, 16), 4.0, 1e-9);
  EXPECT_NEAR(theoretical(2, 16), 8.0, 1e-9);
  // 128b/130b: 8 GT/s × 8 → 7.877; 16 GT/s × 16 → 31.508; 32 GT/s × 16 → 63.015.
  EXPECT_NEAR(theoretical(3, 8), 8.0 * 8 * 128 / 130 / 8, 1e-9);
  EXPECT_NEAR(theoretical(3, 8), 7.88, 0.005);
  EXPECT_NEAR(theoretical(3, 16), 15.75, 0.01);
  EXPECT_NEAR(theoretical(4, 16), 31.5, 0.01);
  EXPECT_NEAR(theoretical(4, 16), 16.0 * 16 * 128 / 130 / 8, 1e-9);
  EXPECT_NEAR(theoretical(5, 16), 63.0, 0.02);
  EXPECT_NEAR(theoretical(5, 8), 31.5, 0.01);
  // Gen6 Flit Mode: 64 GT/s × 16 × 242/256 / 8 = 121.0.
  EXPECT_NEAR(theoretical(6, 16), 121.0, 1e-9);
  // The same figure the topology rules use.
  EXPECT_DOUBLE_EQ(*pcie_gbps(4, 16), theoretical(4, 16));

  EXPECT_FALSE(expected_pcie(0, 16));
  EXPECT_FALSE(expected_pcie(7, 16));
  EXPECT_FALSE(expected_pcie(4, 0));
  EXPECT_FALSE(expected_pcie(4, 64));
}

TEST(Expectations, PcieProtocolEfficiencyIsTheDocumentedArithmetic) {
  // 256-byte payload; 4-byte STP token + 16-byte 4DW header + 4-byte LCRC; one 8-byte DLLP
  // per 2 TLPs: 256 / 284.
  EXPECT_DOUBLE_EQ(kPcieAssumedMaxPayload, 256);
  EXPECT_DOUBLE_EQ(kPcieTlpOverhead, 24);
  EXPECT_DOUBLE_EQ(kPcieDllpPerTlp, 4);
  EXPECT_DOUBLE_EQ(kPcieProtocolEfficiency, 256.0 / 284.0);
  EXPECT_NEAR(kPcieProtocolEfficiency, 0.901, 0.001);
  EXPECT_GT(kPcieProtocolEfficiency, 0.86);
  EXPECT_LT(kPcieProtocolEfficiency, 0.92);
  // Flit Mode: 236 of 242 bytes are TLP bytes, 16-byte header, no STP or LCRC.
  EXPECT_DOUBLE_EQ(kPcieFlitProtocolEfficiency, 236.0 / 242.0 * 256.0 / 272.0);
  EXPECT_NEAR(kPcieFlitProtocolEfficiency, 0.918, 0.001);

  auto g5 = expected_pcie(5, 16);
  ASSERT_TRUE(g5);
  EXPECT_DOUBLE_EQ(g5->protocol_efficiency, kPcieProtocolEfficiency);
  EXPECT_NEAR(g5->protocol_ceiling_gbps, 63.015 * 256 / 284, 0.01);  // 56.8
  auto g4 = expected_pcie(4, 16);
  EXPECT_NEAR(g4->protocol_ceiling_gbps, 28.4, 0.01);
  auto g6 = expected_pcie(6, 16);
  EXPECT_DOUBLE_EQ(g6->protocol_efficiency, kPcieFlitProtocolEfficiency);
  EXPECT_NEAR(g6->protocol_ceiling_gbps, 111.06, 0.01);
}

TEST(Expectations, HostDeviceUsesTheMaximumLink) {
  GpuFacts g = gpu(0, "NVIDIA H200", 5, 16);
  g.pcie.width_current = 8;  // trained down: the expectation stays x16
  auto e = expected_host_device(g);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->gen, 5);
  EXPECT_EQ(e->width, 16);
  EXPECT_NEAR(e->theoretical_gbps, 63.0, 0.02);
  g.pcie.width_max.reset();
  EXPECT_FALSE(expected_host_device(g));
}

// ---------------------------------------------------------------- NVLink

TEST(Expectations, NvlinkRateByModelAndVersion) {
  EXPECT_EQ(nvlink_link_gbps_for_model("NVIDIA H200"), 25.0);
  EXPECT_EQ(nvlink_link_gbps_for_model("NVIDIA H100 80GB HBM3"), 25.0);
  EXPECT_EQ(nvlink_link_gbps_for_model("NVIDIA A100-SXM4-80GB"), 25.0);
  EXPECT_EQ(nvlink_link_gbps_for_model("Tesla V100-SXM2-32GB"), 25.0);
  EXPECT_EQ(nvlink_link_gbps_for_model("Tesla P100-SXM2-16GB"), 20.0);
  EXPECT_EQ(nvlink_link_gbps_for_model("NVIDIA B200"), 50.0);
  EXPECT_EQ(nvlink_link_gbps_for_model("nvidia gb200"), 50.0);
  EXPECT_FALSE(nvlink_link_gbps_for_model("NVIDIA L40S"));
  EXPECT_FALSE(nvlink_link_gbps_for_model("NVIDIA GeForce RTX 4090"));
  EXPECT_EQ(nvlink_link_gbps_for_version(1), 20.0);
  EXPECT_EQ(nvlink_link_gbps_for_version(2), 25.0);
  EXPECT_EQ(nvlink_link_gbps_for_version(3), 25.0);
  EXPECT_EQ(nvlink_link_gbps_for_version(4), 25.0);
  EXPECT_EQ(nvlink_link_gbps_for_version(5), 50.0);
  EXPECT_FALSE(nvlink_link_gbps_for_version(0));
  EXPECT_FALSE(nvlink_link_gbps_for_version(9));
}

TEST(Expectations, PeerOverNvlinkIsLinksTimesThePublishedRate) {
  Facts f;
  f.gpus = {gpu(0, "NVIDIA H200", 5, 16), gpu(1, "NVIDIA H200", 5, 16)};
  f.pairs = {pair(0, 1, PathType::kNVLink, 18)};
  auto e = expected_peer(f, f.pairs[0]);
  ASSERT_TRUE(e);
  // H200 NV18: 900 GB/s both directions together (data sheet) = 450 per direction.
  EXPECT_DOUBLE_EQ(e->theoretical_gbps, 450);
  EXPECT_DOUBLE_EQ(e->allowance, 1);
  EXPECT_TRUE(e->allowance_reason.empty());
  EXPECT_TRUE(has(e->basis, "18 links × 25 GB/s")) << e->basis;

  // The links report their signalling rate (26.562 GB/s on Hopper): the published figure
  // for the model stays the theoretical one.
  for (auto& g : f.gpus)
    for (int l = 0; l < 18; ++l) {
      NvLink link;
      link.link = l;
      link.active = true;
      link.remote_gpu = 1 - g.index;
      link.speed_gbps = 26.562;
      g.nvlinks.push_back(link);
    }
  EXPECT_DOUBLE_EQ(expected_peer(f, f.pairs[0])->theoretical_gbps, 450);

  // No NV# count: the active links between the two count.
  f.pairs[0].nvlinks.reset();
  f.gpus[0].nvlinks[17].active = false;
  f.gpus[1].nvlinks.resize(12);
  EXPECT_DOUBLE_EQ(expected_peer(f, f.pairs[0])->theoretical_gbps, 17 * 25);

  // A model NVIDIA publishes no NVLink figure for: the NVLink version, then the reported rate.
  for (auto& g : f.gpus) g.name = "Some Future GPU";
  EXPECT_NEAR(expected_peer(f, f.pairs[0])->theoretical_gbps, 17 * 26.562, 1e-9);
  EXPECT_TRUE(has(expected_peer(f, f.pairs[0])->basis, "reported"));
  for (auto& g : f.gpus)
    for (auto& l : g.nvlinks) l.version = 5;
  EXPECT_DOUBLE_EQ(expected_peer(f, f.pairs[0])->theoretical_gbps, 17 * 50);
  EXPECT_TRUE(has(expected_peer(f, f.pairs[0])->basis, "by NVLink 5"));

  // B200 NV18: 1.8 TB/s both directions together = 900 per direction.
  Facts b;
  b.gpus = {gpu(0, "NVIDIA B200", 6, 16), gpu(1, "NVIDIA B200", 6, 16)};
  b.pairs = {pair(0, 1, PathType::kNVLink, 18)};
  EXPECT_DOUBLE_EQ(expected_peer(b, b.pairs[0])->theoretical_gbps, 900);

  // Unknown model, no rates, no version: 25 GB/s assumed, and said so.
  Facts bare;
  bare.pairs = {pair(0, 1, PathType::kNVLink, 4)};
  auto x = expected_peer(bare, bare.pairs[0]);
  ASSERT_TRUE(x);
  EXPECT_DOUBLE_EQ(x->theoretical_gbps, 100);
  EXPECT_TRUE(has(x->basis, "assumed")) << x->basis;

  // No count anywhere: no expectation.
  bare.pairs[0].nvlinks.reset();
  EXPECT_FALSE(expected_peer(bare, bare.pairs[0]));
}

TEST(Expectations, PeerOverPcieIsTheSlowerLinkWithAnAllowanceByPath) {
  Facts f;
  f.gpus = {gpu(0, "NVIDIA RTX A6000", 4, 16), gpu(1, "NVIDIA RTX A6000", 4, 16)};
  const double gen4x16 = 16.0 * 16 * 128 / 130 / 8;  // 31.51
  struct Row {
    PathType path;
    double allowance;
    const char* reason;
  };
  for (const Row& r :
       {Row{PathType::kPIX, 1.0, ""}, Row{PathType::kPXB, 1.0, ""},
        Row{PathType::kPHB, 0.8, "host bridge"}, Row{PathType::kNODE, 0.8, "host bridge"},
        Row{PathType::kSYS, 0.5, "CPU interconnect"}}) {
    f.pairs = {pair(0, 1, r.path)};
    auto e = expected_peer(f, f.pairs[0]);
    ASSERT_TRUE(e) << path_type_name(r.path);
    // The theoretical figure is the link's on every PCIe path; only the allowance differs.
    EXPECT_NEAR(e->theoretical_gbps, gen4x16, 1e-9) << path_type_name(r.path);
    EXPECT_DOUBLE_EQ(e->allowance, r.allowance) << path_type_name(r.path);
    EXPECT_TRUE(has(e->allowance_reason, r.reason)) << e->allowance_reason;
    EXPECT_TRUE(has(e->basis, "the Gen4 x16 link of the slower GPU")) << e->basis;
  }

  // The slower GPU's link sets it.
  f.pairs = {pair(0, 1, PathType::kPIX)};
  f.gpus[1].pcie.width_max = 8;
  auto e = expected_peer(f, f.pairs[0]);
  EXPECT_NEAR(e->theoretical_gbps, gen4x16 / 2, 1e-9);
  EXPECT_TRUE(has(e->basis, "Gen4 x8")) << e->basis;

  f.gpus[1].pcie.gen_max.reset();
  EXPECT_FALSE(expected_peer(f, f.pairs[0]));
  f.gpus[1].pcie.gen_max = 4;
  f.pairs[0].path = PathType::kUnknown;
  EXPECT_FALSE(expected_peer(f, f.pairs[0]));
}

// ---------------------------------------------------------------- device memory

TEST(Expectations, DeviceMemoryByModelFromDataSheets) {
  auto peak = [](const char* name) {
    auto e = expected_device_memory(name);
    return e ? e->peak_gbps : -1.0;
  };
  EXPECT_EQ(peak("NVIDIA H200"), 4800);
  EXPECT_EQ(peak("NVIDIA H200 NVL"), 4800);
  EXPECT_EQ(peak("NVIDIA H100 80GB HBM3"), 3350);
  EXPECT_EQ(peak("NVIDIA H100 PCIe"), 2000);
  EXPECT_EQ(peak("NVIDIA H100 NVL"), 3900);
  EXPECT_EQ(peak("NVIDIA A100-SXM4-80GB"), 2039);
  EXPECT_EQ(peak("NVIDIA A100 80GB PCIe"), 1935);
  EXPECT_EQ(peak("NVIDIA A100-SXM4-40GB"), 1555);
  EXPECT_EQ(peak("NVIDIA A100-PCIE-40GB"), 1555);
  EXPECT_EQ(peak("Tesla V100-SXM2-32GB"), 900);
  EXPECT_EQ(peak("Tesla V100S-PCIE-32GB"), 1134);
  EXPECT_EQ(peak("NVIDIA B200"), 8000);
  EXPECT_EQ(peak("NVIDIA L40S"), 864);
  EXPECT_EQ(peak("NVIDIA L40"), 864);
  EXPECT_EQ(peak("NVIDIA A40"), 696);
  EXPECT_EQ(peak("NVIDIA A30"), 933);
  EXPECT_EQ(peak("NVIDIA A10"), 600);
  EXPECT_EQ(peak("NVIDIA A10G"), 600);
  EXPECT_EQ(peak("NVIDIA L4"), 300);
  EXPECT_EQ(peak("nvidia h200"), 4800);
  EXPECT_EQ(peak("NVIDIA A100"), -1);  // 40 or 80 GB: the name does not say
  EXPECT_EQ(peak("NVIDIA GH200 480GB"), -1);
  EXPECT_EQ(peak("NVIDIA GeForce RTX 4090"), -1);
  EXPECT_EQ(peak(""), -1);

  // A copy reads and writes: the theoretical copy is half the peak, with nothing taken off.
  auto h200 = *expected_device_memory("NVIDIA H200");
  EXPECT_EQ(h200.model, "H200");
  EXPECT_DOUBLE_EQ(h200.copy_gbps, 2400);
  EXPECT_TRUE(has(h200.source, "H200")) << h200.source;
  EXPECT_TRUE(has(h200.source, "data sheet")) << h200.source;
  for (const char* name : {"NVIDIA H100 PCIe", "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-16GB",
                           "NVIDIA L40S", "NVIDIA A10G", "NVIDIA B200"}) {
    auto e = expected_device_memory(name);
    ASSERT_TRUE(e) << name;
    EXPECT_DOUBLE_EQ(e->copy_gbps, e->peak_gbps / 2) << name;
    EXPECT_TRUE(has(e->source, "data sheet")) << name;
  }
}

TEST(NvlinkConfig, ModelAndFormFactor) {
  auto c = expected_nvlink("NVIDIA H100 PCIe");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->form, NvlinkFormFactor::kBridge);
  EXPECT_EQ(c->links, 12);
  EXPECT_EQ(expected_nvlink("NVIDIA H100 NVL")->links, 12);
  EXPECT_EQ(expected_nvlink("NVIDIA H200 NVL")->max_bridged_gpus, 4);
  EXPECT_EQ(expected_nvlink("NVIDIA RTX A6000")->links, 4);
  EXPECT_EQ(expected_nvlink("NVIDIA GeForce RTX 3090")->links, 4);
  EXPECT_EQ(expected_nvlink("NVIDIA GeForce RTX 2080 Ti")->links, 2);
  c = expected_nvlink("NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->form, NvlinkFormFactor::kBaseboard);
  EXPECT_EQ(c->links, 18);
  EXPECT_EQ(expected_nvlink("NVIDIA H800")->links, 8);
  EXPECT_EQ(expected_nvlink("NVIDIA A100-SXM4-80GB")->links, 12);
  EXPECT_FALSE(expected_nvlink("NVIDIA L40S").has_value());
  EXPECT_FALSE(expected_nvlink("NVIDIA RTX A4000").has_value());
  EXPECT_FALSE(expected_nvlink("Tesla V100-PCIE-32GB").has_value());
  EXPECT_TRUE(consumer_gpu("NVIDIA GeForce RTX 4090"));
  EXPECT_FALSE(consumer_gpu("NVIDIA RTX A6000"));
}

TEST(PeerExpectation, SysOnOneNumaNodeNamesRootComplexes) {
  Facts f;
  f.gpus = {gpu(0, "NVIDIA L40S", 4, 16), gpu(1, "NVIDIA L40S", 4, 16)};
  f.gpus[0].numa_node = 0;
  f.gpus[1].numa_node = 0;
  auto e = expected_peer(f, pair(0, 1, PathType::kSYS));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->allowance_reason, "the traffic passes between PCIe root complexes inside the CPU");
  f.gpus[1].numa_node = 1;
  EXPECT_EQ(expected_peer(f, pair(0, 1, PathType::kSYS))->allowance_reason,
            "the traffic crosses the CPU interconnect");
}

}  // namespace
TEST(CollectiveDeadline, TenTimesTheSlowestLinkNeverUnderTheFloor) {
  // 100 MB of bus traffic needs 0.1 s at 1 GB/s: the 20 s floor stands.
  EXPECT_DOUBLE_EQ(collective_deadline_s(100e6, 20), 20);
  // bench --full: a 4 GiB all-reduce on 8 GPUs moves 1.75 × 4 GiB per op; 20 ops need 150 s
  // at 1 GB/s, so the wait allows 1503 s, not the 20 s that called a slow node hung.
  const double bus = 1.75 * 4294967296.0 * 20;
  EXPECT_NEAR(collective_deadline_s(bus, 20), 10 * bus / 1e9, 1e-6);
  EXPECT_GT(collective_deadline_s(bus, 20), 1000);
  EXPECT_DOUBLE_EQ(collective_deadline_s(-5, 3), 3);
}

}  // namespace gpuvet::hw
