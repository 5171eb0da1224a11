// gpuvet/facts.h — the typed facts model: everything the triage playbook looks at.
//
// One model, filled by the live sources (NVML, sysfs/procfs, hwloc, the kernel
// log) or by the offline importers (gpuvet/import.h), with measurements added back.
// Plain value types: copy them freely, no thread affinity. Every field that a source
// may fail to read is a std::optional; empty means "not known", never zero. Units are
// in the names.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuvet {

// ---------------------------------------------------------------- host

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;                      // logical CPU ids, sorted
  std::optional<std::uint64_t> memory_bytes;  // total memory of the node
  std::vector<int> distances;                 // SLIT row: distance to node i, by position
};

// One sample window of per-core CPU use (from /proc/stat deltas).
struct CpuCoreLoad {
  int cpu = 0;
  double busy_pct = 0;  // user+nice+system+irq+softirq+steal over the window
  double iowait_pct = 0;
  double steal_pct = 0;
};

struct DiskLoad {
  std::string device;   // "nvme0n1", "sda"
  double util_pct = 0;  // time with I/O in flight over the window
  double read_bytes_per_s = 0;
  double write_bytes_per_s = 0;
};

struct NicLoad {
  std::string device;  // "eth0", "ib0"
  double rx_bytes_per_s = 0;
  double tx_bytes_per_s = 0;
  std::optional<double> speed_mbit_s;   // /sys/class/net/*/speed; empty when unknown
  std::optional<double> peak_util_pct;  // max(rx,tx) vs line rate, when speed known
};

// Linux pressure stall information of one resource (/proc/pressure/cpu, io, memory; kernel
// 4.20+ with PSI on): the share of wall time in which some task (some) or every non-idle task
// (full) was stalled waiting for it. Percentages 0..100.
struct PsiReading {
  std::optional<double> some_avg10;  // the kernel's running averages over 10 s and 60 s
  std::optional<double> some_avg60;
  std::optional<double> full_avg10;
  std::optional<double> full_avg60;
  std::optional<double> some_window_pct;  // over the sample window, from the stall totals
  std::optional<double> full_window_pct;
};

struct HostPressure {
  double window_s = 0;  // length of the sample window
  std::vector<CpuCoreLoad> cores;
  std::optional<double> iowait_pct;  // whole-machine iowait over the window
  std::vector<DiskLoad> disks;
  std::vector<NicLoad> nics;
  std::optional<PsiReading> psi_cpu;
  std::optional<PsiReading> psi_io;
  std::optional<PsiReading> psi_memory;
};

struct IommuState {
  std::optional<bool> active;               // IOMMU groups exist / DMAR-IVRS in use
  std::optional<bool> passthrough;          // iommu=pt / iommu.passthrough=1 on the cmdline
  std::optional<std::string> cmdline_hint;  // the relevant kernel cmdline words
};

struct HostFacts {
  std::optional<std::string> hostname;
  std::optional<std::string> kernel;  // uname -r
  std::optional<std::string> os;      // PRETTY_NAME of /etc/os-release
  std::optional<std::string> cpu_model;
  std::optional<int> logical_cpus;
  std::optional<int> physical_cores;
  std::optional<int> sockets;
  std::optional<std::uint64_t> memory_bytes;
  std::vector<NumaNode> numa_nodes;
  std::optional<std::string> driver_version;         // NVIDIA kernel driver, e.g. "580.159.04"
  std::optional<std::string> nvml_version;           // e.g. "13.580.159.04"
  std::optional<std::string> cuda_driver_version;    // from NVML, e.g. "13.0"
  std::optional<bool> nvlink_disabled_by_driver;     // NvLinkDisable in /proc/driver/nvidia/params
  std::map<std::string, std::string> driver_params;  // a few relevant driver params, raw
  std::optional<bool> virtual_machine;               // hypervisor flag in /proc/cpuinfo
  IommuState iommu;
  // Bridges with ACS request/completion redirect set whose GPUs below are not known (an
  // `lspci -vvv | grep ACSCtl` paste, or bridges of a paste that lists no GPU):
  // "0000:00:01.0 (RR,CR)", or "ACSCtl line 3 (RR,CR)" when the device was not printed.
  std::vector<std::string> acs_redirect_unplaced;
  std::optional<HostPressure> pressure;
  // When the facts were read: uptime and wall clock of the node at collection (live, or a
  // capture that recorded them). Xid ages are measured from here.
  std::optional<double> uptime_s;
  std::optional<std::int64_t> collected_unix;
};

