#include "import/gpuvet_json.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuvet/report.h"

namespace gpuvet::import {
namespace {

using ojson = nlohmann::ordered_json;

const std::string kResults = std::string(GPUVET_TEST_DATA) + "/../docs/results/h200-2026-12-02/";

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool has_note(const Facts& f, std::string_view needle) {
  return std::any_of(f.notes.begin(), f.notes.end(),
                     [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}

std::string all_notes(const Facts& f) {
  std::string s;
  for (const auto& n : f.notes) s += n + "\n";
  return s;
}

// Every field report/json.cc writes, set to a distinct non-default value (optionals engaged,
// vectors and maps non-empty), so a field the importer forgets changes the second dump.
GpuFacts full_gpu(int index) {
  const int k = index * 100;
  GpuFacts g;
  g.index = index;
  g.unresponsive = "not responding: nvmlDeviceGetName did not return within 3.0 s";
  g.uuid = "GPU-1234abcd-" + std::to_string(index);
  g.name = "NVIDIA H200 #" + std::to_string(index);
  g.serial = "165" + std::to_string(index);
  g.vbios = "96.00.AF.00." + std::to_string(index);
  g.pci_bus_id = "0000:1" + std::to_string(index) + ":00.0";
  g.pcie = {4 + k, 5 + k, 6 + k, 8 + k, 16 + k, 77ull + static_cast<unsigned>(k)};
  g.numa_node = 1 + index;
  g.cpu_affinity = {0, 1, 2, 3, 8, 10, 11 + index};
  g.clocks = {1980 + k, 2619 + k, 1981 + k, 2620 + k};
  g.clock_events.active_mask = 0x84ull + static_cast<unsigned>(index);
  g.clock_events.active = {"sw_power_cap", "hw_slowdown"};
  g.clock_events.accumulated_ns = {{"board_limit", 11},
                                   {"power", 7547000608ull + index},
                                   {"reliability", 12},
                                   {"sync_boost", 13},
                                   {"thermal", 14}};
  g.thermal = {41 + k, 42 + k, 43 + k, 44 + k, 45 + k, 46 + k, 47 + k};
  g.power = {690.293 + index, 700.0, 699.5, 701.25};
  g.ecc.enabled = true;
  g.ecc.pending_enabled = false;
  g.ecc.volatile_counts = {3ull + index, 4ull};
  g.ecc.aggregate_counts = {18446744073709551000ull, 6ull};
  g.ecc.retired_pages_sbe = 7;
  g.ecc.retired_pages_dbe = 8;
  g.ecc.retired_pages_pending = true;
  g.ecc.remapped_rows_correctable = 9;
  g.ecc.remapped_rows_uncorrectable = 10;
  g.ecc.remapping_pending = false;
  g.ecc.remapping_failed = true;
  g.memory = {150754820096ull + index, 1050673152ull};
  g.utilization = {97 + index, 31};
  g.mig_enabled = false;
  g.persistence_mode = "enabled";
  g.pstate = 2 + index;
  NvLink l0;
  l0.link = 0;
  l0.active = true;
  l0.version = 5;
  l0.remote_pci_bus_id = "0000:2a:00.0";
  l0.remote_gpu = 1 - index;
  l0.speed_gbps = 26.562;
  NvLink l1 = l0;
  l1.link = 17;
  l1.active = false;
  l1.version = 4;
  l1.remote_pci_bus_id = "0000:ff:00.0";
  l1.remote_gpu = 7;
  g.nvlinks = {l0, l1};
  g.fabric = {"completed", "NVML_SUCCESS", 4000000000u, "cluster-uuid-" + std::to_string(index),
              "Unhealthy"};
  g.nvlinks_all_inactive = true;
  g.recovery_action = "Reset";
  g.acs_redirects_p2p = true;
  g.acs_bridges = {"0000:00:01.0", "0000:01:00.0"};
  g.iommu_group = "4" + std::to_string(index);
  g.unreadable = {"pcie.replay_counter: NVML_ERROR_UNKNOWN",
                  "fabric.state: NVML_ERROR_GPU_IS_LOST"};
  return g;
}

Facts full_facts() {
  Facts f;
  HostFacts& h = f.host;
  h.hostname = "node-17";
  h.kernel = "6.18.44-fc-v973-gpu";
  h.os = "Ubuntu 24.04.3 LTS";
  h.cpu_model = "Intel(R) Xeon(R) Platinum 8480+";
  h.logical_cpus = 224;
  h.physical_cores = 112;
  h.sockets = 2;
  h.memory_bytes = 2164128870912ull;
  h.virtual_machine = false;
  h.numa_nodes = {{0, {0, 1, 2, 3, 112, 113}, 1082064435456ull, {10, 21}},
                  {1, {56, 57, 58, 200}, 1082064435457ull, {21, 10}}};
  h.driver_version = "580.159.04";
  h.nvml_version = "13.580.159.04";
  h.cuda_driver_version = "13.0";
  h.nvlink_disabled_by_driver = false;
  h.driver_params = {
      {"NvLinkDisable", "0"}, {"EnableResizableBar", "1"}, {"DmaRemapPeerMmio", "1"}};
  h.iommu = {true, true, "iommu=pt intel_iommu=on"};
  h.acs_redirect_unplaced = {"0000:00:01.0 (RR,CR)"};
  HostPressure p;
  p.window_s = 0.05010458;
  p.cores = {{0, 16.666666666666668, 1.5, 0.25}, {1, 60.0, 2.5, 0.5}};
  p.iowait_pct = 3.75;
  p.disks = {{"nvme0n1", 12.5, 1048576.0, 2097152.5}, {"sda", 0.5, 1.0, 2.0}};
  NicLoad nic;
  nic.device = "ib0";
  nic.rx_bytes_per_s = 1e9;
  nic.tx_bytes_per_s = 2.5e9;
  nic.speed_mbit_s = 400000.0;
  nic.peak_util_pct = 5.0;
  p.nics = {nic};
  PsiReading psi;
  psi.some_avg10 = 28.1;
  psi.some_avg60 = 11.52;
  psi.full_avg10 = 27.1;
  psi.full_avg60 = 11.02;
  psi.some_window_pct = 31.25;
  psi.full_window_pct = 30.5;
  p.psi_io = psi;
  p.psi_cpu = psi;
  p.psi_memory = psi;
  p.psi_cpu->some_avg10 = 0.52;
  h.pressure = p;
  h.uptime_s = 354123.45;
  h.collected_unix = 1764669600;

  f.gpus = {full_gpu(0), full_gpu(1)};

  auto pair = [](int a, int b, PathType path, std::optional<int> links, P2PStatus r, P2PStatus w,
                 P2PStatus n, P2PStatus at) {
    GpuPair gp;
    gp.a = a;
    gp.b = b;
    gp.path = path;
    gp.nvlinks = links;
    gp.p2p_read = r;
    gp.p2p_write = w;
    gp.p2p_nvlink = n;
    gp.p2p_atomics = at;
    gp.p2p_pcie = r;
    return gp;
  };
  using P = P2PStatus;
  f.pairs = {
      pair(0, 1, PathType::kNVLink, 18, P::kOk, P::kChipsetNotSupported, P::kGpuNotSupported,
           P::kTopologyNotSupported),
      pair(0, 2, PathType::kPIX, 2, P::kDisabledByRegkey, P::kNotSupported, P::kUnknown, P::kOk),
      pair(0, 3, PathType::kPXB, 3, P::kOk, P::kOk, P::kOk, P::kOk),
      pair(1, 2, PathType::kPHB, 4, P::kOk, P::kOk, P::kOk, P::kOk),
      pair(1, 3, PathType::kNODE, 5, P::kOk, P::kOk, P::kOk, P::kOk),
      pair(2, 3, PathType::kSYS, 6, P::kOk, P::kOk, P::kOk, P::kOk),
      pair(3, 4, PathType::kSelf, 7, P::kOk, P::kOk, P::kOk, P::kOk),
      pair(4, 5, PathType::kUnknown, 8, P::kOk, P::kOk, P::kOk, P::kOk),
  };

  f.kernel_log.source = "/dev/kmsg";
  f.kernel_log.readable = true;
  f.kernel_log.why_unreadable = "partly: ring buffer wrapped";
  f.kernel_log.fallen_off_bus = {"NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus."};
  XidEvent x;
  x.code = 79;
  x.pci_bus_id = "0000:3b:00.0";
  x.gpu = 1;
  x.uptime_s = 1234.56789;
  x.unix_time = 1764584434;
  x.pid = 4321;
  x.process = "python3";
  x.message = "GPU has fallen off the bus.";
  XidEvent x2 = x;
  x2.code = 48;
  x2.message = "An uncorrectable double bit error";
  f.kernel_log.xids = {x, x2};
  XidEvent lost = x;
  lost.message = f.kernel_log.fallen_off_bus.front();
  f.kernel_log.fallen_off_bus_events = {lost};
  DeviceErrorLog aer;
  aer.kind = "corrected";
  aer.pci_bus_id = "0000:3b:00.0";
  aer.driver = "nvidia";
  aer.count = 12;
  aer.details = {"Physical Layer", "RxErr"};
  aer.first_uptime_s = 10.5;
  aer.last_uptime_s = 99.25;
  aer.first_unix_time = 1764584000;
  aer.last_unix_time = 1764584400;
  aer.last_message = "PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)";
  f.kernel_log.pcie_aer = {aer};
  DeviceErrorLog fault = aer;
  fault.kind = "dma-read";
  fault.details = {"PTE Read access is not set"};
  fault.last_message = "DMAR: [DMA Read NO_PASID] Request device [3b:00.0] fault addr 0x0";
  f.kernel_log.iommu_faults = {fault};
  DeviceErrorLog failed = aer;
  failed.kind = "init-failed";
  failed.driver = "nvidia";
  failed.last_message = "NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x62:0x65:1792)";
  f.kernel_log.driver_failures = {failed};
  XidEvent hung;
  hung.pid = 4412;
  hung.process = "python3";
  hung.uptime_s = 5400.0;
  hung.unix_time = 1764588600;
  hung.gpu = 0;
  hung.pci_bus_id = "0000:3b:00.0";
  hung.message = "INFO: task python3:4412 blocked for more than 122 seconds.";
  f.kernel_log.hung_tasks = {hung};
  PciDevice pci;
  pci.bdf = "0000:3b:00.0";
  pci.revision = "a1";
  pci.class_name = "3D controller";
  pci.class_code = "0302";
  pci.vendor_device = "10de:2335";
  pci.name = "NVIDIA Corporation GH100 [H200 SXM 141GB]";
  pci.driver = "nvidia";
  pci.port_type = "Endpoint";
  pci.upstream = "0000:3a:00.0";
  pci.secondary_bus = 0x3c;
  pci.subordinate_bus = 0x3d;
  pci.gen_cap = 5;
  pci.width_cap = 16;
  pci.gen_sta = 4;
  pci.width_sta = 8;
  pci.acs_ctl = {"SrcValid", "ReqRedir"};
  pci.aer_uncorrected = {"CmpltTO", "DLP"};
  pci.aer_uncorrected_fatal = {"DLP"};
  pci.aer_corrected = {"RxErr"};
  f.pci_devices = {pci};

  ProcessFacts proc;
  proc.host_pid = 1171;
  proc.local_pid = 71;
  proc.ns_pids = {1171, 71};
  proc.gpu = 1;
  proc.name = "python3";
  proc.used_memory_bytes = 1050673152;
  proc.cpus_allowed = "0-15,32";
  proc.cpus_allowed_ids = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 32};
  proc.mems_allowed = "0-1";
  proc.mems_allowed_ids = {0, 1};
  proc.busy_threads = {{1431, "pt_data_worker", 15, 99.5}};
  f.processes = {proc};

  SourceInfo s;
  s.name = "nvml";
  s.ok = true;
  s.detail = "/usr/lib/libnvidia-ml.so.1 (nvmlInit_v2)";
  s.duration_ms = 40.98075;
  // Not in key order: the report keeps "slowest first".
  s.timings_ms = {{"nvmlInit", 8.386724},
                  {"nvmlDeviceGetHandleByIndex", 6.451882},
                  {"nvmlDeviceGetClockInfo", 0.9324859999999999}};
  SourceInfo s2;
  s2.name = "sysfs";
  s2.ok = false;
  s2.detail = "permission denied";
  s2.duration_ms = 0.5;
  s2.timings_ms = {{"read", 0.25}};
  f.sources = {s, s2};
  f.notes = {"hwloc: no PCI objects", "kernel log: ring buffer wrapped"};
  f.nic_paths = {{"mlx5_0", 0, PathType::kPIX}, {"mlx5_1", 1, PathType::kSYS}};
  f.nccl_events = {{"transport", 3, std::string("node-17"), std::string("0000:18:00.0"),
                    "Channel 00/0 : 3[3] -> 4[4] via P2P/IPC/read"}};
  Measurement m;
  m.tool = "nccl-tests";
  m.test = "all_reduce_perf";
  m.src_gpu = 0;
  m.dst_gpu = 1;
  m.size_bytes = 8589934592ull;
  m.bandwidth_gbps = 134.44;
  m.busbw_gbps = 235.26;
  m.latency_us = 63896.0;
  m.note = "out-of-place";
  m.wrong_data = "#wrong 3";
  m.origin = "bundle/nccl-tests.txt";
  f.measurements = {m};
  f.imported = {{"bundle/nvidia-smi-q.txt#part2", "nvidia-smi-q", {"refused -d PCI"}}};
  GpuSample sample;
  sample.gpu = 1;
  sample.t_s = 1.502;
  sample.sm_mhz = 1755;
  sample.gpu_c = 70;
  sample.power_w = 350.25;
  sample.util_pct = 100;
  sample.clock_event_mask = 0x4;
  sample.mem_mhz = 2619;
  sample.margin_c = 17;
  sample.power_limit_w = 700;
  sample.mem_util_pct = 43;
  sample.memory_used_bytes = 81604378624ULL;
  sample.pcie_gen = 5;
  sample.pcie_width = 16;
  sample.pcie_replays = 3;
  sample.ecc_corrected = 2;
  sample.ecc_uncorrected = 0;
  sample.nvlinks_up = 18;
  sample.nvlinks_total = 18;
  sample.clock_event_ns = {{"power", 120000000ULL}, {"thermal", 0}};
  GpuSample later = sample;
  later.t_s = 3.0;
  later.clock_event_mask = 0x0;  // known, and zero
  f.samples = {sample, later};
  f.host_samples = {{1.5, 2.25, 28.0, 0.5}};
  f.throughput_samples = {{1.0, 4012.5, "llm-7b-layer", 8}, {2.0, 3990.25, "llm-7b-layer", 8}};
  f.numa_bindings = {{4242, {16, 17, 18, 19, 31}, {1}, "numactl --show"},
                     {7, {0, 1}, {0, 1}, "/proc/7/status"}};
  ScaleRun run;
  run.workload = "train";
  run.preset = "cnn-small";
  run.gpus = 4;
  run.throughput = 5123.5;
  run.p50_ms = 12.5;
  run.p95_ms = 14.25;
  run.p99_ms = 15.75;
  run.max_ms = 30.0;
  run.comm_share = 0.125;
  run.offered_rate_hz = 40.0;
  f.scale_runs = {run};
  HealthCheck check;
  check.tool = "dcgmi health";
  check.test = "NVLINK system";
  check.category = "Hardware";
  check.result = "warn";
  check.gpu = 5;
  check.entity = "NvSwitch 0";
  check.message = "Detected 16 NvLink CRC Flit errors";
  f.health_checks = {check};
  CollectiveRank rank;
  rank.source = "pytorch-log";
  rank.origin = "logs/rank3.log";
  rank.rank = 3;
  rank.world_size = 8;
  rank.pg = "0";
  rank.pg_name = "default_pg";
  rank.host = "node-17";
  rank.pid = 41233;
  rank.cuda_dev = 3;
  rank.nvml_dev = 3;
  rank.gpu_uuid = "GPU-5e1c7a52-9d3b-4f0e-8a61-2b7c3e9d1f40";
  rank.pci_bus_id = "0000:5d:00.0";
  rank.last_enqueued = 1579;
  rank.last_started = 1579;
  rank.last_completed = -1;
  rank.timeout_seq = 1580;
  rank.timeout_op = "ALLREDUCE";
  rank.timeout_ms = 600000;
  rank.ran_ms = 600060;
  rank.timeout_time = "1206 18:44:12.715298746";
  rank.watchdog_stuck = true;
  rank.pending_entries = 2;
  rank.last_op = "nccl:all_reduce";
  rank.op_counts = {{"AllReduce", 1580}};
  rank.ras_status = "dead";
  rank.last_activity = "Running tokenizer on dataset:   9%";
  rank.desync_state = "finished-not-joined";
  rank.desync_seq = 182;
  rank.exit_code = -9;
  rank.root_cause = true;
  rank.errors = {"torch.OutOfMemoryError: CUDA out of memory."};
  f.collective_ranks = {rank};
  RasCommunicator comm;
  comm.id = "#0-0 (fa93daea854b060b)";
  comm.size = 32;
  comm.status = "RUNNING";
  comm.errors = {"MISMATCH"};
  comm.missing_ranks = {21};
  comm.dead_ranks = {21};
  comm.details = {"2 ranks have launched up to operation 641"};
  comm.launched = {{"640", 30}, {"641", 2}};
  f.ras_communicators = {comm};
  JobStep step;
  step.number = 12;
  step.wall_ms = 101.5;
  step.compute_ms = 80;
  step.comm_exposed_ms = 10;
  step.copy_ms = 1.5;
  step.idle_ms = 10;
  step.comm_ms = 30;
  step.collective_ms = 30;
  step.pre_comm_ms = 60;
  step.idle_input_ms = 4;
  step.idle_sync_ms = 3;
  step.idle_launch_ms = 2;
  step.kernels = 1428;
  step.syncs = 2;
  step.items_per_s = 512;
  JobCollective coll;
  coll.op = "AllReduce";
  coll.size_bytes = 26214400;
  coll.count = 8;
  coll.median_us = 1776;
  coll.busbw_gbps = 180.5;
  coll.algo = "RING";
  coll.proto = "LL128";
  JobRank job;
  job.source = "pytorch-trace";
  job.origin = "rank3.json";
  job.rank = 3;
  job.world_size = 8;
  job.backend = "nccl";
  job.nccl_version = "2.21.5";
  job.host = "node-17";
  job.pid = 4242;
  job.cuda_device = 3;
  job.gpu_name = "NVIDIA H100 80GB HBM3";
  job.pci_bus_id = "0000:5d:00.0";
  job.steps = {step};
  job.events = 108936;
  job.kernels = 8568;
  job.median_kernel_us = 9.5;
  job.launch_call_us = 4.2;
  job.pageable_copies = 3;
  job.pageable_copy_ms = 0.4;
  job.collectives = {coll};
  job.notes = {"kernels on 2 devices: the figures are of device 3, the busiest"};
  f.job_ranks = {job};
  f.gpu_facts_unavailable = true;
  f.input_problems = {"bundle: looks like a gpuvet capture bundle but has no manifest.json"};
  return f;
}

Facts import_ok(const std::string& text) {
  Facts f;
  Status st = import_gpuvet_json(text, f);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return f;
}

// ------------------------------------------------------------------ round trip

TEST(GpuvetJson, RoundTripEveryFieldGivesTheSameReport) {
  const Facts original = full_facts();
  const std::string first = facts_to_json(original);
  // The helper really sets everything the writer writes: no null, no empty list or object.
  EXPECT_EQ(first.find("null"), std::string::npos) << first;
  EXPECT_EQ(first.find("[]"), std::string::npos) << first;
  EXPECT_EQ(first.find("{}"), std::string::npos) << first;

  const Facts back = import_ok(first);
  EXPECT_EQ(back.notes, original.notes) << "no notes of its own on a clean report";
  EXPECT_EQ(facts_to_json(back), first);

  // Spot checks on what the string comparison cannot tell apart from the writer's own choices.
  ASSERT_EQ(back.pairs.size(), original.pairs.size());
  EXPECT_EQ(back.pairs[0].path, PathType::kNVLink);
  EXPECT_EQ(back.pairs[0].nvlinks, 18);
  EXPECT_EQ(back.pairs[6].path, PathType::kSelf);
  EXPECT_EQ(back.pairs[7].path, PathType::kUnknown);
  EXPECT_EQ(back.pairs[0].p2p_write, P2PStatus::kChipsetNotSupported);
  ASSERT_EQ(back.host.numa_nodes.size(), 2u);
  EXPECT_EQ(back.host.numa_nodes[1].cpus, (std::vector<int>{56, 57, 58, 200}));
  EXPECT_EQ(back.gpus[1].cpu_affinity, original.gpus[1].cpu_affinity);
  ASSERT_EQ(back.sources[0].timings_ms.size(), 3u);
  EXPECT_EQ(back.sources[0].timings_ms[2].first, "nvmlDeviceGetClockInfo");
  EXPECT_EQ(back.gpus[0].ecc.aggregate_counts.corrected, 18446744073709551000ull);
  EXPECT_EQ(back.gpus[0].fabric.clique_id, 4000000000u);
  EXPECT_EQ(back.processes[0].cpus_allowed_ids,
            (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 32}));
  EXPECT_EQ(back.processes[0].mems_allowed_ids, (std::vector<int>{0, 1}));
  EXPECT_EQ(back.host.uptime_s, 354123.45);
  ASSERT_EQ(back.measurements.size(), 1u);
  EXPECT_EQ(back.measurements[0].wrong_data, "#wrong 3");
  EXPECT_EQ(back.host.collected_unix, 1764669600);
  ASSERT_EQ(back.samples.size(), 2u);
  EXPECT_EQ(back.samples[0].gpu, 1);
  EXPECT_DOUBLE_EQ(back.samples[0].t_s, 1.502);
  EXPECT_EQ(back.samples[0].clock_event_mask, 0x4u);
  EXPECT_EQ(back.samples[1].clock_event_mask, 0u);
  ASSERT_EQ(back.numa_bindings.size(), 2u);
  EXPECT_EQ(back.numa_bindings[0].pid, 4242);
  EXPECT_EQ(back.numa_bindings[0].cpus, (std::vector<int>{16, 17, 18, 19, 31}));
  EXPECT_EQ(back.numa_bindings[0].mems, std::vector<int>{1});
  EXPECT_EQ(back.numa_bindings[1].source, "/proc/7/status");
  ASSERT_EQ(back.scale_runs.size(), 1u);
  EXPECT_EQ(back.scale_runs[0].preset, "cnn-small");
  EXPECT_EQ(back.scale_runs[0].gpus, 4);
  EXPECT_EQ(back.scale_runs[0].comm_share, 0.125);
  EXPECT_EQ(back.scale_runs[0].offered_rate_hz, 40.0);
}

TEST(GpuvetJson, SeriesBindingsAndScaleRunsWithUnknowns) {
  Facts f;
  GpuSample s;
  s.gpu = 2;
  s.t_s = 0;
  s.util_pct = 5;  // the rest unknown
  f.samples = {s};
  f.numa_bindings = {{std::nullopt, {0, 1, 2, 3}, {}, "numactl --show"}};
  ScaleRun run;
  run.workload = "infer";
  run.preset = "llm-7b-layer";
  run.gpus = 2;
  run.p99_ms = 40.5;
  f.scale_runs = {run};
  const std::string text = facts_to_json(f);
  ojson doc = ojson::parse(text);
  EXPECT_TRUE(doc["host"]["uptime_s"].is_null());
  EXPECT_TRUE(doc["host"]["collected_unix"].is_null());
  EXPECT_TRUE(doc["samples"][0]["sm_mhz"].is_null());
  EXPECT_TRUE(doc["samples"][0]["clock_event_mask"].is_null());
  EXPECT_EQ(doc["samples"][0]["util_pct"], 5);
  EXPECT_TRUE(doc["numa_bindings"][0]["pid"].is_null());
  EXPECT_EQ(doc["numa_bindings"][0]["cpus"], "0-3");
  EXPECT_TRUE(doc["numa_bindings"][0]["mems"].is_null());
  EXPECT_TRUE(doc["scale_runs"][0]["throughput"].is_null());
  EXPECT_EQ(doc["scale_runs"][0]["p99_ms"], 40.5);

  const Facts back = import_ok(text);
  EXPECT_TRUE(back.notes.empty()) << all_notes(back);
  EXPECT_EQ(facts_to_json(back), text);
  ASSERT_EQ(back.samples.size(), 1u);
  EXPECT_FALSE(back.samples[0].power_w.has_value());
  ASSERT_EQ(back.numa_bindings.size(), 1u);
  EXPECT_FALSE(back.numa_bindings[0].pid.has_value());
  EXPECT_TRUE(back.numa_bindings[0].mems.empty());
  ASSERT_EQ(back.scale_runs.size(), 1u);
  EXPECT_FALSE(back.scale_runs[0].p50_ms.has_value());

  // Wrong types are notes naming the field; an id array is accepted for a list.
  doc["samples"][0]["t_s"] = "soon";
  doc["numa_bindings"][0]["mems"] = ojson::array({0, 1});
  doc["scale_runs"][0]["gpus"] = 2.5;
  doc["host"]["uptime_s"] = "long";
  Facts bad = import_ok(doc.dump());
  EXPECT_TRUE(has_note(bad, "samples[0].t_s: expected a number")) << all_notes(bad);
  EXPECT_TRUE(has_note(bad, "scale_runs[0].gpus: expected a whole number")) << all_notes(bad);
  EXPECT_TRUE(has_note(bad, "host.uptime_s: expected a number")) << all_notes(bad);
  EXPECT_EQ(bad.numa_bindings[0].mems, (std::vector<int>{0, 1}));
}

TEST(GpuvetJson, RoundTripOneLineAndEmptyFacts) {
  JsonOptions one_line;
  one_line.indent = -1;
  const std::string full = facts_to_json(full_facts(), one_line);
  EXPECT_EQ(facts_to_json(import_ok(full), one_line), full);

  const std::string empty = facts_to_json(Facts{});
  const Facts back = import_ok(empty);
  EXPECT_TRUE(back.notes.empty()) << all_notes(back);
  EXPECT_EQ(facts_to_json(back), empty);
  EXPECT_FALSE(back.host.pressure.has_value());
  EXPECT_FALSE(back.host.hostname.has_value());
}

TEST(GpuvetJson, ReadsTheImportOnlyListsWhenPresent) {
  ojson doc = ojson::parse(facts_to_json(Facts{}));
  doc["nic_paths"] = {{{"nic", "mlx5_0"}, {"gpu", 3}, {"path", "PXB"}},
                      {{"nic", "NIC1"}, {"gpu", 0}, {"path", "SYS"}}};
  doc["nccl_events"] = {{{"kind", "transport"},
                         {"rank", 5},
                         {"host", "node-2"},
                         {"pci_bus_id", "0000:18:00.0"},
                         {"detail", "Channel 00 : 5[1] -> 6[2] via P2P/IPC"}},
                        {{"kind", "warn"}, {"rank", nullptr}, {"detail", "NET/IB : no device"}}};
  doc["measurements"] = {{{"tool", "nccl-tests"},
                          {"test", "all_reduce_perf"},
                          {"src_gpu", nullptr},
                          {"dst_gpu", nullptr},
                          {"size_bytes", 8589934592ull},
                          {"bandwidth_gbps", 180.5},
                          {"busbw_gbps", 315.88},
                          {"latency_us", 47588.1},
                          {"note", "out-of-place"}},
                         {{"tool", "nvbandwidth"},
                          {"test", "device_to_device_memcpy_read_ce"},
                          {"src_gpu", 0},
                          {"dst_gpu", 1},
                          {"bandwidth_gbps", 389}}};
  doc["imported"] = {{{"path", "bundle/nvidia-smi-q.xml"},
                      {"format", "nvidia-smi-q-xml"},
                      {"notes", {"GPU1: fan speed N/A"}}}};
  doc["gpus"] = {
      {{"index", 0}, {"nvlinks", {{{"link", 3}, {"active", true}, {"speed_gbps", 26.562}}}}}};
  doc["processes"] = {{{"host_pid", 9},
                       {"gpu", 0},
                       {"cpus_allowed", "0-3"},
                       {"cpus_allowed_ids", {1, 2}},
                       {"mems_allowed", "0"}}};

  const Facts f = import_ok(doc.dump());
  EXPECT_TRUE(f.notes.empty()) << all_notes(f);
  ASSERT_EQ(f.nic_paths.size(), 2u);
  EXPECT_EQ(f.nic_paths[0].nic, "mlx5_0");
  EXPECT_EQ(f.nic_paths[0].gpu, 3);
  EXPECT_EQ(f.nic_paths[0].path, PathType::kPXB);
  EXPECT_EQ(f.nic_paths[1].path, PathType::kSYS);
  ASSERT_EQ(f.nccl_events.size(), 2u);
  EXPECT_EQ(f.nccl_events[0].kind, "transport");
  EXPECT_EQ(f.nccl_events[0].rank, 5);
  EXPECT_EQ(f.nccl_events[0].host, "node-2");
  EXPECT_EQ(f.nccl_events[0].pci_bus_id, "0000:18:00.0");
  EXPECT_EQ(f.nccl_events[0].detail, "Channel 00 : 5[1] -> 6[2] via P2P/IPC");
  EXPECT_FALSE(f.nccl_events[1].rank.has_value());
  ASSERT_EQ(f.measurements.size(), 2u);
  EXPECT_EQ(f.measurements[0].tool, "nccl-tests");
  EXPECT_EQ(f.measurements[0].test, "all_reduce_perf");
  EXPECT_FALSE(f.measurements[0].src_gpu.has_value());
  EXPECT_EQ(f.measurements[0].size_bytes, 8589934592ull);
  EXPECT_EQ(f.measurements[0].bandwidth_gbps, 180.5);
  EXPECT_EQ(f.measurements[0].busbw_gbps, 315.88);
  EXPECT_EQ(f.measurements[0].latency_us, 47588.1);
  EXPECT_EQ(f.measurements[0].note, "out-of-place");
  EXPECT_EQ(f.measurements[1].src_gpu, 0);
  EXPECT_EQ(f.measurements[1].dst_gpu, 1);
  EXPECT_EQ(f.measurements[1].bandwidth_gbps, 389.0);  // an integer is a fine double
  ASSERT_EQ(f.imported.size(), 1u);
  EXPECT_EQ(f.imported[0].path, "bundle/nvidia-smi-q.xml");
  EXPECT_EQ(f.imported[0].format, "nvidia-smi-q-xml");
  EXPECT_EQ(f.imported[0].notes, std::vector<std::string>{"GPU1: fan speed N/A"});
  ASSERT_EQ(f.gpus.size(), 1u);
  ASSERT_EQ(f.gpus[0].nvlinks.size(), 1u);
  EXPECT_EQ(f.gpus[0].nvlinks[0].link, 3);
  EXPECT_EQ(f.gpus[0].nvlinks[0].speed_gbps, 26.562);
  ASSERT_EQ(f.processes.size(), 1u);
  EXPECT_EQ(f.processes[0].cpus_allowed_ids, (std::vector<int>{1, 2}));  // explicit wins
  EXPECT_EQ(f.processes[0].mems_allowed_ids, std::vector<int>{0});
}

// ------------------------------------------------------------------ real reports

TEST(GpuvetJson, ReadsTheRealIdleH200Report) {
  const auto text = read_text(kResults + "gpuvet-facts.json");
  ASSERT_TRUE(text) << kResults;
  EXPECT_EQ(sniff_gpuvet_json(*text), 100);
  const Facts f = import_ok(*text);
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.name, "NVIDIA H200");
  EXPECT_EQ(g.pci_bus_id, "0000:00:06.0");
  EXPECT_EQ(g.power.limit_w, 700.0);
  EXPECT_EQ(g.clock_events.active, std::vector<std::string>{"idle"});
  EXPECT_EQ(g.clock_events.accumulated_ns.size(), 5u);
  EXPECT_TRUE(f.processes.empty());
  EXPECT_TRUE(f.pairs.empty());
  EXPECT_FALSE(f.gpu_facts_unavailable);
  EXPECT_EQ(f.host.hostname, "vm");
  EXPECT_EQ(f.host.nvlink_disabled_by_driver, true);
  EXPECT_EQ(f.host.driver_params.at("NvLinkDisable"), "1");
  ASSERT_EQ(f.host.numa_nodes.size(), 1u);
  EXPECT_EQ(f.host.numa_nodes[0].cpus.size(), 16u);
  EXPECT_EQ(f.host.numa_nodes[0].cpus.back(), 15);
  EXPECT_EQ(f.host.iommu.active, false);
  EXPECT_FALSE(f.host.iommu.passthrough.has_value());
  ASSERT_TRUE(f.host.pressure.has_value());
  EXPECT_EQ(f.host.pressure->cores.size(), 16u);
  EXPECT_EQ(f.kernel_log.source, "/dev/kmsg");
  EXPECT_FALSE(f.sources.empty());
  // Reading back what this writer wrote and writing it again changes nothing
  // (the recorded file predates keys added since, so compare writer to writer).
  const std::string once = facts_to_json(f);
  EXPECT_EQ(facts_to_json(import_ok(once)), once);
}

TEST(GpuvetJson, ReadsTheRealH200ReportUnderLoad) {
  const auto text = read_text(kResults + "gpuvet-facts-load.json");
  ASSERT_TRUE(text) << kResults;
  EXPECT_EQ(sniff_gpuvet_json(*text), 100);
  const Facts f = import_ok(*text);
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.name, "NVIDIA H200");
  EXPECT_EQ(g.pci_bus_id, "0000:00:06.0");
  EXPECT_EQ(g.power.limit_w, 700.0);
  EXPECT_EQ(g.clock_events.active_mask, 4u);
  EXPECT_NE(std::find(g.clock_events.active.begin(), g.clock_events.active.end(), "sw_power_cap"),
            g.clock_events.active.end());
  EXPECT_EQ(g.clock_events.accumulated_ns.at("power"), 7547000608ull);
  ASSERT_EQ(f.processes.size(), 1u);
  EXPECT_EQ(f.processes[0].name, "python3");
  EXPECT_EQ(f.processes[0].host_pid, 1171);
  EXPECT_EQ(f.processes[0].gpu, 0);
  EXPECT_EQ(f.processes[0].used_memory_bytes, 1050673152u);
  EXPECT_EQ(f.processes[0].cpus_allowed_ids.size(), 16u);
  ASSERT_FALSE(f.sources.empty());
  const auto nvml = std::find_if(f.sources.begin(), f.sources.end(),
                                 [](const SourceInfo& s) { return s.name == "nvml"; });
  ASSERT_NE(nvml, f.sources.end());
  ASSERT_FALSE(nvml->timings_ms.empty());
  EXPECT_EQ(nvml->timings_ms.front().first, "nvmlInit");  // written order kept
  const std::string once = facts_to_json(f);
  EXPECT_EQ(facts_to_json(import_ok(once)), once);
}

