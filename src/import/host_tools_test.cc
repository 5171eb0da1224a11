#include "import/host_tools.h"

#include <gtest/gtest.h>

#include "fixture_util.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace gpuvet::import {
namespace {

using namespace gpuvet::testing;

std::string local(const std::string& name) {
  return std::string(GPUVET_TEST_DATA) + "/fixtures/capture/tools/" + name;
}

// ------------------------------------------------------------------ numactl

TEST(HostToolsNumactl, RealTwoNodeH100Host) {
  READ_SHARED_OR_SKIP(text, "host/princeton-pli-h100-node-numactl-H.txt");
  EXPECT_EQ(sniff_numactl_hardware(text), 100);
  Facts f;
  ASSERT_TRUE(import_numactl_hardware(text, f).is_ok());
  ASSERT_EQ(f.host.numa_nodes.size(), 2u);
  const auto& n0 = f.host.numa_nodes[0];
  EXPECT_EQ(n0.id, 0);
  ASSERT_EQ(n0.cpus.size(), 48u);
  EXPECT_EQ(n0.cpus.front(), 0);
  EXPECT_EQ(n0.cpus[1], 2);
  EXPECT_EQ(n0.cpus.back(), 94);
  EXPECT_EQ(n0.memory_bytes, 515020ull << 20);
  EXPECT_EQ(n0.distances, (std::vector<int>{10, 21}));
  const auto& n1 = f.host.numa_nodes[1];
  EXPECT_EQ(n1.cpus.front(), 1);
  EXPECT_EQ(n1.memory_bytes, 516037ull << 20);
  EXPECT_EQ(n1.distances, (std::vector<int>{21, 10}));
  EXPECT_FALSE(f.host.cpu_model);  // numactl says nothing of the CPU model
}

TEST(HostToolsNumactl, CpuLessNodes) {
  READ_LOCAL(text, "numactl-H-4node-cpuless-hbm.txt");
  Facts f;
  ASSERT_TRUE(import_numactl_hardware(text, f).is_ok());
  ASSERT_EQ(f.host.numa_nodes.size(), 4u);
  EXPECT_TRUE(f.host.numa_nodes[2].cpus.empty());
  EXPECT_EQ(f.host.numa_nodes[2].memory_bytes, 97280ull << 20);
  EXPECT_EQ(f.host.numa_nodes[3].memory_bytes, 0u);  // printed as 0 MB: known, and zero
  EXPECT_EQ(f.host.numa_nodes[2].distances, (std::vector<int>{80, 80, 10, 80}));
  EXPECT_TRUE(f.notes.empty());
}

TEST(HostToolsNumactl, NoNumaIsRejectedWithANote) {
  Facts f;
  EXPECT_FALSE(import_numactl_hardware("No NUMA available on this system\n", f).is_ok());
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NE(f.notes[0].find("No NUMA"), std::string::npos);
}

TEST(HostToolsNumactl, ShowBecomesANoteAndABinding) {
  READ_LOCAL(text, "numactl-show.txt");
  EXPECT_EQ(sniff_numactl_show(text), 100);
  EXPECT_EQ(sniff_numactl_hardware(text), 0);
  Facts f;
  ASSERT_TRUE(import_numactl_show(text, f).is_ok());
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_EQ(f.notes[0],
            "numactl --show (binding of the shell that ran it): policy default; preferred node "
            "current; physcpubind 0-15 (16 CPUs); cpubind 0; nodebind 0; membind 0-1");
  EXPECT_TRUE(f.host.numa_nodes.empty());
  ASSERT_EQ(f.numa_bindings.size(), 1u);
  const NumaBinding& b = f.numa_bindings[0];
  EXPECT_FALSE(b.pid.has_value());
  EXPECT_EQ(b.cpus.size(), 16u);
  EXPECT_EQ(b.cpus.front(), 0);
  EXPECT_EQ(b.cpus.back(), 15);
  EXPECT_EQ(b.mems, (std::vector<int>{0, 1}));
  EXPECT_EQ(b.source, "numactl --show");
}

TEST(HostToolsNumactl, ShowPreferredPolicyTakesThePreferredNode) {
  Facts f;
  ASSERT_TRUE(import_numactl_show("policy: preferred\n"
                                  "preferred node: 1\n"
                                  "physcpubind: 16 17 18 19 \n"
                                  "cpubind: 1 \n"
                                  "nodebind: 1 \n"
                                  "membind: 0 1 \n",
                                  f)
                  .is_ok());
  ASSERT_EQ(f.numa_bindings.size(), 1u);
  EXPECT_EQ(f.numa_bindings[0].cpus, (std::vector<int>{16, 17, 18, 19}));
  EXPECT_EQ(f.numa_bindings[0].mems, std::vector<int>{1});
}

TEST(HostToolsNumactl, ShowWithoutMembindLeavesMemsEmpty) {
  Facts f;
  ASSERT_TRUE(import_numactl_show("policy: default\npreferred node: current\nphyscpubind: 2 3\n", f)
                  .is_ok());
  ASSERT_EQ(f.numa_bindings.size(), 1u);
  EXPECT_EQ(f.numa_bindings[0].cpus, (std::vector<int>{2, 3}));
  EXPECT_TRUE(f.numa_bindings[0].mems.empty());
}

TEST(HostToolsNumactl, ShowWithNoFieldsHasNoBinding) {
  Facts f;
  EXPECT_FALSE(import_numactl_show("nothing here\n", f).is_ok());
  EXPECT_TRUE(f.numa_bindings.empty());
}

// ------------------------------------------------------------------ lscpu

TEST(HostToolsLscpu, RealFlatFormatX86) {
  READ_SHARED_OR_SKIP(text, "host/princeton-pli-h100-node-lscpu.txt");
  EXPECT_EQ(sniff_lscpu(text), 100);
  Facts f;
  ASSERT_TRUE(import_lscpu(text, f).is_ok());
  EXPECT_EQ(f.host.cpu_model, "Intel(R) Xeon(R) Platinum 8468");
  EXPECT_EQ(f.host.logical_cpus, 96);
  EXPECT_EQ(f.host.sockets, 2);
  EXPECT_EQ(f.host.physical_cores, 96);
  EXPECT_EQ(f.host.virtual_machine, false);  // Flags lack "hypervisor"
  ASSERT_EQ(f.host.numa_nodes.size(), 2u);
  EXPECT_EQ(f.host.numa_nodes[1].cpus.size(), 48u);
  EXPECT_EQ(f.host.numa_nodes[1].cpus.front(), 1);
  EXPECT_FALSE(f.host.numa_nodes[0].memory_bytes);
}

TEST(HostToolsLscpu, RealSectionedAarch64WithCpuLessNodes) {
  READ_SHARED_OR_SKIP(text, "host/princeton-della-gh200-lscpu-aarch64-9-numa-nodes.txt");
  Facts f;
  ASSERT_TRUE(import_lscpu(text, f).is_ok());
  EXPECT_EQ(f.host.cpu_model, "Neoverse-V2");
  EXPECT_EQ(f.host.logical_cpus, 72);
  EXPECT_EQ(f.host.physical_cores, 72);
  EXPECT_EQ(f.host.sockets, 1);
  ASSERT_EQ(f.host.numa_nodes.size(), 9u);
  EXPECT_EQ(f.host.numa_nodes[0].cpus.size(), 72u);
  for (int i = 1; i < 9; ++i) {
    EXPECT_EQ(f.host.numa_nodes[i].id, i);
    EXPECT_TRUE(f.host.numa_nodes[i].cpus.empty());
  }
}

TEST(HostToolsLscpu, RealPower9SparseNodeIds) {
  READ_SHARED_OR_SKIP(text,
                      "host/princeton-traverse-power9-4xv100-host-lscpu-cpuless-numa-252-255.txt");
  Facts f;
  ASSERT_TRUE(import_lscpu(text, f).is_ok());
  EXPECT_EQ(f.host.cpu_model, "POWER9, altivec supported");
  EXPECT_EQ(f.host.logical_cpus, 128);
  EXPECT_EQ(f.host.physical_cores, 32);  // 16 cores x 2 sockets, SMT4
  EXPECT_FALSE(f.host.virtual_machine);  // no Flags line: unknown, not false
  ASSERT_EQ(f.host.numa_nodes.size(), 6u);
  EXPECT_EQ(f.host.numa_nodes[1].id, 8);
  EXPECT_EQ(f.host.numa_nodes[1].cpus.front(), 64);
  EXPECT_EQ(f.host.numa_nodes[5].id, 255);
  EXPECT_TRUE(f.host.numa_nodes[5].cpus.empty());
}

TEST(HostToolsLscpu, RealBroadwell) {
  READ_SHARED_OR_SKIP(text, "host/princeton-tigergpu-4xp100-host-lscpu-broadwell.txt");
  Facts f;
  ASSERT_TRUE(import_lscpu(text, f).is_ok());
  EXPECT_EQ(f.host.cpu_model, "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz");
  EXPECT_EQ(f.host.physical_cores, 28);
  EXPECT_EQ(f.host.numa_nodes[0].cpus,
            (std::vector<int>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26}));
}

