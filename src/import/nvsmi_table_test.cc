#include "import/nvsmi_table.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "fixture_util.h"
#include "import/load.h"
#include "import/nvsmi_text.h"

namespace gpuvet::import {
namespace {

using namespace gpuvet::testing;

constexpr std::uint64_t kMiB = 1024ull * 1024;

Facts import_ok(const std::string& text) {
  Facts f;
  Status st = import_nvsmi_table(text, f);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return f;
}

// The inputs below without a provenance line were written for these tests from nvidia-smi's
// layouts as the drivers print them (column widths as in the real outputs beside them).

// Driver 418: two header rows (no "MIG M."), a name cut with "...", the process table without
// the GI/CI columns.
const std::string kDriver418 = R"(Tue Mar  3 10:12:01 2020
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 418.67       Driver Version: 418.67       CUDA Version: 10.1     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  Tesla V100-SXM2...  On   | 00000000:1A:00.0 Off |                    0 |
| N/A   44C    P0   254W / 300W |  31012MiB / 32480MiB |     98%      Default |
+-------------------------------+----------------------+----------------------+
|   1  Tesla V100-SXM2...  On   | 00000000:1C:00.0 Off |                    2 |
| N/A   41C    P0   249W / 300W |  31012MiB / 32480MiB |     97%   E. Process |
+-------------------------------+----------------------+----------------------+

+-----------------------------------------------------------------------------+
| Processes:                                                       GPU Memory |
|  GPU       PID   Type   Process name                             Usage      |
|=============================================================================|
|    0     41234      C   python                                     31001MiB |
|    1     41235      C   /opt/conda/bin/python                      31001MiB |
+-----------------------------------------------------------------------------+
)";

// Driver 535: the GI/CI process columns, a graphics-only process, a C+G one, MIG enabled on
// one GPU, and no banner (cut off by the person pasting it).
const std::string kDriver535NoBanner =
    R"(|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  NVIDIA A100-SXM4-80GB          Off | 00000000:07:00.0 Off |                    0 |
| N/A   33C    P0              61W / 400W |      4MiB / 81920MiB |      0%      Default |
|                                         |                      |             Enabled  |
+-----------------------------------------+----------------------+----------------------+
|   1  NVIDIA A100-SXM4-80GB          Off | 00000000:0F:00.0 Off |                    0 |
| N/A   35C    P0             312W / 400W |  40213MiB / 81920MiB |    100%      Default |
|                                         |                      |             Disabled |
+-----------------------------------------+----------------------+----------------------+

+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
|    1   N/A  N/A      2211      G   /usr/lib/xorg/Xorg                            4MiB |
|    1   N/A  N/A      9876    C+G   ...conda3/envs/train/bin/python           40200MiB |
+---------------------------------------------------------------------------------------+
)";

// Driver 570+: "+---" under the banner, the wide columns.
const std::string kDriver570 =
    R"(+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 570.124.06             Driver Version: 570.124.06     CUDA Version: 12.8     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 4090        Off |   00000000:01:00.0  On |                  Off |
| 30%   41C    P8             22W /  450W |     512MiB /  24564MiB |      3%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|  No running processes found                                                             |
+-----------------------------------------------------------------------------------------+
)";

// Windows: TCC/WDDM in place of Persistence-M, no memory per process.
const std::string kWindows =
    R"(+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 552.22                 Driver Version: 552.22         CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                     TCC/WDDM  | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 3080 ...  WDDM  |   00000000:01:00.0  On |                  N/A |
|  0%   46C    P8             21W /  340W |     811MiB /  10240MiB |      4%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+
| Processes:                                                                              |
|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|    0   N/A  N/A      4412    C+G   ...5n1h2txyewy\ShellExperienceHost.exe      N/A      |
+-----------------------------------------------------------------------------------------+
)";

// A GPU that stopped answering: ERR! in its readings, the one beside it healthy.
const std::string kErrRows =
    R"(+-----------------------------------------------------------------------------+
| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  NVIDIA GeForce ...  Off  | 00000000:01:00.0 Off |                  N/A |
| 30%   38C    P8    20W / 350W |      5MiB / 24268MiB |      0%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
|   1  NVIDIA GeForce ...  Off  | 00000000:21:00.0 Off |                  N/A |
|ERR!   ERR!  ERR!    ERR! / ERR! |      0MiB / 24268MiB |    ERR!      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
|   2  NVIDIA GeForce ...  Off  | 00000000:41:00.0 Off |                  N/A |
|ERR!   36C    P8    19W / 350W |      5MiB / 24268MiB |      0%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
)";

// ------------------------------------------------------------------ layouts

TEST(NvsmiTable, OldLayoutRealTenGpus) {
  Facts f = import_ok(
      read_file(fixture("capture/nvsmi/gengwg-10x-quadro-rtx8000-default-table-drv470.txt")));
  EXPECT_EQ(f.host.driver_version, "470.63.01");
  EXPECT_EQ(f.host.cuda_driver_version, "11.4");
  ASSERT_EQ(f.gpus.size(), 10u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.name, "Quadro RTX 8000");
  EXPECT_EQ(g.pci_bus_id, "0000:12:00.0");
  EXPECT_EQ(g.persistence_mode, "enabled");
  EXPECT_EQ(g.thermal.gpu_c, 18);
  EXPECT_EQ(g.pstate, 8);
  EXPECT_EQ(g.power.draw_w, 16.0);
  EXPECT_EQ(g.power.limit_w, 260.0);
  EXPECT_EQ(g.memory.used_bytes, 1 * kMiB);
  EXPECT_EQ(g.memory.total_bytes, 48601 * kMiB);
  EXPECT_EQ(g.utilization.gpu_pct, 0);
  EXPECT_EQ(g.ecc.enabled, false);
  EXPECT_FALSE(g.ecc.volatile_counts.uncorrected);
  EXPECT_FALSE(g.mig_enabled);  // "N/A": not a MIG-capable GPU
  EXPECT_FALSE(g.unresponsive);
  EXPECT_EQ(f.gpus[6].pci_bus_id, "0000:8a:00.0");  // upper-case hex normalised
  EXPECT_EQ(f.gpus[9].index, 9);
  EXPECT_EQ(f.gpus[9].power.draw_w, 9.0);
  EXPECT_TRUE(f.processes.empty());
  EXPECT_TRUE(f.notes.empty()) << f.notes.front();
}

TEST(NvsmiTable, NewLayoutRealEightH100) {
  Facts f = import_ok(read_file(fixture("capture/nvsmi/gpud-8x-h100-default-table-drv550.txt")));
  EXPECT_EQ(f.host.driver_version, "550.90.07");
  EXPECT_EQ(f.host.cuda_driver_version, "12.4");
  ASSERT_EQ(f.gpus.size(), 8u);
  const GpuFacts& g = f.gpus[7];
  EXPECT_EQ(g.index, 7);
  EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.pci_bus_id, "0000:db:00.0");
  EXPECT_EQ(g.persistence_mode, "enabled");
  EXPECT_EQ(g.thermal.gpu_c, 23);
  EXPECT_EQ(g.pstate, 0);
  EXPECT_EQ(g.power.draw_w, 72.0);
  EXPECT_EQ(g.power.limit_w, 700.0);
  EXPECT_EQ(g.memory.total_bytes, 81559 * kMiB);
  EXPECT_EQ(g.ecc.enabled, true);
  EXPECT_EQ(g.ecc.volatile_counts.uncorrected, 0u);
  EXPECT_EQ(g.mig_enabled, false);
  EXPECT_TRUE(f.processes.empty());
}