// ------------------------------------------------------------------ tolerance

TEST(GpuvetJson, WrongTypesBecomeNotesAndTheRestIsRead) {
  ojson doc = ojson::parse(facts_to_json(full_facts()));
  doc["host"]["logical_cpus"] = true;
  doc["host"]["memory_bytes"] = -5;
  doc["host"]["numa_nodes"][0]["cpus"] = "a-b";
  doc["host"]["driver_params"]["NvLinkDisable"] = 0;
  doc["host"]["iommu"] = "on";
  doc["gpus"][0]["pcie"]["gen_current"] = "four";
  doc["gpus"][0]["pcie"]["gen_max"] = 5.5;
  doc["gpus"][0]["pcie"]["width_max"] = 1e300;
  doc["gpus"][0]["pcie"]["width_current"] = 16.0;  // whole: accepted
  doc["gpus"][0]["clocks"] = ojson::array();
  doc["gpus"][0]["clock_events"]["active"] = {"idle", 3};
  doc["gpus"][0]["nvlinks"][1] = "link";
  doc["gpus"][1] = 7;
  doc["pairs"][0]["path"] = "WAT";
  doc["pairs"][0]["p2p"]["read"] = "XX";
  doc["sources"][0]["timings_ms"]["nvmlInit"] = "slow";
  doc["notes"] = "not a list";
  doc["gpu_facts_unavailable"] = "yes";

  Facts f;
  Status st = import_gpuvet_json(doc.dump(2), f);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const std::string notes = all_notes(f);
  for (const char* want : {
           "host.logical_cpus: expected a number",
           "host.memory_bytes: expected a whole number in range",
           "host.numa_nodes[0].cpus: not a CPU list",
           "host.driver_params.NvLinkDisable: expected a string",
           "host.iommu: expected an object",
           "gpus[0].pcie.gen_current: expected a number",
           "gpus[0].pcie.gen_max: expected a whole number in range",
           "gpus[0].pcie.width_max: expected a whole number in range",
           "gpus[0].clocks: expected an object",
           "gpus[0].clock_events.active[1]: expected a string",
           "gpus[0].nvlinks[1]: expected an object",
           "gpus[1]: expected an object",
           "pairs[0].path: unknown path type \"WAT\"",
           "pairs[0].p2p.read: unknown P2P code \"XX\"",
           "sources[0].timings_ms.nvmlInit: expected a number",
           "notes: expected an array",
           "gpu_facts_unavailable: expected true or false",
       })
    EXPECT_TRUE(has_note(f, want)) << "missing note: " << want << "\nnotes:\n" << notes;

  EXPECT_FALSE(f.host.logical_cpus.has_value());
  EXPECT_FALSE(f.host.memory_bytes.has_value());
  EXPECT_EQ(f.host.physical_cores, 112);
  EXPECT_TRUE(f.host.numa_nodes[0].cpus.empty());
  EXPECT_EQ(f.host.numa_nodes[0].memory_bytes, 1082064435456ull);
  EXPECT_FALSE(f.host.iommu.active.has_value());
  ASSERT_EQ(f.gpus.size(), 1u);  // the non-object GPU is skipped
  EXPECT_FALSE(f.gpus[0].pcie.gen_current.has_value());
  EXPECT_FALSE(f.gpus[0].pcie.gen_max.has_value());
  EXPECT_EQ(f.gpus[0].pcie.width_current, 16);
  EXPECT_EQ(f.gpus[0].pcie.gen_device_max, 6);
  EXPECT_FALSE(f.gpus[0].clocks.sm_mhz.has_value());
  EXPECT_EQ(f.gpus[0].clock_events.active, std::vector<std::string>{"idle"});
  EXPECT_EQ(f.gpus[0].nvlinks.size(), 1u);
  EXPECT_EQ(f.gpus[0].name, "NVIDIA H200 #0");
  EXPECT_EQ(f.pairs[0].path, PathType::kUnknown);
  EXPECT_EQ(f.pairs[0].nvlinks, 18);  // from the explicit key
  EXPECT_FALSE(f.pairs[0].p2p_read.has_value());
  EXPECT_EQ(f.pairs[0].p2p_write, P2PStatus::kChipsetNotSupported);
  EXPECT_EQ(f.sources[0].timings_ms.size(), 2u);
  EXPECT_FALSE(f.gpu_facts_unavailable);
  EXPECT_EQ(f.kernel_log.xids.size(), 2u);
}

