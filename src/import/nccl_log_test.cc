#include "import/nccl_log.h"

#include <gtest/gtest.h>

#include "fixture_util.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace gpuvet::import {
namespace {

using namespace gpuvet::testing;

std::string local(const std::string& name) {
  return std::string(GPUVET_TEST_DATA) + "/fixtures/capture/tools/" + name;
}

Facts import_log(std::string_view text) {
  Facts f;
  EXPECT_TRUE(import_nccl_log(text, f).is_ok());
  return f;
}

std::vector<NcclEvent> of_kind(const Facts& f, const std::string& kind) {
  std::vector<NcclEvent> out;
  for (const auto& e : f.nccl_events)
    if (e.kind == kind) out.push_back(e);
  return out;
}

const NcclEvent* with_detail(const Facts& f, const std::string& kind, const std::string& part) {
  for (const auto& e : f.nccl_events)
    if (e.kind == kind && e.detail.find(part) != std::string::npos) return &e;
  return nullptr;
}

// ------------------------------------------------------------------ launcher labels

TEST(NcclLogLabels, StripsMpirunSrunAndDatePrefixes) {
  EXPECT_EQ(strip_launcher_label("[1,0]<stdout>:host:1:2 [0] NCCL INFO x"),
            "host:1:2 [0] NCCL INFO x");
  EXPECT_EQ(strip_launcher_label("Wed Sep  6 17:26:52 2023[1,5]<stdout>:h:1:2 [5] NCCL INFO y"),
            "h:1:2 [5] NCCL INFO y");
  EXPECT_EQ(strip_launcher_label("12: #  size  count"), "#  size  count");
  EXPECT_EQ(strip_launcher_label("   8   2  float"), "8   2  float");
  EXPECT_EQ(strip_launcher_label("10:15:01 AM all"), "10:15:01 AM all");  // a clock, not a label
}

// ------------------------------------------------------------------ real logs (shared corpus)

TEST(NcclLogReal, NetIbNoDeviceFallsBackToSocket) {
  READ_SHARED_OR_SKIP(text,
                      "nccl-log/nccl-issue1267-gcp-net-ib-no-device-socket-fallback-init.log");
  EXPECT_EQ(sniff_nccl_log(text), 100);
  Facts f = import_log(text);
  auto version = of_kind(f, "version");
  ASSERT_EQ(version.size(), 1u);
  EXPECT_EQ(version[0].detail, "2.19.3+cuda12.3");
  auto fallback = of_kind(f, "fallback");
  ASSERT_EQ(fallback.size(), 1u);
  EXPECT_EQ(fallback[0].detail, "NET/IB : No device found.");
  EXPECT_EQ(fallback[0].host, "instance-8g-96c-2");
  ASSERT_NE(with_detail(f, "net", "NET/Socket : Using [0]ens7"), nullptr);
  ASSERT_NE(with_detail(f, "net", "Using network Socket"), nullptr);
  EXPECT_TRUE(of_kind(f, "transport").empty());  // "Channel 00/32 :    0" is ring layout
}

TEST(NcclLogReal, LegacyBusIdsInChannelLines) {
  READ_SHARED_OR_SKIP(text, "nccl-log/nccl-issue634-4node-legacy-net-socket-busid-ranks.log");
  Facts f = import_log(text);
  auto t = of_kind(f, "transport");
  ASSERT_EQ(t.size(), 14u);
  EXPECT_EQ(t[0].host, "gcn5");
  EXPECT_EQ(t[0].rank, 7);
  EXPECT_EQ(t[0].pci_bus_id, "0000:e3:00.0");
  EXPECT_EQ(t[0].detail, "7[e3000] -> 10[ca000] [receive] via NET/Socket/0");
  EXPECT_EQ(t[1].pci_bus_id, "0000:31:00.0");
}

TEST(NcclLogReal, RepeatedChannelLinesAreCounted) {
  READ_SHARED_OR_SKIP(text, "nccl-log/nccl-issue1189-2node-h20-net-ib-gdrdma-p2p-cumem.log");
  Facts f = import_log(text);
  auto t = of_kind(f, "transport");
  ASSERT_EQ(t.size(), 5u);
  const NcclEvent* gdr = with_detail(f, "transport", "1[1] -> 3[1] [receive] via NET/IB/2/GDRDMA");
  ASSERT_NE(gdr, nullptr);
  EXPECT_EQ(gdr->detail, "1[1] -> 3[1] [receive] via NET/IB/2/GDRDMA (seen 4 times)");
  EXPECT_EQ(gdr->rank, 1);
  EXPECT_EQ(gdr->host, "H20-GPU-06");
  EXPECT_FALSE(gdr->pci_bus_id);  // "[1]" is a device index, not a bus id
  ASSERT_NE(with_detail(f, "transport", "via P2P/CUMEM (seen 4 times)"), nullptr);
}

TEST(NcclLogReal, ShmAndSocketTransports) {
  READ_SHARED_OR_SKIP(text, "nccl-log/nccltests-issue166-2node-net-socket-shm-direct-channels.log");
  Facts f = import_log(text);
  EXPECT_NE(with_detail(f, "transport", "15[7] -> 0[0] [send] via NET/Socket/0 (seen 8 times)"),
            nullptr);
  EXPECT_NE(with_detail(f, "transport", "11[3] -> 12[4] via SHM/direct/direct (seen 3 times)"),
            nullptr);
}

TEST(NcclLogReal, P2pIpcReadWithBusIds) {
  READ_SHARED_OR_SKIP(text,
                      "nccl-log/nccltests-issue188-2node-p2p-ipc-read-net-socket-busid-ranks.log");
  Facts f = import_log(text);
  const NcclEvent* e = with_detail(f, "transport", "0[27000] -> 7[ca000] via P2P/IPC/read");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->rank, 0);
  EXPECT_EQ(e->pci_bus_id, "0000:27:00.0");
  EXPECT_EQ(of_kind(f, "transport").size(), 8u);
}

