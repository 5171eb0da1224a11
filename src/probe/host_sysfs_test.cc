#include "probe/host_sysfs.h"

#include <gtest/gtest.h>

#include "fakes/file_systems.h"

#include <cstring>
#include <map>
#include <numeric>
#include <set>

namespace gpuvet::probe {
namespace {

using namespace gpuvet::testing;  // NOLINT: test fakes

bool has_note(const std::vector<std::string>& notes, const std::string& needle) {
  for (const auto& n : notes) {
    if (n.find(needle) != std::string::npos) return true;
  }
  return false;
}

// ---------------------------------------------------------------- identity

TEST(HostSysfsTest, IdentityOfDualSocketHost) {
  auto fs = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  HostFacts host;
  std::vector<std::string> notes;
  read_host_identity(*fs, host, notes);
  EXPECT_EQ(host.hostname, "gpu-node-07");
  EXPECT_EQ(host.kernel, "5.15.0-119-generic");
  EXPECT_EQ(host.os, "Ubuntu 22.04.4 LTS");
  EXPECT_EQ(host.cpu_model, "Intel(R) Xeon(R) Gold 6434");
  EXPECT_EQ(host.logical_cpus, 32);
  EXPECT_EQ(host.physical_cores, 16);
  EXPECT_EQ(host.sockets, 2);
  EXPECT_EQ(host.virtual_machine, false);
  EXPECT_EQ(host.memory_bytes, std::uint64_t{527976092} * 1024);
  EXPECT_TRUE(notes.empty()) << notes.front();
}

TEST(HostSysfsTest, IdentityOfVmSeesHypervisorFlag) {
  auto fs = make_rooted_file_system(sysroot("sysroot-1gpu-vm"));
  HostFacts host;
  std::vector<std::string> notes;
  read_host_identity(*fs, host, notes);
  EXPECT_EQ(host.os, "Ubuntu 24.04.2 LTS");
  EXPECT_EQ(host.cpu_model, "AMD EPYC");
  EXPECT_EQ(host.logical_cpus, 16);
  EXPECT_EQ(host.physical_cores, 16);
  EXPECT_EQ(host.sockets, 1);
  EXPECT_EQ(host.virtual_machine, true);
  EXPECT_EQ(host.memory_bytes, std::uint64_t{247423532} * 1024);
  EXPECT_TRUE(notes.empty());
}

TEST(HostSysfsTest, IdentityOfAarch64FallsBackToCpuPartAndSysfsTopology) {
  std::map<std::string, std::string> files = {
      {"/usr/lib/os-release", "NAME='Rocky Linux'\nPRETTY_NAME='Rocky Linux 9.4 (Blue Onyx)'\n"},
      {"/proc/meminfo", "MemTotal:       493421312 kB\n"},
  };
  std::string cpuinfo;
  for (int cpu = 0; cpu < 4; ++cpu) {
    cpuinfo += "processor\t: " + std::to_string(cpu) +
               "\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32\n"
               "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n"
               "CPU part\t: 0xd4f\nCPU revision\t: 0\n\n";
    const std::string topo = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    files[topo + "physical_package_id"] = std::to_string(cpu / 2) + "\n";
    files[topo + "core_id"] = std::to_string(cpu % 2) + "\n";
  }
  files["/proc/cpuinfo"] = cpuinfo;
  files["/sys/devices/system/cpu/online"] = "0-3\n";
  MemoryFileSystem fs(files);
  HostFacts host;
  std::vector<std::string> notes;
  read_host_identity(fs, host, notes);
  EXPECT_EQ(host.os, "Rocky Linux 9.4 (Blue Onyx)");
  EXPECT_EQ(host.cpu_model, "ARM Neoverse-V2 (CPU part 0xd4f)");
  EXPECT_EQ(host.logical_cpus, 4);
  EXPECT_EQ(host.physical_cores, 4);
  EXPECT_EQ(host.sockets, 2);
  EXPECT_FALSE(host.virtual_machine.has_value());  // no flags line: unknown, not "bare metal"
  EXPECT_EQ(host.memory_bytes, std::uint64_t{493421312} * 1024);
  // hostname and osrelease are absent from this tree.
  EXPECT_TRUE(has_note(notes, "/proc/sys/kernel/hostname unreadable (not found)"));
}

TEST(HostSysfsTest, IdentityWithUnreadableFilesLeavesThemEmptyWithNotes) {
  auto inner = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  DenyingFileSystem fs(*inner, {"/proc/cpuinfo", "/proc/meminfo"});
  HostFacts host;
  std::vector<std::string> notes;
  read_host_identity(fs, host, notes);
  EXPECT_EQ(host.hostname, "gpu-node-07");
  EXPECT_FALSE(host.cpu_model.has_value());
  EXPECT_FALSE(host.logical_cpus.has_value());
  EXPECT_FALSE(host.physical_cores.has_value());
  EXPECT_FALSE(host.virtual_machine.has_value());
  EXPECT_FALSE(host.memory_bytes.has_value());
  EXPECT_TRUE(has_note(notes, "host: /proc/cpuinfo unreadable (permission denied)"));
  EXPECT_TRUE(has_note(notes, "host: /proc/meminfo unreadable (permission denied)"));
}

TEST(HostSysfsTest, IdentityFromGarbageIsEmpty) {
  auto fs = make_rooted_file_system(sysroot("sysroot-garbage"));
  HostFacts host;
  std::vector<std::string> notes;
  read_host_identity(*fs, host, notes);
  EXPECT_FALSE(host.hostname.has_value());
  EXPECT_FALSE(host.kernel.has_value());  // empty file
  EXPECT_FALSE(host.os.has_value());
  EXPECT_FALSE(host.cpu_model.has_value());
  EXPECT_FALSE(host.logical_cpus.has_value());
  EXPECT_FALSE(host.physical_cores.has_value());
  EXPECT_FALSE(host.memory_bytes.has_value());  // "lots kB"
  EXPECT_TRUE(has_note(notes, "/proc/cpuinfo has no processor entries"));
}

// ---------------------------------------------------------------- uptime

TEST(HostSysfsTest, UptimeFromProc) {
  std::vector<std::string> notes;
  EXPECT_EQ(read_uptime(*make_rooted_file_system(sysroot("sysroot-2numa-4gpu")), notes), 354123.45);
  EXPECT_EQ(read_uptime(*make_rooted_file_system(sysroot("sysroot-1gpu-vm")), notes), 8123.77);
  EXPECT_TRUE(notes.empty());
  MemoryFileSystem one(std::map<std::string, std::string>{
      {"/proc/uptime", "12.5\n"}});  // no idle figure: still the uptime
  EXPECT_EQ(read_uptime(one, notes), 12.5);
  EXPECT_TRUE(notes.empty());
}

TEST(HostSysfsTest, UptimeUnreadableOrJunkIsEmptyWithANote) {
  std::vector<std::string> notes;
  EXPECT_FALSE(read_uptime(*make_rooted_file_system(sysroot("sysroot-garbage")), notes));
  EXPECT_TRUE(has_note(notes, "/proc/uptime holds no uptime"));
  notes.clear();
  MemoryFileSystem empty(std::map<std::string, std::string>{});
  EXPECT_FALSE(read_uptime(empty, notes));
  EXPECT_TRUE(has_note(notes, "host: /proc/uptime unreadable (not found)"));
  notes.clear();
  auto inner = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  DenyingFileSystem denied(*inner, {"/proc/uptime"});
  EXPECT_FALSE(read_uptime(denied, notes));
  EXPECT_TRUE(has_note(notes, "/proc/uptime unreadable (permission denied)"));
  for (const char* junk : {"", "-5 1\n", "nan 0\n", "1e300 0\n"}) {
    MemoryFileSystem fs(std::map<std::string, std::string>{{"/proc/uptime", junk}});
    EXPECT_FALSE(read_uptime(fs, notes)) << junk;
  }
}

// ---------------------------------------------------------------- NUMA

TEST(HostSysfsTest, NumaNodesOfDualSocketHost) {
  auto fs = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  auto nodes = read_numa_nodes(*fs);
  ASSERT_TRUE(nodes.is_ok()) << nodes.status().to_string();
  ASSERT_EQ(nodes.value().size(), 2u);
  const auto& n0 = nodes.value()[0];
  const auto& n1 = nodes.value()[1];
  EXPECT_EQ(n0.id, 0);
  EXPECT_EQ(n1.id, 1);
  EXPECT_EQ(n0.cpus, iota_vec(0, 15));
  EXPECT_EQ(n1.cpus, iota_vec(16, 31));
  EXPECT_EQ(n0.distances, (std::vector<int>{10, 21}));
  EXPECT_EQ(n1.distances, (std::vector<int>{21, 10}));
  EXPECT_EQ(n0.memory_bytes, std::uint64_t{263958084} * 1024);
  EXPECT_EQ(n1.memory_bytes, std::uint64_t{264018008} * 1024);
}

TEST(HostSysfsTest, NumaNodesSortedByIdAndCpuLessNodesKept) {
  // A Grace-Hopper-like layout: node10 sorts before node2 by name, and the GPU
  // memory nodes have no CPUs.
  MemoryFileSystem fs({
      {"/sys/devices/system/node/node0/cpulist", "0-71\n"},
      {"/sys/devices/system/node/node0/distance", "10 80 80\n"},
      {"/sys/devices/system/node/node2/cpulist", "\n"},
      {"/sys/devices/system/node/node2/distance", "80 10 80\n"},
      {"/sys/devices/system/node/node10/cpulist", "\n"},
      {"/sys/devices/system/node/node10/distance", "80 80 10\n"},
      {"/sys/devices/system/node/online", "0,2,10\n"},
  });
  auto nodes = read_numa_nodes(fs);
  ASSERT_TRUE(nodes.is_ok());
  ASSERT_EQ(nodes.value().size(), 3u);
  EXPECT_EQ(nodes.value()[0].id, 0);
  EXPECT_EQ(nodes.value()[1].id, 2);
  EXPECT_EQ(nodes.value()[2].id, 10);
  EXPECT_EQ(nodes.value()[0].cpus.size(), 72u);
  EXPECT_TRUE(nodes.value()[1].cpus.empty());
  EXPECT_FALSE(nodes.value()[1].memory_bytes.has_value());
  EXPECT_EQ(nodes.value()[2].distances, (std::vector<int>{80, 80, 10}));
}

TEST(HostSysfsTest, NumaNodeOfVm) {
  auto fs = make_rooted_file_system(sysroot("sysroot-1gpu-vm"));
  auto nodes = read_numa_nodes(*fs);
  ASSERT_TRUE(nodes.is_ok());
  ASSERT_EQ(nodes.value().size(), 1u);
  EXPECT_EQ(nodes.value()[0].cpus, iota_vec(0, 15));
  EXPECT_EQ(nodes.value()[0].distances, std::vector<int>{10});
}

TEST(HostSysfsTest, NumaGarbageGivesEmptyFields) {
  auto fs = make_rooted_file_system(sysroot("sysroot-garbage"));
  auto nodes = read_numa_nodes(*fs);
  ASSERT_TRUE(nodes.is_ok());
  ASSERT_EQ(nodes.value().size(), 2u);  // "nodeX" is not a node
  for (const auto& n : nodes.value()) {
    EXPECT_TRUE(n.cpus.empty()) << n.id;  // empty and "0-3,zz"
    EXPECT_TRUE(n.distances.empty()) << n.id;
    EXPECT_FALSE(n.memory_bytes.has_value()) << n.id;
  }
}

TEST(HostSysfsTest, NumaUnreadableDirectoryFailsWithReadyNote) {
  auto inner = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  DenyingFileSystem fs(*inner, {"/sys/devices/system/node"});
  auto nodes = read_numa_nodes(fs);
  ASSERT_FALSE(nodes.is_ok());
  EXPECT_EQ(nodes.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(nodes.status().message(),
            "NUMA: /sys/devices/system/node unreadable (permission denied)");
}

// ---------------------------------------------------------------- driver

TEST(HostSysfsTest, DriverParamsAndProprietaryVersion) {
  auto fs = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  HostFacts host;
  std::vector<std::string> notes;
  read_nvidia_driver_info(*fs, host, notes);
  EXPECT_EQ(host.nvlink_disabled_by_driver, false);
  EXPECT_EQ(host.driver_version, "550.90.07");
  EXPECT_EQ(host.driver_params.at("NvLinkDisable"), "0");
  EXPECT_EQ(host.driver_params.at("EnableResizableBar"), "0");
  EXPECT_EQ(host.driver_params.at("DmaRemapPeerMmio"), "1");
  EXPECT_EQ(host.driver_params.at("RmNvlinkBandwidthLinkCount"), "0");
  EXPECT_EQ(host.driver_params.count("ResmanDebugLevel"), 0u);  // not on the allow-list
  EXPECT_EQ(host.driver_params.count("DeviceFileMode"), 0u);
  EXPECT_EQ(host.driver_params.count("RegistryDwords"), 0u);  // "" is the default
  EXPECT_TRUE(notes.empty());
}

TEST(HostSysfsTest, DriverOnVmHasNvLinkDisabledAndOpenModuleVersion) {
  auto fs = make_rooted_file_system(sysroot("sysroot-1gpu-vm"));
  HostFacts host;
  std::vector<std::string> notes;
  read_nvidia_driver_info(*fs, host, notes);
  EXPECT_EQ(host.nvlink_disabled_by_driver, true);
  EXPECT_EQ(host.driver_params.at("NvLinkDisable"), "1");
  EXPECT_EQ(host.driver_version, "580.159.04");
  EXPECT_TRUE(notes.empty());
}

TEST(HostSysfsTest, DriverAarch64VersionAndNonDefaultRegistryDwords) {
  MemoryFileSystem fs({
      {"/proc/driver/nvidia/version",
       "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  550.54.15  Release Build  "
       "(dvs-builder@U16-T02-35-3)  Tue Mar  5 19:14:22 UTC 2024\n"},
      {"/proc/driver/nvidia/params",
       "NvLinkDisable: 0\nRegistryDwords: \"RMForceP2PType=0;RmNvlinkBandwidth=2\"\n"
       "RegistryDwordsPerDevice: \"\"\nResmanDebugLevel: 4294967295\n"},
  });
  HostFacts host;
  std::vector<std::string> notes;
  read_nvidia_driver_info(fs, host, notes);
  EXPECT_EQ(host.driver_version, "550.54.15");
  EXPECT_EQ(host.driver_params.at("RegistryDwords"), "\"RMForceP2PType=0;RmNvlinkBandwidth=2\"");
  EXPECT_EQ(host.driver_params.count("RegistryDwordsPerDevice"), 0u);  // default "" dropped
  EXPECT_EQ(host.driver_params.size(), 2u);
  EXPECT_TRUE(notes.empty());
}

TEST(HostSysfsTest, DriverVersionFromNvmlIsKept) {
  auto fs = make_rooted_file_system(sysroot("sysroot-1gpu-vm"));
  HostFacts host;
  host.driver_version = "580.159.03";
  std::vector<std::string> notes;
  read_nvidia_driver_info(*fs, host, notes);
  EXPECT_EQ(host.driver_version, "580.159.03");
}

TEST(HostSysfsTest, DriverNotLoaded) {
  MemoryFileSystem fs(std::map<std::string, std::string>{{"/proc/cmdline", "ro quiet\n"}});
  HostFacts host;
  std::vector<std::string> notes;
  read_nvidia_driver_info(fs, host, notes);
  EXPECT_FALSE(host.nvlink_disabled_by_driver.has_value());
  EXPECT_FALSE(host.driver_version.has_value());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "NVIDIA kernel driver not loaded (/proc/driver/nvidia absent)");
}

TEST(HostSysfsTest, DriverGarbageAndUnreadableParams) {
  auto garbage = make_rooted_file_system(sysroot("sysroot-garbage"));
  HostFacts host;
  std::vector<std::string> notes;
  read_nvidia_driver_info(*garbage, host, notes);
  EXPECT_FALSE(host.nvlink_disabled_by_driver.has_value());  // "yes" is not a number
  EXPECT_FALSE(host.driver_version.has_value());
  EXPECT_TRUE(has_note(notes, "no version number in /proc/driver/nvidia/version"));

  auto inner = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  DenyingFileSystem denied(*inner, {"/proc/driver/nvidia/params"});
  HostFacts host2;
  std::vector<std::string> notes2;
  read_nvidia_driver_info(denied, host2, notes2);
  EXPECT_FALSE(host2.nvlink_disabled_by_driver.has_value());
  EXPECT_TRUE(host2.driver_params.empty());
  EXPECT_EQ(host2.driver_version, "550.90.07");
  EXPECT_TRUE(has_note(
      notes2, "NVIDIA driver params: /proc/driver/nvidia/params unreadable (permission denied)"));
}

// ---------------------------------------------------------------- IOMMU

TEST(HostSysfsTest, IommuTranslatingOnDualSocketHost) {
  auto fs = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  IommuState st = read_iommu_state(*fs);
  EXPECT_EQ(st.active, true);
  EXPECT_EQ(st.passthrough, false);  // groups in DMA-FQ mode
  EXPECT_EQ(st.cmdline_hint, "intel_iommu=on");
}

TEST(HostSysfsTest, IommuAbsentOnVm) {
  auto fs = make_rooted_file_system(sysroot("sysroot-1gpu-vm"));
  IommuState st = read_iommu_state(*fs);
  EXPECT_EQ(st.active, false);
  EXPECT_FALSE(st.passthrough.has_value());
  EXPECT_FALSE(st.cmdline_hint.has_value());
}

TEST(HostSysfsTest, IommuPassthroughFromGroupTypeOrCmdline) {
  MemoryFileSystem by_type({
      {"/sys/class/iommu/ivhd0/uevent", ""},
      {"/sys/kernel/iommu_groups/0/type", "identity\n"},
      {"/sys/kernel/iommu_groups/1/type", "identity\n"},
      {"/proc/cmdline", "root=/dev/sda2 amd_iommu=on iommu=pt pcie_acs_override=downstream\n"},
  });
  IommuState a = read_iommu_state(by_type);
  EXPECT_EQ(a.active, true);
  EXPECT_EQ(a.passthrough, true);
  EXPECT_EQ(a.cmdline_hint, "amd_iommu=on iommu=pt pcie_acs_override=downstream");

  // Older kernels have no group type: the cmdline decides.
  MemoryFileSystem by_cmdline({
      {"/sys/class/iommu/dmar0/uevent", ""},
      {"/proc/cmdline", "ro intel_iommu=on iommu.passthrough=1\n"},
  });
  IommuState b = read_iommu_state(by_cmdline);
  EXPECT_EQ(b.active, true);
  EXPECT_EQ(b.passthrough, true);
  EXPECT_EQ(b.cmdline_hint, "intel_iommu=on iommu.passthrough=1");
}

TEST(HostSysfsTest, IommuUnreadableIsUnknown) {
  auto inner = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  DenyingFileSystem fs(*inner, {"/sys/class/iommu", "/sys/kernel/iommu_groups", "/proc/cmdline"});
  IommuState st = read_iommu_state(fs);
  EXPECT_FALSE(st.active.has_value());
  EXPECT_FALSE(st.passthrough.has_value());
  EXPECT_FALSE(st.cmdline_hint.has_value());
}

// ---------------------------------------------------------------- per GPU

GpuFacts gpu_at(int index, const char* bus_id) {
  GpuFacts g;
  g.index = index;
  g.pci_bus_id = bus_id;
  return g;
}

TEST(HostSysfsTest, Gpu0BehindGen4SwitchWithAcsClear) {
  auto fs = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  GpuFacts g = gpu_at(0, "00000000:18:00.0");  // NVML's 8-digit domain
  std::vector<std::string> notes;
  read_gpu_sysfs(*fs, g, notes);
  EXPECT_EQ(g.pcie.gen_current, 4);
  EXPECT_EQ(g.pcie.gen_device_max, 5);
  EXPECT_EQ(g.pcie.gen_max, 4);  // the downstream port above it stops at 16 GT/s
  EXPECT_EQ(g.pcie.width_current, 16);
  EXPECT_EQ(g.pcie.width_max, 16);
  EXPECT_EQ(g.numa_node, 0);
  EXPECT_EQ(g.cpu_affinity, iota_vec(0, 15));
  EXPECT_EQ(g.iommu_group, "30");
  EXPECT_EQ(g.acs_redirects_p2p, false);
  EXPECT_TRUE(g.acs_bridges.empty());
  EXPECT_TRUE(notes.empty()) << notes.front();
}

TEST(HostSysfsTest, Gpu1UnderTruncatedConfigIsUnknownWithNote) {
  auto fs = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  GpuFacts g = gpu_at(1, "0000:2a:00.0");
  std::vector<std::string> notes;
  read_gpu_sysfs(*fs, g, notes);
  EXPECT_FALSE(g.acs_redirects_p2p.has_value());
  EXPECT_TRUE(g.acs_bridges.empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "ACS state of bridges above GPU1 unknown: PCI config space needs root");
  EXPECT_EQ(g.pcie.gen_current, 5);
  EXPECT_EQ(g.pcie.gen_max, 5);
  EXPECT_EQ(g.numa_node, 0);
}

TEST(HostSysfsTest, Gpu2And3BelowRedirectingRootPort) {
  auto fs = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  std::vector<std::string> notes;
  GpuFacts g2 = gpu_at(2, "0000:b3:00.0");
  read_gpu_sysfs(*fs, g2, notes);
  EXPECT_EQ(g2.acs_redirects_p2p, true);
  EXPECT_EQ(g2.acs_bridges, std::vector<std::string>{"0000:b0:01.0 (RR,CR)"});
  EXPECT_EQ(g2.numa_node, 1);
  EXPECT_EQ(g2.cpu_affinity, iota_vec(16, 31));
  EXPECT_EQ(g2.iommu_group, "80");

  GpuFacts g3 = gpu_at(3, "0000:B4:00.0");
  read_gpu_sysfs(*fs, g3, notes);
  EXPECT_EQ(g3.acs_redirects_p2p, true);
  EXPECT_EQ(g3.acs_bridges, std::vector<std::string>{"0000:b0:01.0 (RR,CR)"});
  EXPECT_EQ(g3.pcie.width_current, 8);  // trained at x8 of x16
  EXPECT_EQ(g3.pcie.width_max, 16);
  EXPECT_TRUE(notes.empty());
}

TEST(HostSysfsTest, NvmlValuesArePrimary) {
  auto fs = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  GpuFacts g = gpu_at(0, "0000:18:00.0");
  g.pcie.gen_current = 3;
  g.pcie.width_current = 4;
  g.numa_node = 1;
  g.cpu_affinity = {1, 2};
  std::vector<std::string> notes;
  read_gpu_sysfs(*fs, g, notes);
  EXPECT_EQ(g.pcie.gen_current, 3);
  EXPECT_EQ(g.pcie.width_current, 4);
  EXPECT_EQ(g.numa_node, 1);
  EXPECT_EQ(g.cpu_affinity, (std::vector<int>{1, 2}));
  EXPECT_EQ(g.pcie.gen_device_max, 5);  // NVML left it empty
}

TEST(HostSysfsTest, VmGpuDirectlyUnderRootComplex) {
  auto fs = make_rooted_file_system(sysroot("sysroot-1gpu-vm"));
  GpuFacts g = gpu_at(0, "00000000:00:06.0");
  std::vector<std::string> notes;
  read_gpu_sysfs(*fs, g, notes);
  EXPECT_EQ(g.pcie.gen_current, 5);
  EXPECT_EQ(g.pcie.gen_max, 5);
  EXPECT_EQ(g.pcie.gen_device_max, 5);
  EXPECT_EQ(g.pcie.width_current, 16);
  EXPECT_EQ(g.pcie.width_max, 16);
  EXPECT_FALSE(g.numa_node.has_value());  // numa_node -1
  EXPECT_EQ(g.cpu_affinity, iota_vec(0, 15));
  EXPECT_FALSE(g.iommu_group.has_value());
  EXPECT_EQ(g.acs_redirects_p2p, false);  // no bridge at all
  EXPECT_TRUE(notes.empty());
}

TEST(HostSysfsTest, GpuMissingFromSysfs) {
  auto fs = make_rooted_file_system(sysroot("sysroot-1gpu-vm"));
  GpuFacts g = gpu_at(5, "0000:99:00.0");
  std::vector<std::string> notes;
  read_gpu_sysfs(*fs, g, notes);
  EXPECT_FALSE(g.pcie.gen_current.has_value());
  EXPECT_FALSE(g.acs_redirects_p2p.has_value());
  EXPECT_TRUE(has_note(notes, "GPU5: /sys/bus/pci/devices/0000:99:00.0 absent"));

  GpuFacts no_id;
  no_id.index = 6;
  read_gpu_sysfs(*fs, no_id, notes);
  EXPECT_TRUE(has_note(notes, "GPU6: no PCI bus id"));
}

TEST(HostSysfsTest, GpuGarbageFilesGiveEmptyValues) {
  auto fs = make_rooted_file_system(sysroot("sysroot-garbage"));
  std::vector<std::string> notes;
  GpuFacts g = gpu_at(0, "0000:01:00.0");
  read_gpu_sysfs(*fs, g, notes);
  EXPECT_FALSE(g.pcie.gen_current.has_value());  // "Unknown"
  EXPECT_EQ(g.pcie.gen_device_max, 5);
  EXPECT_FALSE(g.pcie.gen_max.has_value());        // port's max_link_speed is "Unknown"
  EXPECT_FALSE(g.pcie.width_current.has_value());  // "0"
  EXPECT_FALSE(g.pcie.width_max.has_value());      // "garbage"
  EXPECT_FALSE(g.numa_node.has_value());           // "abc"
  EXPECT_TRUE(g.cpu_affinity.empty());             // "zz"
  EXPECT_FALSE(g.acs_redirects_p2p.has_value());   // capability list loops
  EXPECT_TRUE(has_note(notes,
                       "ACS state of bridges above GPU0 unknown: malformed extended "
                       "capability list in config space of 0000:00:02.0"));

  GpuFacts g1 = gpu_at(1, "0000:03:00.0");
  read_gpu_sysfs(*fs, g1, notes);
  EXPECT_FALSE(g1.numa_node.has_value());
  EXPECT_TRUE(g1.cpu_affinity.empty());
  EXPECT_FALSE(g1.pcie.gen_current.has_value());
  EXPECT_FALSE(g1.acs_redirects_p2p.has_value());  // next pointer below 0x100
  EXPECT_TRUE(has_note(notes, "above GPU1 unknown: malformed"));
}

TEST(HostSysfsTest, UnreadableBridgeConfigMakesAcsUnknownUnlessAnotherRedirects) {
  auto inner = make_rooted_file_system(sysroot("sysroot-2numa-4gpu"));
  std::vector<std::string> notes;
  // GPU0: the only ACS-capable bridge unreadable → unknown.
  DenyingFileSystem deny_rp0(*inner, {"/sys/devices/pci0000:15/0000:15:01.0/config"});
  GpuFacts g0 = gpu_at(0, "0000:18:00.0");
  read_gpu_sysfs(deny_rp0, g0, notes);
  EXPECT_FALSE(g0.acs_redirects_p2p.has_value());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "ACS state of bridges above GPU0 unknown: config space of 0000:15:01.0 unreadable "
            "(permission denied)");