TEST(GpuvetJson, TypeNotesAreCapped) {
  ojson doc = ojson::parse(facts_to_json(Facts{}));
  doc["notes"] = ojson::array();
  for (int i = 0; i < 5000; ++i) doc["notes"].push_back(i);
  Facts f;
  ASSERT_TRUE(import_gpuvet_json(doc.dump(), f).is_ok());
  EXPECT_LE(f.notes.size(), 101u);
  EXPECT_TRUE(has_note(f, "more fields of the wrong type"));
}

TEST(GpuvetJson, NullsAreUnknownAndPathsParse) {
  ojson doc = ojson::parse(facts_to_json(full_facts()));
  doc["host"]["hostname"] = nullptr;
  doc["host"]["pressure"] = nullptr;
  doc["host"]["numa_nodes"] = nullptr;
  doc["gpus"][0]["power"]["limit_w"] = nullptr;
  doc["gpus"][0]["cpu_affinity"] = nullptr;
  doc["gpus"][0]["ecc"] = nullptr;
  doc["pairs"][1]["nvlinks"] = nullptr;
  doc["pairs"][1]["path"] = "NV12";
  doc["pairs"][2]["nvlinks"] = nullptr;
  doc["pairs"][2]["path"] = "NV";
  doc["pairs"][3]["path"] = "SOC";  // older drivers' name for SYS
  const Facts f = import_ok(doc.dump());
  EXPECT_EQ(f.notes, full_facts().notes);
  EXPECT_FALSE(f.host.hostname.has_value());
  EXPECT_FALSE(f.host.pressure.has_value());
  EXPECT_TRUE(f.host.numa_nodes.empty());
  EXPECT_FALSE(f.gpus[0].power.limit_w.has_value());
  EXPECT_EQ(f.gpus[0].power.draw_w, 690.293);
  EXPECT_TRUE(f.gpus[0].cpu_affinity.empty());
  EXPECT_FALSE(f.gpus[0].ecc.enabled.has_value());
  EXPECT_EQ(f.pairs[1].path, PathType::kNVLink);
  EXPECT_EQ(f.pairs[1].nvlinks, 12);
  EXPECT_EQ(f.pairs[2].path, PathType::kNVLink);
  EXPECT_FALSE(f.pairs[2].nvlinks.has_value());
  EXPECT_EQ(f.pairs[3].path, PathType::kSYS);
}