// ---------------------------------------------------------------- per GPU

struct PcieLink {
  std::optional<int> gen_current;
  std::optional<int> gen_max;         // max of device and slot together (what NVML calls max)
  std::optional<int> gen_device_max;  // what the GPU itself supports
  std::optional<int> width_current;
  std::optional<int> width_max;
  std::optional<std::uint64_t> replay_counter;
};

// Clock-event ("throttle") reasons: one bit set of NVML's
// nvmlClocksEventReason* values, decoded into names.
struct ClockEventReasons {
  std::optional<std::uint64_t> active_mask;
  std::vector<std::string> active;  // "idle", "sw_power_cap", "hw_slowdown", ...
  // Accumulated time (ns) spent limited, by reason ("power", "thermal",
  // "sync_boost", "board_limit", "reliability").
  std::map<std::string, std::uint64_t> accumulated_ns;
};

struct Clocks {
  std::optional<int> sm_mhz;
  std::optional<int> mem_mhz;
  std::optional<int> sm_max_mhz;
  std::optional<int> mem_max_mhz;
};

struct Thermal {
  std::optional<int> gpu_c;       // absolute temperature
  std::optional<int> margin_c;    // "T.Limit": degrees left before slowdown
  std::optional<int> slowdown_c;  // absolute limits, where the GPU reports them
  std::optional<int> shutdown_c;
  std::optional<int> gpu_max_operating_c;
  std::optional<int> memory_max_c;
  std::optional<int> memory_c;
};

struct Power {
  std::optional<double> draw_w;
  std::optional<double> limit_w;  // management limit in force
  std::optional<double> enforced_limit_w;
  std::optional<double> default_limit_w;
};

struct EccCounts {
  std::optional<std::uint64_t> corrected;
  std::optional<std::uint64_t> uncorrected;
};

struct Ecc {
  std::optional<bool> enabled;          // current mode
  std::optional<bool> pending_enabled;  // mode after next reboot
  EccCounts volatile_counts;            // since last driver load
  EccCounts aggregate_counts;           // lifetime
  std::optional<int> retired_pages_sbe;
  std::optional<int> retired_pages_dbe;
  std::optional<bool> retired_pages_pending;
  std::optional<int> remapped_rows_correctable;
  std::optional<int> remapped_rows_uncorrectable;
  std::optional<bool> remapping_pending;
  std::optional<bool> remapping_failed;
};

struct Memory {
  std::optional<std::uint64_t> total_bytes;
  std::optional<std::uint64_t> used_bytes;
};

struct Utilization {
  std::optional<int> gpu_pct;
  std::optional<int> memory_pct;
};

struct NvLink {
  int link = 0;
  std::optional<bool> active;
  std::optional<int> version;
  std::optional<std::string> remote_pci_bus_id;  // normalised "0000:18:00.0"
  std::optional<int> remote_gpu;                 // index of the GPU at the far end, if ours
  std::optional<double> speed_gbps;              // per-link rate (nvidia-smi nvlink -s)
};

struct Fabric {
  std::optional<std::string> state;   // "not_supported", "not_started", "in_progress", "completed"
  std::optional<std::string> status;  // NVML return code name of the registration
  std::optional<std::uint32_t> clique_id;
  std::optional<std::string> cluster_uuid;
  // nvidia-smi -q "Fabric / Health / Summary" (driver 550+): "Healthy", "Unhealthy",
  // "Limited Capacity", as printed.
  std::optional<std::string> health_summary;
};

