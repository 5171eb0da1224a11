#include "probe/nvml_probe.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "core/util.h"
#include "hw/xid_table.h"
#include "probe/nvml_library.h"
#include "probe/watchdog.h"

namespace gpuvet {

const char* nvml_failure_name(NvmlFailure f) {
  switch (f) {
    case NvmlFailure::kNone:
      return "none";
    case NvmlFailure::kLibraryMissing:
      return "library-missing";
    case NvmlFailure::kLibraryInvalid:
      return "library-invalid";
    case NvmlFailure::kStubLibrary:
      return "stub-library";
    case NvmlFailure::kDriverNotLoaded:
      return "driver-not-loaded";
    case NvmlFailure::kVersionMismatch:
      return "version-mismatch";
    case NvmlFailure::kNoPermission:
      return "no-permission";
    case NvmlFailure::kInitTimeout:
      return "init-timeout";
    case NvmlFailure::kInitFailed:
      return "init-failed";
    case NvmlFailure::kCountFailed:
      return "count-failed";
  }
  return "unknown";
}

}  // namespace gpuvet

namespace gpuvet::probe {

namespace {

using Lib = std::shared_ptr<const NvmlLibrary>;
using Clock = std::chrono::steady_clock;

std::string c_string(const char* buf, std::size_t cap) {
  return std::string(buf, strnlen(buf, cap));
}

std::string format_seconds(std::chrono::milliseconds ms) {
  return fmt::format("{:.1f} s", ms.count() / 1000.0);
}

std::vector<std::string> decode_clock_events(std::uint64_t mask) { return clock_event_names(mask); }

P2PStatus p2p_from_nvml(int s) {
  switch (s) {
    case NVML_P2P_STATUS_OK:
      return P2PStatus::kOk;
    case NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED:
      return P2PStatus::kChipsetNotSupported;
    case NVML_P2P_STATUS_GPU_NOT_SUPPORTED:
      return P2PStatus::kGpuNotSupported;
    case NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED:
      return P2PStatus::kTopologyNotSupported;
    case NVML_P2P_STATUS_DISABLED_BY_REGKEY:
      return P2PStatus::kDisabledByRegkey;
    case NVML_P2P_STATUS_NOT_SUPPORTED:
      return P2PStatus::kNotSupported;
    default:
      return P2PStatus::kUnknown;
  }
}

PathType path_from_level(int level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
    case NVML_TOPOLOGY_SINGLE:
      return PathType::kPIX;
    case NVML_TOPOLOGY_MULTIPLE:
      return PathType::kPXB;
    case NVML_TOPOLOGY_HOSTBRIDGE:
      return PathType::kPHB;
    case NVML_TOPOLOGY_NODE:
      return PathType::kNODE;
    case NVML_TOPOLOGY_SYSTEM:
      return PathType::kSYS;
    default:
      return PathType::kUnknown;
  }
}

const char* fabric_state_name(unsigned char s) {
  switch (s) {
    case NVML_GPU_FABRIC_STATE_NOT_SUPPORTED:
      return "not_supported";
    case NVML_GPU_FABRIC_STATE_NOT_STARTED:
      return "not_started";
    case NVML_GPU_FABRIC_STATE_IN_PROGRESS:
      return "in_progress";
    case NVML_GPU_FABRIC_STATE_COMPLETED:
      return "completed";
    default:
      return "unknown";
  }
}

struct GpuProbeOutput {
  GpuFacts gpu;
  std::vector<ProcessFacts> processes;
  nvmlDevice_t handle = nullptr;
  std::map<std::string, double> call_ms;  // time spent per entry point
};

// Reads one GPU. Each NVML call goes through call() so the watchdog knows
// where a hang happened, and a GPU_IS_LOST stops further calls on that GPU.
class GpuReader {
 public:
  GpuReader(const NvmlLibrary& lib, Slot<GpuProbeOutput>& slot, int index, bool cpu_affinity,
            bool samples_only, bool sample_health, bool violation_counters)
      : lib_(lib),
        slot_(slot),
        cpu_affinity_(cpu_affinity),
        samples_only_(samples_only),
        sample_health_(sample_health),
        violation_counters_(violation_counters) {
    out_.gpu.index = index;
  }

  void run() {
    nvmlDevice_t h = nullptr;
    auto r = call("nvmlDeviceGetHandleByIndex", [&] {
      return lib_.device_get_handle_by_index(static_cast<unsigned>(out_.gpu.index), &h);
    });
    if (r != NVML_SUCCESS) {
      out_.gpu.unresponsive = fmt::format("cannot get a handle: {}", lib_.error_string(r));
      slot_.finish(out_);
      return;
    }
    out_.handle = h;
    if (samples_only_) {
      clocks_and_thermal(h);
      if (sample_health_) {
        publish();
        pcie(h);
        publish();
        memory_and_ecc(h);
        publish();
        nvlinks(h);
      }
      slot_.finish(out_);
      return;
    }
    identity(h);
    publish();
    pcie(h);
    publish();
    clocks_and_thermal(h);
    publish();
    memory_and_ecc(h);
    publish();
    nvlinks(h);
    publish();
    processes(h);
    slot_.finish(out_);
  }

 private:
  template <typename F>
  nvmlReturn_t call(const char* name, F&& f) {
    if (lost_) return NVML_ERROR_GPU_IS_LOST;
    slot_.entering(name);
    const auto start = Clock::now();
    nvmlReturn_t r = f();
    out_.call_ms[name] += std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    slot_.entering(nullptr);
    if (r == NVML_ERROR_GPU_IS_LOST && !lost_) {
      lost_ = true;
      out_.gpu.unresponsive =
          fmt::format("GPU is lost ({} returned GPU_IS_LOST): fallen off the bus?", name);
    }
    return r;
  }
  void publish() { slot_.publish(out_); }

