#include "gpuvet/collect.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <future>

#include <unistd.h>
#include <map>

#include "core/util.h"
#include "probe/host_sysfs.h"
#include "probe/hwloc_topology.h"
#include "probe/kernel_log_source.h"
#include "probe/nvml_probe.h"
#include "probe/pressure.h"
#include "probe/process_binding.h"
#include "probe/thread_load.h"
#include "probe/watchdog.h"

namespace gpuvet {
namespace {

using SteadyClock = std::chrono::steady_clock;

double ms_since(SteadyClock::time_point t) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t).count();
}

struct HwlocOutput {
  bool ok = false;
  probe::HwlocHost host;
  std::string error;
};

// Returns false when hwloc did not answer in time (its thread is abandoned).
bool fill_host_topology(const CollectOptions& options, const Env& env, Facts& facts) {
  auto& host = facts.host;
  const auto start = SteadyClock::now();
  bool answered = true;
  if (options.hwloc && options.root == "/") {
    // hwloc loads its plugins with dlopen, which waits for the dynamic loader's lock: a
    // library load stuck in its constructor (an NVML on a wedged GPU) would stall it.
    auto slot = probe::start_probe<HwlocOutput>([](probe::Slot<HwlocOutput>& s) {
      HwlocOutput o;
      auto hw = probe::read_hwloc_host();
      if (hw.is_ok()) {
        o.ok = true;
        o.host = hw.value();
      } else {
        o.error = hw.status().to_string();
      }
      s.finish(o);
    });
    auto [done, hw] = slot->wait_until(start + options.init_timeout);
    if (!done) {
      answered = false;
      hw.error = fmt::format("did not return within {:.1f} s",
                             static_cast<double>(options.init_timeout.count()) / 1000.0);
    }
    if (hw.ok) {
      const auto& h = hw.host;
      if (!host.cpu_model && h.cpu_model) host.cpu_model = h.cpu_model;
      if (h.logical_cpus > 0) host.logical_cpus = h.logical_cpus;
      if (h.cores > 0) host.physical_cores = h.cores;
      if (h.packages > 0) host.sockets = h.packages;
      host.numa_nodes = h.numa_nodes;
      facts.sources.push_back({"hwloc", true, "hwloc " + h.version, ms_since(start)});
      return true;
    }
    facts.sources.push_back({"hwloc", false, hw.error, ms_since(start)});
    facts.notes.push_back("hwloc could not read the topology (" + hw.error + "); using sysfs");
  }
  auto nodes = probe::read_numa_nodes(env.fs);
  if (nodes.is_ok()) {
    host.numa_nodes = std::move(nodes.value());
  } else {
    facts.notes.push_back("NUMA topology unreadable: " + nodes.status().to_string());
  }
  return answered;
}

// The node whose CPUs hold all of the GPU's local CPUs: what `nvidia-smi topo -m`
// shows as "NUMA Affinity" when the platform gives the device no node of its own
// (sysfs numa_node -1, as on single-node VMs).
std::optional<int> numa_node_of_cpus(const std::vector<NumaNode>& nodes,
                                     const std::vector<int>& cpus) {
  if (cpus.empty()) return std::nullopt;
  for (const auto& n : nodes)
    if (std::includes(n.cpus.begin(), n.cpus.end(), cpus.begin(), cpus.end())) return n.id;
  return std::nullopt;
}

// With --root the kernel log must come from the saved tree, never from this
// machine's dmesg.
class NoCommands final : public CommandRunner {
 public:
  Result<CommandResult> run(const std::vector<std::string>& argv, std::chrono::milliseconds,
                            std::size_t) const override {
    return Status::not_found((argv.empty() ? std::string("command") : argv[0]) +
                             " not run: reading a saved tree (--root)");
  }
};

void map_xids_to_gpus(Facts& facts) {
  std::map<std::string, int> by_bus;
  for (const auto& g : facts.gpus)
    if (g.pci_bus_id) by_bus[*g.pci_bus_id] = g.index;
  for (auto& x : facts.kernel_log.xids)
    if (x.pci_bus_id)
      if (auto it = by_bus.find(*x.pci_bus_id); it != by_bus.end()) x.gpu = it->second;
}

}  // namespace