TEST(NvsmiTable, Driver418TwoHeaderRowsTruncatedNamesOldProcessTable) {
  Facts f = import_ok(kDriver418);
  EXPECT_EQ(f.host.driver_version, "418.67");
  ASSERT_EQ(f.gpus.size(), 2u);
  EXPECT_EQ(f.gpus[0].name, "Tesla V100-SXM2...");
  EXPECT_EQ(f.gpus[0].pci_bus_id, "0000:1a:00.0");
  EXPECT_EQ(f.gpus[0].utilization.gpu_pct, 98);
  EXPECT_EQ(f.gpus[0].memory.used_bytes, 31012 * kMiB);
  EXPECT_FALSE(f.gpus[0].mig_enabled);
  EXPECT_EQ(f.gpus[1].ecc.volatile_counts.uncorrected, 2u);
  EXPECT_EQ(f.gpus[1].power.draw_w, 249.0);
  ASSERT_EQ(f.processes.size(), 2u);
  EXPECT_EQ(f.processes[0].gpu, 0);
  EXPECT_EQ(f.processes[0].host_pid, 41234);
  EXPECT_EQ(f.processes[0].name, "python");
  EXPECT_EQ(f.processes[0].used_memory_bytes, 31001 * kMiB);
  EXPECT_EQ(f.processes[1].gpu, 1);
  EXPECT_EQ(f.processes[1].name, "/opt/conda/bin/python");
  // A compute mode other than Default is said (a second process on GPU1 would be refused).
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NE(f.notes[0].find("GPU1: compute mode E. Process"), std::string::npos) << f.notes[0];
}

TEST(NvsmiTable, Driver535WithoutBannerMigAndGiCiProcesses) {
  Facts f = import_ok(kDriver535NoBanner);
  EXPECT_FALSE(f.host.driver_version);
  ASSERT_EQ(f.gpus.size(), 2u);
  EXPECT_EQ(f.gpus[0].persistence_mode, "disabled");
  EXPECT_EQ(f.gpus[0].mig_enabled, true);
  EXPECT_EQ(f.gpus[1].mig_enabled, false);
  EXPECT_EQ(f.gpus[1].power.draw_w, 312.0);
  EXPECT_EQ(f.gpus[1].utilization.gpu_pct, 100);
  // Xorg (type G) is not GPU work; the C+G process is.
  ASSERT_EQ(f.processes.size(), 1u);
  EXPECT_EQ(f.processes[0].gpu, 1);
  EXPECT_EQ(f.processes[0].host_pid, 9876);
  EXPECT_EQ(f.processes[0].name, "...conda3/envs/train/bin/python");
  EXPECT_EQ(f.processes[0].used_memory_bytes, 40200 * kMiB);
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NE(f.notes[0].find("1 graphics-only process"), std::string::npos) << f.notes[0];
}

TEST(NvsmiTable, Driver570Layout) {
  Facts f = import_ok(kDriver570);
  EXPECT_EQ(f.host.driver_version, "570.124.06");
  EXPECT_EQ(f.host.cuda_driver_version, "12.8");
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.name, "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(g.pci_bus_id, "0000:01:00.0");
  EXPECT_EQ(g.power.limit_w, 450.0);
  EXPECT_EQ(g.memory.used_bytes, 512 * kMiB);
  EXPECT_EQ(g.utilization.gpu_pct, 3);
  EXPECT_EQ(g.ecc.enabled, false);
  EXPECT_TRUE(f.processes.empty());
  EXPECT_TRUE(f.notes.empty());
}

TEST(NvsmiTable, WindowsTccWddmColumn) {
  Facts f = import_ok(kWindows);
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].name, "NVIDIA GeForce RTX 3080 ...");
  EXPECT_FALSE(f.gpus[0].persistence_mode);  // WDDM is the driver model, not persistence
  EXPECT_EQ(f.gpus[0].thermal.gpu_c, 46);
  ASSERT_EQ(f.processes.size(), 1u);
  EXPECT_EQ(f.processes[0].host_pid, 4412);
  EXPECT_FALSE(f.processes[0].used_memory_bytes);  // "N/A" under WDDM
}

TEST(NvsmiTable, CrlfAndLoopedTablesKeepTheLast) {
  std::string looped = kDriver570;
  const auto at = looped.find("22W /  450W");
  std::string second = kDriver570;
  second.replace(second.find("22W /  450W"), 11, "99W /  450W");
  looped += "\n" + second;
  std::string crlf;
  for (char c : looped) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  ASSERT_NE(at, std::string::npos);
  Facts f = import_ok(crlf);
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].power.draw_w, 99.0);
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NE(f.notes[0].find("2 tables"), std::string::npos);
}

// ------------------------------------------------------------------ ERR! and error lines