TEST(NcclLogReal, IbExtPluginGdr) {
  READ_SHARED_OR_SKIP(text, "nccl-log/nccltests-issue252-2node-p2p-cumem-net-ibext-gdrdma.log");
  Facts f = import_log(text);
  EXPECT_NE(with_detail(f, "transport", "via NET/IBext_v8/0/GDRDMA"), nullptr);
  EXPECT_EQ(of_kind(f, "transport").size(), 7u);
}

TEST(NcclLogReal, CompletionErrorStatus12IsAnError) {
  READ_SHARED_OR_SKIP(text,
                      "nccl-log/nccl-issue1405-net-ib-completion-error-status12-vendor-err129.log");
  Facts f = import_log(text);
  auto errors = of_kind(f, "error");
  ASSERT_EQ(errors.size(), 3u);  // three distinct completions (different peers / opcodes)
  EXPECT_EQ(errors[0].host, "kp-ddp-worker-0");
  EXPECT_NE(errors[0].detail.find("status=12"), std::string::npos);
  EXPECT_NE(errors[0].detail.find("vendor err 129"), std::string::npos);
  EXPECT_TRUE(of_kind(f, "warn").empty());
}

TEST(NcclLogReal, NvlsAndChannels) {
  READ_SHARED_OR_SKIP(text, "nccl-log/nccl-issue1609-h800-nvls-channels-init.log");
  Facts f = import_log(text);
  EXPECT_EQ(of_kind(f, "nvls").size(), 4u);  // one per headRank
  EXPECT_NE(with_detail(f, "nvls", "NVLS headRank 3 nHeads 4 buffSize 4194304"), nullptr);
  auto ch = of_kind(f, "channels");
  ASSERT_EQ(ch.size(), 1u);
  EXPECT_EQ(ch[0].detail,
            "16 coll channels, 0 collnet channels, 16 nvls channels, 16 p2p channels, 2 p2p "
            "channels per peer (seen 3 times)");
}

TEST(NcclLogReal, NvlsTree) {
  READ_SHARED_OR_SKIP(text, "nccl-log/nccl-issue1814-64rank-nvls-tree-init-complete.log");
  Facts f = import_log(text);
  ASSERT_NE(with_detail(f, "nvls", "Connected NVLS tree (seen 2 times)"), nullptr);
}

