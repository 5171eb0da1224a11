#include <nlohmann/json.hpp>

#include "core/util.h"
#include "gpuvet/report.h"
#include "report/json_document.h"

namespace gpuvet {
namespace {

using json = nlohmann::ordered_json;

template <typename T>
json opt(const std::optional<T>& v) {
  if (!v) return nullptr;
  return json(*v);
}

json p2p(const std::optional<P2PStatus>& s) {
  if (!s) return nullptr;
  return p2p_status_code(*s);
}

json numa_json(const NumaNode& n) {
  return {{"id", n.id},
          {"cpus", format_cpu_list(n.cpus)},
          {"memory_bytes", opt(n.memory_bytes)},
          {"distances", n.distances}};
}

json pressure_json(const HostPressure& p) {
  json cores = json::array();
  for (const auto& c : p.cores)
    cores.push_back({{"cpu", c.cpu},
                     {"busy_pct", c.busy_pct},
                     {"iowait_pct", c.iowait_pct},
                     {"steal_pct", c.steal_pct}});
  json disks = json::array();
  for (const auto& d : p.disks)
    disks.push_back({{"device", d.device},
                     {"util_pct", d.util_pct},
                     {"read_bytes_per_s", d.read_bytes_per_s},
                     {"write_bytes_per_s", d.write_bytes_per_s}});
  json nics = json::array();
  for (const auto& n : p.nics)
    nics.push_back({{"device", n.device},
                    {"rx_bytes_per_s", n.rx_bytes_per_s},
                    {"tx_bytes_per_s", n.tx_bytes_per_s},
                    {"speed_mbit_s", opt(n.speed_mbit_s)},
                    {"peak_util_pct", opt(n.peak_util_pct)}});
  return {{"window_s", p.window_s},
          {"iowait_pct", opt(p.iowait_pct)},
          {"cores", cores},
          {"disks", disks},
          {"nics", nics}};
}

json host_json(const HostFacts& h) {
  json numa = json::array();
  for (const auto& n : h.numa_nodes) numa.push_back(numa_json(n));
  json params = json::object();
  for (const auto& [k, v] : h.driver_params) params[k] = v;
  return {{"hostname", opt(h.hostname)},
          {"kernel", opt(h.kernel)},
          {"os", opt(h.os)},
          {"cpu_model", opt(h.cpu_model)},
          {"logical_cpus", opt(h.logical_cpus)},
          {"physical_cores", opt(h.physical_cores)},
          {"sockets", opt(h.sockets)},
          {"memory_bytes", opt(h.memory_bytes)},
          {"virtual_machine", opt(h.virtual_machine)},
          {"numa_nodes", numa},
          {"driver_version", opt(h.driver_version)},
          {"nvml_version", opt(h.nvml_version)},
          {"cuda_driver_version", opt(h.cuda_driver_version)},
          {"nvlink_disabled_by_driver", opt(h.nvlink_disabled_by_driver)},
          {"driver_params", params},
          {"iommu",
           {{"active", opt(h.iommu.active)},
            {"passthrough", opt(h.iommu.passthrough)},
            {"cmdline_hint", opt(h.iommu.cmdline_hint)}}},
          {"pressure", h.pressure ? pressure_json(*h.pressure) : json(nullptr)},
          {"uptime_s", opt(h.uptime_s)},
          {"collected_unix", opt(h.collected_unix)}};
}

// An id list as "0-15,32"; null when empty (not known).
json id_list(const std::vector<int>& ids) {
  return ids.empty() ? json(nullptr) : json(format_cpu_list(ids));
}

json ecc_counts(const EccCounts& c) {
  return {{"corrected", opt(c.corrected)}, {"uncorrected", opt(c.uncorrected)}};
}

json gpu_json(const GpuFacts& g) {
  json links = json::array();
  for (const auto& l : g.nvlinks)
    links.push_back({{"link", l.link},
                     {"active", opt(l.active)},
                     {"version", opt(l.version)},
                     {"remote_pci_bus_id", opt(l.remote_pci_bus_id)},
                     {"remote_gpu", opt(l.remote_gpu)},
                     {"speed_gbps", opt(l.speed_gbps)}});
  json accumulated = json::object();
  for (const auto& [k, v] : g.clock_events.accumulated_ns) accumulated[k] = v;
  return {
      {"index", g.index},
      {"unresponsive", opt(g.unresponsive)},
      {"uuid", opt(g.uuid)},
      {"name", opt(g.name)},
      {"serial", opt(g.serial)},
      {"vbios", opt(g.vbios)},
      {"pci_bus_id", opt(g.pci_bus_id)},
      {"pcie",
       {{"gen_current", opt(g.pcie.gen_current)},
        {"gen_max", opt(g.pcie.gen_max)},
        {"gen_device_max", opt(g.pcie.gen_device_max)},
        {"width_current", opt(g.pcie.width_current)},
        {"width_max", opt(g.pcie.width_max)},
        {"replay_counter", opt(g.pcie.replay_counter)}}},
      {"numa_node", opt(g.numa_node)},
      {"cpu_affinity",
       g.cpu_affinity.empty() ? json(nullptr) : json(format_cpu_list(g.cpu_affinity))},
      {"clocks",
       {{"sm_mhz", opt(g.clocks.sm_mhz)},
        {"mem_mhz", opt(g.clocks.mem_mhz)},
        {"sm_max_mhz", opt(g.clocks.sm_max_mhz)},
        {"mem_max_mhz", opt(g.clocks.mem_max_mhz)}}},
      {"clock_events",
       {{"active_mask", opt(g.clock_events.active_mask)},
        {"active", g.clock_events.active},
        {"accumulated_ns", accumulated}}},
      {"thermal",
       {{"gpu_c", opt(g.thermal.gpu_c)},
        {"margin_c", opt(g.thermal.margin_c)},
        {"slowdown_c", opt(g.thermal.slowdown_c)},
        {"shutdown_c", opt(g.thermal.shutdown_c)},
        {"gpu_max_operating_c", opt(g.thermal.gpu_max_operating_c)},
        {"memory_max_c", opt(g.thermal.memory_max_c)},
        {"memory_c", opt(g.thermal.memory_c)}}},
      {"power",
       {{"draw_w", opt(g.power.draw_w)},
        {"limit_w", opt(g.power.limit_w)},
        {"enforced_limit_w", opt(g.power.enforced_limit_w)},
        {"default_limit_w", opt(g.power.default_limit_w)}}},
      {"ecc",
       {{"enabled", opt(g.ecc.enabled)},
        {"pending_enabled", opt(g.ecc.pending_enabled)},
        {"volatile", ecc_counts(g.ecc.volatile_counts)},
        {"aggregate", ecc_counts(g.ecc.aggregate_counts)},
        {"retired_pages_sbe", opt(g.ecc.retired_pages_sbe)},
        {"retired_pages_dbe", opt(g.ecc.retired_pages_dbe)},
        {"retired_pages_pending", opt(g.ecc.retired_pages_pending)},
        {"remapped_rows_correctable", opt(g.ecc.remapped_rows_correctable)},
        {"remapped_rows_uncorrectable", opt(g.ecc.remapped_rows_uncorrectable)},
        {"remapping_pending", opt(g.ecc.remapping_pending)},
        {"remapping_failed", opt(g.ecc.remapping_failed)}}},
      {"memory",
       {{"total_bytes", opt(g.memory.total_bytes)}, {"used_bytes", opt(g.memory.used_bytes)}}},
      {"utilization",
       {{"gpu_pct", opt(g.utilization.gpu_pct)}, {"memory_pct", opt(g.utilization.memory_pct)}}},
      {"mig_enabled", opt(g.mig_enabled)},
      {"persistence_mode", opt(g.persistence_mode)},
      {"pstate", opt(g.pstate)},
      {"nvlinks", links},
      {"fabric",
       {{"state", opt(g.fabric.state)},
        {"status", opt(g.fabric.status)},
        {"clique_id", opt(g.fabric.clique_id)},
        {"cluster_uuid", opt(g.fabric.cluster_uuid)}}},
      {"acs_redirects_p2p", opt(g.acs_redirects_p2p)},
      {"acs_bridges", g.acs_bridges},
      {"iommu_group", opt(g.iommu_group)},
      {"unreadable", g.unreadable},
  };
}

}  // namespace

namespace report {

json facts_document(const Facts& facts, const JsonOptions& options) {
  json gpus = json::array();
  for (const auto& g : facts.gpus) gpus.push_back(gpu_json(g));
  json pairs = json::array();
  for (const auto& p : facts.pairs)
    pairs.push_back(
        {{"a", p.a},
         {"b", p.b},
         {"subject", "GPU" + std::to_string(p.a) + "-GPU" + std::to_string(p.b)},
         {"path", p.path == PathType::kNVLink && p.nvlinks ? "NV" + std::to_string(*p.nvlinks)
                                                           : std::string(path_type_name(p.path))},
         {"nvlinks", opt(p.nvlinks)},
         {"p2p",
          {{"read", p2p(p.p2p_read)},
           {"write", p2p(p.p2p_write)},
           {"nvlink", p2p(p.p2p_nvlink)},
           {"atomics", p2p(p.p2p_atomics)}}}});
  json xids = json::array();
  for (const auto& x : facts.kernel_log.xids)
    xids.push_back({{"code", x.code},
                    {"pci_bus_id", opt(x.pci_bus_id)},
                    {"gpu", opt(x.gpu)},
                    {"uptime_s", opt(x.uptime_s)},
                    {"unix_time", opt(x.unix_time)},
                    {"pid", opt(x.pid)},
                    {"process", opt(x.process)},
                    {"message", x.message}});
  json procs = json::array();
  for (const auto& p : facts.processes)
    procs.push_back({{"host_pid", p.host_pid},
                     {"local_pid", opt(p.local_pid)},
                     {"ns_pids", p.ns_pids},
                     {"gpu", p.gpu},
                     {"name", opt(p.name)},
                     {"used_memory_bytes", opt(p.used_memory_bytes)},
                     {"cpus_allowed", opt(p.cpus_allowed)},
                     {"cpus_allowed_ids", p.cpus_allowed_ids},
                     {"mems_allowed", opt(p.mems_allowed)},
                     {"mems_allowed_ids", p.mems_allowed_ids}});
  json sources = json::array();
  for (const auto& s : facts.sources) {
    json timings = json::object();
    for (const auto& [what, ms] : s.timings_ms) timings[what] = ms;
    sources.push_back({{"name", s.name},
                       {"ok", s.ok},
                       {"detail", s.detail},
                       {"duration_ms", s.duration_ms},
                       {"timings_ms", timings}});
  }

  json nic_paths = json::array();
  for (const auto& n : facts.nic_paths)
    nic_paths.push_back({{"nic", n.nic}, {"gpu", n.gpu}, {"path", path_type_name(n.path)}});
  json nccl = json::array();
  for (const auto& e : facts.nccl_events)
    nccl.push_back({{"kind", e.kind},
                    {"rank", opt(e.rank)},
                    {"host", opt(e.host)},
                    {"pci_bus_id", opt(e.pci_bus_id)},
                    {"detail", e.detail}});
  json measurements = json::array();
  for (const auto& m : facts.measurements)
    measurements.push_back({{"tool", m.tool},
                            {"test", m.test},
                            {"src_gpu", opt(m.src_gpu)},
                            {"dst_gpu", opt(m.dst_gpu)},
                            {"size_bytes", opt(m.size_bytes)},
                            {"bandwidth_gbps", opt(m.bandwidth_gbps)},
                            {"busbw_gbps", opt(m.busbw_gbps)},
                            {"latency_us", opt(m.latency_us)},
                            {"note", opt(m.note)}});
  json samples = json::array();
  for (const auto& x : facts.samples)
    samples.push_back({{"gpu", x.gpu},
                       {"t_s", x.t_s},
                       {"sm_mhz", opt(x.sm_mhz)},
                       {"gpu_c", opt(x.gpu_c)},
                       {"power_w", opt(x.power_w)},
                       {"util_pct", opt(x.util_pct)},
                       {"clock_event_mask", opt(x.clock_event_mask)}});
  json bindings = json::array();
  for (const auto& b : facts.numa_bindings)
    bindings.push_back({{"pid", opt(b.pid)},
                        {"cpus", id_list(b.cpus)},
                        {"mems", id_list(b.mems)},
                        {"source", b.source}});
  json scale_runs = json::array();
  for (const auto& r : facts.scale_runs)
    scale_runs.push_back({{"workload", r.workload},
                          {"preset", r.preset},
                          {"gpus", r.gpus},
                          {"throughput", opt(r.throughput)},
                          {"p50_ms", opt(r.p50_ms)},
                          {"p95_ms", opt(r.p95_ms)},
                          {"p99_ms", opt(r.p99_ms)},
                          {"max_ms", opt(r.max_ms)},
                          {"comm_share", opt(r.comm_share)}});
  json imported = json::array();
  for (const auto& f : facts.imported)
    imported.push_back({{"path", f.path}, {"format", f.format}, {"notes", f.notes}});

  json doc = {
      {"schema", "gpuvet.report/1"},
      {"tool", {{"name", "gpuvet"}, {"version", GPUVET_VERSION}, {"command", options.command}}},
      {"host", host_json(facts.host)},
      {"gpus", gpus},
      {"gpu_facts_unavailable", facts.gpu_facts_unavailable},
      {"pairs", pairs},
      {"kernel_log",
       {{"source", facts.kernel_log.source},
        {"readable", facts.kernel_log.readable},
        {"why_unreadable", opt(facts.kernel_log.why_unreadable)},
        {"fallen_off_bus", facts.kernel_log.fallen_off_bus}}},
      {"xids", xids},
      {"processes", procs},
      {"sources", sources},
      {"nic_paths", nic_paths},
      {"nccl_events", nccl},
      {"measurements", measurements},
      {"samples", samples},
      {"numa_bindings", bindings},
      {"scale_runs", scale_runs},
      {"imported", imported},
      {"notes", facts.notes},
  };
  return doc;
}

}  // namespace report

std::string facts_to_json(const Facts& facts, const JsonOptions& options) {
  // Invalid UTF-8 from a device string must not abort the dump.
  return report::facts_document(facts, options)
      .dump(options.indent, ' ', false, json::error_handler_t::replace);
}

}  // namespace gpuvet
