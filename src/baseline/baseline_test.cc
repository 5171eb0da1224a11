#include <gtest/gtest.h>

#include <string>

#include "gpuvet/baseline.h"

namespace gpuvet {
namespace {

// Four GPUs on two PCIe switches: PIX inside a switch, SYS across sockets; P2P only inside.
Facts four_gpu_node() {
  Facts f;
  f.host.hostname = "node7";
  f.host.driver_version = "580.95.05";
  for (int i = 0; i < 4; ++i) {
    GpuFacts g;
    g.index = i;
    g.name = "NVIDIA L40S";
    g.uuid = "GPU-" + std::to_string(i);
    g.pci_bus_id = "0000:" + std::to_string(10 + i) + ":00.0";
    g.pcie.gen_max = 4;
    g.pcie.width_max = 16;
    g.pcie.width_current = 16;
    g.pcie.gen_current = 1;  // idle
    g.numa_node = i / 2;
    g.vbios = "95.02.66.00.02";
    g.ecc.enabled = true;
    g.power.limit_w = 350;
    f.gpus.push_back(g);
  }
  for (int a = 0; a < 4; ++a)
    for (int b = a + 1; b < 4; ++b) {
      GpuPair p;
      p.a = a;
      p.b = b;
      const bool same_switch = a / 2 == b / 2;
      p.path = same_switch ? PathType::kPIX : PathType::kSYS;
      p.p2p_read = same_switch ? P2PStatus::kOk : P2PStatus::kChipsetNotSupported;
      f.pairs.push_back(p);
    }
  return f;
}

Baseline parsed(const std::string& text) {
  auto b = parse_baseline(text, "model.toml");
  EXPECT_TRUE(b.is_ok()) << b.status().to_string() << "\n" << text;
  return b.is_ok() ? b.value() : Baseline{};
}

std::string captured() {
  return baseline_toml(node_print(four_gpu_node()), {}, "live on node7", "2026-12-03");
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string evidence(const std::vector<Deviation>& ds) {
  std::string s;
  for (const auto& d : ds) s += d.key + ": " + d.evidence + "\n";
  return s;
}

TEST(NodePrint, KeepsPathsP2pAndLinksOfEveryPairInOrder) {
  const NodePrint n = node_print(four_gpu_node());
  EXPECT_EQ(n.gpu_count, 4);
  EXPECT_EQ(n.gpu_model, "NVIDIA L40S");
  ASSERT_EQ(n.pairs.size(), 6u);
  EXPECT_EQ(n.pairs[0].path, "PIX");
  EXPECT_EQ(n.pairs[0].p2p, "OK");
  EXPECT_EQ(n.pairs[1].path, "SYS");
  EXPECT_EQ(n.pairs[1].p2p, "CNS");
  EXPECT_EQ(n.gpus[3].numa_node, 1);
  EXPECT_EQ(n.gpus[0].nvlinks_up, 0);  // PCIe only
}

TEST(NodePrint, HashesChangeWithThePartTheyCover) {
  Facts f = four_gpu_node();
  const NodePrint before = node_print(f);
  f.pairs[0].path = PathType::kSYS;  // GPU0-GPU1 now crosses sockets
  const NodePrint after = node_print(f);
  EXPECT_NE(print_hash(before, "topology"), print_hash(after, "topology"));
  EXPECT_EQ(print_hash(before, "p2p"), print_hash(after, "p2p"));
  EXPECT_EQ(print_hash(before, "links"), print_hash(after, "links"));
  f.gpus[2].pcie.width_current = 8;
  EXPECT_NE(print_hash(before, "links"), print_hash(node_print(f), "links"));
}

TEST(Baseline, ACapturedNodeMatchesItsOwnBaseline) {
  const std::string text = captured();
  EXPECT_NE(text.find("\"GPU0-GPU1\" = \"PIX\""), std::string::npos) << text;
  EXPECT_NE(text.find("# Captured live on node7 on 2026-12-03"), std::string::npos) << text;
  const Baseline b = parsed(text);
  EXPECT_EQ(b.expect.gpu_count, 4);
  EXPECT_EQ(b.expect.gpus.size(), 4u);
  EXPECT_EQ(b.expect.pairs.size(), 6u);
  EXPECT_EQ(b.digest.size(), 16u);
  const auto d = compare(b, node_print(four_gpu_node()), true);
  EXPECT_TRUE(d.empty()) << evidence(d);
}

TEST(Baseline, AChangedBoardDeviatesOnPathAndP2pWithExpectedAndFound) {
  Facts f = four_gpu_node();
  f.pairs[0].path = PathType::kSYS;
  f.pairs[0].p2p_read = P2PStatus::kNotSupported;
  const auto d = compare(parsed(captured()), node_print(f), false);
  ASSERT_EQ(d.size(), 2u) << evidence(d);
  EXPECT_EQ(d[0].key, "pair.GPU0-GPU1.path");
  EXPECT_EQ(d[0].evidence, "GPU0-GPU1 path SYS (baseline PIX)");
  EXPECT_EQ(d[0].severity, Severity::kCritical);
  EXPECT_EQ(d[1].key, "pair.GPU0-GPU1.p2p");
  EXPECT_EQ(d[1].expected, "OK");
  EXPECT_EQ(d[1].found, "NS");
}

TEST(Baseline, ANarrowLinkDeviatesOnWidthEvenWhenItsMaximumLooksRight) {
  Facts f = four_gpu_node();
  f.gpus[3].pcie.width_current = 8;
  auto d = compare(parsed(captured()), node_print(f), false);
  ASSERT_EQ(d.size(), 1u) << evidence(d);
  EXPECT_EQ(d[0].evidence, "GPU3 PCIe width x8 (baseline at least x16)");
  // A slot that only offers x8 shows in the maximum.
  f.gpus[3].pcie.width_max = 8;
  d = compare(parsed(captured()), node_print(f), false);
  ASSERT_EQ(d.size(), 1u) << evidence(d);
  EXPECT_EQ(d[0].key, "gpu.GPU3.pcie_width_max");
  // An idle GPU at Gen1 is no deviation: only the maximum generation is pinned.
  f = four_gpu_node();
  f.gpus[0].pcie.gen_current = 1;
  EXPECT_TRUE(compare(parsed(captured()), node_print(f), false).empty());
}

TEST(Baseline, AMissingGpuAndAWrongCountAreCritical) {
  Facts f = four_gpu_node();
  f.gpus.pop_back();
  const auto d = compare(parsed(captured()), node_print(f), false);
  ASSERT_GE(d.size(), 2u) << evidence(d);
  EXPECT_EQ(d[0].evidence, "GPU count 3 (baseline 4)");
  EXPECT_EQ(d[1].key, "gpu.GPU3.present");
}

TEST(Baseline, AValueTheNodeCannotReportIsUnknownNotPassed) {
  Facts f = four_gpu_node();
  f.pairs[1].p2p_read.reset();
  f.gpus[1].numa_node.reset();
  const auto d = compare(parsed(captured()), node_print(f), false);
  ASSERT_EQ(d.size(), 2u) << evidence(d);
  for (const auto& x : d) EXPECT_TRUE(x.unknown) << x.evidence;
  EXPECT_EQ(d[0].evidence, "GPU1 NUMA node not reported (baseline 0)");
}

TEST(Baseline, ConfigurationDeviationsAreWarningsAndAtLeastComparesVersions) {
  Facts f = four_gpu_node();
  f.host.driver_version = "580.159.04";  // newer than 580.95.05 when read as numbers
  f.gpus[0].power.limit_w = 300;
  std::string text = captured();
  auto d = compare(parsed(text), node_print(f), false);
  ASSERT_EQ(d.size(), 2u) << evidence(d);
  EXPECT_EQ(d[0].key, "driver");
  EXPECT_EQ(d[0].severity, Severity::kWarning);
  EXPECT_EQ(d[1].evidence, "GPU0 power limit 300 W (baseline 350 W)");
  text = replaced(text, "driver = \"equal\"", "driver = \"at_least\"");
  d = compare(parsed(text), node_print(f), false);
  ASSERT_EQ(d.size(), 1u) << evidence(d);
  f.host.driver_version = "580.82.07";
  d = compare(parsed(text), node_print(f), false);
  ASSERT_EQ(d.size(), 2u) << evidence(d);
  EXPECT_EQ(d[0].expected, "at least 580.95.05");
}

TEST(Baseline, FloorsAreCheckedOnlyWithMeasurements) {
  std::vector<Floor> floors = {{{"h2d", "GPU0", std::nullopt, 22.0}, "90 % of 24.4 GB/s"},
                               {{"peer", "GPU0-GPU1", std::nullopt, 20.0}, "bench"}};
  const std::string text =
      baseline_toml(node_print(four_gpu_node()), floors, "live on node7", "2026-12-03");
  const Baseline b = parsed(text);
  ASSERT_EQ(b.floors.size(), 2u);
  EXPECT_EQ(b.floors[0].source, "90 % of 24.4 GB/s");
  NodePrint n = node_print(four_gpu_node());
  EXPECT_TRUE(compare(b, n, false).empty());
  auto d = compare(b, n, true);
  ASSERT_EQ(d.size(), 2u) << evidence(d);
  EXPECT_TRUE(d[0].unknown && d[0].floor);
  n.bandwidth = {{"h2d", "GPU0", std::nullopt, 24.1}, {"peer", "GPU0-GPU1", std::nullopt, 11.5}};
  d = compare(b, n, true);
  ASSERT_EQ(d.size(), 1u) << evidence(d);
  EXPECT_EQ(d[0].evidence, "GPU0-GPU1 peer bandwidth 11.5 GB/s (baseline at least 20.0 GB/s)");
  EXPECT_FALSE(d[0].unknown);
}

TEST(Baseline, RefusesMalformedAndMismatchedFilesNamingTheKey) {
  const std::string good = captured();
  const struct {
    std::string text;
    std::string says;
  } bad[] = {
      {good + "\n[extra]\n", "unknown key 'extra'"},
      {replaced(good, "pcie_gen_max = 4", "pcie_gen = 4"), "unknown key 'pcie_gen' in [[gpu]]"},
      {replaced(good, "gpu_count = 4", "gpu_count = \"4\""), "'node.gpu_count' must be a whole"},
      {replaced(good, "gpu_count = 4", "gpu_count = 3"), "[[gpu]] index 3 is outside gpu_count 3"},
      {replaced(good, "\"GPU0-GPU1\" = \"PIX\"", "\"GPU0-GPU1\" = \"PCI\""),
       "[paths] 'GPU0-GPU1' = \"PCI\" is not one of"},
      {replaced(good, "\"GPU0-GPU1\" = \"PIX\"", "\"GPU1-GPU0\" = \"PIX\""),
       "needs GPU<a>-GPU<b> with a < b"},
      {replaced(good, "\"GPU0-GPU1\" = \"OK\"", "\"GPU0-GPU9\" = \"OK\""), "pair 'GPU0-GPU9'"},
      {replaced(good, "schema = \"gpuvet.baseline/1\"", "schema = \"gpuvet.baseline/2\""),
       "schema \"gpuvet.baseline/2\" is not"},
      {replaced(good, "vbios = \"equal\"", "vbios = \"newer\""), "'compare.vbios' must be"},
      {good + "\n[[floor]]\nkey = \"h2d\"\nsubject = \"GPU0\"\ngbps = nan\n", "must be a finite"},
      {good + "\n[[floor]]\nkey = \"h2x\"\nsubject = \"GPU0\"\ngbps = 1\n", "needs key ="},
      {"gpu_count = [", "model.toml:1:"},
      {"", "no 'schema' key"},
      // E15: cut short before [paths]: everything after would go unchecked.
      {good.substr(0, good.find("[paths]")), "no [end] table: the file was cut short"},
      {replaced(good, "[end]", "[end]\nx = 1"), "[end] must be an empty table"},
      // E1: a long NV value or pair key is refused, not a stack overflow in a regex.
      {replaced(good, "\"GPU0-GPU1\" = \"PIX\"",
                "\"GPU0-GPU1\" = \"NV" + std::string(200000, '9') + "\""),
       "is not one of NV<n>"},
      {replaced(good, "\"GPU0-GPU1\" = \"PIX\"",
                "\"GPU0-GPU" + std::string(200000, '1') + "\" = \"PIX\""),
       "is not a pair like"},
  };
  for (const auto& c : bad) {
    auto b = parse_baseline(c.text, "model.toml");
    ASSERT_FALSE(b.is_ok()) << c.says;
    EXPECT_EQ(b.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(b.status().message().find(c.says), std::string::npos)
        << b.status().message() << "\nwanted: " << c.says;
  }
}

TEST(Baseline, BandwidthValuesTakeTheSlowerPeerDirectionAndSkipWrongData) {
  std::vector<Measurement> m(5);
  m[0].test = "device_to_device_read_ce";
  m[0].src_gpu = 0;
  m[0].dst_gpu = 1;
  m[0].bandwidth_gbps = 40;
  m[1] = m[0];
  m[1].src_gpu = 1;
  m[1].dst_gpu = 0;
  m[1].bandwidth_gbps = 30;
  m[2].test = "host_to_device_memcpy_ce";  // nvbandwidth's name
  m[2].dst_gpu = 1;
  m[2].bandwidth_gbps = 25;
  m[3].test = "all_reduce_perf";
  m[3].busbw_gbps = 100;
  m[3].wrong_data = "#wrong 3";
  m[4] = m[0];  // slower than both, but its data came back wrong: no bandwidth to keep
  m[4].bandwidth_gbps = 10;
  m[4].wrong_data = "wrong data: 3 mismatched words in 1 of 16 samples";
  const auto v = bandwidth_values(m);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].key, "h2d");
  EXPECT_EQ(v[0].subject, "GPU1");
  EXPECT_EQ(v[1].key, "peer");
  EXPECT_EQ(v[1].subject, "GPU0-GPU1");
  EXPECT_EQ(v[1].gbps, 30);
}

}  // namespace
}  // namespace gpuvet