TEST(NvsmiTable, ErrInSeveralReadingsIsAGpuThatDoesNotAnswer) {
  Facts f = import_ok(kErrRows);
  ASSERT_EQ(f.gpus.size(), 3u);
  EXPECT_FALSE(f.gpus[0].unresponsive);
  ASSERT_TRUE(f.gpus[1].unresponsive);
  EXPECT_NE(f.gpus[1].unresponsive->find("ERR! for fan, temperature, perf state, power draw, "
                                         "power cap, utilisation"),
            std::string::npos)
      << *f.gpus[1].unresponsive;
  EXPECT_EQ(f.gpus[1].pci_bus_id, "0000:21:00.0");
  // One ERR! (the fan) is a failed sensor, not a lost GPU.
  EXPECT_FALSE(f.gpus[2].unresponsive);
  ASSERT_EQ(f.gpus[2].unreadable.size(), 1u);
  EXPECT_EQ(f.gpus[2].thermal.gpu_c, 36);
  bool noted = false;
  for (const auto& n : f.notes)
    noted = noted || n.find("GPU2: nvidia-smi shows ERR! for the fan") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(NvsmiErrorLines, DeviceHandleUnknownErrorAlone) {
  Facts f =
      import_ok("Unable to determine the device handle for GPU 0000:09:00.0: Unknown Error\n");
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].index, 0);
  EXPECT_EQ(f.gpus[0].pci_bus_id, "0000:09:00.0");
  ASSERT_TRUE(f.gpus[0].unresponsive);
  EXPECT_NE(f.gpus[0].unresponsive->find("cannot get a handle: Unknown Error"), std::string::npos)
      << *f.gpus[0].unresponsive;
  EXPECT_FALSE(f.gpu_facts_unavailable);
}

TEST(NvsmiErrorLines, GpuIsLostAboveATableTakesTheFreeIndex) {
  std::string text =
      "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot the "
      "system to recover this GPU\n" +
      kDriver418;
  // The table shows GPUs 0 and 1; the lost one gets 2.
  Facts f = import_ok(text);
  ASSERT_EQ(f.gpus.size(), 3u);
  EXPECT_EQ(f.gpus[2].index, 2);
  EXPECT_EQ(f.gpus[2].pci_bus_id, "0000:3b:00.0");
  ASSERT_TRUE(f.gpus[2].unresponsive);
  EXPECT_NE(f.gpus[2].unresponsive->find("GPU is lost"), std::string::npos);
  EXPECT_FALSE(f.gpus[0].unresponsive);
}

TEST(NvsmiErrorLines, GapInTheTableIsTheLostGpusIndex) {
  std::string table = kDriver418;
  table.replace(table.find("|   1  Tesla"), 6, "|   2  ");
  Facts f = import_ok(
      "Unable to determine the device handle for GPU 0000:1B:00.0: Unknown Error\n" + table);
  ASSERT_EQ(f.gpus.size(), 3u);
  EXPECT_EQ(f.gpus[1].index, 1);
  EXPECT_EQ(f.gpus[1].pci_bus_id, "0000:1b:00.0");
  EXPECT_TRUE(f.gpus[1].unresponsive);
}

TEST(NvsmiErrorLines, BareGpuIsLostAndRepeatsAreOneGpu) {
  Facts f = import_ok("GPU is lost\nGPU is lost\n");
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_FALSE(f.gpus[0].pci_bus_id);
  EXPECT_TRUE(f.gpus[0].unresponsive);
  Facts twice = import_ok(
      "Unable to determine the device handle for GPU 0000:09:00.0: Unknown Error\n"
      "Unable to determine the device handle for GPU 0000:09:00.0: Unknown Error\n");
  EXPECT_EQ(twice.gpus.size(), 1u);
}

TEST(NvsmiErrorLines, NoDriverLinesAreAFailedDriverNotAnUnreadableFile) {
  for (const std::string line :
       {"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
        "that the latest NVIDIA driver is installed and running.",
        "Failed to initialize NVML: Driver/library version mismatch",
        "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that "
        "the NVIDIA Display Driver is properly installed and present in your system.",
        "No devices were found"}) {
    SCOPED_TRACE(line);
    EXPECT_EQ(sniff_nvsmi_table(line + "\n"), 35);
    Facts f = import_ok("$ nvidia-smi\n" + line + "\n");
    EXPECT_TRUE(f.gpus.empty());
    EXPECT_TRUE(f.gpu_facts_unavailable);
    ASSERT_EQ(f.sources.size(), 1u);
    EXPECT_EQ(f.sources[0].name, "nvml");
    EXPECT_FALSE(f.sources[0].ok);
    EXPECT_NE(f.sources[0].detail.find(line.substr(0, 30)), std::string::npos);
  }
}