  // GPU2: a downstream port unreadable, but the root port redirects: still true.
  notes.clear();
  DenyingFileSystem deny_dn(
      *inner, {"/sys/devices/pci0000:b0/0000:b0:01.0/0000:b1:00.0/0000:b2:00.0/config"});
  GpuFacts g2 = gpu_at(2, "0000:b3:00.0");
  read_gpu_sysfs(deny_dn, g2, notes);
  EXPECT_EQ(g2.acs_redirects_p2p, true);
  EXPECT_TRUE(notes.empty());
}

// ---------------------------------------------------------------- building blocks

TEST(HostSysfsTest, PcieGenFromSpeed) {
  EXPECT_EQ(pcie_gen_from_speed("2.5 GT/s PCIe"), 1);
  EXPECT_EQ(pcie_gen_from_speed("2.5 GT/s"), 1);  // kernels before 4.19
  EXPECT_EQ(pcie_gen_from_speed("5.0 GT/s PCIe"), 2);
  EXPECT_EQ(pcie_gen_from_speed("8.0 GT/s PCIe"), 3);
  EXPECT_EQ(pcie_gen_from_speed("8 GT/s"), 3);
  EXPECT_EQ(pcie_gen_from_speed("16.0 GT/s PCIe"), 4);
  EXPECT_EQ(pcie_gen_from_speed("32.0 GT/s PCIe"), 5);
  EXPECT_EQ(pcie_gen_from_speed("64.0 GT/s PCIe"), 6);
  EXPECT_FALSE(pcie_gen_from_speed("Unknown").has_value());
  EXPECT_FALSE(pcie_gen_from_speed("").has_value());
  EXPECT_FALSE(pcie_gen_from_speed("12.0 GT/s").has_value());
}

std::string config_image(std::size_t size) { return std::string(size, '\0'); }

void put32(std::string& cfg, std::size_t off, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) cfg[off + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

std::uint32_t ext_header(std::uint32_t id, std::uint32_t next) {
  return id | (1u << 16) | (next << 20);
}

TEST(HostSysfsTest, FindAcsWalksAndGuardsTheCapabilityList) {
  EXPECT_EQ(find_acs(config_image(64)).kind, AcsReading::Kind::kTruncated);
  EXPECT_EQ(find_acs(config_image(256)).kind, AcsReading::Kind::kTruncated);
  EXPECT_EQ(find_acs(config_image(4096)).kind, AcsReading::Kind::kAbsent);  // no ext caps

  std::string found = config_image(4096);
  put32(found, 0x100, ext_header(0x0001, 0x140));
  put32(found, 0x140, ext_header(0x000D, 0));
  put32(found, 0x144, 0x000c005f);  // capability 0x005f, control RR|CR
  AcsReading r = find_acs(found);
  EXPECT_EQ(r.kind, AcsReading::Kind::kPresent);
  EXPECT_EQ(r.control, 0x000c);

  std::string loop = config_image(4096);
  put32(loop, 0x100, ext_header(0x0001, 0x100));
  EXPECT_EQ(find_acs(loop).kind, AcsReading::Kind::kMalformed);

  std::string beyond = config_image(0x400);  // next pointer past the end of the image
  put32(beyond, 0x100, ext_header(0x0001, 0xff0));
  EXPECT_EQ(find_acs(beyond).kind, AcsReading::Kind::kMalformed);

  std::string below = config_image(4096);
  put32(below, 0x100, ext_header(0x0001, 0x040));
  EXPECT_EQ(find_acs(below).kind, AcsReading::Kind::kMalformed);

  std::string gone = std::string(4096, '\xff');  // device fell off the bus
  EXPECT_EQ(find_acs(gone).kind, AcsReading::Kind::kMalformed);

  std::string long_chain = config_image(4096);  // 100 distinct hops: over the 64-hop cap
  for (std::uint32_t i = 0; i < 100; ++i) {
    put32(long_chain, 0x100 + 8 * i, ext_header(0x0001, 0x100 + 8 * (i + 1)));
  }
  EXPECT_EQ(find_acs(long_chain).kind, AcsReading::Kind::kMalformed);

  std::string cut_cap = config_image(0x106);  // ACS header at the very end, control cut off
  put32(cut_cap, 0x100, ext_header(0x000D, 0));
  EXPECT_EQ(find_acs(cut_cap).kind, AcsReading::Kind::kMalformed);
}

TEST(HostSysfsTest, LiveHostDoesNotCrash) {
  auto fs = make_rooted_file_system("/");
  HostFacts host;
  std::vector<std::string> notes;
  read_host_identity(*fs, host, notes);
  read_nvidia_driver_info(*fs, host, notes);
  host.iommu = read_iommu_state(*fs);
  auto nodes = read_numa_nodes(*fs);
  if (host.logical_cpus) {
    EXPECT_GT(*host.logical_cpus, 0);
  }
  if (host.memory_bytes) {
    EXPECT_GT(*host.memory_bytes, 0u);
  }
  if (nodes.is_ok()) {
    for (const auto& n : nodes.value()) EXPECT_GE(n.id, 0);
  }
}

}  // namespace
}  // namespace gpuvet::probe
