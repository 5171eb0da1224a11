// probe/nvml_api.h — the part of NVML's C API that gpuvet uses, declared by us.
//
// We never include the driver's nvml.h (our build machines do not have it):
// the few types, constants and function signatures are declared here, with
// layouts matching NVML's public header. Both the run-time loader
// (nvml_library.cc) and the fake NVML used by tests (tests/fake_nvml) include
// this file, so they agree by construction. C types only; no state.
#pragma once

#include <cstddef>

extern "C" {

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef int nvmlReturn_t;  // an enum in nvml.h; int-sized on every ABI NVML ships for

enum : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_UNKNOWN = 999,
};

// Buffer sizes from nvml.h.
enum : unsigned {
  NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96,
  NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96,
  NVML_DEVICE_SERIAL_BUFFER_SIZE = 30,
  NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE = 32,
  NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80,
  NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE = 80,
  NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32,
  NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16,
  NVML_NVLINK_MAX_LINKS = 18,
};

typedef struct {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

// nvmlProcessInfo_t as the _v2/_v3 calls fill it.
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

// The v1 call's layout (drivers before 470 only export this one).
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
  unsigned long long referenceTime;
  unsigned long long violationTime;  // ns
} nvmlViolationTime_t;

typedef struct {
  unsigned int version;
  int marginTemperature;
} nvmlMarginTemperature_t;
#define NVML_MARGIN_TEMPERATURE_V1 (unsigned)(sizeof(nvmlMarginTemperature_t) | (1 << 24U))

typedef struct {
  unsigned char clusterUuid[16];
  nvmlReturn_t status;
  unsigned int cliqueId;
  unsigned char state;
} nvmlGpuFabricInfo_t;