TEST(GpuvetJson, NewerSchemaIsReadWithANoteAndUnknownKeysAreIgnored) {
  ojson doc = ojson::parse(facts_to_json(full_facts()));
  doc["schema"] = "gpuvet.report/2";
  doc["findings"] = {{{"id", "pcie-link-degraded"}}};
  doc["bottleneck"] = {{"kind", "pcie"}};
  doc["gpus"][0]["hbm_temperature_c"] = 77;
  doc["host"]["future"] = {{"nested", {1, 2, 3}}};
  const Facts f = import_ok(doc.dump());
  EXPECT_TRUE(has_note(f, "gpuvet.report/2 is newer")) << all_notes(f);
  EXPECT_EQ(f.notes.size(), full_facts().notes.size() + 1);
  EXPECT_EQ(f.gpus.size(), 2u);
  EXPECT_EQ(f.gpus[0].name, "NVIDIA H200 #0");

  doc["schema"] = "gpuvet.report/beta";
  const Facts g = import_ok(doc.dump());
  EXPECT_TRUE(has_note(g, "unrecognised version")) << all_notes(g);
}

// ------------------------------------------------------------------ rejection

TEST(GpuvetJson, NotAReportIsRejected) {
  for (const char* text : {
           "",
           "   ",
           "[1, 2, 3]",
           "\"gpuvet.report/1\"",
           "{}",
           "{\"schema\": 1}",
           "{\"schema\": \"other.report/1\", \"gpus\": []}",
           "<?xml version=\"1.0\" ?><nvidia_smi_log></nvidia_smi_log>",
       }) {
    Facts f;
    Status st = import_gpuvet_json(text, f);
    EXPECT_FALSE(st.is_ok()) << text;
    EXPECT_EQ(st.code(), StatusCode::kInvalidInput) << text;
    EXPECT_FALSE(f.notes.empty()) << text;
    EXPECT_TRUE(f.gpus.empty());
  }
}