TEST(HostToolsLscpu, HypervisorVendorMeansVm) {
  const std::string text =
      "Architecture:            x86_64\n"
      "CPU(s):                  16\n"
      "Vendor ID:               AuthenticAMD\n"
      "  Model name:            AMD EPYC 7R13 Processor\n"
      "    Thread(s) per core:  2\n"
      "    Core(s) per socket:  8\n"
      "    Socket(s):           1\n"
      "Virtualization features: \n"
      "  Hypervisor vendor:     KVM\n"
      "  Virtualization type:   full\n";
  Facts f;
  ASSERT_TRUE(import_lscpu(text, f).is_ok());
  EXPECT_EQ(f.host.virtual_machine, true);
  EXPECT_EQ(f.host.physical_cores, 8);
  EXPECT_EQ(f.host.cpu_model, "AMD EPYC 7R13 Processor");
}

// ------------------------------------------------------------------ mpstat

TEST(HostToolsMpstat, AverageBlock12HourClock) {
  READ_LOCAL(text, "mpstat-P-ALL-12h-average.txt");
  EXPECT_EQ(sniff_mpstat(text), 100);
  Facts f;
  ASSERT_TRUE(import_mpstat(text, f).is_ok());
  ASSERT_TRUE(f.host.pressure);
  const auto& p = *f.host.pressure;
  EXPECT_DOUBLE_EQ(p.window_s, 2);
  ASSERT_TRUE(p.iowait_pct);
  EXPECT_DOUBLE_EQ(*p.iowait_pct, 11.63);
  ASSERT_EQ(p.cores.size(), 8u);
  EXPECT_EQ(p.cores[0].cpu, 0);
  EXPECT_DOUBLE_EQ(p.cores[0].busy_pct, 100.0);
  EXPECT_EQ(p.cores[1].cpu, 1);
  EXPECT_NEAR(p.cores[1].busy_pct, 51.76, 1e-9);
  EXPECT_DOUBLE_EQ(p.cores[1].iowait_pct, 46.23);
  EXPECT_EQ(f.host.hostname, "gpu-node-07");
  EXPECT_EQ(f.host.kernel, "5.15.0-91-generic");
  EXPECT_EQ(f.host.logical_cpus, 8);
}

