// The registry of offline importers: every format `--from` recognises.
#include <algorithm>

#include <nlohmann/json.hpp>
#include "gpuvet/import.h"
#include "import/importer.h"

#include "core/text_scan.h"
#include "core/util.h"
#include "import/bench_outputs.h"
#include "import/dcgmi.h"
#include "import/flight_recorder.h"
#include "import/gpuvet_json.h"
#include "import/host_tools.h"
#include "import/kernel_log.h"
#include "import/kineto_trace.h"
#include "import/lspci.h"
#include "import/nccl_inspector.h"
#include "import/nccl_log.h"
#include "import/nccl_ras.h"
#include "import/nvsmi_csv.h"
#include "import/nvsmi_monitor.h"
#include "import/nvsmi_table.h"
#include "import/nvsmi_text.h"
#include "import/nvsmi_topo.h"
#include "import/nvsmi_xml.h"
#include "import/psi.h"
#include "import/step_log.h"

namespace gpuvet::import {
namespace {

int sniff_kernel_log(std::string_view text) {
  text = sniff_head(text);
  if (!looks_like_kernel_log(text)) return 0;
  // An NVRM line is specific; a plain timestamped log less so.
  return text.find("NVRM") != std::string_view::npos ? 90 : 60;
}

Status import_kernel_log(std::string_view text, Facts& out) {
  out.kernel_log.source = "kernel log file";
  out.kernel_log.readable = true;
  KernelLogParseStats stats;
  parse_kernel_log(text, out.kernel_log, KernelLogParseOptions{}, &stats);
  // `uptime` pasted with the log ("uptime; dmesg | grep Xid"): the clock its stamps are read by.
  if (stats.uptime_s) out.host.uptime_s = stats.uptime_s;
  if (stats.unparsed_xid_lines > 0)
    out.notes.push_back(std::to_string(stats.unparsed_xid_lines) +
                        " Xid line(s) could not be read (cut off or garbled)");
  return Status::ok();
}

int sniff_capture_manifest(std::string_view text) {
  return text.substr(0, 256).find("\"schema\": \"gpuvet.capture/") != std::string_view::npos ? 100
                                                                                             : 0;
}

// The manifest says what could not be captured: each such command becomes a note.
Status import_capture_manifest(std::string_view text, Facts& out) {
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return Status::invalid_input("manifest is not valid JSON");
  const auto commands = doc.find("commands");
  if (commands == doc.end() || !commands->is_array()) return Status::ok();
  for (const auto& c : *commands) {
    if (!c.is_object()) continue;
    const std::string status = c.value("status", std::string("?"));
    if (status == "ok") continue;
    std::string argv;
    if (auto a = c.find("argv"); a != c.end() && a->is_array())
      for (const auto& w : *a)
        if (w.is_string()) argv += (argv.empty() ? "" : " ") + w.get<std::string>();
    out.notes.push_back("capture: `" + argv.substr(0, 60) + "` " + status);
  }
  return Status::ok();
}

// /proc/driver/nvidia/params: "Key: Value" lines.
int sniff_driver_params(std::string_view text) {
  auto head = sniff_head(text).substr(0, 64 << 10);
  const bool nvlink = head.find("\nNvLinkDisable: ") != std::string_view::npos ||
                      starts_with(head, "NvLinkDisable: ");
  return nvlink && head.find("EnableMSI: ") != std::string_view::npos ? 95 : 0;
}

Status import_driver_params(std::string_view text, Facts& out) {
  for (auto line : split_lines(text)) {
    auto colon = line.find(": ");
    if (colon == std::string_view::npos || colon == 0 || colon > 64) continue;
    const std::string key(trim(line.substr(0, colon)));
    const std::string value(trim(line.substr(colon + 2)));
    if (key == "NvLinkDisable") {
      if (auto v = parse_int(value)) out.host.nvlink_disabled_by_driver = *v != 0;
      out.host.driver_params[key] = value;
    } else if (key == "EnableResizableBar" || key == "EnablePCIERelaxedOrderingMode" ||
               key == "RmNvlinkBandwidth" || key == "RmNvlinkBandwidthLinkCount" ||
               key == "DmaRemapPeerMmio" || key == "RegistryDwords") {
      if (!value.empty() && value != "\"\"") out.host.driver_params[key] = value;
    }
  }
  if (!out.host.nvlink_disabled_by_driver) return Status::invalid_input("no NvLinkDisable line");
  return Status::ok();
}

// /proc/driver/nvidia/version: "NVRM version: NVIDIA UNIX … Kernel Module for x86_64  580.159.04
// Release Build …".
int sniff_driver_version(std::string_view text) {
  return starts_with(trim(text.substr(0, 4096)), "NVRM version:") ? 95 : 0;
}

Status import_driver_version(std::string_view text, Facts& out) {
  const auto lines = split_lines(text.substr(0, 4096));
  if (lines.empty()) return Status::invalid_input("empty");  // found by the fuzzer
  const auto line = lines.front();
  for (auto word : split(line, ' ')) {
    word = trim(word);
    auto parts = split(word, '.');
    if (parts.size() >= 2 && parts.size() <= 3 && parse_uint(parts[0]) && parse_uint(parts[1]) &&
        parts[0].size() >= 3) {
      out.host.driver_version = std::string(word);
      return Status::ok();
    }
  }
  return Status::invalid_input("no driver version on the NVRM version line");
}

}  // namespace

const std::vector<Importer>& importers() {
  // Order breaks ties between equally sure sniffers: the more specific first.
  static const std::vector<Importer> kImporters = {
      {"gpuvet-json", "gpuvet's own JSON report (gpuvet facts --json, capture bundles)",
       sniff_gpuvet_json, import_gpuvet_json, "everything gpuvet reports"},
      {"gpuvet-capture-manifest", "manifest.json of a gpuvet capture bundle",
       sniff_capture_manifest, import_capture_manifest,
       "notes: which commands could not be captured and why"},
      {"nvidia-smi-q-xml", "nvidia-smi -q -x (XML, driver 418 to 595+)", sniff_nvsmi_xml,
       import_nvsmi_xml,
       "driver/CUDA version; per GPU identity, PCIe link and replays, clocks, clock-event reasons "
       "and counters, "
       "temperatures and limits, power, ECC, retired pages, remapped rows, memory, utilisation, "
       "MIG, processes"},
      {"nvidia-smi-q", "nvidia-smi -q / -a, whole or any -d section", sniff_nvsmi_q, import_nvsmi_q,
       "the same facts as -q -x, from the text layout (old and new section names)"},
      {"nvidia-smi-L", "nvidia-smi -L", sniff_nvsmi_list, import_nvsmi_list,
       "GPU index, name, UUID; MIG devices"},
      {"nvidia-smi",
       "nvidia-smi (the default table, every driver's layout, or some of its rows alone; the "
       "Processes section alone) and its error lines",
       sniff_nvsmi_table, import_nvsmi_table,
       "driver/CUDA version; per GPU name, bus id, persistence, temperature, perf state, power "
       "draw and cap, memory, utilisation, ECC mode and volatile uncorrected count, MIG mode; "
       "compute processes; GPUs that do not answer (ERR!, \"Unable to determine the device "
       "handle\", \"GPU is lost\"); no driver (\"couldn't communicate with the NVIDIA driver\", "
       "\"No devices were found\")"},
      {"nvidia-smi-query-csv", "nvidia-smi --query-gpu=… --format=csv[,nounits]",
       sniff_nvsmi_query_csv, import_nvsmi_query_csv,
       "whichever per-GPU fields the query asked for"},
      {"topo-m", "nvidia-smi topo -m (NIC rows, affinity columns, ANSI escapes)", sniff_topo_m,
       import_topo_m,
       "GPU pair paths (NV#, PIX, PXB, PHB, NODE, SYS), CPU and NUMA affinity, NIC paths"},
      {"topo-p2p", "nvidia-smi topo -p2p r|w|n|a|p", sniff_topo_p2p, import_topo_p2p,
       "P2P read/write/NVLink/atomics status per GPU pair"},
      {"nvlink-status", "nvidia-smi nvlink -s / --status", sniff_nvlink_status,
       import_nvlink_status, "NVLink links per GPU: active and speed"},
      {"nvidia-smi-pmon", "nvidia-smi pmon", sniff_pmon, import_pmon,
       "compute processes per GPU (pid, name)"},
      {"nvidia-smi-dmon", "nvidia-smi dmon", sniff_dmon, import_dmon,
       "per GPU utilisation, power, temperatures, clocks (last sample)"},
      {"nvidia-driver-params", "/proc/driver/nvidia/params", sniff_driver_params,
       import_driver_params,
       "NvLinkDisable (NVLink turned off by the driver) and a few triage-relevant driver "
       "parameters"},
      {"nvidia-driver-version", "/proc/driver/nvidia/version", sniff_driver_version,
       import_driver_version, "kernel driver version"},
      {"kernel-log", "dmesg, dmesg -T, dmesg -H, journalctl -k, /dev/kmsg, syslog",
       sniff_kernel_log, import_kernel_log,
       "Xid events (code, bus id, pid, process, time), 'fallen off the bus' reports, PCIe AER "
       "errors (corrected, non-fatal, fatal) and IOMMU faults (DMAR, AMD-Vi) per device; the "
       "driver's failure strings per GPU (RmInitAdapter failed, NV_ERR_RESET_REQUIRED, "
       "NV_ERR_GPU_IS_LOST, power cables, invalid BAR, unsupported GPU, probe routine not "
       "called, no NVIDIA GPU found)"},
      {"lspci",
       "lspci -vvv / -vv / -v / -nn / -s <bdf>, plain lspci, lspci -tv trees, grep of -vvv",
       sniff_lspci, import_lspci,
       "PCI devices (bus id, class, name, driver, port type, bridge bus ranges); per NVIDIA GPU: "
       "PCIe gen/width current (LnkSta) and max (LnkCap, with the port above), ACS redirect on "
       "the bridges up to the root port; GPU pairs below one switch (PIX, PXB); AER status bits "
       "set on GPUs and bridges"},
      {"dcgmi-diag", "dcgmi diag -r 1|2|3|4 (the result table, with its Warning/Error text)",
       sniff_dcgmi_diag, import_dcgmi_diag,
       "per test and GPU: Pass / Fail / Warn / Skip and DCGM's message; driver version; the GPU "
       "count (GPU Device IDs Detected)"},
      {"dcgmi-health", "dcgmi health -c (Health Monitor Report, old and new layouts)",
       sniff_dcgmi_health, import_dcgmi_health,
       "overall health; per GPU (or NvSwitch) each subsystem incident: PCIe, NVLink, memory, "
       "thermal, power, InfoROM, driver, with its Warning / Failure and message"},
      {"numactl-hardware", "numactl --hardware / -H", sniff_numactl_hardware,
       import_numactl_hardware, "NUMA nodes: CPUs, memory, distances"},
      {"numactl-show", "numactl --show", sniff_numactl_show, import_numactl_show,
       "the shell's NUMA policy (notes)"},
      {"lscpu", "lscpu", sniff_lscpu, import_lscpu,
       "CPU model, sockets, cores, threads, NUMA CPU lists, hypervisor"},
      {"mpstat", "mpstat -P ALL", sniff_mpstat, import_mpstat, "per-core busy, iowait and steal"},
      {"iostat-x", "iostat -x / -xz", sniff_iostat, import_iostat,
       "disk utilisation and throughput, iowait"},
      {"sar-net-dev", "sar -n DEV", sniff_sar_net_dev, import_sar_net_dev, "NIC throughput"},
      {"psi", "/proc/pressure/cpu, io, memory (grep -H . /proc/pressure/*)", sniff_psi, import_psi,
       "host CPU, I/O and memory stall shares (PSI averages)"},
      {"uptime", "uptime, uptime -p, /proc/uptime", sniff_uptime, import_uptime,
       "seconds since boot: dates the kernel log's [seconds] stamps (how long ago an Xid was)"},
      {"nccl-debug-log",
       "NCCL_DEBUG=INFO logs, NCCL WARN (2.3 and older without the word NCCL), PyTorch "
       "ProcessGroupNCCL watchdog lines, PyTorch's desync report, TORCH_DISTRIBUTED_DEBUG's "
       "collective mismatch, the flight recorder's text analysis (fr_trace), torchrun's "
       "ChildFailedError summary (per-rank logs of a hung or failed job)",
       sniff_nccl_log, import_nccl_log,
       "NCCL version, transports per channel, NICs, fallbacks, link widths, WARN lines classed "
       "as NCCL's source prints them (error, slower path, notice), timeouts, "
       "peer-access failures (event kind p2p: \"peer access is not supported\", \"failed to open "
       "CUDA IPC handle\"); per rank and process group: the timed-out collective (SeqNum, "
       "OpType, timeout; a watchdog line wrapped over lines or glued behind a progress bar), last "
       "enqueued/started/completed work, a stuck watchdog, its last other activity, host, pid, "
       "CUDA device and bus id (NCCL init lines), OOM, CUDA and NCCL error lines; the ranks a "
       "desync report or fr_trace names, operations per rank at one collective number, "
       "torchrun's root-cause rank and its exit code"},
      {"pytorch-flight-recorder",
       "PyTorch flight-recorder dump, JSON form (_dump_nccl_trace_json, _dump_fr_trace_json)",
       sniff_flight_recorder_json, import_flight_recorder_json,
       "per process group of one rank: last enqueued, started and completed collective, the "
       "first entry not completed (sequence number, operation, timeout), pending entries; the "
       "rank from a \"rank\" key or the file name"},
      {"pytorch-flight-recorder-pickle",
       "PyTorch flight-recorder dump, pickle form (the default of TORCH_NCCL_DUMP_ON_TIMEOUT)",
       sniff_flight_recorder_pickle, import_flight_recorder_pickle,
       "nothing: recognised and refused as an input problem (gpuvet does not run pickles), with "
       "how to get the JSON form"},
      {"nccl-ras", "NCCL RAS status (ncclras, or STATUS on the RAS port), text",
       sniff_nccl_ras_text, import_nccl_ras_text,
       "communicators with errors (MISMATCH, INCOMPLETE, DEAD, …), missing ranks, the outlier "
       "ranks with GPU, process and node, and how far they launched"},
      {"nccl-ras-json", "NCCL RAS status as JSON (ncclras -f json, NCCL 2.28.7+)",
       sniff_nccl_ras_json, import_nccl_ras_json,
       "per communicator and rank: host, pid, CUDA and NVML device, status (async error, abort), "
       "collective counts per operation; missing ranks (unresponsive, considered dead)"},
      {"pytorch-profiler-trace",
       "PyTorch profiler trace (Kineto Chrome trace JSON: export_chrome_trace, "
       "tensorboard_trace_handler; plain or .gz)",
       sniff_kineto_trace, parse_kineto_trace,
       "one rank of the job: rank, world size, backend, NCCL version, GPU; per ProfilerStep: "
       "wall time split into compute, exposed communication, copies and idle, idle by cause "
       "(input, host sync, launch gaps), time in collectives and before the first one; kernels, "
       "launch calls, pageable copies, collectives by type"},
      {"nccl-inspector",
       "NCCL Inspector output (NCCL's profiler plugin, JSON Lines: <host>-pid<pid>.log)",
       sniff_nccl_inspector, parse_nccl_inspector,
       "per communicator and rank: host, pid, collectives per type and size with count, median "
       "time and bus bandwidth; the rank the others wait for"},
      {"step-log",
       "a training log's step times: Megatron-LM iteration lines, nanoGPT iter lines (any other "
       "log with --step-regex)",
       sniff_step_log, parse_step_log,
       "per rank (torchrun or srun -l prefixes): step number and time, p50/p95/p99 and drift"},
      {"nccl-topo-xml", "NCCL topology dump (NCCL_TOPO_DUMP_FILE)", sniff_nccl_topo_xml,
       import_nccl_topo_xml, "PCI link speed/width per GPU and NIC, NVLink counts"},
      {"nccl-tests", "nccl-tests *_perf output", sniff_nccl_tests, import_nccl_tests,
       "per size: time, algbw, busbw, #wrong (out-of-place and in-place); the test's own "
       "failure lines; a run that printed no result row (stalled); its NCCL lines"},
      {"nvbandwidth", "nvbandwidth output", sniff_nvbandwidth, import_nvbandwidth,
       "bandwidth matrices per test case; waived test cases (note waived: a device-to-device "
       "test waived means no GPU pair could map peer memory)"},
      {"bandwidthTest", "cuda-samples bandwidthTest", sniff_bandwidth_test, import_bandwidth_test,
       "host/device copy bandwidth per transfer size"},
      {"p2pBandwidthLatencyTest", "cuda-samples p2pBandwidthLatencyTest",
       sniff_p2p_bandwidth_latency_test, import_p2p_bandwidth_latency_test,
       "P2P bandwidth/latency matrices, P2P access per pair"},
      {"simpleP2P", "cuda-samples simpleP2P", sniff_simple_p2p, import_simple_p2p,
       "P2P access and copy speed"},
  };
  return kImporters;
}

}  // namespace gpuvet::import

namespace gpuvet {

std::span<const FormatInfo> import_formats() {
  static const std::vector<FormatInfo> formats = [] {
    std::vector<FormatInfo> v;
    for (const auto& imp : import::importers())
      v.push_back({imp.format, imp.description, imp.fills});
    return v;
  }();
  return formats;
}

}  // namespace gpuvet