Collection collect_facts(const CollectOptions& options, const Env& env) {
  Collection out;
  Facts& facts = out.facts;

  // NVML is the slowest source (driver initialisation): it starts first, on its
  // own thread (with its own deadlines inside), and everything else runs meanwhile.
  probe::NvmlProbeOptions nvml;
  nvml.library_given_by_user = options.nvml_library.has_value();
  nvml.library = options.nvml_library.value_or("libnvidia-ml.so.1");
  nvml.init_timeout = options.init_timeout;
  nvml.gpu_timeout = options.gpu_timeout;
  // sysfs local_cpulist is the hardware locality, at no cost; NVML's answer is
  // slow and, inside a cgroup, clipped to the caller's cpuset.
  nvml.cpu_affinity = !env.fs.exists("/sys/bus/pci/devices");
  auto nvml_probe = std::async(std::launch::async, [nvml] { return probe::probe_nvml(nvml); });

  std::future<Result<HostPressure>> pressure;
  if (options.pressure_window.count() > 0)
    pressure = std::async(std::launch::async, [&] {
      return probe::sample_host_pressure(env.fs, env.clock, options.pressure_window);
    });
  std::future<KernelLog> kernel_log;
  if (options.kernel_log)
    kernel_log = std::async(std::launch::async, [&] {
      auto kmsg = probe::make_rooted_kmsg_reader(options.root);
      static const NoCommands kNoCommands;
      const CommandRunner& runner = options.root == "/" ? env.runner : kNoCommands;
      return probe::read_live_kernel_log(env.fs, *kmsg, runner, options.command_timeout);
    });

  // Host identity and topology.
  {
    const auto start = SteadyClock::now();
    probe::read_host_identity(env.fs, facts.host, facts.notes);
    // When the facts were read: Xid ages are measured from here.
    facts.host.uptime_s = probe::read_uptime(env.fs, facts.notes);
    facts.host.collected_unix = env.clock.unix_now();
    probe::read_nvidia_driver_info(env.fs, facts.host, facts.notes);
    facts.host.iommu = probe::read_iommu_state(env.fs);
    facts.sources.push_back({"procfs", true, "root " + options.root, ms_since(start)});
  }
  const bool hwloc_answered = fill_host_topology(options, env, facts);

  // GPUs (probe_nvml bounds its own waiting, so get() cannot hang).
  auto gpus = nvml_probe.get();
  out.abandoned_probes = gpus.abandoned_threads || !hwloc_answered;
  out.nvml_failure = gpus.failure;
  out.nvml_failure_message = gpus.failure_message;
  out.nvml_timeouts = gpus.timeouts;
  if (gpus.failure != probe::NvmlFailure::kNone) {
    facts.gpu_facts_unavailable = true;
    facts.notes.push_back(gpus.failure_message);
    facts.sources.push_back({"nvml", false, gpus.failure_message, gpus.duration_ms});
  } else {
    SourceInfo info{"nvml",
                    true,
                    fmt::format("{} ({})", gpus.library_path, gpus.symbol_versions),
                    gpus.duration_ms,
                    {}};
    for (std::size_t i = 0; i < gpus.call_ms.size() && i < 12; ++i)
      info.timings_ms.push_back(gpus.call_ms[i]);
    facts.sources.push_back(std::move(info));
  }
  if (gpus.driver_version) facts.host.driver_version = gpus.driver_version;
  facts.host.nvml_version = gpus.nvml_version;
  facts.host.cuda_driver_version = gpus.cuda_driver_version;
  facts.gpus = std::move(gpus.gpus);
  facts.pairs = std::move(gpus.pairs);
  facts.processes = std::move(gpus.processes);
  for (auto& n : gpus.notes) facts.notes.push_back(std::move(n));

  {
    const auto start = SteadyClock::now();
    for (auto& g : facts.gpus) {
      if (g.unresponsive) facts.notes.push_back(fmt::format("GPU{} {}", g.index, *g.unresponsive));
      probe::read_gpu_sysfs(env.fs, g, facts.notes);
      if (!g.numa_node) g.numa_node = numa_node_of_cpus(facts.host.numa_nodes, g.cpu_affinity);
    }
    for (auto& p : facts.processes) probe::read_process_binding(env.fs, p, facts.notes);
    // The processes' busy threads, over the same window as the host's pressure.
    if (!facts.processes.empty())
      probe::sample_busy_threads(env.fs, env.clock, facts.processes, options.pressure_window,
                                 static_cast<double>(sysconf(_SC_CLK_TCK)), facts.notes);
    if (!facts.processes.empty() && probe::in_child_pid_namespace(env.fs).value_or(false))
      facts.notes.push_back(
          "gpuvet runs inside a PID namespace (container): NVML reports host PIDs, mapped here "
          "through NSpid "
          "where the process is visible");
    if (!facts.gpus.empty())
      facts.sources.push_back({"sysfs", true, "PCI, NUMA, ACS per GPU", ms_since(start)});
  }
  if (!facts.gpu_facts_unavailable && facts.gpus.empty())
    facts.notes.push_back(
        "NVML answered but reports no GPU (driver loaded, 0 devices visible to this process)");

  if (kernel_log.valid()) {
    const auto start = SteadyClock::now();
    facts.kernel_log = kernel_log.get();
    map_xids_to_gpus(facts);
    if (!facts.kernel_log.readable)
      facts.notes.push_back("Xid events not checked: kernel log unreadable (" +
                            facts.kernel_log.why_unreadable.value_or("unknown reason") + ")");
    facts.sources.push_back({"kernel-log", facts.kernel_log.readable,
                             facts.kernel_log.readable
                                 ? facts.kernel_log.source
                                 : facts.kernel_log.why_unreadable.value_or(""),
                             ms_since(start)});
  }
  if (pressure.valid()) {
    auto p = pressure.get();
    if (p.is_ok())
      facts.host.pressure = std::move(p.value());
    else
      facts.notes.push_back("host pressure not sampled: " + p.status().to_string());
  }
  return out;
}

}  // namespace gpuvet