TEST(NvsmiErrorLines, QTextWithALostGpuKeepsBoth) {
  const std::string q = read_file(fixture("capture/nvsmi/llmaction-h800-q-i0.txt"));
  Facts f;
  ASSERT_TRUE(
      import_nvsmi_q(
          "Unable to determine the device handle for GPU 0000:9A:00.0: Unknown Error\n" + q, f)
          .is_ok());
  ASSERT_EQ(f.gpus.size(), 2u);
  EXPECT_FALSE(f.gpus[0].unresponsive);
  EXPECT_EQ(f.gpus[1].pci_bus_id, "0000:9a:00.0");
  EXPECT_TRUE(f.gpus[1].unresponsive);
}

// ------------------------------------------------------------------ sniffing and safety

TEST(NvsmiTable, SniffsTablesAndNotOtherNvidiaSmiOutputs) {
  EXPECT_EQ(sniff_nvsmi_table(kDriver418), 100);
  EXPECT_EQ(sniff_nvsmi_table(kDriver535NoBanner), 100);
  EXPECT_EQ(sniff_nvsmi_table(kWindows), 100);
  EXPECT_EQ(sniff_nvsmi_table(kDriver570.substr(kDriver570.find("| Processes:"))), 90);
  for (const char* rel :
       {"capture/nvsmi/llmaction-h800-q-i0.txt", "capture/nvsmi/gpuvet-h200-drv580-q.txt",
        "capture/nvsmi/gpuvet-h200-drv580-q.xml",
        "capture/topo/gengwg-dgx-a100-8gpu-nv12-12x-mlx5-nps4-topo-m.txt"}) {
    SCOPED_TRACE(rel);
    EXPECT_EQ(sniff_nvsmi_table(read_file(fixture(rel))), 0);
  }
  EXPECT_EQ(sniff_nvsmi_table("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0000)\n"), 0);
  EXPECT_EQ(
      sniff_nvsmi_table("[ 12.3] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"),
      0);
  // Whole-paste path: the table is "nvidia-smi", an error line alone too.
  Facts t = import_text(kDriver535NoBanner, "paste");
  ASSERT_EQ(t.imported.size(), 1u);
  EXPECT_EQ(t.imported[0].format, "nvidia-smi");
  Facts e = import_text("No devices were found\n", "paste");
  ASSERT_EQ(e.imported.size(), 1u);
  EXPECT_EQ(e.imported[0].format, "nvidia-smi");
}

TEST(NvsmiTable, GarbageAndTruncationAreSafe) {
  Facts empty;
  EXPECT_FALSE(import_nvsmi_table("", empty).is_ok());
  Facts junk;
  EXPECT_FALSE(import_nvsmi_table("| just | some | bars |\n|||||\n", junk).is_ok());
  // Every cut of a table parses without failing and never invents a GPU.
  const std::string whole = kDriver535NoBanner;
  for (std::size_t n = 0; n <= whole.size(); n += 7) {
    Facts f;
    (void)import_nvsmi_table(whole.substr(0, n), f);
    EXPECT_LE(f.gpus.size(), 2u);
    EXPECT_LE(f.processes.size(), 1u);
  }
  std::mt19937 rng(16);
  for (int i = 0; i < 200; ++i) {
    std::string s = whole;
    for (int k = 0; k < 20; ++k) s[rng() % s.size()] = static_cast<char>(rng() % 256);
    Facts f;
    (void)sniff_nvsmi_table(s);
    (void)import_nvsmi_table(s, f);
  }
  std::string bars(1 << 20, '|');
  Facts big;
  (void)import_nvsmi_table(bars, big);
  EXPECT_TRUE(big.gpus.empty());
}

}  // namespace
}  // namespace gpuvet::import
