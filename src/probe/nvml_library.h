// probe/nvml_library.h — NVML loaded at run time with dlopen.
//
// NvmlLibrary owns one dlopen handle and the resolved entry points. It prefers
// versioned symbols (nvmlInit_v2, nvmlDeviceGetPciInfo_v3, …) and falls back to
// older ones; optional entry points are null when the driver does not export
// them. The handle is never dlclose()d while a probe thread may still be inside
// the library: hold the shared_ptr for as long as any thread uses it.
// Thread-safe after load(): the object is immutable.
#pragma once

#include <memory>
#include <string>

#include "gpuvet/status.h"
#include "probe/nvml_api.h"

namespace gpuvet::probe {

// NVML return codes by name ("GPU_IS_LOST"), for notes and the fake's scenarios.
const char* nvml_return_name(nvmlReturn_t code);

class NvmlLibrary {
 public:
  // path: a file path or a bare soname resolved by the dynamic loader. Fails
  // with kNotFound when it does not exist, kInvalidInput when it is not a
  // loadable library or lacks NVML's core symbols.
  static Result<std::shared_ptr<const NvmlLibrary>> load(const std::string& path);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const std::string& requested_path() const { return requested_; }
  // The file the loader actually mapped (realpath), e.g.
  // /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.159.04.
  const std::string& loaded_path() const { return loaded_; }
  // True for the CUDA toolkit's link-time stub (…/stubs/libnvidia-ml.so), which never talks to a
  // driver.
  bool is_stub() const { return stub_; }
  std::string error_string(nvmlReturn_t code) const;

  // Required entry points (load() fails without them).
  nvmlInit_fn init = nullptr;
  nvmlShutdown_fn shutdown = nullptr;
  nvmlDeviceGetCount_fn device_get_count = nullptr;
  nvmlDeviceGetHandleByIndex_fn device_get_handle_by_index = nullptr;
  // Optional entry points (null when absent).
  nvmlErrorString_fn error_string_fn = nullptr;
  nvmlSystemGetString_fn system_get_driver_version = nullptr;
  nvmlSystemGetString_fn system_get_nvml_version = nullptr;
  nvmlSystemGetCudaDriverVersion_fn system_get_cuda_driver_version = nullptr;
  nvmlSystemGetProcessName_fn system_get_process_name = nullptr;
  nvmlDeviceGetString_fn device_get_name = nullptr;
  nvmlDeviceGetString_fn device_get_uuid = nullptr;
  nvmlDeviceGetString_fn device_get_serial = nullptr;
  nvmlDeviceGetString_fn device_get_vbios_version = nullptr;
  nvmlDeviceGetPciInfo_fn device_get_pci_info = nullptr;
  nvmlDeviceGetUInt_fn device_get_curr_pcie_link_generation = nullptr;
  nvmlDeviceGetUInt_fn device_get_max_pcie_link_generation = nullptr;
  nvmlDeviceGetUInt_fn device_get_gpu_max_pcie_link_generation = nullptr;
  nvmlDeviceGetUInt_fn device_get_curr_pcie_link_width = nullptr;
  nvmlDeviceGetUInt_fn device_get_max_pcie_link_width = nullptr;
  nvmlDeviceGetUInt_fn device_get_pcie_replay_counter = nullptr;
  nvmlDeviceGetUInt_fn device_get_numa_node_id = nullptr;
  nvmlDeviceGetCpuAffinity_fn device_get_cpu_affinity = nullptr;
  nvmlDeviceGetClockInfo_fn device_get_clock_info = nullptr;
  nvmlDeviceGetClockInfo_fn device_get_max_clock_info = nullptr;
  nvmlDeviceGetULL_fn device_get_clock_event_reasons =
      nullptr;  // Event (new) or Throttle (old) name
  nvmlDeviceGetViolationStatus_fn device_get_violation_status = nullptr;
  nvmlDeviceGetTemperature_fn device_get_temperature = nullptr;
  nvmlDeviceGetTemperature_fn device_get_temperature_threshold = nullptr;
  nvmlDeviceGetMarginTemperature_fn device_get_margin_temperature = nullptr;
  nvmlDeviceGetUInt_fn device_get_power_usage = nullptr;
  nvmlDeviceGetUInt_fn device_get_power_management_limit = nullptr;
  nvmlDeviceGetUInt_fn device_get_enforced_power_limit = nullptr;
  nvmlDeviceGetUInt_fn device_get_power_management_default_limit = nullptr;
  nvmlDeviceGetEnablePair_fn device_get_ecc_mode = nullptr;
  nvmlDeviceGetTotalEccErrors_fn device_get_total_ecc_errors = nullptr;
  nvmlDeviceGetRetiredPages_fn device_get_retired_pages = nullptr;
  nvmlDeviceGetInt_fn device_get_retired_pages_pending_status = nullptr;
  nvmlDeviceGetRemappedRows_fn device_get_remapped_rows = nullptr;
  nvmlDeviceGetMemoryInfo_fn device_get_memory_info = nullptr;
  nvmlDeviceGetUtilizationRates_fn device_get_utilization_rates = nullptr;
  nvmlDeviceGetComputeRunningProcesses_fn device_get_compute_running_processes =
      nullptr;  // _v3/_v2
  nvmlDeviceGetComputeRunningProcessesV1_fn device_get_compute_running_processes_v1 =
      nullptr;  // old layout
  nvmlDeviceGetEnablePair_fn device_get_mig_mode = nullptr;
  nvmlDeviceGetInt_fn device_get_persistence_mode = nullptr;
  nvmlDeviceGetInt_fn device_get_performance_state = nullptr;
  nvmlDeviceGetTopologyCommonAncestor_fn device_get_topology_common_ancestor = nullptr;
  nvmlDeviceGetP2PStatus_fn device_get_p2p_status = nullptr;
  nvmlDeviceGetNvLinkState_fn device_get_nvlink_state = nullptr;
  nvmlDeviceGetNvLinkVersion_fn device_get_nvlink_version = nullptr;
  nvmlDeviceGetNvLinkRemotePciInfo_fn device_get_nvlink_remote_pci_info = nullptr;
  nvmlDeviceGetGpuFabricInfo_fn device_get_gpu_fabric_info = nullptr;
  nvmlDeviceGetFieldValues_fn device_get_field_values = nullptr;

  // Which symbol names were resolved for versioned entry points, for the report ("nvmlInit_v2").
  std::string symbol_versions;

 private:
  NvmlLibrary() = default;
  void* handle_ = nullptr;
  std::string requested_;
  std::string loaded_;
  bool stub_ = false;
};

}  // namespace gpuvet::probe