TEST(GpuvetJson, TruncatedJsonFailsWithThePosition) {
  const std::string text = facts_to_json(full_facts());
  Facts f;
  Status st = import_gpuvet_json(std::string_view(text).substr(0, text.size() / 2), f);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidInput);
  EXPECT_NE(st.message().find("not valid JSON (byte "), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("line"), std::string::npos) << st.message();

  // Every cut of a real report: never a crash, never ok (the document is unfinished).
  for (std::size_t cut = 0; cut + 1 < text.size(); cut += 61) {
    Facts g;
    EXPECT_FALSE(import_gpuvet_json(std::string_view(text).substr(0, cut), g).is_ok()) << cut;
  }
}

TEST(GpuvetJson, GarbageAndBinaryFail) {
  std::string binary;
  for (int i = 0; i < 100000; ++i) binary.push_back(static_cast<char>((i * 7919 + 13) % 256));
  std::string garbage = "{\"schema\": \"gpuvet.report/1\", \"gpus\": [\xff\xfe\x00 nonsense";
  garbage.push_back('\0');
  std::string bad_utf8 =
      "{\"schema\": \"gpuvet.report/1\", \"host\": {\"hostname\": \"\xc3\x28\"}}";
  for (const std::string& text : {binary, garbage, bad_utf8}) {
    Facts f;
    EXPECT_FALSE(import_gpuvet_json(text, f).is_ok());
  }
}

