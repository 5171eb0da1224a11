// core/facts_fields.h — every struct of gpuvet/facts.h described once: its fields, their JSON
// keys in the order gpuvet.report/1 writes them, and the few tags that say how a field is
// spelled or merged where that is not the default for its type.
//
// The habit is LLVM's YAMLTraits MappingTraits: one function per struct lists each field
// once, and what the list is used for is the visitor's business. The visitors are
// ObjectWriter (report/json.cc), ObjectReader (import/gpuvet_json.cc), Merger and
// FactsMerger (import/load.cc), and the checks of import/facts_roundtrip_test.cc, which fail
// when a struct has a member that its fields() does not list.
//
// Each line reads
//     v("json_key", t.member...);             or   v("json_key", t.member..., kTag);
// where `t...` is one object (write, read) or several of the same type (merge: into, from),
// so `v` sees the same member of each. `v.nested("key", fn)` groups fields that are flat in
// the struct but one object in JSON (a pair's "p2p"). Nested structs, optionals of structs and
// vectors of structs are visited through their own fields(); a visitor recurses on its own.
//
// A new fact is one line here, in its struct's fields(), at the place its JSON key goes.
// Header-only, no state; thread-safe.
#pragma once

#include <concepts>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpuvet/facts.h"

namespace gpuvet {

// ---------------------------------------------------------------- tags

// Base of the tags: a visitor with no use for a tag takes a FieldTag and ignores it.
struct FieldTag {};

// A fact that should not change between captures of one machine (a GPU's name, its PCIe
// width max, the driver version). Merge: when two inputs disagree, the first value is kept and
// a note names the field, both values and the later input.
struct Stable : FieldTag {};
inline constexpr Stable kStable{};

// A list each input adds its entries to (what could not be read, an input's measurements).
// Merge: appended, where an untagged list is only filled when it is still empty.
struct Append : FieldTag {};
inline constexpr Append kAppend{};

// A list of CPU or node ids, written as "0-15,32"; null when empty (not known).
struct IdList : FieldTag {};
inline constexpr IdList kIdList{};

// A list of CPU ids written as "0-15,32", and "" when empty: a NUMA node without CPUs (memory
// only, as a GPU's HBM node on a Grace system) is known to have none.
struct IdListOrEmpty : FieldTag {};
inline constexpr IdListOrEmpty kIdListOrEmpty{};

// T is U, const or not: fields() serves readers (U&) and writers (const U&) alike.
template <class T, class U>
concept MaybeConst = std::same_as<std::remove_const_t<T>, U>;

// ---------------------------------------------------------------- host

template <class V, MaybeConst<NumaNode>... T>
void fields(V& v, T&... t) {
  v("id", t.id...);
  v("cpus", t.cpus..., kIdListOrEmpty);
  v("memory_bytes", t.memory_bytes...);
  v("distances", t.distances...);
}

template <class V, MaybeConst<CpuCoreLoad>... T>
void fields(V& v, T&... t) {
  v("cpu", t.cpu...);
  v("busy_pct", t.busy_pct...);
  v("iowait_pct", t.iowait_pct...);
  v("steal_pct", t.steal_pct...);
}

template <class V, MaybeConst<DiskLoad>... T>
void fields(V& v, T&... t) {
  v("device", t.device...);
  v("util_pct", t.util_pct...);
  v("read_bytes_per_s", t.read_bytes_per_s...);
  v("write_bytes_per_s", t.write_bytes_per_s...);
}

template <class V, MaybeConst<NicLoad>... T>
void fields(V& v, T&... t) {
  v("device", t.device...);
  v("rx_bytes_per_s", t.rx_bytes_per_s...);
  v("tx_bytes_per_s", t.tx_bytes_per_s...);
  v("speed_mbit_s", t.speed_mbit_s...);
  v("peak_util_pct", t.peak_util_pct...);
}

template <class V, MaybeConst<PsiReading>... T>
void fields(V& v, T&... t) {
  v("some_avg10", t.some_avg10...);
  v("some_avg60", t.some_avg60...);
  v("full_avg10", t.full_avg10...);
  v("full_avg60", t.full_avg60...);
  v("some_window_pct", t.some_window_pct...);
  v("full_window_pct", t.full_window_pct...);
}

template <class V, MaybeConst<HostPressure>... T>
void fields(V& v, T&... t) {
  v("window_s", t.window_s...);
  v("iowait_pct", t.iowait_pct...);
  v("cores", t.cores...);
  v("disks", t.disks...);
  v("nics", t.nics...);
  v("psi_cpu", t.psi_cpu...);
  v("psi_io", t.psi_io...);
  v("psi_memory", t.psi_memory...);
}

template <class V, MaybeConst<IommuState>... T>
void fields(V& v, T&... t) {
  v("active", t.active...);
  v("passthrough", t.passthrough...);
  v("cmdline_hint", t.cmdline_hint...);
}

template <class V, MaybeConst<HostFacts>... T>
void fields(V& v, T&... t) {
  v("hostname", t.hostname..., kStable);
  v("kernel", t.kernel...);
  v("os", t.os...);
  v("cpu_model", t.cpu_model..., kStable);
  v("logical_cpus", t.logical_cpus...);
  v("physical_cores", t.physical_cores...);
  v("sockets", t.sockets...);
  v("memory_bytes", t.memory_bytes...);
  v("virtual_machine", t.virtual_machine...);
  v("numa_nodes", t.numa_nodes...);
  v("driver_version", t.driver_version..., kStable);
  v("nvml_version", t.nvml_version...);
  v("cuda_driver_version", t.cuda_driver_version...);
  v("nvlink_disabled_by_driver", t.nvlink_disabled_by_driver...);
  v("driver_params", t.driver_params...);
  v("iommu", t.iommu...);
  v("acs_redirect_unplaced", t.acs_redirect_unplaced...);
  v("pressure", t.pressure...);
  v("uptime_s", t.uptime_s...);
  v("collected_unix", t.collected_unix...);
}

// ---------------------------------------------------------------- per GPU

template <class V, MaybeConst<PcieLink>... T>
void fields(V& v, T&... t) {
  v("gen_current", t.gen_current...);
  v("gen_max", t.gen_max..., kStable);
  v("gen_device_max", t.gen_device_max...);
  v("width_current", t.width_current...);
  v("width_max", t.width_max..., kStable);
  v("replay_counter", t.replay_counter...);
}

template <class V, MaybeConst<ClockEventReasons>... T>
void fields(V& v, T&... t) {
  v("active_mask", t.active_mask...);
  v("active", t.active...);
  v("accumulated_ns", t.accumulated_ns...);
}

template <class V, MaybeConst<Clocks>... T>
void fields(V& v, T&... t) {
  v("sm_mhz", t.sm_mhz...);
  v("mem_mhz", t.mem_mhz...);
  v("sm_max_mhz", t.sm_max_mhz..., kStable);
  v("mem_max_mhz", t.mem_max_mhz..., kStable);
}

template <class V, MaybeConst<Thermal>... T>
void fields(V& v, T&... t) {
  v("gpu_c", t.gpu_c...);
  v("margin_c", t.margin_c...);
  v("slowdown_c", t.slowdown_c...);
  v("shutdown_c", t.shutdown_c...);
  v("gpu_max_operating_c", t.gpu_max_operating_c...);
  v("memory_max_c", t.memory_max_c...);
  v("memory_c", t.memory_c...);
}

template <class V, MaybeConst<Power>... T>
void fields(V& v, T&... t) {
  v("draw_w", t.draw_w...);
  v("limit_w", t.limit_w..., kStable);
  v("enforced_limit_w", t.enforced_limit_w...);
  v("default_limit_w", t.default_limit_w..., kStable);
}

template <class V, MaybeConst<EccCounts>... T>
void fields(V& v, T&... t) {
  v("corrected", t.corrected...);
  v("uncorrected", t.uncorrected...);
}

template <class V, MaybeConst<Ecc>... T>
void fields(V& v, T&... t) {
  v("enabled", t.enabled..., kStable);
  v("pending_enabled", t.pending_enabled...);
  v("volatile", t.volatile_counts...);
  v("aggregate", t.aggregate_counts...);
  v("retired_pages_sbe", t.retired_pages_sbe...);
  v("retired_pages_dbe", t.retired_pages_dbe...);
  v("retired_pages_pending", t.retired_pages_pending...);
  v("remapped_rows_correctable", t.remapped_rows_correctable...);
  v("remapped_rows_uncorrectable", t.remapped_rows_uncorrectable...);
  v("remapping_pending", t.remapping_pending...);
  v("remapping_failed", t.remapping_failed...);
}

template <class V, MaybeConst<Memory>... T>
void fields(V& v, T&... t) {
  v("total_bytes", t.total_bytes..., kStable);
  v("used_bytes", t.used_bytes...);
}

template <class V, MaybeConst<Utilization>... T>
void fields(V& v, T&... t) {
  v("gpu_pct", t.gpu_pct...);
  v("memory_pct", t.memory_pct...);
}

template <class V, MaybeConst<NvLink>... T>
void fields(V& v, T&... t) {
  v("link", t.link...);
  v("active", t.active...);
  v("version", t.version...);
  v("remote_pci_bus_id", t.remote_pci_bus_id...);
  v("remote_gpu", t.remote_gpu...);
  v("speed_gbps", t.speed_gbps...);
}

template <class V, MaybeConst<Fabric>... T>
void fields(V& v, T&... t) {
  v("state", t.state...);
  v("status", t.status...);
  v("clique_id", t.clique_id...);
  v("cluster_uuid", t.cluster_uuid...);
  v("health_summary", t.health_summary...);
}

template <class V, MaybeConst<GpuFacts>... T>
void fields(V& v, T&... t) {
  v("index", t.index...);
  v("unresponsive", t.unresponsive...);
  v("uuid", t.uuid..., kStable);
  v("name", t.name..., kStable);
  v("serial", t.serial..., kStable);
  v("vbios", t.vbios..., kStable);
  v("pci_bus_id", t.pci_bus_id..., kStable);
  v("pcie", t.pcie...);
  v("numa_node", t.numa_node..., kStable);
  v("cpu_affinity", t.cpu_affinity..., kIdList);
  v("clocks", t.clocks...);
  v("clock_events", t.clock_events...);
  v("thermal", t.thermal...);
  v("power", t.power...);
  v("ecc", t.ecc...);
  v("memory", t.memory...);
  v("utilization", t.utilization...);
  v("mig_enabled", t.mig_enabled..., kStable);
  v("persistence_mode", t.persistence_mode...);
  v("recovery_action", t.recovery_action...);
  v("pstate", t.pstate...);
  v("nvlinks", t.nvlinks...);
  v("nvlinks_all_inactive", t.nvlinks_all_inactive...);
  v("fabric", t.fabric...);
  v("acs_redirects_p2p", t.acs_redirects_p2p...);
  v("acs_bridges", t.acs_bridges...);
  v("iommu_group", t.iommu_group...);
  v("unreadable", t.unreadable..., kAppend);
}

// ---------------------------------------------------------------- pairs

// The writer adds "subject" ("GPU0-GPU1") and spells "path" with the link count ("NV18").
template <class V, MaybeConst<GpuPair>... T>
void fields(V& v, T&... t) {
  v("a", t.a...);
  v("b", t.b...);
  v("path", t.path...);
  v("nvlinks", t.nvlinks...);
  v.nested("p2p", [&](auto& p2p) {
    p2p("read", t.p2p_read...);
    p2p("write", t.p2p_write...);
    p2p("nvlink", t.p2p_nvlink...);
    p2p("atomics", t.p2p_atomics...);
    p2p("pcie", t.p2p_pcie...);
  });
}

// ---------------------------------------------------------------- events

template <class V, MaybeConst<XidEvent>... T>
void fields(V& v, T&... t) {
  v("code", t.code...);
  v("pci_bus_id", t.pci_bus_id...);
  v("gpu", t.gpu...);
  v("uptime_s", t.uptime_s...);
  v("unix_time", t.unix_time...);
  v("pid", t.pid...);
  v("process", t.process...);
  v("message", t.message...);
}

template <class V, MaybeConst<DeviceErrorLog>... T>
void fields(V& v, T&... t) {
  v("kind", t.kind...);
  v("pci_bus_id", t.pci_bus_id...);
  v("driver", t.driver...);
  v("count", t.count...);
  v("details", t.details...);
  v("first_uptime_s", t.first_uptime_s...);
  v("last_uptime_s", t.last_uptime_s...);
  v("first_unix_time", t.first_unix_time...);
  v("last_unix_time", t.last_unix_time...);
  v("last_message", t.last_message...);
}

// gpuvet.report/1 writes the Xids beside "kernel_log", as the top-level "xids".
template <class V, MaybeConst<KernelLog>... T>
void fields(V& v, T&... t) {
  v("source", t.source...);
  v("readable", t.readable...);
  v("why_unreadable", t.why_unreadable...);
  v("fallen_off_bus", t.fallen_off_bus..., kAppend);
  v("fallen_off_bus_events", t.fallen_off_bus_events..., kAppend);
  v("xids", t.xids..., kAppend);
  v("pcie_aer", t.pcie_aer..., kAppend);
  v("iommu_faults", t.iommu_faults..., kAppend);
  v("driver_failures", t.driver_failures..., kAppend);
  v("hung_tasks", t.hung_tasks..., kAppend);
}

// ---------------------------------------------------------------- processes

template <class V, MaybeConst<ProcessFacts>... T>
void fields(V& v, T&... t) {
  v("host_pid", t.host_pid...);
  v("local_pid", t.local_pid...);
  v("ns_pids", t.ns_pids...);
  v("gpu", t.gpu...);
  v("name", t.name...);
  v("used_memory_bytes", t.used_memory_bytes...);
  v("cpus_allowed", t.cpus_allowed...);
  v("cpus_allowed_ids", t.cpus_allowed_ids...);
  v("mems_allowed", t.mems_allowed...);
  v("mems_allowed_ids", t.mems_allowed_ids...);
  v("busy_threads", t.busy_threads...);
}

template <class V, MaybeConst<ThreadLoad>... T>
void fields(V& v, T&... t) {
  v("tid", t.tid...);
  v("name", t.name...);
  v("cpu", t.cpu...);
  v("cpu_pct", t.cpu_pct...);
}

// ---------------------------------------------------------------- imported only

template <class V, MaybeConst<NicPath>... T>
void fields(V& v, T&... t) {
  v("nic", t.nic...);
  v("gpu", t.gpu...);
  v("path", t.path...);
}

template <class V, MaybeConst<PciDevice>... T>
void fields(V& v, T&... t) {
  v("bdf", t.bdf...);
  v("class_name", t.class_name...);
  v("class_code", t.class_code...);
  v("vendor_device", t.vendor_device...);
  v("name", t.name...);
  v("driver", t.driver...);
  v("port_type", t.port_type...);
  v("upstream", t.upstream...);
  v("secondary_bus", t.secondary_bus...);
  v("subordinate_bus", t.subordinate_bus...);
  v("gen_cap", t.gen_cap...);
  v("width_cap", t.width_cap...);
  v("gen_sta", t.gen_sta...);
  v("width_sta", t.width_sta...);
  v("revision", t.revision...);
  v("acs_ctl", t.acs_ctl...);
  v("aer_uncorrected", t.aer_uncorrected...);
  v("aer_uncorrected_fatal", t.aer_uncorrected_fatal...);
  v("aer_corrected", t.aer_corrected...);
}

template <class V, MaybeConst<NcclEvent>... T>
void fields(V& v, T&... t) {
  v("kind", t.kind...);
  v("rank", t.rank...);
  v("host", t.host...);
  v("pci_bus_id", t.pci_bus_id...);
  v("detail", t.detail...);
}

template <class V, MaybeConst<HealthCheck>... T>
void fields(V& v, T&... t) {
  v("tool", t.tool...);
  v("test", t.test...);
  v("category", t.category...);
  v("result", t.result...);
  v("gpu", t.gpu...);
  v("entity", t.entity...);
  v("message", t.message...);
}

template <class V, MaybeConst<CollectiveRank>... T>
void fields(V& v, T&... t) {
  v("source", t.source...);
  v("origin", t.origin...);
  v("rank", t.rank...);
  v("world_size", t.world_size...);
  v("pg", t.pg...);
  v("pg_name", t.pg_name...);
  v("host", t.host...);
  v("pid", t.pid...);
  v("cuda_dev", t.cuda_dev...);
  v("nvml_dev", t.nvml_dev...);
  v("gpu_uuid", t.gpu_uuid...);
  v("pci_bus_id", t.pci_bus_id...);
  v("last_enqueued", t.last_enqueued...);
  v("last_started", t.last_started...);
  v("last_completed", t.last_completed...);
  v("timeout_seq", t.timeout_seq...);
  v("timeout_op", t.timeout_op...);
  v("timeout_ms", t.timeout_ms...);
  v("ran_ms", t.ran_ms...);
  v("timeout_time", t.timeout_time...);
  v("watchdog_stuck", t.watchdog_stuck...);
  v("pending_entries", t.pending_entries...);
  v("last_op", t.last_op...);
  v("op_counts", t.op_counts...);
  v("ras_status", t.ras_status...);
  v("last_activity", t.last_activity...);
  v("desync_state", t.desync_state...);
  v("desync_seq", t.desync_seq...);
  v("exit_code", t.exit_code...);
  v("root_cause", t.root_cause...);
  v("errors", t.errors...);
}

template <class V, MaybeConst<JobStep>... T>
void fields(V& v, T&... t) {
  v("number", t.number...);
  v("wall_ms", t.wall_ms...);
  v("compute_ms", t.compute_ms...);
  v("comm_exposed_ms", t.comm_exposed_ms...);
  v("copy_ms", t.copy_ms...);
  v("idle_ms", t.idle_ms...);
  v("comm_ms", t.comm_ms...);
  v("collective_ms", t.collective_ms...);
  v("pre_comm_ms", t.pre_comm_ms...);
  v("idle_input_ms", t.idle_input_ms...);
  v("idle_sync_ms", t.idle_sync_ms...);
  v("idle_launch_ms", t.idle_launch_ms...);
  v("kernels", t.kernels...);
  v("syncs", t.syncs...);
  v("items_per_s", t.items_per_s...);
}

template <class V, MaybeConst<JobCollective>... T>
void fields(V& v, T&... t) {
  v("op", t.op...);
  v("size_bytes", t.size_bytes...);
  v("count", t.count...);
  v("median_us", t.median_us...);
  v("busbw_gbps", t.busbw_gbps...);
  v("algo", t.algo...);
  v("proto", t.proto...);
}

template <class V, MaybeConst<JobRank>... T>
void fields(V& v, T&... t) {
  v("source", t.source...);
  v("origin", t.origin...);
  v("rank", t.rank...);
  v("world_size", t.world_size...);
  v("backend", t.backend...);
  v("nccl_version", t.nccl_version...);
  v("host", t.host...);
  v("pid", t.pid...);
  v("cuda_device", t.cuda_device...);
  v("gpu_name", t.gpu_name...);
  v("pci_bus_id", t.pci_bus_id...);
  v("steps", t.steps...);
  v("events", t.events...);
  v("kernels", t.kernels...);
  v("median_kernel_us", t.median_kernel_us...);
  v("launch_call_us", t.launch_call_us...);
  v("pageable_copies", t.pageable_copies...);
  v("pageable_copy_ms", t.pageable_copy_ms...);
  v("collectives", t.collectives...);
  v("notes", t.notes...);
}

template <class V, MaybeConst<RasCommunicator>... T>
void fields(V& v, T&... t) {
  v("id", t.id...);
  v("size", t.size...);
  v("status", t.status...);
  v("errors", t.errors...);
  v("missing_ranks", t.missing_ranks...);
  v("dead_ranks", t.dead_ranks...);
  v("details", t.details...);
  v("launched", t.launched...);
}

template <class V, MaybeConst<Measurement>... T>
void fields(V& v, T&... t) {
  v("tool", t.tool...);
  v("test", t.test...);
  v("src_gpu", t.src_gpu...);
  v("dst_gpu", t.dst_gpu...);
  v("size_bytes", t.size_bytes...);
  v("bandwidth_gbps", t.bandwidth_gbps...);
  v("busbw_gbps", t.busbw_gbps...);
  v("latency_us", t.latency_us...);
  v("note", t.note...);
  v("wrong_data", t.wrong_data...);
  v("origin", t.origin...);
}

template <class V, MaybeConst<GpuSample>... T>
void fields(V& v, T&... t) {
  v("gpu", t.gpu...);
  v("t_s", t.t_s...);
  v("sm_mhz", t.sm_mhz...);
  v("gpu_c", t.gpu_c...);
  v("power_w", t.power_w...);
  v("util_pct", t.util_pct...);
  v("clock_event_mask", t.clock_event_mask...);
  v("mem_mhz", t.mem_mhz...);
  v("margin_c", t.margin_c...);
  v("power_limit_w", t.power_limit_w...);
  v("mem_util_pct", t.mem_util_pct...);
  v("memory_used_bytes", t.memory_used_bytes...);
  v("pcie_gen", t.pcie_gen...);
  v("pcie_width", t.pcie_width...);
  v("pcie_replays", t.pcie_replays...);
  v("ecc_corrected", t.ecc_corrected...);
  v("ecc_uncorrected", t.ecc_uncorrected...);
  v("nvlinks_up", t.nvlinks_up...);
  v("nvlinks_total", t.nvlinks_total...);
  v("clock_event_ns", t.clock_event_ns...);
}

template <class V, MaybeConst<HostSample>... T>
void fields(V& v, T&... t) {
  v("t_s", t.t_s...);
  v("psi_cpu_some_pct", t.psi_cpu_some_pct...);
  v("psi_io_some_pct", t.psi_io_some_pct...);
  v("psi_memory_some_pct", t.psi_memory_some_pct...);
}

template <class V, MaybeConst<ThroughputSample>... T>
void fields(V& v, T&... t) {
  v("t_s", t.t_s...);
  v("items_per_s", t.items_per_s...);
  v("preset", t.preset...);
  v("gpus", t.gpus...);
}

template <class V, MaybeConst<NumaBinding>... T>
void fields(V& v, T&... t) {
  v("pid", t.pid...);
  v("cpus", t.cpus..., kIdList);
  v("mems", t.mems..., kIdList);
  v("source", t.source...);
}

template <class V, MaybeConst<ScaleRun>... T>
void fields(V& v, T&... t) {
  v("workload", t.workload...);
  v("preset", t.preset...);
  v("gpus", t.gpus...);
  v("throughput", t.throughput...);
  v("p50_ms", t.p50_ms...);
  v("p95_ms", t.p95_ms...);
  v("p99_ms", t.p99_ms...);
  v("max_ms", t.max_ms...);
  v("comm_share", t.comm_share...);
  v("offered_rate_hz", t.offered_rate_hz...);
}

template <class V, MaybeConst<ImportedFile>... T>
void fields(V& v, T&... t) {
  v("path", t.path...);
  v("format", t.format...);
  v("notes", t.notes...);
}

// ---------------------------------------------------------------- the whole

template <class V, MaybeConst<SourceInfo>... T>
void fields(V& v, T&... t) {
  v("name", t.name...);
  v("ok", t.ok...);
  v("detail", t.detail...);
  v("duration_ms", t.duration_ms...);
  v("timings_ms", t.timings_ms...);
}

// The document's own keys ("schema", "tool") come first and are the writer's.
template <class V, MaybeConst<Facts>... T>
void fields(V& v, T&... t) {
  v("host", t.host...);
  v("gpus", t.gpus...);
  v("gpu_facts_unavailable", t.gpu_facts_unavailable...);
  v("pairs", t.pairs...);
  v("kernel_log", t.kernel_log...);
  v("processes", t.processes...);
  v("sources", t.sources..., kAppend);
  v("nic_paths", t.nic_paths..., kAppend);
  v("nccl_events", t.nccl_events..., kAppend);
  v("measurements", t.measurements..., kAppend);
  // Each input's series keeps its own time origin: appended, not interleaved.
  v("samples", t.samples..., kAppend);
  v("host_samples", t.host_samples..., kAppend);
  v("throughput_samples", t.throughput_samples..., kAppend);
  v("numa_bindings", t.numa_bindings..., kAppend);
  v("scale_runs", t.scale_runs..., kAppend);
  v("pci_devices", t.pci_devices...);
  v("health_checks", t.health_checks..., kAppend);
  v("collective_ranks", t.collective_ranks..., kAppend);
  v("ras_communicators", t.ras_communicators..., kAppend);
  v("job_ranks", t.job_ranks..., kAppend);
  v("imported", t.imported..., kAppend);
  v("input_problems", t.input_problems..., kAppend);
  v("notes", t.notes...);
}

// ---------------------------------------------------------------- for visitors

// What a field holds, for visitors that treat all values of a kind alike.
template <class T>
inline constexpr bool kIsOptional = false;
template <class T>
inline constexpr bool kIsOptional<std::optional<T>> = true;
template <class T>
inline constexpr bool kIsVector = false;
template <class T>
inline constexpr bool kIsVector<std::vector<T>> = true;
template <class T>
inline constexpr bool kIsMap = false;
template <class K, class T>
inline constexpr bool kIsMap<std::map<K, T>> = true;
// (name, value) in an order of their own (sources[].timings_ms, slowest first): in JSON an
// object that keeps that order.
template <class T>
inline constexpr bool kIsNamedList = false;
template <class T>
inline constexpr bool kIsNamedList<std::vector<std::pair<std::string, T>>> = true;

// A struct that has a fields() above: visitors recurse into it.
struct AnyFieldVisitor {
  template <class... A>
  void operator()(A&&...) {}
  template <class Fn>
  void nested(const char*, Fn&&) {}
};
template <class T>
concept Described = requires(AnyFieldVisitor& v, T& t) {
  fields(v, t);
};

}  // namespace gpuvet
