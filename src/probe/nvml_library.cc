#include "probe/nvml_library.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace gpuvet::probe {

const char* nvml_return_name(nvmlReturn_t code) {
  switch (code) {
    case NVML_SUCCESS:
      return "SUCCESS";
    case NVML_ERROR_UNINITIALIZED:
      return "UNINITIALIZED";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED:
      return "NOT_SUPPORTED";
    case NVML_ERROR_NO_PERMISSION:
      return "NO_PERMISSION";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "ALREADY_INITIALIZED";
    case NVML_ERROR_NOT_FOUND:
      return "NOT_FOUND";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "INSUFFICIENT_SIZE";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "INSUFFICIENT_POWER";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "DRIVER_NOT_LOADED";
    case NVML_ERROR_TIMEOUT:
      return "TIMEOUT";
    case NVML_ERROR_IRQ_ISSUE:
      return "IRQ_ISSUE";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "LIBRARY_NOT_FOUND";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "FUNCTION_NOT_FOUND";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "CORRUPTED_INFOROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU_IS_LOST";
    case NVML_ERROR_RESET_REQUIRED:
      return "RESET_REQUIRED";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "OPERATING_SYSTEM";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "LIB_RM_VERSION_MISMATCH";
    case NVML_ERROR_IN_USE:
      return "IN_USE";
    case NVML_ERROR_MEMORY:
      return "MEMORY";
    case NVML_ERROR_NO_DATA:
      return "NO_DATA";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
      return "VGPU_ECC_NOT_SUPPORTED";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "INSUFFICIENT_RESOURCES";
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
      return "FREQ_NOT_SUPPORTED";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "ARGUMENT_VERSION_MISMATCH";
    case NVML_ERROR_DEPRECATED:
      return "DEPRECATED";
    case NVML_ERROR_NOT_READY:
      return "NOT_READY";
    case NVML_ERROR_GPU_NOT_FOUND:
      return "GPU_NOT_FOUND";
    case NVML_ERROR_INVALID_STATE:
      return "INVALID_STATE";
    case NVML_ERROR_UNKNOWN:
      return "UNKNOWN";
    default:
      return "UNRECOGNISED_ERROR";
  }
}

namespace {

std::string file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// An ELF shared object starts with \x7fELF; checking first turns "garbage
// file" into a clear message instead of whatever dlerror() says. Only a regular
// file is opened, and without blocking: a FIFO would wait for a writer forever,
// and a device file or socket is never a library.
Status check_elf(const std::string& path) {
  if (path.find('/') == std::string::npos) return Status::ok();  // a soname: the loader searches
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) return Status::not_found(path + ": no such file");
    return Status::invalid_input(path + ": " + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode))
    return Status::invalid_input(path + ": a directory, not a shared library");
  if (!S_ISREG(st.st_mode))
    return Status::invalid_input(path + ": " + file_kind(st.st_mode) +
                                 ", not a shared library (a library is a regular file)");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return Status::not_found(path + ": no such file");
    return Status::invalid_input(path + ": " + std::strerror(err));
  }
  // The path may have been replaced between stat and open.
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::invalid_input(path + ": not a regular file, not a shared library");
  }
  std::array<char, 4> magic{};
  ssize_t n = ::read(fd, magic.data(), magic.size());
  ::close(fd);
  if (n != 4 || std::memcmp(magic.data(),
                            "\x7f"
                            "ELF",
                            4) != 0)
    return Status::invalid_input(path + ": not a shared library (no ELF header)");
  return Status::ok();
}

}  // namespace