struct GpuFacts {
  int index = 0;
  // Set when the GPU did not answer (timed out, lost). The other fields hold
  // whatever was read before it stopped answering.
  std::optional<std::string> unresponsive;
  std::optional<std::string> uuid;
  std::optional<std::string> name;
  std::optional<std::string> serial;
  std::optional<std::string> vbios;
  std::optional<std::string> pci_bus_id;  // normalised "0000:18:00.0"
  PcieLink pcie;
  std::optional<int> numa_node;
  std::vector<int> cpu_affinity;  // logical CPUs close to the GPU
  Clocks clocks;
  ClockEventReasons clock_events;
  Thermal thermal;
  Power power;
  Ecc ecc;
  Memory memory;
  Utilization utilization;
  std::optional<bool> mig_enabled;
  std::optional<std::string> persistence_mode;  // "enabled" / "disabled"
  // What the driver says the GPU needs to recover (nvidia-smi -q "GPU Recovery Action", driver
  // 550+; NVML's recovery action): "None", "Reset", "Reboot", "Drain P2P", "Drain and Reset",
  // as printed.
  std::optional<std::string> recovery_action;
  std::optional<int> pstate;  // 0 for P0
  std::vector<NvLink> nvlinks;
  // nvidia-smi nvlink -s: "Unable to retrieve NVLink information as all links are inActive".
  bool nvlinks_all_inactive = false;
  Fabric fabric;
  // PCIe Access Control Services on the bridges between the GPU and the root
  // port: true when one of them redirects peer requests (RR/CR set), which
  // forces P2P through the root complex. Empty when config space was unreadable.
  std::optional<bool> acs_redirects_p2p;
  std::vector<std::string> acs_bridges;  // bridges with RR/CR set, for evidence
  std::optional<std::string> iommu_group;
  // Fields that could not be read, with why ("pcie.replay_counter: NOT_SUPPORTED").
  std::vector<std::string> unreadable;
};

// ---------------------------------------------------------------- pairs

enum class PathType { kNVLink, kPIX, kPXB, kPHB, kNODE, kSYS, kSelf, kUnknown };
const char* path_type_name(PathType type);  // "NV", "PIX", ...

// One P2P capability as nvidia-smi topo -p2p shows it.
enum class P2PStatus {
  kOk,
  kChipsetNotSupported,
  kGpuNotSupported,
  kTopologyNotSupported,
  kDisabledByRegkey,
  kNotSupported,
  kUnknown
};
const char* p2p_status_code(P2PStatus status);  // "OK", "CNS", "GNS", "TNS", "DR", "NS", "U"

struct GpuPair {
  int a = 0;
  int b = 0;
  PathType path = PathType::kUnknown;
  std::optional<int> nvlinks;  // NV# : number of links joining a and b
  std::optional<P2PStatus> p2p_read;
  std::optional<P2PStatus> p2p_write;
  std::optional<P2PStatus> p2p_nvlink;
  std::optional<P2PStatus> p2p_atomics;
  std::optional<P2PStatus> p2p_pcie;  // PCIe P2P property (topo -p2p p, NVML caps index 4)
};

// ---------------------------------------------------------------- events

struct XidEvent {
  int code = 0;
  std::optional<std::string> pci_bus_id;  // "0000:3b:00.0" as the driver printed it
  std::optional<int> gpu;                 // index, when the bus id matches one of ours
  std::optional<double> uptime_s;         // seconds since boot (dmesg timestamp)
  std::optional<std::int64_t> unix_time;  // wall clock, when it can be known
  std::optional<int> pid;
  std::optional<std::string> process;
  std::string message;  // the rest of the line
};

// Kernel-log reports of one kind about one PCI device, counted: PCIe AER errors ("PCIe Bus
// Error: severity=Corrected, …"), IOMMU faults ("DMAR: [DMA Read] Request device [17:00.0]
// …", "AMD-Vi: Event logged [IO_PAGE_FAULT …]"). One record per (kind, device); a log of a
// million identical lines stays one record with its count.
struct DeviceErrorLog {
  // AER: "corrected", "uncorrected-nonfatal", "uncorrected-fatal". IOMMU: "dma-read",
  // "dma-write", "io-page-fault", "interrupt-remap", "other" (the fault's own word otherwise).
  std::string kind;
  std::optional<std::string> pci_bus_id;  // normalised "0000:17:00.0"; empty when not printed
  std::optional<std::string> driver;      // the driver that printed it: "nvidia", "pcieport"
  std::uint64_t count = 0;
  // Distinct error names, layers and fault reasons, in first-seen order (capped):
  // "Physical Layer", "RxErr", "PTE Read access is not set".
  std::vector<std::string> details;
  std::optional<double> first_uptime_s;
  std::optional<double> last_uptime_s;
  std::optional<std::int64_t> first_unix_time;
  std::optional<std::int64_t> last_unix_time;
  std::string last_message;  // the last such line, cleaned and cut
};