TEST(NcclLogReal, MpirunPrefixedTopologyPrint) {
  READ_SHARED_OR_SKIP(text, "nccl-log/nccl-issue957-mpirun-prefixed-topology-dump-1gpu-1nic.log");
  EXPECT_EQ(sniff_nccl_log(text), 100);
  Facts f = import_log(text);
  auto links = of_kind(f, "link");
  ASSERT_EQ(links.size(), 3u);
  EXPECT_EQ(links[0].detail, "=== System : maxBw 12.5 totalBw 24.0 ===");
  EXPECT_EQ(links[0].host, "tomte249");
  EXPECT_EQ(links[1].pci_bus_id, "0000:a1:00.0");
  EXPECT_EQ(links[1].detail, "PCI[24.0] - GPU/A1000 (0)");
  EXPECT_EQ(links[1].rank, 0);  // from "comm … rank 0 nranks 2"
  EXPECT_EQ(links[2].pci_bus_id, "0000:c2:00.0");
  EXPECT_NE(with_detail(f, "net", "Using network IB"), nullptr);
}

TEST(NcclLogReal, PyTorchWatchdogTimeouts) {
  READ_SHARED_OR_SKIP(text, "nccl-log/basicsr-issue737-pytorch-watchdog-allreduce-timeout.log");
  EXPECT_GT(sniff_nccl_log(text), 0);
  Facts f = import_log(text);
  auto t = of_kind(f, "timeout");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].rank, 1);
  EXPECT_EQ(t[1].rank, 0);
  EXPECT_EQ(t[2].rank, 2);
  EXPECT_NE(t[0].detail.find("OpType=ALLREDUCE"), std::string::npos);
  EXPECT_NE(t[0].detail.find("Timeout(ms)=600000) ran for 600020 milliseconds"), std::string::npos);
}

TEST(NcclLogReal, LegacyWatchdogWithoutRankPrefix) {
  READ_SHARED_OR_SKIP(text, "nccl-log/ofa-issue271-8xv100-legacy-watchdog-timeout-1800s.log");
  Facts f = import_log(text);
  auto t = of_kind(f, "timeout");
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[4].rank, 7);
  EXPECT_NE(t[4].detail.find("Timeout(ms)=1800000"), std::string::npos);
}

TEST(NcclLogReal, BareNetLinesWithoutHostPrefix) {
  READ_SHARED_OR_SKIP(text, "nccl-log/mleng-net-ib-using-line-with-stray-mlx5-bond-roce.log");
  EXPECT_EQ(sniff_nccl_log(text), 90);
  Facts f = import_log(text);
  auto net = of_kind(f, "net");
  ASSERT_EQ(net.size(), 1u);
  EXPECT_FALSE(net[0].host);
  EXPECT_NE(net[0].detail.find("[8]mlx5_bond_0:1/RoCE"), std::string::npos);
}

// ------------------------------------------------------------------ written samples

TEST(NcclLogSample, MixedLaunchersWarningsAndErrors) {
  auto text = read_text(local("nccl-debug-mixed-launchers.log"));
  ASSERT_TRUE(text);
  EXPECT_EQ(sniff_nccl_log(*text), 100);
  Facts f = import_log(*text);
  EXPECT_NE(with_detail(f, "version", "2.18.3+cuda12.2"), nullptr);
  const NcclEvent* ib = with_detail(f, "net", "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB");
  ASSERT_NE(ib, nullptr);
  EXPECT_EQ(ib->host, "node-a");
  const NcclEvent* p2p =
      with_detail(f, "transport", "0[0] -> 1[1] via P2P/IPC/read (seen 2 times)");
  ASSERT_NE(p2p, nullptr);
  EXPECT_EQ(p2p->rank, 0);
  EXPECT_NE(with_detail(f, "transport", "1[1] -> 2[0] [send] via NET/IB/0/GDRDMA"), nullptr);
  const NcclEvent* shm = with_detail(f, "transport", "2[0] -> 3[1] via SHM/direct/direct");
  ASSERT_NE(shm, nullptr);
  EXPECT_EQ(shm->host, "node-b");  // srun "2: " label stripped
  const NcclEvent* nvls = with_detail(f, "nvls", "NVLS multicast support is not available");
  ASSERT_NE(nvls, nullptr);
  EXPECT_EQ(nvls->rank, 0);  // learned from the comm Init line of the same pid
  EXPECT_NE(with_detail(f, "tree", "Trees [0]"), nullptr);
  EXPECT_NE(with_detail(f, "tree", "Connected all trees"), nullptr);
  EXPECT_NE(with_detail(f, "channels", "2 coll channels"), nullptr);
  // "set by environment to 0" is not a fallback; "to 1." is.
  auto fb = of_kind(f, "fallback");
  ASSERT_EQ(fb.size(), 1u);
  EXPECT_EQ(fb[0].detail, "NCCL_P2P_DISABLE set by environment to 1.");
  // A peer closing the connection is a failure in NCCL's source (socketProgress returns
  // ncclRemoteError): an error, not a warning (nccl_messages.cc).
  EXPECT_TRUE(of_kind(f, "warn").empty());
  EXPECT_NE(with_detail(f, "error",
                        "socketProgress: Connection closed by remote peer node-a<43642> (seen 2 "
                        "times)"),
            nullptr);
  auto err = of_kind(f, "error");
  ASSERT_EQ(err.size(), 3u);
  EXPECT_NE(with_detail(f, "error", "unhandled system error"), nullptr);
  EXPECT_NE(with_detail(f, "error", "ncclSystemError"), nullptr);
}