  // Records why a field stayed empty. NOT_SUPPORTED is an answer, not a failure.
  void unreadable(const char* field, nvmlReturn_t r) {
    if (r == NVML_SUCCESS || r == NVML_ERROR_NOT_SUPPORTED || lost_) return;
    out_.gpu.unreadable.push_back(fmt::format("{}: {}", field, nvml_return_name(r)));
  }

  template <typename Fn>
  std::optional<std::string> get_string(const char* name, const char* field, Fn fn,
                                        nvmlDevice_t h) {
    if (!fn) return std::nullopt;
    char buf[128] = {};
    auto r = call(name, [&] { return fn(h, buf, sizeof buf); });
    unreadable(field, r);
    if (r != NVML_SUCCESS) return std::nullopt;
    auto s = std::string(trim(c_string(buf, sizeof buf)));
    if (s.empty()) return std::nullopt;
    return s;
  }

  std::optional<unsigned> get_uint(const char* name, const char* field, nvmlDeviceGetUInt_fn fn,
                                   nvmlDevice_t h) {
    if (!fn) return std::nullopt;
    unsigned v = 0;
    auto r = call(name, [&] { return fn(h, &v); });
    unreadable(field, r);
    if (r != NVML_SUCCESS) return std::nullopt;
    return v;
  }

  template <typename T>
  static std::optional<int> as_int(std::optional<T> v) {
    if (!v) return std::nullopt;
    return static_cast<int>(*v);
  }

  void identity(nvmlDevice_t h) {
    auto& g = out_.gpu;
    g.name = get_string("nvmlDeviceGetName", "name", lib_.device_get_name, h);
    g.uuid = get_string("nvmlDeviceGetUUID", "uuid", lib_.device_get_uuid, h);
    g.serial = get_string("nvmlDeviceGetSerial", "serial", lib_.device_get_serial, h);
    g.vbios = get_string("nvmlDeviceGetVbiosVersion", "vbios", lib_.device_get_vbios_version, h);
    if (lib_.device_get_pci_info) {
      nvmlPciInfo_t pci{};
      auto r = call("nvmlDeviceGetPciInfo", [&] { return lib_.device_get_pci_info(h, &pci); });
      unreadable("pci_bus_id", r);
      if (r == NVML_SUCCESS) {
        auto id = normalize_pci_bus_id(c_string(pci.busId, sizeof pci.busId));
        if (!id) id = normalize_pci_bus_id(c_string(pci.busIdLegacy, sizeof pci.busIdLegacy));
        if (!id)
          id = normalize_pci_bus_id(
              fmt::format("{:x}:{:x}:{:x}.0", pci.domain, pci.bus, pci.device));
        g.pci_bus_id = id;
      }
    }
    if (lib_.device_get_mig_mode) {
      int cur = 0, pending = 0;
      auto r =
          call("nvmlDeviceGetMigMode", [&] { return lib_.device_get_mig_mode(h, &cur, &pending); });
      unreadable("mig_enabled", r);
      if (r == NVML_SUCCESS) g.mig_enabled = cur != 0;
    }
    if (lib_.device_get_persistence_mode) {
      int mode = 0;
      auto r = call("nvmlDeviceGetPersistenceMode",
                    [&] { return lib_.device_get_persistence_mode(h, &mode); });
      unreadable("persistence_mode", r);
      if (r == NVML_SUCCESS) g.persistence_mode = mode ? "enabled" : "disabled";
    }
    if (lib_.device_get_performance_state) {
      int p = 0;
      auto r = call("nvmlDeviceGetPerformanceState",
                    [&] { return lib_.device_get_performance_state(h, &p); });
      unreadable("pstate", r);
      if (r == NVML_SUCCESS && p >= 0 && p <= 15) g.pstate = p;
    }
  }

  void pcie(nvmlDevice_t h) {
    auto& l = out_.gpu.pcie;
    l.gen_current = as_int(get_uint("nvmlDeviceGetCurrPcieLinkGeneration", "pcie.gen_current",
                                    lib_.device_get_curr_pcie_link_generation, h));
    l.gen_max = as_int(get_uint("nvmlDeviceGetMaxPcieLinkGeneration", "pcie.gen_max",
                                lib_.device_get_max_pcie_link_generation, h));
    l.gen_device_max =
        as_int(get_uint("nvmlDeviceGetGpuMaxPcieLinkGeneration", "pcie.gen_device_max",
                        lib_.device_get_gpu_max_pcie_link_generation, h));
    l.width_current = as_int(get_uint("nvmlDeviceGetCurrPcieLinkWidth", "pcie.width_current",
                                      lib_.device_get_curr_pcie_link_width, h));
    l.width_max = as_int(get_uint("nvmlDeviceGetMaxPcieLinkWidth", "pcie.width_max",
                                  lib_.device_get_max_pcie_link_width, h));
    if (auto v = get_uint("nvmlDeviceGetPcieReplayCounter", "pcie.replay_counter",
                          lib_.device_get_pcie_replay_counter, h))
      l.replay_counter = *v;
    if (auto node =
            get_uint("nvmlDeviceGetNumaNodeId", "numa_node", lib_.device_get_numa_node_id, h);
        node && *node < 4096)
      out_.gpu.numa_node = static_cast<int>(*node);
    if (cpu_affinity_ && lib_.device_get_cpu_affinity) {
      constexpr unsigned kWords = 64;  // 4096 CPUs
      unsigned long mask[kWords] = {};
      auto r = call("nvmlDeviceGetCpuAffinity",
                    [&] { return lib_.device_get_cpu_affinity(h, kWords, mask); });
      unreadable("cpu_affinity", r);
      if (r == NVML_SUCCESS) {
        constexpr int kBits = static_cast<int>(sizeof(unsigned long) * 8);
        for (unsigned w = 0; w < kWords; ++w)
          for (int b = 0; b < kBits; ++b)
            if (mask[w] & (1UL << b))
              out_.gpu.cpu_affinity.push_back(static_cast<int>(w) * kBits + b);
      }
    }
  }