struct KernelLog {
  std::string source;  // "/dev/kmsg", "dmesg", "journalctl -k", file name…
  bool readable = false;
  std::optional<std::string> why_unreadable;
  std::vector<XidEvent> xids;
  std::vector<std::string> fallen_off_bus;  // "GPU has fallen off the bus" lines
  // The same lines, one event each in the same order, with their times (code 79, message the
  // line), so their age is judged like an Xid's.
  std::vector<XidEvent> fallen_off_bus_events;
  std::vector<DeviceErrorLog> pcie_aer;      // PCIe AER errors, per device and severity
  std::vector<DeviceErrorLog> iommu_faults;  // IOMMU (DMAR, AMD-Vi) faults, per device and kind
  // The NVIDIA driver's own words for a GPU it could not bring up or lost, without an Xid
  // (kind: "init-failed" RmInitAdapter failed, "reset-required" NV_ERR_RESET_REQUIRED,
  // "lost" NV_ERR_GPU_IS_LOST, "no-power" power cables not connected, "bar-invalid" the PCI
  // I/O region is invalid, "unsupported" a GPU this driver does not support, "not-probed"
  // another driver owns the GPUs, "no-adapter" no NVIDIA GPU found), per device and kind.
  std::vector<DeviceErrorLog> driver_failures;
  // The kernel's hung-task watchdog ("INFO: task python3:4412 blocked for more than 122
  // seconds."): code 0, the task's name and pid, the time.
  std::vector<XidEvent> hung_tasks;
};

// ---------------------------------------------------------------- processes

// One thread of a GPU process and the share of one CPU it used over the sample window.
struct ThreadLoad {
  int tid = 0;
  std::string name;          // comm: "pt_data_worker", "python"
  std::optional<int> cpu;    // the CPU it last ran on
  double cpu_pct = 0;        // of one CPU, 0..100
};

struct ProcessFacts {
  int host_pid = 0;              // as NVML reports it
  std::optional<int> local_pid;  // the same process in our PID namespace, if visible
  std::vector<int> ns_pids;      // NSpid: outermost visible namespace first
  int gpu = 0;                   // GPU index
  std::optional<std::string> name;
  std::optional<std::uint64_t> used_memory_bytes;
  std::optional<std::string> cpus_allowed;  // Cpus_allowed_list, raw
  std::vector<int> cpus_allowed_ids;
  std::optional<std::string> mems_allowed;  // Mems_allowed_list, raw
  std::vector<int> mems_allowed_ids;
  // The process's threads that kept a CPU busy over the host sample window (live only, from
  // /proc/PID/task/*/stat; at most a few, busiest first).
  std::vector<ThreadLoad> busy_threads;
};

// ---------------------------------------------------------------- imported only

// A NIC's PCIe relation to a GPU, as `nvidia-smi topo -m` prints it (NIC rows).
struct NicPath {
  std::string nic;  // "mlx5_0" (or "NIC0" when the legend is missing)
  int gpu = 0;
  PathType path = PathType::kUnknown;
};

// A PCI device as `lspci` shows it: the GPUs, the bridges above them and the other devices
// of the paste. Bus numbers are hexadecimal in lspci and plain integers here.
struct PciDevice {
  std::string bdf;                           // normalised "0000:17:00.0"
  std::optional<std::string> class_name;     // "3D controller", "PCI bridge"
  std::optional<std::string> class_code;     // "0302", when lspci -nn printed it
  std::optional<std::string> vendor_device;  // "10de:2330", when lspci -nn printed it
  std::optional<std::string> name;           // "NVIDIA Corporation GH100 [H100 SXM5 80GB]"
  std::optional<std::string> driver;         // "Kernel driver in use: nvidia"
  std::optional<std::string> port_type;      // "Root Port", "Downstream Port", "Endpoint", …
  std::optional<std::string> upstream;       // bdf of the bridge it sits below, when known
  std::optional<int> secondary_bus;          // a bridge's bus range
  std::optional<int> subordinate_bus;
  std::optional<int> gen_cap;  // LnkCap: what the device (or port) supports
  std::optional<int> width_cap;
  std::optional<int> gen_sta;  // LnkSta: what the link trained to
  std::optional<int> width_sta;
  std::optional<std::string> revision;  // "(rev a1)"; "ff" is a device that reads all ones
  std::vector<std::string> acs_ctl;     // ACSCtl flags set: "SrcValid", "ReqRedir", …
  // AER status bits set and not masked: UESta (uncorrectable; "fatal" those UESvrt marks
  // fatal) and CESta (correctable): "CmpltTO", "RxErr", …
  std::vector<std::string> aer_uncorrected;
  std::vector<std::string> aer_uncorrected_fatal;
  std::vector<std::string> aer_corrected;
};