TEST(NcclLogSample, GraphSubsystemXmlLinesAreLinks) {
  const std::string text =
      "h:1:2 [0] NCCL INFO <pci busid=\"0000:9a:00.0\" class=\"0x030200\" vendor=\"0x10de\" "
      "link_speed=\"16.0 GT/s PCIe\" link_width=\"8\">\n"
      "h:1:2 [0] NCCL INFO <pci busid=\"0000:95:00.0\" class=\"0x060400\" link_speed=\"16.0 GT/s "
      "PCIe\" link_width=\"8\">\n";
  Facts f = import_log(text);
  auto links = of_kind(f, "link");
  ASSERT_EQ(links.size(), 1u);  // the bridge is context, not a subject
  EXPECT_EQ(links[0].pci_bus_id, "0000:9a:00.0");
  EXPECT_EQ(links[0].detail, "GPU pci 0000:9a:00.0 link_speed 16.0 GT/s PCIe link_width 8");
}

TEST(NcclLog, NothingUsableIsInvalidInput) {
  Facts f;
  EXPECT_FALSE(import_nccl_log("hello\nworld\n", f).is_ok());
  EXPECT_FALSE(f.notes.empty());
  EXPECT_EQ(sniff_nccl_log("hello\nworld\n"), 0);
  EXPECT_EQ(sniff_nccl_log(""), 0);
}

TEST(NcclLog, NcclTestsOutputIsNotSniffedAsALog) {
  const std::string text =
      "h:1:1 [0] NCCL INFO Launch mode Parallel\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong\n";
  EXPECT_EQ(sniff_nccl_log(text), 0);
}

TEST(NcclLog, DistinctEventsAreBounded) {
  std::string text;
  for (int i = 0; i < 20000; ++i)
    text += "h:1:2 [0] NCCL INFO Channel 00/0 : " + std::to_string(i) + "[0] -> " +
            std::to_string(i + 1) + "[1] via P2P/IPC\n";
  Facts f;
  ASSERT_TRUE(import_nccl_log(text, f).is_ok());
  EXPECT_EQ(f.nccl_events.size(), 4000u);
  ASSERT_FALSE(f.notes.empty());
  EXPECT_NE(f.notes.back().find("16000 events"), std::string::npos);
}

// ------------------------------------------------------------------ topology XML