  void clocks_and_thermal(nvmlDevice_t h) {
    auto& g = out_.gpu;
    auto clock = [&](const char* name, const char* field, nvmlDeviceGetClockInfo_fn fn,
                     int type) -> std::optional<int> {
      if (!fn) return std::nullopt;
      unsigned v = 0;
      auto r = call(name, [&] { return fn(h, type, &v); });
      unreadable(field, r);
      if (r != NVML_SUCCESS) return std::nullopt;
      return static_cast<int>(v);
    };
    g.clocks.sm_mhz =
        clock("nvmlDeviceGetClockInfo", "clocks.sm", lib_.device_get_clock_info, NVML_CLOCK_SM);
    g.clocks.mem_mhz =
        clock("nvmlDeviceGetClockInfo", "clocks.mem", lib_.device_get_clock_info, NVML_CLOCK_MEM);
    g.clocks.sm_max_mhz = clock("nvmlDeviceGetMaxClockInfo", "clocks.sm_max",
                                lib_.device_get_max_clock_info, NVML_CLOCK_SM);
    g.clocks.mem_max_mhz = clock("nvmlDeviceGetMaxClockInfo", "clocks.mem_max",
                                 lib_.device_get_max_clock_info, NVML_CLOCK_MEM);

    if (lib_.device_get_clock_event_reasons) {
      unsigned long long mask = 0;
      auto r = call("nvmlDeviceGetCurrentClocksEventReasons",
                    [&] { return lib_.device_get_clock_event_reasons(h, &mask); });
      unreadable("clock_events", r);
      if (r == NVML_SUCCESS) {
        g.clock_events.active_mask = mask;
        g.clock_events.active = decode_clock_events(mask);
      }
    }
    if (violation_counters_ && lib_.device_get_violation_status) {
      static const std::pair<int, const char*> kPolicies[] = {
          {NVML_PERF_POLICY_POWER, "power"},
          {NVML_PERF_POLICY_THERMAL, "thermal"},
          {NVML_PERF_POLICY_SYNC_BOOST, "sync_boost"},
          {NVML_PERF_POLICY_BOARD_LIMIT, "board_limit"},
          {NVML_PERF_POLICY_RELIABILITY, "reliability"},
          // Not LOW_UTILIZATION: time spent idle is not a limit, and each query costs ~1.3 ms.
      };
      for (const auto& entry : kPolicies) {
        const int policy = entry.first;  // not a structured binding: lambdas capture it (clang 14)
        const char* name = entry.second;
        nvmlViolationTime_t v{};
        auto r = call("nvmlDeviceGetViolationStatus",
                      [&] { return lib_.device_get_violation_status(h, policy, &v); });
        if (r == NVML_SUCCESS) g.clock_events.accumulated_ns[name] = v.violationTime;
      }
    }

    if (lib_.device_get_temperature) {
      unsigned t = 0;
      auto r = call("nvmlDeviceGetTemperature",
                    [&] { return lib_.device_get_temperature(h, NVML_TEMPERATURE_GPU, &t); });
      unreadable("thermal.gpu", r);
      if (r == NVML_SUCCESS) g.thermal.gpu_c = static_cast<int>(t);
    }
    if (lib_.device_get_margin_temperature) {
      nvmlMarginTemperature_t m{};
      m.version = NVML_MARGIN_TEMPERATURE_V1;
      auto r = call("nvmlDeviceGetMarginTemperature",
                    [&] { return lib_.device_get_margin_temperature(h, &m); });
      if (r == NVML_SUCCESS) g.thermal.margin_c = m.marginTemperature;
    }
    if (lib_.device_get_temperature_threshold) {
      auto threshold = [&](int type) -> std::optional<int> {
        unsigned t = 0;
        auto r = call("nvmlDeviceGetTemperatureThreshold",
                      [&] { return lib_.device_get_temperature_threshold(h, type, &t); });
        if (r != NVML_SUCCESS || t == 0) return std::nullopt;
        return static_cast<int>(t);
      };
      g.thermal.shutdown_c = threshold(NVML_TEMPERATURE_THRESHOLD_SHUTDOWN);
      g.thermal.slowdown_c = threshold(NVML_TEMPERATURE_THRESHOLD_SLOWDOWN);
      g.thermal.gpu_max_operating_c = threshold(NVML_TEMPERATURE_THRESHOLD_GPU_MAX);
      g.thermal.memory_max_c = threshold(NVML_TEMPERATURE_THRESHOLD_MEM_MAX);
    }

    auto watts = [&](const char* name, const char* field,
                     nvmlDeviceGetUInt_fn fn) -> std::optional<double> {
      auto mw = get_uint(name, field, fn, h);
      if (!mw) return std::nullopt;
      return *mw / 1000.0;
    };
    g.power.draw_w = watts("nvmlDeviceGetPowerUsage", "power.draw", lib_.device_get_power_usage);
    g.power.limit_w = watts("nvmlDeviceGetPowerManagementLimit", "power.limit",
                            lib_.device_get_power_management_limit);
    g.power.enforced_limit_w = watts("nvmlDeviceGetEnforcedPowerLimit", "power.enforced_limit",
                                     lib_.device_get_enforced_power_limit);
    g.power.default_limit_w =
        watts("nvmlDeviceGetPowerManagementDefaultLimit", "power.default_limit",
              lib_.device_get_power_management_default_limit);
    if (lib_.device_get_utilization_rates) {
      nvmlUtilization_t u{};
      auto r = call("nvmlDeviceGetUtilizationRates",
                    [&] { return lib_.device_get_utilization_rates(h, &u); });
      unreadable("utilization", r);
      if (r == NVML_SUCCESS) {
        g.utilization.gpu_pct = static_cast<int>(u.gpu);
        g.utilization.memory_pct = static_cast<int>(u.memory);
      }
    }
  }