// One thing a NCCL_DEBUG=INFO log says that matters for triage.
struct NcclEvent {
  // "version", "transport" (P2P/IPC, SHM, NET/IB, NET/Socket…), "net" (NET/IB : Using […]),
  // "nvls", "channels", "tree", "warn" (a benign NCCL WARN), "degraded" (a WARN of a slower
  // path), "timeout", "error", "fallback", "link",
  // "p2p" (a peer-access failure: CUDA IPC or peer mapping refused; the channel it was for,
  // when the log shows it, in "[channel …]")
  std::string kind;
  std::optional<int> rank;
  std::optional<std::string> host;
  std::optional<std::string> pci_bus_id;
  std::string detail;  // the rest of the line, trimmed
};

// A measured figure from a benchmark's own output (nccl-tests, nvbandwidth,
// cuda-samples bandwidthTest / p2pBandwidthLatencyTest, gpuvet bench).
struct Measurement {
  std::string tool;  // "nccl-tests", "nvbandwidth", "bandwidthTest", "p2pBandwidthLatencyTest"
  std::string
      test;  // "all_reduce_perf", "host_to_device_memcpy_ce", "bidirectional p2p enabled", …
  std::optional<int> src_gpu;
  std::optional<int> dst_gpu;
  std::optional<std::uint64_t> size_bytes;
  std::optional<double> bandwidth_gbps;  // algbw for collectives, GB/s (1e9)
  std::optional<double> busbw_gbps;      // collectives only
  std::optional<double> latency_us;
  // "out-of-place", "in-place", "bidirectional", "sum", "failed: …", "waived" (nvbandwidth
  // skipped the test: its filter refused it; no figure), …
  std::optional<std::string> note;
  // The benchmark checked the data it moved and it was wrong: what the check said ("#wrong 3"
  // from nccl-tests, nvbandwidth's "Invalid value when checking the pattern at 0x… (offset
  // 11136)", gpuvet's "wrong data: 1 mismatched words"). Absent: right, or not checked. A
  // figure with wrong data is no bandwidth figure: the rules raise data-corruption instead.
  std::optional<std::string> wrong_data;
  // The input it was read from (offline): runs of one test in two files are two runs.
  std::optional<std::string> origin;
};

// One point of a GPU time series (nvidia-smi dmon, --query-gpu -l, gpuvet's own sampling).
struct GpuSample {
  int gpu = 0;
  double t_s = 0;  // seconds from the first sample of the series
  std::optional<int> sm_mhz;
  std::optional<int> gpu_c;
  std::optional<double> power_w;
  std::optional<int> util_pct;
  std::optional<std::uint64_t> clock_event_mask;
  // What `gpuvet watch` reads beside the above (empty from the scale sampler and most
  // imports).
  std::optional<int> mem_mhz;
  std::optional<int> margin_c;          // T.Limit margin
  std::optional<double> power_limit_w;  // the enforced limit
  std::optional<int> mem_util_pct;
  std::optional<std::uint64_t> memory_used_bytes;
  std::optional<int> pcie_gen;
  std::optional<int> pcie_width;
  // Cumulative counters: the rules and the display use their deltas between samples.
  std::optional<std::uint64_t> pcie_replays;
  std::optional<std::uint64_t> ecc_corrected;    // volatile, since driver load
  std::optional<std::uint64_t> ecc_uncorrected;  // volatile
  std::optional<int> nvlinks_up;
  std::optional<int> nvlinks_total;
  // Accumulated clock-event time per reason ("power", "thermal", …), nanoseconds since driver
  // load (NVML violation counters).
  std::map<std::string, std::uint64_t> clock_event_ns;
};

// The host's pressure at one instant of a time series: PSI "some" shares over the interval
// since the previous sample (the kernel's totals), in percent.
// The names of the reasons set in an NVML clock-event mask ("idle", "sw_power_cap",
// "hw_slowdown", …, "other_0x…" for bits NVML did not name in driver 580), lowest bit first.
std::vector<std::string> clock_event_names(std::uint64_t mask);

struct HostSample {
  double t_s = 0;
  std::optional<double> psi_cpu_some_pct;
  std::optional<double> psi_io_some_pct;
  std::optional<double> psi_memory_some_pct;
};