TEST(HostToolsMpstat, DecimalCommaLocaleAndSteal) {
  READ_LOCAL(text, "mpstat-P-ALL-24h-decimal-comma-de.txt");
  Facts f;
  ASSERT_TRUE(import_mpstat(text, f).is_ok());
  const auto& p = *f.host.pressure;
  EXPECT_DOUBLE_EQ(p.window_s, 10);
  EXPECT_DOUBLE_EQ(*p.iowait_pct, 0.15);
  ASSERT_EQ(p.cores.size(), 4u);
  EXPECT_NEAR(p.cores[0].busy_pct, 56.6, 1e-9);  // from "Durchschn.:", 100 - 43,40
  EXPECT_DOUBLE_EQ(p.cores[0].steal_pct, 20.5);
}

TEST(HostToolsMpstat, OldColumnsLastSampleWithoutAverage) {
  READ_LOCAL(text, "mpstat-P-ALL-old-sysstat-no-average.txt");
  Facts f;
  ASSERT_TRUE(import_mpstat(text, f).is_ok());
  const auto& p = *f.host.pressure;
  EXPECT_DOUBLE_EQ(p.window_s, 1);
  EXPECT_DOUBLE_EQ(*p.iowait_pct, 0.25);  // the 09:30:02 PM sample
  EXPECT_DOUBLE_EQ(p.cores[0].busy_pct, 100.0);
  EXPECT_DOUBLE_EQ(p.cores[1].busy_pct, 8.0);
  ASSERT_FALSE(f.notes.empty());
}