  void memory_and_ecc(nvmlDevice_t h) {
    auto& g = out_.gpu;
    if (lib_.device_get_memory_info) {
      nvmlMemory_t m{};
      auto r = call("nvmlDeviceGetMemoryInfo", [&] { return lib_.device_get_memory_info(h, &m); });
      unreadable("memory", r);
      if (r == NVML_SUCCESS) {
        g.memory.total_bytes = m.total;
        g.memory.used_bytes = m.used;
      }
    }
    if (lib_.device_get_ecc_mode) {
      int cur = 0, pending = 0;
      auto r =
          call("nvmlDeviceGetEccMode", [&] { return lib_.device_get_ecc_mode(h, &cur, &pending); });
      unreadable("ecc.mode", r);
      if (r == NVML_SUCCESS) {
        g.ecc.enabled = cur != 0;
        g.ecc.pending_enabled = pending != 0;
      }
    }
    if (lib_.device_get_total_ecc_errors && g.ecc.enabled.value_or(false)) {
      auto count = [&](int type, int counter, const char* field) -> std::optional<std::uint64_t> {
        unsigned long long v = 0;
        auto r = call("nvmlDeviceGetTotalEccErrors",
                      [&] { return lib_.device_get_total_ecc_errors(h, type, counter, &v); });
        unreadable(field, r);
        if (r != NVML_SUCCESS) return std::nullopt;
        return v;
      };
      g.ecc.volatile_counts.corrected =
          count(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, "ecc.volatile.corrected");
      g.ecc.volatile_counts.uncorrected =
          count(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, "ecc.volatile.uncorrected");
      g.ecc.aggregate_counts.corrected =
          count(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, "ecc.aggregate.corrected");
      g.ecc.aggregate_counts.uncorrected = count(NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                                 NVML_AGGREGATE_ECC, "ecc.aggregate.uncorrected");
    }
    if (lib_.device_get_remapped_rows) {
      unsigned corr = 0, unc = 0, pending = 0, failed = 0;
      auto r = call("nvmlDeviceGetRemappedRows", [&] {
        return lib_.device_get_remapped_rows(h, &corr, &unc, &pending, &failed);
      });
      unreadable("ecc.remapped_rows", r);
      if (r == NVML_SUCCESS) {
        g.ecc.remapped_rows_correctable = static_cast<int>(corr);
        g.ecc.remapped_rows_uncorrectable = static_cast<int>(unc);
        g.ecc.remapping_pending = pending != 0;
        g.ecc.remapping_failed = failed != 0;
      }
    }
    // Page retirement is the pre-Ampere mechanism; Ampere and later answer NOT_SUPPORTED.
    if (lib_.device_get_retired_pages) {
      auto pages = [&](int cause, const char* field) -> std::optional<int> {
        unsigned n = 0;
        auto r = call("nvmlDeviceGetRetiredPages",
                      [&] { return lib_.device_get_retired_pages(h, cause, &n, nullptr); });
        unreadable(field, r);
        if (r != NVML_SUCCESS && r != NVML_ERROR_INSUFFICIENT_SIZE) return std::nullopt;
        return static_cast<int>(n);
      };
      g.ecc.retired_pages_sbe =
          pages(NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, "ecc.retired_pages_sbe");
      g.ecc.retired_pages_dbe =
          pages(NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, "ecc.retired_pages_dbe");
    }
    if (lib_.device_get_retired_pages_pending_status) {
      int pending = 0;
      auto r = call("nvmlDeviceGetRetiredPagesPendingStatus",
                    [&] { return lib_.device_get_retired_pages_pending_status(h, &pending); });
      if (r == NVML_SUCCESS) g.ecc.retired_pages_pending = pending != 0;
    }
    // The driver's own verdict on what the GPU needs before it serves jobs again. Older
    // drivers answer NOT_SUPPORTED for the field (or lack the call): left unknown.
    if (lib_.device_get_field_values) {
      nvmlFieldValue_t v{};
      v.fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION;
      auto r =
          call("nvmlDeviceGetFieldValues", [&] { return lib_.device_get_field_values(h, 1, &v); });
      if (r == NVML_SUCCESS && v.nvmlReturn == NVML_SUCCESS) {
        const unsigned long long code = v.valueType == NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                                            ? v.value.ullVal
                                            : static_cast<unsigned long long>(v.value.uiVal);
        g.recovery_action = hw::recovery_action_name(static_cast<int>(std::min(code, 1000ULL)));
      }
    }
    if (lib_.device_get_gpu_fabric_info) {
      nvmlGpuFabricInfo_t f{};
      auto r = call("nvmlDeviceGetGpuFabricInfo",
                    [&] { return lib_.device_get_gpu_fabric_info(h, &f); });
      if (r == NVML_SUCCESS) {
        g.fabric.state = fabric_state_name(f.state);
        if (f.state != NVML_GPU_FABRIC_STATE_NOT_SUPPORTED) {
          g.fabric.status = nvml_return_name(f.status);
          g.fabric.clique_id = f.cliqueId;
          std::string uuid;
          for (int i = 0; i < 16; ++i) {
            if (i == 4 || i == 6 || i == 8 || i == 10) uuid += '-';
            uuid += fmt::format("{:02x}", f.clusterUuid[i]);
          }
          g.fabric.cluster_uuid = uuid;
        }
      }
    }
  }