// The node's own throughput over time (gpuvet scale --duration): items per second over the
// interval that ends at t_s, for one preset on `gpus` GPUs.
struct ThroughputSample {
  double t_s = 0;
  double items_per_s = 0;
  std::string preset;
  int gpus = 0;
};

// A CPU/memory binding seen without a GPU process to tie it to (numactl --show run in the
// shell that launches the ranks), or with one (pid set).
struct NumaBinding {
  std::optional<int> pid;
  std::vector<int> cpus;  // physcpubind
  std::vector<int> mems;  // membind / preferred
  std::string source;     // "numactl --show", …
};

// One configuration of a scaling test (gpuvet scale, or an imported equivalent): the same
// workload on `gpus` GPUs. Times in milliseconds per step (training) or per request
// (inference).
struct ScaleRun {
  std::string workload;  // "train" or "infer"
  std::string preset;    // "cnn-small", "llm-7b-layer", … (runs compare within a preset)
  int gpus = 1;
  std::optional<double> throughput;  // items (samples, tokens, requests) per second, all GPUs
  std::optional<double> p50_ms;
  std::optional<double> p95_ms;
  std::optional<double> p99_ms;
  std::optional<double> max_ms;
  std::optional<double> comm_share;  // 0..1 of the step spent in communication
  // infer at a fixed offered load (--rate): requests offered per second. Throughput then
  // follows the offered load, so runs are compared by latency, not throughput.
  std::optional<double> offered_rate_hz;
};

// Where a fact came from when it was imported from a file.
struct ImportedFile {
  std::string path;    // file (and "#part N" when a pasted session was split)
  std::string format;  // "nvidia-smi-q-xml", … or "unrecognised"
  std::vector<std::string> notes;
};

// ---------------------------------------------------------------- collectives (hangs)

// What one rank of a distributed job said about its collectives in one process group, from
// what a hung job leaves behind: its PyTorch log (the ProcessGroupNCCL watchdog's timeout and
// "last enqueued / last completed" lines), its flight-recorder dump, NCCL's own INFO lines
// (who the rank is: host, pid, GPU) and NCCL RAS (ncclras). One record per (input, rank, PG);
// the hang rules join the records of one rank. Sequence numbers are PyTorch's per-PG
// collective counters (-1: none yet); RAS has per-operation counts instead.
struct CollectiveRank {
  std::string source;                  // "pytorch-log", "flight-recorder", "nccl-log", "nccl-ras"
  std::optional<std::string> origin;   // the input (file) it came from, when known
  std::optional<int> rank;             // global rank
  std::optional<int> world_size;       // ranks in the job (or in the PG), when printed
  std::optional<std::string> pg;       // process group id as printed ("0"; RAS: comm hash)
  std::optional<std::string> pg_name;  // "default_pg", a PG description
  std::optional<std::string> host;
  std::optional<int> pid;
  std::optional<int> cuda_dev;
  std::optional<int> nvml_dev;
  std::optional<std::string> gpu_uuid;
  std::optional<std::string> pci_bus_id;  // normalised "0000:1b:00.0"
  std::optional<std::int64_t> last_enqueued;
  std::optional<std::int64_t> last_started;
  std::optional<std::int64_t> last_completed;
  // The operation the watchdog timed out (or the first one still pending in a flight-recorder
  // dump): its sequence number, type ("ALLREDUCE", "nccl:all_reduce"), timeout and how long it
  // had run.
  std::optional<std::int64_t> timeout_seq;
  std::optional<std::string> timeout_op;
  std::optional<std::int64_t> timeout_ms;
  std::optional<std::int64_t> ran_ms;
  std::optional<std::string> timeout_time;  // the log's own time stamp of that line, as printed
  // The process stopped watching its collectives (heartbeat monitor, "watchdog got stuck"):
  // the process itself is frozen.
  bool watchdog_stuck = false;
  // flight recorder: pending (not completed) collective entries of this PG, and the last one.
  std::optional<int> pending_entries;
  std::optional<std::string> last_op;
  // NCCL RAS: per-operation counts ("AllReduce" → 641) and what RAS says of the rank
  // ("ok", "missing", "dead", "unresponsive", "outlier", "async error", "abort").
  std::map<std::string, std::int64_t> op_counts;
  std::optional<std::string> ras_status;
  // PyTorch's desync report (TORCH_NCCL_DESYNC_DEBUG=1), which reads every rank's state from
  // the store: "never-joined", "joined-not-finished" and "finished-not-joined" (the lagging
  // ranks it names), "started" and "finished" (its snapshot), with the collective's number
  // (desync_seq, counted from 1) and, in the snapshot, its operation (last_op).
  // The rank's last line that is not about collectives (a progress bar, a log line), in a log
  // whose other ranks time out: what it was busy with instead.
  std::optional<std::string> last_activity;
  std::optional<std::string> desync_state;
  std::optional<std::int64_t> desync_seq;
  // torchrun's ChildFailedError summary: the rank's exit code (-9: SIGKILL, usually the
  // kernel's OOM killer) and whether torchrun names it the root cause (first failure).
  std::optional<int> exit_code;
  bool root_cause = false;
  // Lines of this rank's log that explain a rank going away: "CUDA out of memory", "CUDA
  // error", "NCCL error", an exception (first few, cut).
  std::vector<std::string> errors;
};