// nvmlDeviceGetFieldValues: the caller sets fieldId (and scopeId); NVML fills the rest.
typedef union {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  signed int siVal;
  unsigned short usVal;
} nvmlValue_t;
typedef struct {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;  // nvmlValueType_t
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;
enum : int {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
};
// The driver's recovery action (driver 550+): an nvmlDeviceGpuRecoveryAction_t.
enum : unsigned { NVML_FI_DEV_GET_GPU_RECOVERY_ACTION = 230 };

enum : int { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum : int { NVML_TEMPERATURE_GPU = 0 };
enum : int {
  NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
  NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
  NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2,
  NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3,
};
enum : int { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum : int { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
enum : int {
  NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
};
enum : int {
  NVML_PERF_POLICY_POWER = 0,
  NVML_PERF_POLICY_THERMAL = 1,
  NVML_PERF_POLICY_SYNC_BOOST = 2,
  NVML_PERF_POLICY_BOARD_LIMIT = 3,
  NVML_PERF_POLICY_LOW_UTILIZATION = 4,
  NVML_PERF_POLICY_RELIABILITY = 5,
};
enum : int {
  NVML_TOPOLOGY_INTERNAL = 0,
  NVML_TOPOLOGY_SINGLE = 10,
  NVML_TOPOLOGY_MULTIPLE = 20,
  NVML_TOPOLOGY_HOSTBRIDGE = 30,
  NVML_TOPOLOGY_NODE = 40,
  NVML_TOPOLOGY_SYSTEM = 50,
};
enum : int {
  NVML_P2P_CAPS_INDEX_READ = 0,
  NVML_P2P_CAPS_INDEX_WRITE = 1,
  NVML_P2P_CAPS_INDEX_NVLINK = 2,
  NVML_P2P_CAPS_INDEX_ATOMICS = 3,
  NVML_P2P_CAPS_INDEX_PCI = 4,  // "prop" in older headers: PCIe P2P
};
enum : int {
  NVML_P2P_STATUS_OK = 0,
  NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED = 1,
  NVML_P2P_STATUS_GPU_NOT_SUPPORTED = 2,
  NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED = 3,
  NVML_P2P_STATUS_DISABLED_BY_REGKEY = 4,
  NVML_P2P_STATUS_NOT_SUPPORTED = 5,
  NVML_P2P_STATUS_UNKNOWN = 6,
};
enum : int {
  NVML_GPU_FABRIC_STATE_NOT_SUPPORTED = 0,
  NVML_GPU_FABRIC_STATE_NOT_STARTED = 1,
  NVML_GPU_FABRIC_STATE_IN_PROGRESS = 2,
  NVML_GPU_FABRIC_STATE_COMPLETED = 3,
};

// Clock-event (formerly "throttle") reason bits.
enum : unsigned long long {
  nvmlClocksEventReasonGpuIdle = 0x1ULL,
  nvmlClocksEventReasonApplicationsClocksSetting = 0x2ULL,
  nvmlClocksEventReasonSwPowerCap = 0x4ULL,
  nvmlClocksThrottleReasonHwSlowdown = 0x8ULL,
  nvmlClocksEventReasonSyncBoost = 0x10ULL,
  nvmlClocksEventReasonSwThermalSlowdown = 0x20ULL,
  nvmlClocksThrottleReasonHwThermalSlowdown = 0x40ULL,
  nvmlClocksThrottleReasonHwPowerBrakeSlowdown = 0x80ULL,
  nvmlClocksEventReasonDisplayClockSetting = 0x100ULL,
};

// Signatures, as function-pointer types (the loader resolves them with dlsym).
typedef nvmlReturn_t (*nvmlInit_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlSystemGetString_fn)(char*, unsigned int);
typedef nvmlReturn_t (*nvmlSystemGetCudaDriverVersion_fn)(int*);
typedef nvmlReturn_t (*nvmlSystemGetProcessName_fn)(unsigned int, char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetCount_fn)(unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_fn)(unsigned int, nvmlDevice_t*);
typedef nvmlReturn_t (*nvmlDeviceGetString_fn)(nvmlDevice_t, char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_fn)(nvmlDevice_t, nvmlPciInfo_t*);
typedef nvmlReturn_t (*nvmlDeviceGetUInt_fn)(nvmlDevice_t, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetInt_fn)(nvmlDevice_t, int*);
typedef nvmlReturn_t (*nvmlDeviceGetULL_fn)(nvmlDevice_t, unsigned long long*);
typedef nvmlReturn_t (*nvmlDeviceGetCpuAffinity_fn)(nvmlDevice_t, unsigned int, unsigned long*);
typedef nvmlReturn_t (*nvmlDeviceGetClockInfo_fn)(nvmlDevice_t, int, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetViolationStatus_fn)(nvmlDevice_t, int, nvmlViolationTime_t*);
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_fn)(nvmlDevice_t, int, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetMarginTemperature_fn)(nvmlDevice_t, nvmlMarginTemperature_t*);
typedef nvmlReturn_t (*nvmlDeviceGetEnablePair_fn)(nvmlDevice_t, int*, int*);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEccErrors_fn)(nvmlDevice_t, int, int, unsigned long long*);
typedef nvmlReturn_t (*nvmlDeviceGetRetiredPages_fn)(nvmlDevice_t, int, unsigned int*,
                                                     unsigned long long*);
typedef nvmlReturn_t (*nvmlDeviceGetRemappedRows_fn)(nvmlDevice_t, unsigned int*, unsigned int*,
                                                     unsigned int*, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t, nvmlMemory_t*);
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t, nvmlUtilization_t*);
typedef nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_fn)(nvmlDevice_t, unsigned int*,
                                                                nvmlProcessInfo_t*);
typedef nvmlReturn_t (*nvmlDeviceGetComputeRunningProcessesV1_fn)(nvmlDevice_t, unsigned int*,
                                                                  nvmlProcessInfo_v1_t*);
typedef nvmlReturn_t (*nvmlDeviceGetTopologyCommonAncestor_fn)(nvmlDevice_t, nvmlDevice_t, int*);
typedef nvmlReturn_t (*nvmlDeviceGetP2PStatus_fn)(nvmlDevice_t, nvmlDevice_t, int, int*);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkState_fn)(nvmlDevice_t, unsigned int, int*);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkVersion_fn)(nvmlDevice_t, unsigned int, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkRemotePciInfo_fn)(nvmlDevice_t, unsigned int,
                                                            nvmlPciInfo_t*);