  void nvlinks(nvmlDevice_t h) {
    if (!lib_.device_get_nvlink_state) return;
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
      int active = 0;
      auto r = call("nvmlDeviceGetNvLinkState",
                    [&] { return lib_.device_get_nvlink_state(h, link, &active); });
      // NOT_SUPPORTED: no NVLink on this GPU; INVALID_ARGUMENT: past its last link.
      if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_INVALID_ARGUMENT) break;
      NvLink nl;
      nl.link = static_cast<int>(link);
      if (r != NVML_SUCCESS) {
        unreadable("nvlink.state", r);
        if (lost_) break;
        out_.gpu.nvlinks.push_back(nl);
        continue;
      }
      nl.active = active != 0;
      if (lib_.device_get_nvlink_version) {
        unsigned v = 0;
        if (call("nvmlDeviceGetNvLinkVersion",
                 [&] { return lib_.device_get_nvlink_version(h, link, &v); }) == NVML_SUCCESS)
          nl.version = static_cast<int>(v);
      }
      if (active && lib_.device_get_nvlink_remote_pci_info) {
        nvmlPciInfo_t pci{};
        if (call("nvmlDeviceGetNvLinkRemotePciInfo", [&] {
              return lib_.device_get_nvlink_remote_pci_info(h, link, &pci);
            }) == NVML_SUCCESS) {
          auto id = normalize_pci_bus_id(c_string(pci.busId, sizeof pci.busId));
          if (!id) id = normalize_pci_bus_id(c_string(pci.busIdLegacy, sizeof pci.busIdLegacy));
          nl.remote_pci_bus_id = id;
        }
      }
      out_.gpu.nvlinks.push_back(nl);
    }
  }

  void processes(nvmlDevice_t h) {
    std::vector<std::pair<unsigned, unsigned long long>> found;
    nvmlReturn_t r = NVML_ERROR_NOT_SUPPORTED;
    // The count can grow between the sizing call and the read: retry a few times.
    for (int attempt = 0; attempt < 4; ++attempt) {
      unsigned count = 0;
      if (lib_.device_get_compute_running_processes) {
        std::vector<nvmlProcessInfo_t> infos(64 << attempt);
        count = static_cast<unsigned>(infos.size());
        r = call("nvmlDeviceGetComputeRunningProcesses", [&] {
          return lib_.device_get_compute_running_processes(h, &count, infos.data());
        });
        if (r == NVML_SUCCESS)
          for (unsigned i = 0; i < count && i < infos.size(); ++i)
            found.emplace_back(infos[i].pid, infos[i].usedGpuMemory);
      } else if (lib_.device_get_compute_running_processes_v1) {
        std::vector<nvmlProcessInfo_v1_t> infos(64 << attempt);
        count = static_cast<unsigned>(infos.size());
        r = call("nvmlDeviceGetComputeRunningProcesses", [&] {
          return lib_.device_get_compute_running_processes_v1(h, &count, infos.data());
        });
        if (r == NVML_SUCCESS)
          for (unsigned i = 0; i < count && i < infos.size(); ++i)
            found.emplace_back(infos[i].pid, infos[i].usedGpuMemory);
      } else {
        return;
      }
      if (r != NVML_ERROR_INSUFFICIENT_SIZE) break;
    }
    unreadable("processes", r);
    for (auto [pid, mem] : found) {
      ProcessFacts p;
      p.host_pid = static_cast<int>(pid);
      p.gpu = out_.gpu.index;
      // NVML reports (unsigned long long)-1 when memory usage is not available (e.g. under
      // WDDM/MIG).
      if (mem != ~0ULL) p.used_memory_bytes = mem;
      out_.processes.push_back(std::move(p));
    }
    publish();  // the list stands even if a name lookup below hangs
    if (!lib_.system_get_process_name) return;
    for (auto& p : out_.processes) {
      char name[256] = {};
      const auto pid = static_cast<unsigned>(p.host_pid);
      if (call("nvmlSystemGetProcessName",
               [&] { return lib_.system_get_process_name(pid, name, sizeof name); }) ==
              NVML_SUCCESS &&
          name[0]) {
        p.name = c_string(name, sizeof name);
        publish();
      }
    }
  }

  const NvmlLibrary& lib_;
  Slot<GpuProbeOutput>& slot_;
  const bool cpu_affinity_;
  const bool samples_only_;
  const bool sample_health_;
  const bool violation_counters_;
  GpuProbeOutput out_;
  bool lost_ = false;
};

struct InitOutput {
  double init_ms = 0;
  nvmlReturn_t init = NVML_ERROR_UNKNOWN;
  nvmlReturn_t count_status = NVML_ERROR_UNKNOWN;
  unsigned count = 0;
};

// The optional system queries: asked after the count, beside the GPU probes, so a
// hang in one of them costs the versions and not the GPUs.
struct SystemOutput {
  std::optional<std::string> driver_version;
  std::optional<std::string> nvml_version;
  std::optional<int> cuda_driver_version;
};

struct LoadOutput {
  Lib lib;
  Status error;
};

std::optional<std::string> version_from_library_path(const std::string& path) {
  // libnvidia-ml.so.580.159.04 → 580.159.04
  auto pos = path.find("libnvidia-ml.so.");
  if (pos == std::string::npos) return std::nullopt;
  auto v = path.substr(pos + std::strlen("libnvidia-ml.so."));
  if (v.find('.') == std::string::npos) return std::nullopt;  // only the soname major
  return v;
}

