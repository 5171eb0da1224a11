// probe/host_sysfs.h — live host and per-GPU PCI facts read from procfs/sysfs.
//
// Every function reads through a gpuvet::FileSystem, so a fixture tree laid
// out like / (tests/fixtures/sysroot-*) stands in for the live machine; the
// live machine is make_rooted_file_system("/"). The functions fill the facts
// structs of gpuvet/facts.h in place: a value that cannot be read stays empty
// (never 0), and what was expected but unreadable is told in `notes` as one
// short human sentence. Nothing here needs root, except the PCI config space
// behind the ACS check (an unprivileged read is cut to 64 bytes; that gives a
// note, not a wrong answer). Stateless; safe to call from several threads on
// distinct facts objects.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/env.h"
#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::probe {

// hostname (/proc/sys/kernel/hostname), kernel (/proc/sys/kernel/osrelease),
// os (PRETTY_NAME of /etc/os-release, else /usr/lib/os-release), and from
// /proc/cpuinfo: cpu_model (x86 "model name"; aarch64 "Hardware" or the
// decoded "CPU implementer"/"CPU part"; POWER "cpu"), logical_cpus,
// physical_cores (unique (physical id, core id) pairs; falls back to
// /sys/devices/system/cpu/cpu*/topology when cpuinfo lacks them), sockets,
// virtual_machine ("hypervisor" cpu flag). memory_bytes from /proc/meminfo.
void read_host_identity(const FileSystem& fs, HostFacts& host, std::vector<std::string>& notes);

// Seconds since boot, the first figure of /proc/uptime; empty (with a note) when the file is
// unreadable or holds no such number.
std::optional<double> read_uptime(const FileSystem& fs, std::vector<std::string>& notes);

// /sys/devices/system/node/node<N>/{cpulist,meminfo,distance}, nodes sorted by
// id; CPU-less nodes (empty cpulist) are kept. A node file that is junk leaves
// that field empty. Fails when the node directory cannot be listed; the
// Status message is then a ready-made note ("NUMA: /sys/devices/system/node
// unreadable (permission denied)").
Result<std::vector<NumaNode>> read_numa_nodes(const FileSystem& fs);

// /proc/driver/nvidia/params → host.nvlink_disabled_by_driver and the
// allow-listed host.driver_params (see kDriverParamAllowList in the .cc for
// why each key is kept); /proc/driver/nvidia/version → host.driver_version
// when still empty. Without /proc/driver/nvidia: the note "NVIDIA kernel
// driver not loaded (/proc/driver/nvidia absent)".
void read_nvidia_driver_info(const FileSystem& fs, HostFacts& host,
                             std::vector<std::string>& notes);

// active: /sys/class/iommu has entries or /sys/kernel/iommu_groups has groups
// (false when both are empty or absent, empty when unreadable). passthrough:
// from the groups' default-domain `type` ("identity" = passthrough, "DMA*" =
// translated), else from the cmdline (iommu=pt, iommu.passthrough=1; "=0",
// iommu=nopt say false). cmdline_hint: the IOMMU words of /proc/cmdline.
IommuState read_iommu_state(const FileSystem& fs);

// Per GPU, by gpu.pci_bus_id, from /sys/bus/pci/devices/<id>/: PCIe link
// generation and width (only the fields NVML left empty; gen_device_max from
// the GPU's max_link_speed, gen_max/width_max the lower of the GPU and the
// port above it), numa_node (-1 = none → empty), cpu_affinity (local_cpulist),
// iommu_group; and ACS P2P redirection on the bridges between the GPU and the
// root complex (acs_redirects_p2p, acs_bridges), from their config space.
void read_gpu_sysfs(const FileSystem& fs, GpuFacts& gpu, std::vector<std::string>& notes);

// ---- building blocks, exposed for the tests and the other host readers

// "32.0 GT/s PCIe", "8 GT/s", "2.5 GT/s" → 5, 3, 1; empty for "Unknown" or junk.
std::optional<int> pcie_gen_from_speed(std::string_view speed);

// What an ACS walk of one bridge's config space found.
struct AcsReading {
  enum class Kind { kAbsent, kPresent, kTruncated, kMalformed };
  Kind kind = Kind::kAbsent;
  std::uint16_t control = 0;  // ACS Control register, when kPresent
};
// Walks the PCIe extended capability list of a config-space image (from 0x100,
// at most 64 hops, each offset >= 0x100, inside the image, dword aligned, not
// seen before) looking for ACS (id 0x000D). Images of 256 bytes or less have
// no readable extended space: kTruncated.
AcsReading find_acs(std::string_view config);

// "permission denied", "not found", ... — the cause words used in notes.
std::string read_failure_words(const Status& status);

}  // namespace gpuvet::probe
