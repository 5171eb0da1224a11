// Golden tests for the lspci importer. The fixtures in tests/fixtures/lspci/ are written for
// gpuvet from lspci's documented output (pciutils ls-caps.c, ls-ecaps.c, ls-tree.c): see the
// README there.
#include "import/lspci.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "import/importer.h"
#include "import/load.h"

namespace gpuvet::import {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(GPUVET_TEST_DATA) + "/fixtures/lspci/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Facts parse(std::string_view text) {
  Facts f;
  const Status st = import_lspci(text, f);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return f;
}

const PciDevice* device(const Facts& f, const std::string& bdf) {
  for (const auto& d : f.pci_devices)
    if (d.bdf == bdf) return &d;
  return nullptr;
}

bool has_note(const Facts& f, std::string_view part) {
  return std::any_of(f.notes.begin(), f.notes.end(),
                     [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

std::string notes(const Facts& f) {
  std::string s;
  for (const auto& n : f.notes) s += n + "\n";
  return s;
}

using Flags = std::vector<std::string>;

TEST(Lspci, HealthyGen5SwitchGivesFullLinksAndAcsOff) {
  const Facts f = parse(fixture("lspci-vvv-2x-h100-pcie-gen5-switch-healthy.txt"));
  ASSERT_EQ(f.gpus.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const GpuFacts& g = f.gpus[i];
    EXPECT_EQ(g.index, i);
    EXPECT_EQ(g.pcie.gen_current, 5);
    EXPECT_EQ(g.pcie.gen_max, 5);
    EXPECT_EQ(g.pcie.gen_device_max, 5);
    EXPECT_EQ(g.pcie.width_current, 16);
    EXPECT_EQ(g.pcie.width_max, 16);
    EXPECT_EQ(g.acs_redirects_p2p, false) << notes(f);
    EXPECT_TRUE(g.acs_bridges.empty());
    EXPECT_FALSE(g.name) << "lspci's name is not NVML's: kept on the PCI device only";
  }
  EXPECT_EQ(f.gpus[0].pci_bus_id, "0000:18:00.0");
  EXPECT_EQ(f.gpus[1].pci_bus_id, "0000:19:00.0");
  EXPECT_TRUE(f.host.acs_redirect_unplaced.empty());
  EXPECT_FALSE(has_note(f, "ACS")) << notes(f);

  // The devices and the chain GPU → downstream port → upstream port → root port.
  ASSERT_EQ(f.pci_devices.size(), 7u);
  const PciDevice* gpu = device(f, "0000:19:00.0");
  ASSERT_TRUE(gpu);
  EXPECT_EQ(gpu->class_name, "3D controller");
  EXPECT_EQ(gpu->name, "NVIDIA Corporation GH100 [H100 PCIe]");
  EXPECT_EQ(gpu->driver, "nvidia");
  EXPECT_EQ(gpu->port_type, "Endpoint");
  EXPECT_EQ(gpu->upstream, "0000:17:01.0");
  EXPECT_EQ(device(f, "0000:17:01.0")->upstream, "0000:16:00.0");
  EXPECT_EQ(device(f, "0000:16:00.0")->upstream, "0000:15:01.0");
  const PciDevice* root = device(f, "0000:15:01.0");
  EXPECT_EQ(root->port_type, "Root Port");
  EXPECT_EQ(root->secondary_bus, 0x16);
  EXPECT_EQ(root->subordinate_bus, 0x19);
  EXPECT_FALSE(root->upstream);
  // The root port's UnsupReq+ (unmasked) and masked AdvNonFatalErr+ as lspci shows them.
  EXPECT_EQ(root->aer_uncorrected, Flags{"UnsupReq"});
  EXPECT_TRUE(root->aer_uncorrected_fatal.empty());
  EXPECT_TRUE(root->aer_corrected.empty()) << "AdvNonFatalErr is masked in CEMsk";
  EXPECT_EQ(root->acs_ctl, Flags{});
  EXPECT_TRUE(gpu->aer_uncorrected.empty());
  EXPECT_TRUE(gpu->aer_corrected.empty());
}

TEST(Lspci, DowngradedLinkAcsRedirectAndAerBits) {
  const Facts f = parse(fixture("lspci-vvv-2x-h100-pcie-x8-downgraded-acs-redirect-aer.txt"));
  ASSERT_EQ(f.gpus.size(), 2u);
  const GpuFacts& g1 = f.gpus[1];
  EXPECT_EQ(g1.pci_bus_id, "0000:19:00.0");
  EXPECT_EQ(g1.pcie.width_current, 8);
  EXPECT_EQ(g1.pcie.width_max, 16);
  EXPECT_EQ(g1.pcie.gen_current, 5);
  ASSERT_EQ(g1.acs_redirects_p2p, true);
  EXPECT_EQ(g1.acs_bridges, (Flags{"0000:17:01.0 (RR,CR)", "0000:15:01.0 (RR,CR)"}));
  EXPECT_EQ(f.gpus[0].acs_bridges, (Flags{"0000:17:00.0 (RR,CR)", "0000:15:01.0 (RR,CR)"}));
  const PciDevice* gpu = device(f, "0000:19:00.0");
  EXPECT_EQ(gpu->width_sta, 8);
  EXPECT_EQ(gpu->width_cap, 16);
  EXPECT_EQ(gpu->aer_uncorrected, Flags{"CmpltTO"});
  EXPECT_TRUE(gpu->aer_uncorrected_fatal.empty()) << "CmpltTO is non-fatal in UESvrt";
  EXPECT_EQ(gpu->aer_corrected, (Flags{"RxErr", "BadTLP"}));
  EXPECT_EQ(device(f, "0000:17:01.0")->acs_ctl,
            (Flags{"SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd"}));
}

TEST(Lspci, TreeGivesGpusAndTheBridgesAboveThem) {
  const Facts f = parse(fixture("lspci-tv-3x-h100-pcie-switch.txt"));
  ASSERT_EQ(f.gpus.size(), 3u) << "the 00.1 'Device 22a3' function is not taken for a GPU";
  EXPECT_EQ(f.gpus[0].pci_bus_id, "0000:18:00.0");
  EXPECT_EQ(f.gpus[1].pci_bus_id, "0000:19:00.0");
  EXPECT_EQ(f.gpus[2].pci_bus_id, "0000:e3:00.0");
  EXPECT_EQ(device(f, "0000:18:00.0")->upstream, "0000:17:00.0");
  EXPECT_EQ(device(f, "0000:19:00.0")->upstream, "0000:17:01.0");
  EXPECT_EQ(device(f, "0000:17:01.0")->upstream, "0000:16:00.0");
  EXPECT_EQ(device(f, "0000:16:00.0")->upstream, "0000:15:01.0");
  EXPECT_FALSE(device(f, "0000:15:01.0")->upstream);
  EXPECT_EQ(device(f, "0000:16:00.0")->secondary_bus, 0x17);
  EXPECT_EQ(device(f, "0000:16:00.0")->subordinate_bus, 0x19);
  EXPECT_EQ(device(f, "0000:cb:00.0")->upstream, "0000:ca:01.0");
  EXPECT_EQ(device(f, "0000:e3:00.1")->upstream, "0000:e2:02.0");
  EXPECT_EQ(device(f, "0000:00:1f.0")->name, "Intel Corporation Ice Lake LPC Controller");
  // A tree shows no capabilities: link and ACS stay unknown, said once.
  for (const auto& g : f.gpus) {
    EXPECT_FALSE(g.acs_redirects_p2p);
    EXPECT_FALSE(g.pcie.width_current);
  }
  EXPECT_TRUE(has_note(f, "lspci without -vvv")) << notes(f);
}

TEST(Lspci, GpusBelowOneSwitchArePix) {
  for (const char* name :
       {"lspci-tv-3x-h100-pcie-switch.txt", "lspci-vvv-2x-h100-pcie-gen5-switch-healthy.txt"}) {
    const Facts f = parse(fixture(name));
    ASSERT_EQ(f.pairs.size(), 1u) << name << ": e3:00.0 sits on its own root port";
    EXPECT_EQ(f.pairs[0].a, 0);
    EXPECT_EQ(f.pairs[0].b, 1);
    EXPECT_EQ(f.pairs[0].path, PathType::kPIX);
  }
  // Two switches below a third: PXB.
  const Facts f = parse(
      "-[0000:00]-+-00.0  Intel Corporation Device 09a2\n"
      "           \\-01.0-[01-07]----00.0-[02-07]--+-00.0-[03-04]----00.0-[04]----00.0  NVIDIA "
      "Corporation GA100 [A100 PCIe 80GB]\n"
      "                                           \\-01.0-[05-07]----00.0-[06]----00.0  NVIDIA "
      "Corporation GA100 [A100 PCIe 80GB]\n");
  ASSERT_EQ(f.gpus.size(), 2u);
  ASSERT_EQ(f.pairs.size(), 1u);
  EXPECT_EQ(f.pairs[0].path, PathType::kPXB);
}

TEST(Lspci, TreeAndVerboseOutputInOneText) {
  const std::string text = fixture("lspci-tv-3x-h100-pcie-switch.txt") + "\n" +
                           fixture("lspci-vvv-2x-h100-pcie-x8-downgraded-acs-redirect-aer.txt");
  const Facts f = parse(text);
  ASSERT_EQ(f.gpus.size(), 3u);
  EXPECT_EQ(f.gpus[1].pcie.width_current, 8);
  EXPECT_EQ(f.gpus[1].acs_redirects_p2p, true);
  // e3:00.0 has no -vvv block: its ACS is unknown, and said so.
  EXPECT_FALSE(f.gpus[2].acs_redirects_p2p);
  EXPECT_TRUE(has_note(f, "GPU2 (0000:e3:00.0) unknown")) << notes(f);
}

TEST(Lspci, NumericAndNameNumericHeaders) {
  const Facts f = parse(
      "0000:3b:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 80GB] [10de:20b2] "
      "(rev a1)\n"
      "0000:3c:00.0 0302: 10de:20b2 (rev a1)\n"
      "0000:3d:00.0 0680: 10de:1af1 (rev a1)\n"
      "0000:3e:00.0 Bridge [0680]: NVIDIA Corporation GA100 [A100 NVSwitch] [10de:1af1] (rev a1)\n"
      "0000:3f:00.0 VGA compatible controller [0300]: ASPEED Technology, Inc. ASPEED Graphics "
      "Family [1a03:2000] (rev 52)\n");
  ASSERT_EQ(f.gpus.size(), 2u) << "NVSwitches (0680) and the BMC's VGA are not GPUs";
  const PciDevice* a = device(f, "0000:3b:00.0");
  EXPECT_EQ(a->class_name, "3D controller");
  EXPECT_EQ(a->class_code, "0302");
  EXPECT_EQ(a->vendor_device, "10de:20b2");
  EXPECT_EQ(a->name, "NVIDIA Corporation GA100 [A100 SXM4 80GB]");
  const PciDevice* b = device(f, "0000:3c:00.0");
  EXPECT_EQ(b->class_code, "0302");
  EXPECT_EQ(b->vendor_device, "10de:20b2");
  EXPECT_FALSE(b->name);
  EXPECT_FALSE(b->class_name);
}

TEST(Lspci, PlainLspciGrepNvidia) {
  const Facts f = parse(
      "$ lspci | grep -i nvidia\n"
      "01:00.0 VGA compatible controller: NVIDIA Corporation AD102 [GeForce RTX 4090] (rev a1)\n"
      "01:00.1 Audio device: NVIDIA Corporation AD102 High Definition Audio Controller (rev a1)\n"
      "02:00.0 VGA compatible controller: NVIDIA Corporation AD102 [GeForce RTX 4090] (rev a1)\n"
      "02:00.1 Audio device: NVIDIA Corporation AD102 High Definition Audio Controller (rev a1)\n");
  ASSERT_EQ(f.gpus.size(), 2u);
  EXPECT_EQ(f.gpus[1].pci_bus_id, "0000:02:00.0");
  EXPECT_TRUE(has_note(f, "lspci without -vvv")) << notes(f);
  EXPECT_FALSE(f.gpus[0].pcie.width_max);
}

TEST(Lspci, WithoutRootCapabilitiesAreAccessDenied) {
  const Facts f = parse(
      "00:01.0 PCI bridge: Intel Corporation Xeon E3-1200 v5/E3-1500 v5/6th Gen Core Processor "
      "PCIe Controller (x16) (rev 07) (prog-if 00 [Normal decode])\n"
      "\tBus: primary=00, secondary=01, subordinate=01, sec-latency=0\n"
      "\tCapabilities: <access denied>\n"
      "\tKernel driver in use: pcieport\n"
      "\n"
      "01:00.0 VGA compatible controller: NVIDIA Corporation GP102 [TITAN Xp] (rev a1) (prog-if "
      "00 [VGA controller])\n"
      "\tSubsystem: NVIDIA Corporation GP102 [TITAN Xp]\n"
      "\tFlags: bus master, fast devsel, latency 0, IRQ 130\n"
      "\tCapabilities: <access denied>\n"
      "\tKernel driver in use: nvidia\n"
      "\tKernel modules: nvidiafb, nouveau, nvidia_drm, nvidia\n");
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_FALSE(f.gpus[0].acs_redirects_p2p);
  EXPECT_FALSE(f.gpus[0].pcie.width_current);
  EXPECT_TRUE(has_note(f, "sudo lspci -vvv")) << notes(f);
  EXPECT_TRUE(has_note(f, "capabilities of 0000:00:01.0 not shown")) << notes(f);
  EXPECT_EQ(device(f, "0000:01:00.0")->upstream, "0000:00:01.0");
}

TEST(Lspci, OneGpuWithSMeansTheBridgesAreUnknown) {
  const std::string full = fixture("lspci-vvv-2x-h100-pcie-x8-downgraded-acs-redirect-aer.txt");
  const std::string block = full.substr(full.find("19:00.0 3D controller"));
  const Facts f = parse("$ sudo lspci -vvv -s 19:00.0\n" + block);
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].pcie.width_current, 8);
  EXPECT_EQ(f.gpus[0].pcie.width_max, 16) << "the GPU's own LnkCap when the port is not pasted";
  EXPECT_FALSE(f.gpus[0].acs_redirects_p2p);
  EXPECT_TRUE(has_note(f, "not all in the paste")) << notes(f);
}

TEST(Lspci, GrepOfAcsCtlLinesIsRecordedForTheNode) {
  const std::string text =
      "$ sudo lspci -vvv | grep ACSCtl\n"
      "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- "
      "DirectTrans-\n"
      "\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- "
      "DirectTrans-\n"
      "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir- UpstreamFwd+ EgressCtrl- "
      "DirectTrans-\n";
  EXPECT_GE(sniff_lspci(text), 60);
  const Facts f = parse(text);
  EXPECT_TRUE(f.gpus.empty());
  EXPECT_EQ(f.host.acs_redirect_unplaced, (Flags{"ACSCtl line 1 (RR,CR)", "ACSCtl line 3 (RR)"}));
  EXPECT_TRUE(has_note(f, "without their device lines")) << notes(f);
}

TEST(Lspci, SniffsItsOwnFormsSurely) {
  for (const char* name : {"lspci-vvv-2x-h100-pcie-gen5-switch-healthy.txt",
                           "lspci-vvv-2x-h100-pcie-x8-downgraded-acs-redirect-aer.txt",
                           "lspci-tv-3x-h100-pcie-switch.txt"})
    EXPECT_GE(sniff_lspci(fixture(name)), 90) << name;
  EXPECT_GE(sniff_lspci("00:00.0 Host bridge: Intel Corporation Device 09a2 (rev 04)\n"
                        "17:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev "
                        "a1)\n"),
            70);
}

TEST(Lspci, DoesNotStealOtherFormats) {
  const char* others[] = {
      // nvidia-smi -q
      "==============NVSMI LOG==============\n\nTimestamp : Mon Dec  1 10:00:00 2025\n"
      "Driver Version : 580.95.05\n\nAttached GPUs : 1\nGPU 00000000:17:00.0\n"
      "    Product Name : NVIDIA H100 80GB HBM3\n    PCI\n        Bus Id : 00000000:17:00.0\n",
      // dmesg with PCI enumeration lines
      "[    1.234567] pci 0000:17:00.0: [10de:2330] type 00 class 0x030200\n"
      "[    1.234600] pci 0000:17:00.0: reg 0x10: [mem 0xa8000000-0xa8ffffff]\n"
      "[    5.000000] pcieport 0000:16:01.0: AER: enabled with IRQ 30\n",
      // topo -m
      "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV18\t0-55\t0\nGPU1\tNV18\t X "
      "\t0-55\t0\n",
      // an nvidia-smi table
      "+-----------------------------------------------------------------------------+\n"
      "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |\n"
      "|-------------------------------+----------------------+----------------------+\n",
      // lscpu
      "Architecture:            x86_64\n  CPU op-mode(s):        32-bit, 64-bit\n",
  };
  for (const char* text : others) EXPECT_EQ(sniff_lspci(text), 0) << text;
}

TEST(Lspci, GarbageIsSafe) {
  std::string junk;
  for (int i = 0; i < 20000; ++i) junk.push_back(static_cast<char>((i * 7919) % 256));
  Facts f;
  (void)import_lspci(junk, f);
  EXPECT_EQ(sniff_lspci(junk), 0);
  // Truncated device and tree lines, a bridge whose bus range is cut, a loop of upstreams.
  for (const char* text : {"17:00.0 3D controller: NVIDIA", "17:00.0 3D controller:",
                           "-[0000:00]-+-01.0-[0", " +-[0000:1", "-[0000:00]-+-ff.7  x\n |  \\-",
                           "00:01.0 PCI bridge: X\n\tBus: primary=00, secondary=00, "
                           "subordinate=ff\n00:00.0 3D controller: NVIDIA Corporation GH100\n",
                           "\t\tUESta:\t", "\t\tLnkSta:\tSpeed 999GT/s, Width x99999999999"}) {
    Facts g;
    (void)import_lspci(text, g);
    (void)sniff_lspci(text);
  }
  EXPECT_FALSE(import_lspci("hello\nworld\n", f).is_ok());
}

TEST(Lspci, ThroughTheRegistryAPastedSessionIsSplitAtTheLspciPrompt) {
  const std::string text = "$ lspci -tv\n" + fixture("lspci-tv-3x-h100-pcie-switch.txt") +
                           "$ sudo lspci -vvv\n" +
                           fixture("lspci-vvv-2x-h100-pcie-gen5-switch-healthy.txt");
  const Facts f = import_text(text, "paste.txt", ImportOptions{});
  ASSERT_GE(f.imported.size(), 2u);
  for (const auto& part : f.imported) EXPECT_EQ(part.format, "lspci") << part.path;
  ASSERT_EQ(f.gpus.size(), 3u);
  EXPECT_EQ(f.gpus[0].acs_redirects_p2p, false);
  EXPECT_EQ(f.gpus[1].pcie.width_current, 16);
}

TEST(Lspci, GenerationFromSpeed) {
  EXPECT_EQ(pcie_gen_from_gts("2.5GT/s"), 1);
  EXPECT_EQ(pcie_gen_from_gts("5GT/s"), 2);
  EXPECT_EQ(pcie_gen_from_gts("8GT/s"), 3);
  EXPECT_EQ(pcie_gen_from_gts("16GT/s"), 4);
  EXPECT_EQ(pcie_gen_from_gts("32GT/s"), 5);
  EXPECT_EQ(pcie_gen_from_gts("64GT/s"), 6);
  EXPECT_FALSE(pcie_gen_from_gts("unknown"));
}

}  // namespace
}  // namespace gpuvet::import