void set_failure(NvmlProbeResult& out, NvmlFailure f, std::string msg) {
  out.failure = f;
  out.failure_message = std::move(msg);
}

void explain_init_error(NvmlProbeResult& out, const NvmlLibrary& lib, nvmlReturn_t r) {
  const std::string err = lib.error_string(r);
  switch (r) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
      set_failure(
          out, NvmlFailure::kDriverNotLoaded,
          fmt::format(
              "NVIDIA kernel driver is not loaded ({}). No GPU facts. Check `lsmod | grep nvidia`, "
              "dmesg for NVRM errors, and that the driver matches the running kernel.",
              err));
      break;
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: {
      std::string lib_version = version_from_library_path(lib.loaded_path()).value_or("unknown");
      set_failure(
          out, NvmlFailure::kVersionMismatch,
          fmt::format("NVML library ({}, version {}) does not match the loaded kernel driver ({}). "
                      "The driver "
                      "was upgraded without a reboot/reload: reload the nvidia modules or reboot.",
                      lib.loaded_path(), lib_version, err));
      break;
    }
    case NVML_ERROR_NO_PERMISSION:
      set_failure(
          out, NvmlFailure::kNoPermission,
          fmt::format(
              "NVML has no permission to open the GPUs ({}): check /dev/nvidia* permissions or the "
              "container's device list.",
              err));
      break;
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      set_failure(
          out, NvmlFailure::kStubLibrary,
          fmt::format(
              "{} cannot reach a driver ({}): it is probably the CUDA toolkit's stub library. "
              "Point --nvml at the driver's libnvidia-ml.so.1.",
              lib.loaded_path(), err));
      break;
    default:
      set_failure(out, NvmlFailure::kInitFailed, fmt::format("nvmlInit failed: {}", err));
  }
}

}  // namespace

NvmlLoadResult load_nvml(const NvmlProbeOptions& options, Clock::time_point deadline) {
  NvmlLoadResult out;
  // The file check, dlopen and the library's constructors can all block (a FIFO, a
  // hung mount, a constructor waiting on a wedged device): they run on a watchdog
  // thread like every NVML call after them.
  auto load_slot = start_probe<LoadOutput>([path = options.library](Slot<LoadOutput>& slot) {
    LoadOutput o;
    slot.entering("loading");
    auto loaded = NvmlLibrary::load(path);
    if (loaded.is_ok())
      o.lib = loaded.value();
    else
      o.error = loaded.status();
    slot.entering(nullptr);
    slot.finish(o);
  });
  auto [done, loaded] = load_slot->wait_until(deadline);
  if (!done) {
    out.abandoned_threads = true;
    out.failure = NvmlFailure::kInitTimeout;
    out.failure_message = fmt::format(
        "NVML did not answer: loading {} did not return within {}. The library's "
        "initialisation or the file system holding it is stuck (a wedged GPU or driver, a hung "
        "mount); check dmesg for Xid 79 / 'fallen off the bus'.",
        options.library, format_seconds(options.init_timeout));
    return out;
  }
  if (!loaded.lib) {
    const Status& st = loaded.error;
    if (st.code() == StatusCode::kNotFound) {
      out.failure = NvmlFailure::kLibraryMissing;
      out.failure_message = options.library_given_by_user
                                ? fmt::format("NVML library {} not found", options.library)
                                : fmt::format(
                                      "NVIDIA driver library {} not found: no NVIDIA driver is "
                                      "installed here (or it is "
                                      "not in the loader path). No GPU facts.",
                                      options.library);
    } else {
      out.failure = NvmlFailure::kLibraryInvalid;
      out.failure_message = st.message();
    }
    return out;
  }
  if (loaded.lib->is_stub()) {
    out.failure = NvmlFailure::kStubLibrary;
    out.failure_message = fmt::format(
        "{} is the CUDA toolkit's stub NVML, which never talks to a driver. "
        "Point --nvml at the "
        "driver's libnvidia-ml.so.1 (or fix LD_LIBRARY_PATH).",
        loaded.lib->loaded_path());
    return out;
  }
  out.library = std::move(loaded.lib);
  return out;
}

NvmlLoadResult load_nvml(const NvmlProbeOptions& options) {
  return load_nvml(options, Clock::now() + options.init_timeout);
}