// ------------------------------------------------------------------ iostat

TEST(HostToolsIostat, Sysstat12LastReport) {
  READ_LOCAL(text, "iostat-xz-sysstat12-two-reports.txt");
  EXPECT_EQ(sniff_iostat(text), 100);
  Facts f;
  ASSERT_TRUE(import_iostat(text, f).is_ok());
  const auto& p = *f.host.pressure;
  EXPECT_DOUBLE_EQ(*p.iowait_pct, 23.45);
  ASSERT_EQ(p.disks.size(), 2u);
  EXPECT_EQ(p.disks[0].device, "nvme0n1");
  EXPECT_DOUBLE_EQ(p.disks[0].util_pct, 99.60);
  EXPECT_DOUBLE_EQ(p.disks[0].read_bytes_per_s, 666880.0 * 1024);
  EXPECT_DOUBLE_EQ(p.disks[0].write_bytes_per_s, 512.0 * 1024);
  EXPECT_EQ(p.disks[1].device, "sda");
  EXPECT_TRUE(f.notes.empty());
}

TEST(HostToolsIostat, OldSysstatMegabytes) {
  READ_LOCAL(text, "iostat-x-old-sysstat10-mb.txt");
  Facts f;
  ASSERT_TRUE(import_iostat(text, f).is_ok());
  const auto& p = *f.host.pressure;
  EXPECT_DOUBLE_EQ(*p.iowait_pct, 31.75);
  ASSERT_EQ(p.disks.size(), 2u);
  EXPECT_EQ(p.disks[0].device, "sda");
  EXPECT_DOUBLE_EQ(p.disks[0].util_pct, 99.80);
  EXPECT_DOUBLE_EQ(p.disks[0].read_bytes_per_s, 102.50 * 1048576);
}

TEST(HostToolsIostat, SingleReportIsNoted) {
  const std::string text =
      "avg-cpu:  %user   %nice %system %iowait  %steal   %idle\n"
      "           4.12    0.01    1.35    0.42    0.00   94.10\n\n"
      "Device            r/s     rkB/s     w/s     wkB/s  %util\n"
      "nvme0n1         12.31    987,65    5.44    123.45   0,62\n";
  Facts f;
  ASSERT_TRUE(import_iostat(text, f).is_ok());
  ASSERT_EQ(f.host.pressure->disks.size(), 1u);
  EXPECT_DOUBLE_EQ(f.host.pressure->disks[0].util_pct, 0.62);
  EXPECT_DOUBLE_EQ(f.host.pressure->disks[0].read_bytes_per_s, 987.65 * 1024);
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NE(f.notes[0].find("since boot"), std::string::npos);
}

// ------------------------------------------------------------------ sar -n DEV