// One NCCL RAS communicator with trouble ("MISMATCH", "INCOMPLETE", "DEAD", "TIMEOUT",
// "ERROR"), as ncclras prints it in text or JSON.
struct RasCommunicator {
  std::string id;  // "#0-0 (fa93daea854b060b)" (text) or the hash (JSON)
  std::optional<int> size;
  std::optional<std::string> status;  // "RUNNING", "INIT", "FINALIZE", "NOCOMM"
  std::vector<std::string> errors;    // "MISMATCH", "INCOMPLETE"
  std::vector<int> missing_ranks;
  std::vector<int> dead_ranks;
  std::vector<std::string> details;  // the report's own lines about it (cut)
  // A count mismatch: how many ranks launched up to each operation number ("30 ranks have
  // launched up to operation 640"), the number (as text, a JSON key) → ranks.
  std::map<std::string, int> launched;
};

// ---------------------------------------------------------------- the job's own time

// One step of one rank of the user's job: a `ProfilerStep#N` span of a PyTorch profiler trace,
// or a step line of a training log. Milliseconds. The GPU figures are there when the input shows
// the GPU (a trace); `docs/job.md` defines each beside Holistic Trace Analysis's terms.
struct JobStep {
  std::int64_t number = 0;
  double wall_ms = 0;  // the step's span on the host timeline
  // The step's time split so that the four add up to wall_ms: a compute kernel running on some
  // stream of the GPU; a communication kernel running and no compute kernel (exposed
  // communication); only copies or memsets; nothing (idle).
  std::optional<double> compute_ms;
  std::optional<double> comm_exposed_ms;
  std::optional<double> copy_ms;
  std::optional<double> idle_ms;
  std::optional<double> comm_ms;        // communication kernels, overlapped or not (their union)
  std::optional<double> collective_ms;  // time inside collectives: GPU kernels, else host ops (gloo)
  std::optional<double> pre_comm_ms;    // from the step's start to its first collective
  // Idle time by cause (the rest is unexplained): the host in the data loader while the GPU had
  // nothing queued; the host in a synchronisation (stream/device/event sync, a blocking copy,
  // `.item()`) and the gap until the next kernel; gaps between kernels no longer than a launch.
  std::optional<double> idle_input_ms;
  std::optional<double> idle_sync_ms;
  std::optional<double> idle_launch_ms;
  std::optional<int> kernels;  // kernels that ran in the step
  std::optional<int> syncs;    // host synchronisations in the step
  std::optional<double> items_per_s;  // a training log's own throughput figure
};

// A rank's collectives of one type and size (NCCL Inspector, or the kernels of a trace).
struct JobCollective {
  std::string op;                          // "AllReduce", "AllGather", "gloo:all_reduce", …
  std::optional<std::uint64_t> size_bytes;  // message size, when known
  std::int64_t count = 0;
  std::optional<double> median_us;    // time of one call
  std::optional<double> busbw_gbps;   // NCCL Inspector's bus bandwidth (median), GB/s
  std::optional<std::string> algo;    // "RING", "TREE", … (Inspector)
  std::optional<std::string> proto;   // "LL", "LL128", "SIMPLE"
};