namespace {

// Everything after the load; `start` is when the caller's init deadline began.
NvmlProbeResult probe_loaded(const NvmlProbeOptions& options, const Lib& lib,
                             Clock::time_point start) {
  NvmlProbeResult out;
  auto finish = [&]() -> NvmlProbeResult& {
    out.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    return out;
  };
  out.library_path = lib->loaded_path();
  out.symbol_versions = lib->symbol_versions;

  // nvmlInit can block for a long time when a GPU is wedged; it runs under the watchdog too.
  auto init_slot = start_probe<InitOutput>([lib, held = options.init_held](Slot<InitOutput>& slot) {
    InitOutput o;
    slot.entering("nvmlInit");
    const auto t0 = Clock::now();
    o.init = held ? NVML_SUCCESS : lib->init();
    o.init_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (o.init == NVML_SUCCESS) {
      slot.entering("nvmlDeviceGetCount");
      o.count_status = lib->device_get_count(&o.count);
    }
    slot.entering(nullptr);
    slot.finish(o);
  });
  auto [init_done, init] = init_slot->wait_until(start + options.init_timeout);
  if (!init_done) {
    out.abandoned_threads = true;
    const char* where = init_slot->current_call();
    set_failure(
        out, NvmlFailure::kInitTimeout,
        fmt::format(
            "NVML did not answer: {} did not return within {}. A GPU or the driver is hung; check "
            "dmesg for Xid 79 / 'fallen off the bus'.",
            where ? where : "nvmlInit", format_seconds(options.init_timeout)));
    return finish();
  }
  if (init.init != NVML_SUCCESS) {
    explain_init_error(out, *lib, init.init);
    return finish();
  }
  std::map<std::string, double> call_ms = {{"nvmlInit", init.init_ms}};
  if (init.count_status != NVML_SUCCESS) {
    set_failure(out, NvmlFailure::kCountFailed,
                fmt::format("nvmlDeviceGetCount failed: {}", lib->error_string(init.count_status)));
    return finish();
  }
  const unsigned count = std::min(init.count, 1024u);

  std::shared_ptr<Slot<SystemOutput>> system_slot;
  if (!options.samples_only)
    system_slot = start_probe<SystemOutput>([lib](Slot<SystemOutput>& slot) {
      SystemOutput o;
      if (lib->system_get_driver_version) {
        char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
        slot.entering("nvmlSystemGetDriverVersion");
        if (lib->system_get_driver_version(buf, sizeof buf) == NVML_SUCCESS)
          o.driver_version = c_string(buf, sizeof buf);
        slot.publish(o);
      }
      if (lib->system_get_nvml_version) {
        char buf[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE] = {};
        slot.entering("nvmlSystemGetNVMLVersion");
        if (lib->system_get_nvml_version(buf, sizeof buf) == NVML_SUCCESS)
          o.nvml_version = c_string(buf, sizeof buf);
        slot.publish(o);
      }
      if (lib->system_get_cuda_driver_version) {
        int cuda = 0;
        slot.entering("nvmlSystemGetCudaDriverVersion");
        if (lib->system_get_cuda_driver_version(&cuda) == NVML_SUCCESS)
          o.cuda_driver_version = cuda;
      }
      slot.entering(nullptr);
      slot.finish(o);
    });

  // One thread per GPU, all against the same deadline.
  // One thread per GPU: the driver serialises calls on a GPU, so more threads
  // per GPU only add contention (docs/results/h200-2026-12-02/nvml-threading-ab.md).
  const bool affinity = options.cpu_affinity;
  const bool samples_only = options.samples_only;
  const bool sample_health = options.sample_health;
  const bool violations = options.violation_counters;
  auto skipped = [&](unsigned i) {
    return std::find(options.skip_gpus.begin(), options.skip_gpus.end(), static_cast<int>(i)) !=
           options.skip_gpus.end();
  };
  std::vector<std::shared_ptr<Slot<GpuProbeOutput>>> slots(count);
  for (unsigned i = 0; i < count; ++i)
    if (!skipped(i))
      slots[i] = start_probe<GpuProbeOutput>(
          [lib, i, affinity, samples_only, sample_health, violations](Slot<GpuProbeOutput>& slot) {
            GpuReader(*lib, slot, static_cast<int>(i), affinity, samples_only, sample_health,
                      violations)
                .run();
          });
  const auto gpu_deadline = Clock::now() + options.gpu_timeout;
  std::vector<nvmlDevice_t> handles(count, nullptr);
  for (unsigned i = 0; i < count; ++i) {
    if (!slots[i]) {
      GpuFacts g;
      g.index = static_cast<int>(i);
      g.unresponsive = "not probed: an earlier probe of this GPU is still stuck in NVML";
      out.gpus.push_back(std::move(g));
      continue;
    }
    auto [done, value] = slots[i]->wait_until(gpu_deadline);
    const char* where = done ? nullptr : slots[i]->current_call();
    if (!done) {
      out.abandoned_threads = true;
      value.gpu.index = static_cast<int>(i);
      value.gpu.unresponsive =
          fmt::format("not responding: {} did not return within {} (probe timed out)",
                      where ? where : "NVML", format_seconds(options.gpu_timeout));
    } else if (!value.gpu.unresponsive) {
      handles[i] = value.handle;
    }
    for (auto& p : value.processes) out.processes.push_back(p);
    for (const auto& [name, ms] : value.call_ms) call_ms[name] += ms;
    out.gpus.push_back(std::move(value.gpu));
  }

  if (system_slot) {
    auto [done, system] = system_slot->wait_until(gpu_deadline);
    if (!done) {
      out.abandoned_threads = true;
      const char* where = system_slot->current_call();
      const std::string call = where ? where : "an NVML system query";
      out.timeouts.push_back(
          fmt::format("{} did not return within {}", call, format_seconds(options.gpu_timeout)));
      out.notes.push_back(fmt::format(
          "NVML system query incomplete: {} did not return within {} (GPUs probed regardless)",
          call, format_seconds(options.gpu_timeout)));
      // At least the deadline went into it: the driver-slow rule sees a hang as slow.
      call_ms[call] += static_cast<double>(options.gpu_timeout.count());
    }
    out.driver_version = system.driver_version;
    out.nvml_version = system.nvml_version;
    if (system.cuda_driver_version)
      out.cuda_driver_version = fmt::format("{}.{}", *system.cuda_driver_version / 1000,
                                            (*system.cuda_driver_version % 1000) / 10);
  }

  // NVLink remote ends → GPU indices.
  std::map<std::string, int> by_bus;
  for (const auto& g : out.gpus)
    if (g.pci_bus_id) by_bus[*g.pci_bus_id] = g.index;
  for (auto& g : out.gpus)
    for (auto& l : g.nvlinks)
      if (l.remote_pci_bus_id)
        if (auto it = by_bus.find(*l.remote_pci_bus_id); it != by_bus.end())
          l.remote_gpu = it->second;

  // Pairs: only among GPUs that answered; still under a deadline, since a pair query touches both
  // GPUs.
  if (count > 1 && !samples_only && lib->device_get_topology_common_ancestor) {
    struct PairsOutput {
      std::vector<GpuPair> pairs;
      int a = -1, b = -1;  // the pair being asked about
    };
    auto pair_slot = start_probe<PairsOutput>([lib, handles](Slot<PairsOutput>& slot) {
      PairsOutput o;
      for (std::size_t a = 0; a < handles.size(); ++a) {
        for (std::size_t b = a + 1; b < handles.size(); ++b) {
          if (!handles[a] || !handles[b]) continue;
          GpuPair p;
          p.a = static_cast<int>(a);
          p.b = static_cast<int>(b);
          o.a = p.a;
          o.b = p.b;
          slot.publish(o);
          int level = -1;
          slot.entering("nvmlDeviceGetTopologyCommonAncestor");
          if (lib->device_get_topology_common_ancestor(handles[a], handles[b], &level) ==
              NVML_SUCCESS)
            p.path = path_from_level(level);
          if (lib->device_get_p2p_status) {
            slot.entering("nvmlDeviceGetP2PStatus");
            auto status = [&](int caps) -> std::optional<P2PStatus> {
              int s = NVML_P2P_STATUS_UNKNOWN;
              if (lib->device_get_p2p_status(handles[a], handles[b], caps, &s) != NVML_SUCCESS)
                return std::nullopt;
              return p2p_from_nvml(s);
            };
            p.p2p_read = status(NVML_P2P_CAPS_INDEX_READ);
            p.p2p_write = status(NVML_P2P_CAPS_INDEX_WRITE);
            p.p2p_nvlink = status(NVML_P2P_CAPS_INDEX_NVLINK);
            p.p2p_atomics = status(NVML_P2P_CAPS_INDEX_ATOMICS);
            p.p2p_pcie = status(NVML_P2P_CAPS_INDEX_PCI);
          }
          o.pairs.push_back(p);
          o.a = o.b = -1;
          slot.publish(o);
        }
      }
      slot.entering(nullptr);
      slot.finish(o);
    });
    auto [pairs_done, pairs] = pair_slot->wait_until(Clock::now() + options.gpu_timeout);
    if (!pairs_done) {
      out.abandoned_threads = true;
      const char* where = pair_slot->current_call();
      const std::string call = where ? where : "NVML";
      const std::string timeout = format_seconds(options.gpu_timeout);
      out.notes.push_back(
          fmt::format("GPU pair topology incomplete: {} did not return within {}", call, timeout));
      if (pairs.a >= 0 && pairs.b >= 0) {
        out.timeouts.push_back(fmt::format("{} for GPU{} and GPU{} did not return within {}", call,
                                           pairs.a, pairs.b, timeout));
        // Either GPU of the pair may be the one that hangs: both are named, and neither
        // counts as having answered.
        for (auto [self, peer] : {std::pair{pairs.a, pairs.b}, std::pair{pairs.b, pairs.a}}) {
          auto& g = out.gpus[static_cast<std::size_t>(self)];
          if (!g.unresponsive)
            g.unresponsive = fmt::format(
                "not responding: {} with GPU{} did not return within {} (pair query "
                "timed out)",
                call, peer, timeout);
        }
      } else {
        out.timeouts.push_back(
            fmt::format("the GPU pair query ({}) did not return within {}", call, timeout));
      }
    }
    out.pairs = std::move(pairs.pairs);
  }

  // NV#: links joining a pair directly, or through NVSwitches (links to a switch
  // count for every peer that NVML says is NVLink-P2P reachable).
  for (auto& p : out.pairs) {
    const auto& ga = out.gpus[static_cast<std::size_t>(p.a)];
    const auto& gb = out.gpus[static_cast<std::size_t>(p.b)];
    int direct = 0, switch_a = 0, switch_b = 0;
    for (const auto& l : ga.nvlinks) {
      if (!l.active.value_or(false)) continue;
      if (l.remote_gpu == p.b)
        ++direct;
      else if (!l.remote_gpu && l.remote_pci_bus_id)
        ++switch_a;
    }
    for (const auto& l : gb.nvlinks)
      if (l.active.value_or(false) && !l.remote_gpu && l.remote_pci_bus_id) ++switch_b;
    int links = direct;
    if (links == 0 && switch_a > 0 && switch_b > 0 && p.p2p_nvlink == P2PStatus::kOk)
      links = std::min(switch_a, switch_b);
    if (links > 0) {
      p.nvlinks = links;
      p.path = PathType::kNVLink;
    }
  }

  out.call_ms.assign(call_ms.begin(), call_ms.end());
  std::sort(out.call_ms.begin(), out.call_ms.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });

  // A thread still inside the library keeps its own reference to it (captured
  // above), so the library stays mapped; shutting NVML down under it could block.
  if (!out.abandoned_threads && !options.keep_init && lib->shutdown) lib->shutdown();
  return finish();
}

}  // namespace

NvmlProbeResult probe_nvml(const NvmlProbeOptions& options, const NvmlLibraryRef& library) {
  return probe_loaded(options, library, Clock::now());
}

NvmlProbeResult probe_nvml(const NvmlProbeOptions& options) {
  const auto start = Clock::now();
  auto loaded = load_nvml(options, start + options.init_timeout);
  if (!loaded.library) {
    NvmlProbeResult out;
    set_failure(out, loaded.failure, std::move(loaded.failure_message));
    out.abandoned_threads = loaded.abandoned_threads;
    out.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    return out;
  }
  // Loading and nvmlInit share the one init deadline.
  return probe_loaded(options, loaded.library, start);
}

}  // namespace gpuvet::probe