typedef nvmlReturn_t (*nvmlDeviceGetGpuFabricInfo_fn)(nvmlDevice_t, nvmlGpuFabricInfo_t*);
typedef nvmlReturn_t (*nvmlDeviceGetFieldValues_fn)(nvmlDevice_t, int, nvmlFieldValue_t*);

}  // extern "C"

// Symbols gpuvet resolves (base name first, then the versioned ones it prefers).
// Kept here so the fake library and its tests can check they export them all.
#define GPUVET_NVML_SYMBOLS(X)                                                                        \
  X(nvmlInit_v2)                                                                                      \
  X(nvmlInit)                                                                                         \
  X(nvmlShutdown)                                                                                     \
  X(nvmlErrorString)                                                                                  \
  X(nvmlSystemGetDriverVersion) X(nvmlSystemGetNVMLVersion) X(nvmlSystemGetCudaDriverVersion_v2) X(   \
      nvmlSystemGetCudaDriverVersion) X(nvmlSystemGetProcessName) X(nvmlDeviceGetCount_v2)            \
      X(nvmlDeviceGetCount) X(nvmlDeviceGetHandleByIndex_v2) X(nvmlDeviceGetHandleByIndex) X(         \
          nvmlDeviceGetName) X(nvmlDeviceGetUUID) X(nvmlDeviceGetSerial) X(nvmlDeviceGetVbiosVersion) \
          X(nvmlDeviceGetPciInfo_v3) X(nvmlDeviceGetPciInfo_v2) X(nvmlDeviceGetPciInfo) X(            \
              nvmlDeviceGetCurrPcieLinkGeneration) X(nvmlDeviceGetMaxPcieLinkGeneration)              \
              X(nvmlDeviceGetGpuMaxPcieLinkGeneration) X(nvmlDeviceGetCurrPcieLinkWidth) X(           \
                  nvmlDeviceGetMaxPcieLinkWidth) X(nvmlDeviceGetPcieReplayCounter)                    \
                  X(nvmlDeviceGetNumaNodeId) X(nvmlDeviceGetCpuAffinity) X(nvmlDeviceGetClockInfo) X( \
                      nvmlDeviceGetMaxClockInfo) X(nvmlDeviceGetCurrentClocksEventReasons)            \
                      X(nvmlDeviceGetCurrentClocksThrottleReasons) X(nvmlDeviceGetViolationStatus) X( \
                          nvmlDeviceGetTemperature) X(nvmlDeviceGetTemperatureThreshold)              \
                          X(nvmlDeviceGetMarginTemperature) X(nvmlDeviceGetPowerUsage) X(             \
                              nvmlDeviceGetPowerManagementLimit) X(nvmlDeviceGetEnforcedPowerLimit)   \
                              X(nvmlDeviceGetPowerManagementDefaultLimit) X(nvmlDeviceGetEccMode) X(  \
                                  nvmlDeviceGetTotalEccErrors) X(nvmlDeviceGetRetiredPages)           \
                                  X(nvmlDeviceGetRetiredPagesPendingStatus) X(                        \
                                      nvmlDeviceGetRemappedRows) X(nvmlDeviceGetMemoryInfo)           \
                                      X(nvmlDeviceGetUtilizationRates) X(                             \
                                          nvmlDeviceGetComputeRunningProcesses_v3)                    \
                                          X(nvmlDeviceGetComputeRunningProcesses_v2) X(               \
                                              nvmlDeviceGetComputeRunningProcesses)                   \
                                              X(nvmlDeviceGetMigMode) X(                              \
                                                  nvmlDeviceGetPersistenceMode)                       \
                                                  X(nvmlDeviceGetPerformanceState) X(                 \
                                                      nvmlDeviceGetTopologyCommonAncestor)            \
                                                      X(nvmlDeviceGetP2PStatus) X(                    \
                                                          nvmlDeviceGetNvLinkState)                   \
                                                          X(nvmlDeviceGetNvLinkVersion) X(            \
                                                              nvmlDeviceGetNvLinkRemotePciInfo_v2)    \
                                                              X(nvmlDeviceGetNvLinkRemotePciInfo)     \
                                                                  X(nvmlDeviceGetGpuFabricInfo)       \
                                                                      X(nvmlDeviceGetFieldValues)