Result<std::shared_ptr<const NvmlLibrary>> NvmlLibrary::load(const std::string& path) {
  if (auto st = check_elf(path); !st.is_ok()) return st;
  dlerror();
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    std::string msg = err ? err : "unknown dlopen error";
    if (msg.find("No such file") != std::string::npos ||
        msg.find("cannot open shared object") != std::string::npos)
      return Status::not_found(path + ": " + msg);
    return Status::invalid_input(path + ": cannot load: " + msg);
  }
  std::shared_ptr<NvmlLibrary> lib(new NvmlLibrary());
  lib->handle_ = handle;
  lib->requested_ = path;

  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) {
    char buf[PATH_MAX];
    lib->loaded_ = ::realpath(map->l_name, buf) ? buf : map->l_name;
  } else {
    lib->loaded_ = path;
  }
  lib->stub_ = lib->loaded_.find("/stubs/") != std::string::npos;

  std::string& versions = lib->symbol_versions;
  // First symbol found wins; records its name so the report can say which ABI we use.
  auto first = [&](auto& fn, std::initializer_list<const char*> names, bool record = false) {
    for (const char* name : names) {
      if (void* sym = ::dlsym(handle, name)) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(sym);
        if (record) {
          if (!versions.empty()) versions += ' ';
          versions += name;
        }
        return;
      }
    }
  };
  first(lib->init, {"nvmlInit_v2", "nvmlInit"}, true);
  first(lib->shutdown, {"nvmlShutdown"});
  first(lib->device_get_count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, true);
  first(lib->device_get_handle_by_index,
        {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}, true);
  if (!lib->init || !lib->shutdown || !lib->device_get_count || !lib->device_get_handle_by_index)
    return Status::invalid_input(
        path + ": a shared library, but not NVML (nvmlInit/nvmlDeviceGetCount missing)");

  first(lib->error_string_fn, {"nvmlErrorString"});
  first(lib->system_get_driver_version, {"nvmlSystemGetDriverVersion"});
  first(lib->system_get_nvml_version, {"nvmlSystemGetNVMLVersion"});
  first(lib->system_get_cuda_driver_version,
        {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
  first(lib->system_get_process_name, {"nvmlSystemGetProcessName"});
  first(lib->device_get_name, {"nvmlDeviceGetName"});
  first(lib->device_get_uuid, {"nvmlDeviceGetUUID"});
  first(lib->device_get_serial, {"nvmlDeviceGetSerial"});
  first(lib->device_get_vbios_version, {"nvmlDeviceGetVbiosVersion"});
  first(lib->device_get_pci_info,
        {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"}, true);
  first(lib->device_get_curr_pcie_link_generation, {"nvmlDeviceGetCurrPcieLinkGeneration"});
  first(lib->device_get_max_pcie_link_generation, {"nvmlDeviceGetMaxPcieLinkGeneration"});
  first(lib->device_get_gpu_max_pcie_link_generation, {"nvmlDeviceGetGpuMaxPcieLinkGeneration"});
  first(lib->device_get_curr_pcie_link_width, {"nvmlDeviceGetCurrPcieLinkWidth"});
  first(lib->device_get_max_pcie_link_width, {"nvmlDeviceGetMaxPcieLinkWidth"});
  first(lib->device_get_pcie_replay_counter, {"nvmlDeviceGetPcieReplayCounter"});
  first(lib->device_get_numa_node_id, {"nvmlDeviceGetNumaNodeId"});
  first(lib->device_get_cpu_affinity, {"nvmlDeviceGetCpuAffinity"});
  first(lib->device_get_clock_info, {"nvmlDeviceGetClockInfo"});
  first(lib->device_get_max_clock_info, {"nvmlDeviceGetMaxClockInfo"});
  first(lib->device_get_clock_event_reasons,
        {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"},
        true);
  first(lib->device_get_violation_status, {"nvmlDeviceGetViolationStatus"});
  first(lib->device_get_temperature, {"nvmlDeviceGetTemperature"});
  first(lib->device_get_temperature_threshold, {"nvmlDeviceGetTemperatureThreshold"});
  first(lib->device_get_margin_temperature, {"nvmlDeviceGetMarginTemperature"});
  first(lib->device_get_power_usage, {"nvmlDeviceGetPowerUsage"});
  first(lib->device_get_power_management_limit, {"nvmlDeviceGetPowerManagementLimit"});
  first(lib->device_get_enforced_power_limit, {"nvmlDeviceGetEnforcedPowerLimit"});
  first(lib->device_get_power_management_default_limit,
        {"nvmlDeviceGetPowerManagementDefaultLimit"});
  first(lib->device_get_ecc_mode, {"nvmlDeviceGetEccMode"});
  first(lib->device_get_total_ecc_errors, {"nvmlDeviceGetTotalEccErrors"});
  first(lib->device_get_retired_pages, {"nvmlDeviceGetRetiredPages"});
  first(lib->device_get_retired_pages_pending_status, {"nvmlDeviceGetRetiredPagesPendingStatus"});
  first(lib->device_get_remapped_rows, {"nvmlDeviceGetRemappedRows"});
  first(lib->device_get_memory_info, {"nvmlDeviceGetMemoryInfo"});
  first(lib->device_get_utilization_rates, {"nvmlDeviceGetUtilizationRates"});
  first(lib->device_get_compute_running_processes,
        {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"},
        true);
  if (!lib->device_get_compute_running_processes)
    first(lib->device_get_compute_running_processes_v1, {"nvmlDeviceGetComputeRunningProcesses"},
          true);
  first(lib->device_get_mig_mode, {"nvmlDeviceGetMigMode"});
  first(lib->device_get_persistence_mode, {"nvmlDeviceGetPersistenceMode"});
  first(lib->device_get_performance_state, {"nvmlDeviceGetPerformanceState"});
  first(lib->device_get_topology_common_ancestor, {"nvmlDeviceGetTopologyCommonAncestor"});
  first(lib->device_get_p2p_status, {"nvmlDeviceGetP2PStatus"});
  first(lib->device_get_nvlink_state, {"nvmlDeviceGetNvLinkState"});
  first(lib->device_get_nvlink_version, {"nvmlDeviceGetNvLinkVersion"});
  first(lib->device_get_nvlink_remote_pci_info,
        {"nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetNvLinkRemotePciInfo"});
  first(lib->device_get_gpu_fabric_info, {"nvmlDeviceGetGpuFabricInfo"});
  first(lib->device_get_field_values, {"nvmlDeviceGetFieldValues"});
  return std::shared_ptr<const NvmlLibrary>(std::move(lib));
}

NvmlLibrary::~NvmlLibrary() {
  if (handle_) ::dlclose(handle_);
}

std::string NvmlLibrary::error_string(nvmlReturn_t code) const {
  std::string name = nvml_return_name(code);
  if (error_string_fn) {
    if (const char* s = error_string_fn(code); s && *s) return name + " (" + s + ")";
  }
  return name;
}

}  // namespace gpuvet::probe