TEST(GpuvetJson, DeepNestingIsRejectedQuickly) {
  const std::string deep(10u << 20, '[');
  const auto start = std::chrono::steady_clock::now();
  Facts f;
  Status st = import_gpuvet_json(deep, f);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("nested deeper than 64"), std::string::npos) << st.message();
  EXPECT_LT(elapsed, std::chrono::seconds(2));

  // Brackets inside strings do not count; 64 levels are fine, 65 are not.
  auto nested = [](int levels) {
    // The report object itself is level 1.
    std::string s = "{\"schema\": \"gpuvet.report/1\", \"note\": \"[[[[{{{{\", \"x\": ";
    s += std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
    return s;
  };
  Facts ok_facts;
  EXPECT_TRUE(import_gpuvet_json(nested(kMaxGpuvetJsonDepth), ok_facts).is_ok());
  Facts too_deep;
  EXPECT_FALSE(import_gpuvet_json(nested(kMaxGpuvetJsonDepth + 1), too_deep).is_ok());

  // A huge but shallow document is read in bounded time.
  ojson doc = ojson::parse(facts_to_json(Facts{}));
  doc["notes"] = ojson::array();
  for (int i = 0; i < 200000; ++i) doc["notes"].push_back("note number " + std::to_string(i));
  const std::string big = doc.dump();
  const auto t0 = std::chrono::steady_clock::now();
  const Facts g = import_ok(big);
  EXPECT_EQ(g.notes.size(), 200000u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

// ------------------------------------------------------------------ sniff

TEST(GpuvetJson, SniffRecognisesOnlyGpuvetReports) {
  EXPECT_EQ(sniff_gpuvet_json(facts_to_json(full_facts())), 100);
  JsonOptions one_line;
  one_line.indent = -1;
  EXPECT_EQ(sniff_gpuvet_json(facts_to_json(Facts{}, one_line)), 100);
  EXPECT_EQ(sniff_gpuvet_json("\xEF\xBB\xBF\r\n {\"schema\" :\t\"gpuvet.report/7\"}"), 100);
  EXPECT_EQ(sniff_gpuvet_json("{\"tool\": {}, \"schema\": \"gpuvet.report/1\"}"), 100);

  EXPECT_EQ(sniff_gpuvet_json(""), 0);
  EXPECT_EQ(sniff_gpuvet_json("{}"), 0);
  EXPECT_EQ(sniff_gpuvet_json("{\"schema\": \"other/1\"}"), 0);
  EXPECT_EQ(sniff_gpuvet_json("[{\"schema\": \"gpuvet.report/1\"}]"), 0);
  EXPECT_EQ(sniff_gpuvet_json("x {\"schema\": \"gpuvet.report/1\"}"), 0);
  EXPECT_EQ(sniff_gpuvet_json("{\"schemas\": \"gpuvet.report/1\"}"), 0);
  EXPECT_EQ(sniff_gpuvet_json("<?xml version=\"1.0\"?>\n<nvidia_smi_log>"), 0);
  EXPECT_EQ(sniff_gpuvet_json("[  123.456] NVRM: Xid (PCI:0000:3b:00): 79"), 0);
  // Only the first 4 KB are looked at.
  const std::string late =
      "{\"pad\": \"" + std::string(5000, 'x') + "\", \"schema\": \"gpuvet.report/1\"}";
  EXPECT_EQ(sniff_gpuvet_json(late), 0);
  // A huge input is not scanned past the window.
  std::string huge(50u << 20, ' ');
  EXPECT_EQ(sniff_gpuvet_json(huge), 0);
}

}  // namespace
}  // namespace gpuvet::import