// What one rank of the user's job says about its own time: a PyTorch profiler trace, NCCL
// Inspector output or a training log with step times. One record per (input, rank); the job
// rules compare the ranks.
struct JobRank {
  std::string source;  // "pytorch-trace", "nccl-inspector", "step-log"
  std::optional<std::string> origin;  // the input (file) it came from
  std::optional<int> rank;
  std::optional<int> world_size;
  std::optional<std::string> backend;       // "nccl", "gloo"
  std::optional<std::string> nccl_version;  // as the trace or NCCL printed it
  std::optional<std::string> host;
  std::optional<int> pid;
  std::optional<int> cuda_device;  // the CUDA device its kernels ran on
  std::optional<std::string> gpu_name;
  std::optional<std::string> pci_bus_id;  // normalised "0000:1b:00.0", when the input says
  std::vector<JobStep> steps;             // in order; a cut is a note
  std::optional<std::int64_t> events;     // trace events read
  std::optional<std::int64_t> kernels;    // kernels in the trace (in steps or not)
  std::optional<double> median_kernel_us;
  std::optional<double> launch_call_us;   // median host time of one kernel launch call
  std::optional<std::int64_t> pageable_copies;  // host↔device copies from pageable memory
  std::optional<double> pageable_copy_ms;
  std::vector<JobCollective> collectives;
  std::vector<std::string> notes;  // what the reader could not use (cut, out of order, …)
};

// ---------------------------------------------------------------- the whole

struct SourceInfo {
  std::string name;  // "nvml", "sysfs", "procfs", "hwloc", "kernel-log"
  bool ok = false;
  std::string detail;  // library path and version, or why it failed
  double duration_ms = 0;
  // Where the time went, slowest first: "nvmlInit" → ms, "nvmlDeviceGetName" → total ms
  // over all GPUs. A driver that takes seconds per call is itself a finding.
  std::vector<std::pair<std::string, double>> timings_ms;
};

// One verdict of NVIDIA's own health tools: a test of `dcgmi diag` (per GPU, or for all GPUs
// when the tool printed "All" or the test is node-wide) or a subsystem incident of `dcgmi
// health -c`.
struct HealthCheck {
  std::string tool;        // "dcgmi diag", "dcgmi health"
  std::string test;        // diag: "GPU Memory", "PCIe", "Persistence Mode"; health: "PCIe system"
  std::string category;    // diag: "Deployment", "Integration", "Hardware", "Stress"; health: ""
  std::string result;      // "pass", "fail", "warn", "skip"
  std::optional<int> gpu;  // DCGM's GPU id (NVML index); empty: all GPUs or the node
  std::optional<std::string> entity;  // a non-GPU entity of dcgmi health: "NvSwitch 0"
  std::string message;                // the tool's error, warning or info text
};

struct Facts {
  HostFacts host;
  std::vector<GpuFacts> gpus;
  std::vector<GpuPair> pairs;  // a < b
  KernelLog kernel_log;
  std::vector<ProcessFacts> processes;
  std::vector<SourceInfo> sources;
  std::vector<std::string> notes;  // what could not be checked and why
  // Filled by offline import only (live probing leaves them empty).
  std::vector<NicPath> nic_paths;
  std::vector<NcclEvent> nccl_events;
  std::vector<Measurement> measurements;
  std::vector<ImportedFile> imported;
  std::vector<GpuSample> samples;                    // time series, ordered by (gpu, t_s)
  std::vector<HostSample> host_samples;              // the host's series beside it (gpuvet watch)
  std::vector<ThroughputSample> throughput_samples;  // scale --duration: the load's own pace
  std::vector<NumaBinding> numa_bindings;
  std::vector<ScaleRun> scale_runs;
  std::vector<PciDevice> pci_devices;      // lspci: merged by bdf
  std::vector<HealthCheck> health_checks;  // dcgmi diag, dcgmi health -c
  // A distributed job's collectives, per rank and process group (hang logs, flight recorder,
  // NCCL RAS), and the RAS communicators that report trouble.
  std::vector<CollectiveRank> collective_ranks;
  std::vector<RasCommunicator> ras_communicators;
  // The user's job, per rank: profiler traces, NCCL Inspector output, step-time logs.
  std::vector<JobRank> job_ranks;
  // True when GPU facts are missing because the driver/NVML could not answer
  // at all (not installed, stub library, version mismatch, init timeout).
  bool gpu_facts_unavailable = false;
  // Offline input only: what makes the input itself unfit for a full verdict (a capture
  // bundle without its manifest, two GPUs claiming one PCI address). diagnose says each and
  // exits 3 unless a finding is critical.
  std::vector<std::string> input_problems;
};

}  // namespace gpuvet