TEST(HostToolsSar, AverageBlockSkipsLoopback) {
  READ_LOCAL(text, "sar-n-DEV-average.txt");
  EXPECT_EQ(sniff_sar_net_dev(text), 100);
  EXPECT_EQ(sniff_mpstat(text), 0);
  Facts f;
  ASSERT_TRUE(import_sar_net_dev(text, f).is_ok());
  const auto& p = *f.host.pressure;
  EXPECT_DOUBLE_EQ(p.window_s, 2);
  ASSERT_EQ(p.nics.size(), 2u);
  EXPECT_EQ(p.nics[0].device, "eth0");
  EXPECT_DOUBLE_EQ(p.nics[0].rx_bytes_per_s, 116210.94 * 1024);
  EXPECT_DOUBLE_EQ(p.nics[0].tx_bytes_per_s, 2842.69 * 1024);
  EXPECT_FALSE(p.nics[0].speed_mbit_s);
  EXPECT_EQ(p.nics[0].peak_util_pct, 95.20);
  EXPECT_EQ(p.nics[1].device, "ib0");
  EXPECT_FALSE(p.nics[1].peak_util_pct);  // 0.00: speed unknown to sar
  EXPECT_FALSE(p.iowait_pct);
}

TEST(HostToolsSar, LastSampleAcrossMidnight) {
  READ_LOCAL(text, "sar-n-DEV-24h-no-average.txt");
  Facts f;
  ASSERT_TRUE(import_sar_net_dev(text, f).is_ok());
  const auto& p = *f.host.pressure;
  EXPECT_DOUBLE_EQ(p.window_s, 1);
  ASSERT_EQ(p.nics.size(), 1u);
  EXPECT_DOUBLE_EQ(p.nics[0].rx_bytes_per_s, 4096.0 * 1024);
}

// ------------------------------------------------------------------ sniffing, robustness

TEST(HostToolsSniff, EachSampleOnlyByItsOwnSniffer) {
  struct Case {
    const char* file;
    int (*own)(std::string_view);
  };
  const Case cases[] = {
      {"mpstat-P-ALL-12h-average.txt", sniff_mpstat},
      {"mpstat-P-ALL-24h-decimal-comma-de.txt", sniff_mpstat},
      {"mpstat-P-ALL-old-sysstat-no-average.txt", sniff_mpstat},
      {"iostat-xz-sysstat12-two-reports.txt", sniff_iostat},
      {"iostat-x-old-sysstat10-mb.txt", sniff_iostat},
      {"sar-n-DEV-average.txt", sniff_sar_net_dev},
      {"sar-n-DEV-24h-no-average.txt", sniff_sar_net_dev},
      {"numactl-show.txt", sniff_numactl_show},
      {"numactl-H-4node-cpuless-hbm.txt", sniff_numactl_hardware},
  };
  int (*all[])(std::string_view) = {sniff_numactl_hardware, sniff_numactl_show, sniff_lscpu,
                                    sniff_mpstat,           sniff_iostat,       sniff_sar_net_dev};
  for (const auto& c : cases) {
    auto text = read_text(local(c.file));
    ASSERT_TRUE(text) << c.file;
    for (auto s : all) {
      if (s == c.own)
        EXPECT_GT(s(*text), 0) << c.file;
      else
        EXPECT_EQ(s(*text), 0) << c.file;
    }
  }
}

TEST(HostToolsRobust, GarbageAndTruncation) {
  using Parse = Status (*)(std::string_view, Facts&);
  const Parse parsers[] = {import_numactl_hardware, import_numactl_show, import_lscpu,
                           import_mpstat,           import_iostat,       import_sar_net_dev};
  std::string junk;
  unsigned x = 12345;
  for (int i = 0; i < 200000; ++i) {
    x = x * 1103515245 + 12345;
    junk.push_back(static_cast<char>(x >> 16));
  }
  for (auto parse : parsers) {
    Facts f;
    (void)parse("", f);
    (void)parse(junk, f);
    (void)parse(std::string_view("\0\0\0CPU %idle\0", 13), f);
  }
  for (const char* name : {"mpstat-P-ALL-12h-average.txt", "iostat-xz-sysstat12-two-reports.txt",
                           "sar-n-DEV-average.txt", "numactl-H-4node-cpuless-hbm.txt"}) {
    auto text = read_text(local(name));
    ASSERT_TRUE(text);
    for (std::size_t cut = 0; cut < text->size(); cut += 7)
      for (auto parse : parsers) {
        Facts f;
        (void)parse(std::string_view(*text).substr(0, cut), f);
      }
  }
}

}  // namespace
}  // namespace gpuvet::import