TEST(NcclTopoXml, GpuAtX8AndNic) {
  auto text = read_text(local("nccl-topo-dump-2gpu-x8-nic.xml"));
  ASSERT_TRUE(text);
  EXPECT_EQ(sniff_nccl_topo_xml(*text), 100);
  EXPECT_EQ(sniff_nccl_log(*text), 0);
  Facts f;
  ASSERT_TRUE(import_nccl_topo_xml(*text, f).is_ok());
  ASSERT_EQ(f.nccl_events.size(), 3u);
  const auto& g0 = f.nccl_events[0];
  EXPECT_EQ(g0.kind, "link");
  EXPECT_EQ(g0.rank, 0);
  EXPECT_EQ(g0.pci_bus_id, "0000:18:00.0");
  EXPECT_EQ(g0.detail,
            "GPU dev 0 sm 90: PCI link 32.0 GT/s PCIe x16; narrowest link on the path x16 at "
            "0000:15:00.0; nvlink 18 links: 0000:a5:00.0 (NVSwitch) x18");
  const auto& nic = f.nccl_events[1];
  EXPECT_EQ(nic.pci_bus_id, "0000:19:00.0");
  EXPECT_EQ(nic.detail.substr(0, 45), "NIC mlx5_0 port 1 speed 400000 Mb/s gdr 1: PC");
  const auto& g1 = f.nccl_events[2];
  EXPECT_EQ(g1.rank, 1);
  EXPECT_EQ(g1.pci_bus_id, "0000:9a:00.0");
  EXPECT_NE(g1.detail.find("PCI link 16.0 GT/s PCIe x8; narrowest link on the path x8"),
            std::string::npos);
}

TEST(NcclTopoXml, TruncatedAndGarbage) {
  auto text = read_text(local("nccl-topo-dump-2gpu-x8-nic.xml"));
  ASSERT_TRUE(text);
  // Cut inside the second <cpu>: the first GPU and NIC are still reported.
  std::string cut = text->substr(0, text->find("<cpu numaid=\"1\"") + 20);
  Facts f;
  EXPECT_TRUE(import_nccl_topo_xml(cut, f).is_ok());
  EXPECT_GE(f.nccl_events.size(), 2u);
  EXPECT_FALSE(f.notes.empty());
  Facts g;
  EXPECT_FALSE(import_nccl_topo_xml("<system version=\"1\"></system>", g).is_ok());
  Facts h;
  EXPECT_FALSE(import_nccl_topo_xml(std::string(1000, '<'), h).is_ok());
  EXPECT_EQ(sniff_nccl_topo_xml("<nvidia_smi_log><gpu></gpu></nvidia_smi_log>"), 0);
}

TEST(NcclTopoXml, DeepNestingDoesNotOverflow) {
  std::string text = "<system version=\"1\">";
  for (int i = 0; i < 100000; ++i) text += "<pci link_width=\"16\">";
  text += "<gpu dev=\"0\"/>";
  Facts f;
  (void)import_nccl_topo_xml(text, f);  // malformed (unclosed); must simply return
  SUCCEED();
}

TEST(NcclLogPeer, PeerAccessFailureKeepsItsChannel) {
  // As Ray prints NCCL's lines (written for this test after NCCL's WARN format).
  const std::string log =
      "(pid=909608) z-pc:909608:910337 [0] NCCL INFO Channel 00 : 0[2d000] -> 1[2e000] via "
      "P2P/IPC\n"
      "(pid=909608) z-pc:909608:910337 [0] transport/p2p.cc:238 NCCL WARN failed to open CUDA "
      "IPC handle : 217 peer access is not supported between these two devices\n"
      "[rank1]: other:5:6 [1] transport/p2p.cc:238 NCCL WARN failed to open CUDA IPC handle : 11 "
      "invalid argument\n"
      "other:5:6 [1] NCCL WARN NET/Socket : message truncated\n";
  std::vector<NcclEvent> ev;
  parse_nccl_log_events(log, ev, nullptr);
  std::vector<const NcclEvent*> p2p;
  for (const auto& e : ev)
    if (e.kind == "p2p") p2p.push_back(&e);
  ASSERT_EQ(p2p.size(), 2u);
  EXPECT_EQ(p2p[0]->host, "z-pc");
  EXPECT_NE(p2p[0]->detail.find("[channel 0[2d000] -> 1[2e000] via P2P/IPC]"), std::string::npos)
      << p2p[0]->detail;
  EXPECT_EQ(p2p[1]->host, "other");
  EXPECT_EQ(p2p[1]->detail.find("[channel"), std::string::npos);  // no channel on that thread
  // An unrelated WARN is not a peer-access failure; a truncated message is an error of its own
  // (NCCL returns ncclSystemError after it).
  EXPECT_TRUE(std::any_of(ev.begin(), ev.end(), [](const NcclEvent& e) {
    return e.kind == "error" && e.detail.find("truncated") != std::string::npos;
  }));
}

}  // namespace
}  // namespace gpuvet::import
