// tests/fake_nvml/fake_nvml.cc — a fake libnvidia-ml.so: NVML's C entry points, answering from a
// scenario file.
//
// tests/CMakeLists.txt builds it twice: libnvidia-ml-fake.so exports every symbol of
// GPUVET_NVML_SYMBOLS; libnvidia-ml-fake-old.so (FAKE_NVML_OLD_DRIVER=1) only what an old driver
// has, for fallback tests. nvmlInit reads the JSON scenario named by GPUVET_FAKE_NVML_SCENARIO
// (unset or empty: a built-in healthy 1 x H200); README.md beside this file documents the format
// and where the fake knowingly differs from the real library.
//
// State: one process-wide Library, never destroyed (a C ABI leaves no other place for it, and a
// caller hung in an injected fault may outlive exit handlers). Thread safety: a mutex guards the
// init count and the loaded scenario; every other call takes a reference-counted snapshot of
// the immutable Scenario, so calls may run concurrently with each other, with init and with
// shutdown. Device handles point into a fixed table and, as NVML's do, stay valid across
// shutdown and init. One liberty for tests sharing a process: an nvmlInit whose
// GPUVET_FAKE_NVML_SCENARIO names another file than the loaded one switches to it even when
// the library is still initialized (see README.md).

#include "scenario.h"

#include <fcntl.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#ifndef FAKE_NVML_OLD_DRIVER
#define FAKE_NVML_OLD_DRIVER 0
#endif

#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

// nvml_api.h leaves the handle type opaque; here it is a slot of the handle table.
struct nvmlDevice_st {
  unsigned index;
};

namespace fake_nvml {
namespace {

// The same machine as tests/scenarios/h200-1gpu-idle.json (the lent H200 VM).
constexpr const char* kBuiltinScenario = R"json({
  "description": "built-in: 1 x H200 idle, as the lent VM reports it",
  "driver_version": "580.159.04",
  "nvml_version": "13.580.159.04",
  "cuda_driver_version": 13000,
  "gpus": [{
    "name": "NVIDIA H200",
    "uuid": "GPU-bcc17cec-e461-7450-3893-0e8c087653bf",
    "serial": "1653724057468",
    "vbios": "96.00.A5.00.1A",
    "pci_bus_id": "00000000:00:06.0",
    "pci_device_id": "0x233510DE",
    "pci_subsystem_id": "0x18BF10DE",
    "pcie": {"gen": 5, "gen_max": 5, "gen_device_max": 5, "width": 16, "width_max": 16,
             "replay_counter": 0},
    "cpu_affinity": "0-15",
    "clocks": {"graphics": 345, "sm": 345, "mem": 3201, "video": 765,
               "graphics_max": 1980, "sm_max": 1980, "mem_max": 3201, "video_max": 1545},
    "clock_event_reasons": ["idle"],
    "violation_ns": {"power": 0, "thermal": 0, "sync_boost": 0, "board_limit": 0,
                     "low_utilization": 43906218464, "reliability": 0},
    "temperature": 38,
    "margin": 49,
    "thresholds": {"shutdown": 95, "slowdown": 89, "mem_max": 95, "gpu_max": 87},
    "power": {"draw_w": 79.218, "limit_w": 700, "enforced_limit_w": 700, "default_limit_w": 700},
    "ecc": {"enabled": true, "pending": true,
            "volatile": {"corrected": 0, "uncorrected": 0},
            "aggregate": {"corrected": 0, "uncorrected": 0},
            "remapped": {"correctable": 0, "uncorrectable": 0, "pending": false, "failure": false}},
    "memory": {"total": 150754820096, "used": 644939776},
    "utilization": {"gpu": 0, "memory": 0},
    "mig": {"current": 0, "pending": 0},
    "persistence": true,
    "pstate": 0,
    "processes": [],
    "fabric": {"state": "NOT_SUPPORTED", "status": "SUCCESS", "clique_id": 0}
  }]
})json";

constexpr std::array<nvmlDevice_st, kMaxGpus> make_handles() {
  std::array<nvmlDevice_st, kMaxGpus> handles{};
  for (unsigned i = 0; i < kMaxGpus; ++i) handles[i].index = i;
  return handles;
}
// Never written: non-const only because nvmlDevice_t points to non-const.
constinit std::array<nvmlDevice_st, kMaxGpus> g_handles = make_handles();

class Library {
 public:
  static Library& get() {
    static Library* library = new Library;
    return *library;
  }

  nvmlReturn_t init();
  nvmlReturn_t shutdown();

  std::shared_ptr<const Scenario> scenario() const {
    std::lock_guard<std::mutex> lock(state_mu_);
    return scenario_;
  }
  // Why the last nvmlInit failed to load its scenario, or null.
  const char* init_error() const { return init_error_.load(); }
  // Seconds on the timelines' clock: since a scenario file other than the one loaded before
  // (or the first) was loaded. Loading the same file again after a shutdown keeps the clock,
  // so a program that initialises NVML twice (a collection, then a sampler) sees one timeline.
  double timeline_s() const {
    const auto origin =
        std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(origin_.load()));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin).count();
  }

 private:
  void set_init_error(const std::string& message);

  std::mutex init_mu_;                // guards the init state below
  unsigned refcount_ = 0;             // guarded by init_mu_
  std::string loaded_path_;           // guarded by init_mu_; the scenario file loaded ("" built-in)
  std::deque<std::string> messages_;  // guarded by init_mu_; kept forever (callers hold pointers)
  std::atomic<const char*> init_error_{nullptr};
  bool loaded_once_ = false;  // guarded by init_mu_
  std::atomic<std::chrono::steady_clock::rep> origin_{0};
  mutable std::mutex state_mu_;  // guards scenario_, held only to copy the pointer
  std::shared_ptr<const Scenario> scenario_;
};

nvmlReturn_t inject(const Fault* fault) {
  if (fault == nullptr) return NVML_SUCCESS;
  if (fault->hang_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(fault->hang_ms));
  return fault->result;
}

// How often nvmlInit and nvmlShutdown were called: a sampler must init once, not per sample.
std::atomic<unsigned> g_init_calls{0};
std::atomic<unsigned> g_violation_calls{0};
std::atomic<unsigned> g_shutdown_calls{0};

nvmlReturn_t Library::init() {
  ++g_init_calls;
  const char* env = std::getenv("GPUVET_FAKE_NVML_SCENARIO");
  const std::string path = env != nullptr ? env : "";
  {
    std::lock_guard<std::mutex> lock(init_mu_);
    if (refcount_ > 0 && path == loaded_path_) {
      ++refcount_;
      return NVML_SUCCESS;
    }
  }
  // Loading and an injected hang run outside the lock, so that a test whose init hung and was
  // abandoned does not block the next test's init in the same process.
  LoadResult loaded =
      path.empty() ? load_scenario_text(kBuiltinScenario, "(built-in)") : load_scenario_file(path);
  if (!loaded.scenario) {
    std::lock_guard<std::mutex> lock(init_mu_);
    set_init_error(loaded.error);
    return NVML_ERROR_UNKNOWN;
  }
  init_error_ = nullptr;
  if (nvmlReturn_t rc = inject(&loaded.scenario->init); rc != NVML_SUCCESS) return rc;
  // GPUVET_FAKE_NVML_HOLD_FD=PATH: hold PATH open without close-on-exec for the rest of the
  // process, as a driver library may hold its device files, so that a test can see whether a
  // program that starts others hands it on.
  static std::atomic<int> held_fd{-1};
  if (const char* hold = std::getenv("GPUVET_FAKE_NVML_HOLD_FD"); hold && *hold && held_fd < 0)
    held_fd = ::open(hold, O_RDONLY | O_CREAT, 0600);
  std::lock_guard<std::mutex> lock(init_mu_);
  // Initialized already with another scenario (an earlier test left it so): switch to this one.
  // Callers still inside a call finish on the snapshot they hold.
  if (refcount_ == 0 || path != loaded_path_) {
    if (!loaded_once_ || path != loaded_path_)
      origin_ = std::chrono::steady_clock::now().time_since_epoch().count();
    loaded_once_ = true;
    std::lock_guard<std::mutex> state_lock(state_mu_);
    scenario_ = std::move(loaded.scenario);
    loaded_path_ = path;
  }
  ++refcount_;
  return NVML_SUCCESS;
}

nvmlReturn_t Library::shutdown() {
  ++g_shutdown_calls;
  std::lock_guard<std::mutex> lock(init_mu_);
  if (refcount_ == 0) return NVML_ERROR_UNINITIALIZED;
  if (--refcount_ == 0) {
    std::lock_guard<std::mutex> state_lock(state_mu_);
    scenario_.reset();
  }
  return NVML_SUCCESS;
}

void Library::set_init_error(const std::string& message) {
  if (messages_.empty() || messages_.back() != message) messages_.push_back(message);
  init_error_ = messages_.back().c_str();
}

// Real nvmlErrorString texts (driver 580.159.04); any other code is "Unknown Error".
constexpr std::pair<nvmlReturn_t, const char*> kErrorTexts[] = {
    {NVML_SUCCESS, "Success"},
    {NVML_ERROR_UNINITIALIZED, "Uninitialized"},
    {NVML_ERROR_INVALID_ARGUMENT, "Invalid Argument"},
    {NVML_ERROR_NOT_SUPPORTED, "Not Supported"},
    {NVML_ERROR_NO_PERMISSION, "Insufficient Permissions"},
    {NVML_ERROR_ALREADY_INITIALIZED, "Already Initialized"},
    {NVML_ERROR_NOT_FOUND, "Not Found"},
    {NVML_ERROR_INSUFFICIENT_SIZE, "Insufficient Size"},
    {NVML_ERROR_INSUFFICIENT_POWER, "Insufficient External Power"},
    {NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded"},
    {NVML_ERROR_TIMEOUT, "Timeout"},
    {NVML_ERROR_IRQ_ISSUE, "Interrupt Request Issue"},
    {NVML_ERROR_LIBRARY_NOT_FOUND, "NVML Shared Library Not Found"},
    {NVML_ERROR_FUNCTION_NOT_FOUND, "Function Not Found"},
    {NVML_ERROR_CORRUPTED_INFOROM, "Corrupted infoROM"},
    {NVML_ERROR_GPU_IS_LOST, "GPU is lost"},
    {NVML_ERROR_RESET_REQUIRED, "GPU requires reset"},
    {NVML_ERROR_OPERATING_SYSTEM, "GPU access blocked by the operating system"},
    {NVML_ERROR_LIB_RM_VERSION_MISMATCH, "Driver/library version mismatch"},
    {NVML_ERROR_IN_USE, "In use by another client"},
    {NVML_ERROR_MEMORY, "Insufficient Memory"},
    {NVML_ERROR_NO_DATA, "No data"},
    {NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, "vGPU ECC not supported"},
    {NVML_ERROR_INSUFFICIENT_RESOURCES, "Insufficient Resources"},
    {NVML_ERROR_FREQ_NOT_SUPPORTED, "Invalid Frequency"},
    {NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "Argument version mismatch"},
    {NVML_ERROR_DEPRECATED, "Requested functionality has been deprecated"},
    {NVML_ERROR_NOT_READY, "System is not in ready state"},
    {NVML_ERROR_GPU_NOT_FOUND, "No supported GPUs were found"},
    {NVML_ERROR_INVALID_STATE, "Resource not in correct state to perform requested operation"},
};

const char* error_text(nvmlReturn_t rc) {
  for (const auto& [code, text] : kErrorTexts) {
    if (code == rc) return text;
  }
  return "Unknown Error";
}

// Exact name first ("..._v3"), then the base name, then "*".
const Fault* find_fault(const FaultMap& faults, std::string_view fn, bool wildcard) {
  if (faults.empty()) return nullptr;
  if (auto it = faults.find(fn); it != faults.end()) return &it->second;
  if (auto it = faults.find(base_name(fn)); it != faults.end()) return &it->second;
  if (wildcard) {
    if (auto it = faults.find(std::string_view("*")); it != faults.end()) return &it->second;
  }
  return nullptr;
}

// A GPU's own faults, then the scenario's.
const Fault* device_fault(const Scenario& s, const Gpu& gpu, std::string_view fn) {
  if (const Fault* f = find_fault(gpu.faults, fn, true)) return f;
  return find_fault(s.faults, fn, true);
}

// The GPU index of a handle this library gave out, if the scenario has that GPU. Compares
// addresses only: a stale or foreign pointer is never dereferenced.
std::optional<unsigned> index_of(const Scenario& s, nvmlDevice_t device) {
  for (unsigned i = 0; i < s.gpus.size(); ++i) {
    if (device == &g_handles[i]) return i;
  }
  return std::nullopt;
}

// What a per-device call answers from: the scenario's GPU, or its values at this moment of its
// timeline.
struct DeviceCall {
  std::shared_ptr<const Scenario> scenario;
  const Gpu* gpu = nullptr;
  std::optional<Gpu> now;
};

// The prologue every per-device call shares, in NVML's order: initialized, a valid handle and
// arguments, then injected faults.
nvmlReturn_t begin(const char* fn, nvmlDevice_t device, bool args_ok, DeviceCall& call) {
  call.scenario = Library::get().scenario();
  if (!call.scenario) return NVML_ERROR_UNINITIALIZED;
  auto index = index_of(*call.scenario, device);
  if (!index || !args_ok) return NVML_ERROR_INVALID_ARGUMENT;
  call.gpu = &call.scenario->gpus[*index];
  if (!call.gpu->timeline.empty()) {
    call.now = gpu_at(*call.gpu, Library::get().timeline_s());
    call.gpu = &*call.now;
  }
  return inject(device_fault(*call.scenario, *call.gpu, fn));
}

// The same for calls without a device.
nvmlReturn_t begin_system(const char* fn, bool args_ok, std::shared_ptr<const Scenario>& s) {
  s = Library::get().scenario();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  if (!args_ok) return NVML_ERROR_INVALID_ARGUMENT;
  return inject(find_fault(s->faults, fn, true));
}

nvmlReturn_t copy_string(const std::string& value, char* buffer, unsigned length) {
  if (value.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buffer, value.c_str(), value.size() + 1);
  return NVML_SUCCESS;
}

nvmlReturn_t device_string(const char* fn, nvmlDevice_t device, char* buffer, unsigned length,
                           std::optional<std::string> Gpu::*field) {
  DeviceCall call;
  if (nvmlReturn_t rc = begin(fn, device, buffer != nullptr, call); rc != NVML_SUCCESS) return rc;
  const auto& value = call.gpu->*field;
  if (!value) return NVML_ERROR_NOT_SUPPORTED;
  return copy_string(*value, buffer, length);
}

// One optional scenario value into one output.
template <class Out, class T>
nvmlReturn_t device_value(const char* fn, nvmlDevice_t device, Out* out,
                          std::optional<T> Gpu::*field) {
  DeviceCall call;
  if (nvmlReturn_t rc = begin(fn, device, out != nullptr, call); rc != NVML_SUCCESS) return rc;
  const auto& value = call.gpu->*field;
  if (!value) return NVML_ERROR_NOT_SUPPORTED;
  *out = static_cast<Out>(*value);
  return NVML_SUCCESS;
}

// The nvmlPciInfo_t layouts by call version, as the real library fills them: v3 everything;
// v2 (and NvLinkRemotePciInfo v1) stop before busId; v1 also before pciSubSystemId. The fields
// a version does not fill are left as the caller had them.
enum class PciVersion { kV1, kV2, kV3 };

void fill_pci(const PciIdentity& id, PciVersion version, nvmlPciInfo_t* out) {
  const PciAddress& a = id.address;
  std::snprintf(out->busIdLegacy, sizeof(out->busIdLegacy), "%04X:%02X:%02X.%X", a.domain, a.bus,
                a.device, a.function);
  out->domain = a.domain;
  out->bus = a.bus;
  out->device = a.device;
  out->pciDeviceId = id.device_id;
  if (version == PciVersion::kV1) return;
  out->pciSubSystemId = id.subsystem_id;
  if (version == PciVersion::kV2) return;
  std::snprintf(out->busId, sizeof(out->busId), "%08X:%02X:%02X.%X", a.domain, a.bus, a.device,
                a.function);
}

nvmlReturn_t pci_info(const char* fn, nvmlDevice_t device, nvmlPciInfo_t* pci, PciVersion version) {
  DeviceCall call;
  if (nvmlReturn_t rc = begin(fn, device, pci != nullptr, call); rc != NVML_SUCCESS) return rc;
  if (!call.gpu->pci) return NVML_ERROR_NOT_SUPPORTED;
  fill_pci(*call.gpu->pci, version, pci);
  return NVML_SUCCESS;
}

nvmlReturn_t clock_mhz(const char* fn, nvmlDevice_t device, int type, unsigned* mhz,
                       std::array<std::optional<unsigned>, 4> Gpu::*table) {
  DeviceCall call;
  bool args_ok = mhz != nullptr && type >= 0 && type < 4;
  if (nvmlReturn_t rc = begin(fn, device, args_ok, call); rc != NVML_SUCCESS) return rc;
  const auto& value = (call.gpu->*table)[static_cast<std::size_t>(type)];
  if (!value) return NVML_ERROR_NOT_SUPPORTED;
  *mhz = *value;
  return NVML_SUCCESS;
}

// Processes that made themselves known as the driver would see them: with
// GPUVET_FAKE_NVML_PROCESS_DIR set, each line of DIR/<the GPU's UUID> is a PID running on this
// GPU (a test job writes `echo $$ >> "$DIR/$CUDA_VISIBLE_DEVICES"`, as if it had opened a CUDA
// context on the device it was given). Read at every call, so the list follows the test.
void append_registered_processes(const std::optional<std::string>& uuid,
                                 std::vector<Process>& processes) {
  const char* dir = std::getenv("GPUVET_FAKE_NVML_PROCESS_DIR");
  if (dir == nullptr || *dir == '\0' || !uuid) return;
  std::ifstream f(std::string(dir) + "/" + *uuid);
  for (std::string line; std::getline(f, line);) {
    char* end = nullptr;
    const unsigned long pid = std::strtoul(line.c_str(), &end, 10);
    if (end == line.c_str() || pid == 0 || pid > 0xFFFFFFFFul) continue;
    Process p;
    p.pid = static_cast<unsigned>(pid);
    p.used_memory = 512ull << 20;
    processes.push_back(p);
  }
}

// NVML's count protocol: *count in is the capacity, out the number there are; too small
// (0 included, with infos allowed to be NULL) is INSUFFICIENT_SIZE with the count needed.
template <class Info>
nvmlReturn_t running_processes(const char* fn, nvmlDevice_t device, unsigned* count, Info* infos) {
  DeviceCall call;
  if (nvmlReturn_t rc = begin(fn, device, count != nullptr, call); rc != NVML_SUCCESS) return rc;
  if (!call.gpu->processes) return NVML_ERROR_NOT_SUPPORTED;
  std::vector<Process> processes = *call.gpu->processes;
  append_registered_processes(call.gpu->uuid, processes);
  auto needed = static_cast<unsigned>(processes.size());
  if (*count < needed) {
    *count = needed;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (needed > 0 && infos == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < needed; ++i) {
    infos[i] = Info{};
    infos[i].pid = processes[i].pid;
    infos[i].usedGpuMemory = processes[i].used_memory;
    if constexpr (std::is_same_v<Info, nvmlProcessInfo_t>) {
      infos[i].gpuInstanceId = processes[i].gpu_instance_id;
      infos[i].computeInstanceId = processes[i].compute_instance_id;
    }
  }
  *count = needed;
  return NVML_SUCCESS;
}

// Two-device calls: both handles valid; faults of either GPU, then the scenario's.
nvmlReturn_t begin_pair(const char* fn, nvmlDevice_t device1, nvmlDevice_t device2, bool args_ok,
                        std::shared_ptr<const Scenario>& s, const PairInfo*& pair) {
  s = Library::get().scenario();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  auto i1 = index_of(*s, device1);
  auto i2 = index_of(*s, device2);
  if (!i1 || !i2 || !args_ok) return NVML_ERROR_INVALID_ARGUMENT;
  const Fault* fault = find_fault(s->gpus[*i1].faults, fn, true);
  if (fault == nullptr) fault = find_fault(s->gpus[*i2].faults, fn, true);
  if (fault == nullptr) fault = find_fault(s->faults, fn, true);
  if (nvmlReturn_t rc = inject(fault); rc != NVML_SUCCESS) return rc;
  pair = &s->pair(*i1, *i2);
  return NVML_SUCCESS;
}

// The link a per-link call asks about: NOT_SUPPORTED for a GPU without NVLink, INVALID_ARGUMENT
// past its last link.
nvmlReturn_t begin_link(const char* fn, nvmlDevice_t device, unsigned link, bool args_ok,
                        DeviceCall& call, const NvLink*& out) {
  if (nvmlReturn_t rc = begin(fn, device, args_ok, call); rc != NVML_SUCCESS) return rc;
  if (!call.gpu->nvlinks) return NVML_ERROR_NOT_SUPPORTED;
  if (link >= call.gpu->nvlinks->size()) return NVML_ERROR_INVALID_ARGUMENT;
  out = &(*call.gpu->nvlinks)[link];
  return NVML_SUCCESS;
}

nvmlReturn_t nvlink_remote_pci(const char* fn, nvmlDevice_t device, unsigned link,
                               nvmlPciInfo_t* pci, PciVersion version) {
  DeviceCall call;
  const NvLink* nvlink = nullptr;
  nvmlReturn_t rc = begin_link(fn, device, link, pci != nullptr, call, nvlink);
  if (rc != NVML_SUCCESS) return rc;
  if (!nvlink->remote) return NVML_ERROR_NOT_SUPPORTED;
  fill_pci(*nvlink->remote, version, pci);
  return NVML_SUCCESS;
}

nvmlReturn_t cuda_driver_version(const char* fn, int* version) {
  std::shared_ptr<const Scenario> s;
  if (nvmlReturn_t rc = begin_system(fn, version != nullptr, s); rc != NVML_SUCCESS) return rc;
  *version = s->cuda_driver_version;
  return NVML_SUCCESS;
}

nvmlReturn_t device_count(const char* fn, unsigned* count) {
  std::shared_ptr<const Scenario> s;
  if (nvmlReturn_t rc = begin_system(fn, count != nullptr, s); rc != NVML_SUCCESS) return rc;
  *count = static_cast<unsigned>(s->gpus.size());
  return NVML_SUCCESS;
}

// A GPU's "*" fault does not reach its handle lookup: only handle_error (or the top level) does.
nvmlReturn_t handle_by_index(const char* fn, unsigned index, nvmlDevice_t* device) {
  std::shared_ptr<const Scenario> s = Library::get().scenario();
  if (!s) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || index >= s->gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
  const Fault* fault = find_fault(s->gpus[index].faults, fn, /*wildcard=*/false);
  if (fault == nullptr) fault = find_fault(s->faults, fn, true);
  if (nvmlReturn_t rc = inject(fault); rc != NVML_SUCCESS) return rc;
  *device = &g_handles[index];
  return NVML_SUCCESS;
}

unsigned long long now_us() {
  using namespace std::chrono;
  return static_cast<unsigned long long>(
      duration_cast<microseconds>(system_clock::now().time_since_epoch()).count());
}

}  // namespace
}  // namespace fake_nvml

// ---------------------------------------------------------------------------------------------
// The exported C API. Signatures follow nvml.h; the static_asserts at the end check them against
// nvml_api.h's function-pointer types.

using namespace fake_nvml;

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit(void) { return Library::get().init(); }
// Not NVML: what a test reads back (dlsym) to count the calls above.
FAKE_NVML_EXPORT unsigned gpuvetFakeNvmlInitCalls(void) { return g_init_calls.load(); }
// Calls of nvmlDeviceGetViolationStatus (the costly clock-event counters): a sampler's tests
// check how often it reads them.
FAKE_NVML_EXPORT unsigned gpuvetFakeNvmlViolationCalls(void) { return g_violation_calls.load(); }
FAKE_NVML_EXPORT unsigned gpuvetFakeNvmlShutdownCalls(void) { return g_shutdown_calls.load(); }
#if !FAKE_NVML_OLD_DRIVER
FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) { return Library::get().init(); }
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown(void) { return Library::get().shutdown(); }

FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  if (result == NVML_ERROR_UNKNOWN) {
    if (const char* why = Library::get().init_error()) return why;
  }
  return error_text(result);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  std::shared_ptr<const Scenario> s;
  if (nvmlReturn_t rc = begin_system(__func__, version != nullptr, s); rc != NVML_SUCCESS) {
    return rc;
  }
  return copy_string(s->driver_version, version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  std::shared_ptr<const Scenario> s;
  if (nvmlReturn_t rc = begin_system(__func__, version != nullptr, s); rc != NVML_SUCCESS) {
    return rc;
  }
  return copy_string(s->nvml_version, version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) {
  return cuda_driver_version(__func__, cudaDriverVersion);
}
#if !FAKE_NVML_OLD_DRIVER
FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  return cuda_driver_version(__func__, cudaDriverVersion);
}
#endif

// Names come from every GPU's process list; as in NVML, a short buffer gets a cropped name.
FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char* name,
                                                       unsigned int length) {
  std::shared_ptr<const Scenario> s;
  nvmlReturn_t rc = begin_system(__func__, name != nullptr && length > 0, s);
  if (rc != NVML_SUCCESS) return rc;
  for (const Gpu& gpu : s->gpus) {
    if (!gpu.processes) continue;
    for (const Process& p : *gpu.processes) {
      if (p.pid != pid || !p.name) continue;
      std::size_t n = std::min<std::size_t>(p.name->size(), length - 1);
      std::memcpy(name, p.name->data(), n);
      name[n] = '\0';
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) {
  return device_count(__func__, deviceCount);
}
#if !FAKE_NVML_OLD_DRIVER
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  return device_count(__func__, deviceCount);
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return handle_by_index(__func__, index, device);
}
#if !FAKE_NVML_OLD_DRIVER
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                            nvmlDevice_t* device) {
  return handle_by_index(__func__, index, device);
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                                                unsigned int length) {
  return device_string(__func__, device, name, length, &Gpu::name);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                                unsigned int length) {
  return device_string(__func__, device, uuid, length, &Gpu::uuid);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial,
                                                  unsigned int length) {
  return device_string(__func__, device, serial, length, &Gpu::serial);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char* version,
                                                        unsigned int length) {
  return device_string(__func__, device, version, length, &Gpu::vbios);
}

#if !FAKE_NVML_OLD_DRIVER
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return pci_info(__func__, device, pci, PciVersion::kV3);
}
#endif
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return pci_info(__func__, device, pci, PciVersion::kV2);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return pci_info(__func__, device, pci, PciVersion::kV1);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device,
                                                                  unsigned int* currLinkGen) {
  return device_value(__func__, device, currLinkGen, &Gpu::pcie_gen);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device,
                                                                 unsigned int* maxLinkGen) {
  return device_value(__func__, device, maxLinkGen, &Gpu::pcie_gen_max);
}
#if !FAKE_NVML_OLD_DRIVER
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* maxLinkGenDevice) {
  return device_value(__func__, device, maxLinkGenDevice, &Gpu::pcie_gen_device_max);
}
#endif
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device,
                                                             unsigned int* currLinkWidth) {
  return device_value(__func__, device, currLinkWidth, &Gpu::pcie_width);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device,
                                                            unsigned int* maxLinkWidth) {
  return device_value(__func__, device, maxLinkWidth, &Gpu::pcie_width_max);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device,
                                                             unsigned int* value) {
  return device_value(__func__, device, value, &Gpu::pcie_replay_counter);
}

#if !FAKE_NVML_OLD_DRIVER
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  return device_value(__func__, device, node, &Gpu::numa_node);
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize,
                                                       unsigned long* cpuSet) {
  DeviceCall call;
  nvmlReturn_t rc = begin(__func__, device, cpuSetSize > 0 && cpuSet != nullptr, call);
  if (rc != NVML_SUCCESS) return rc;
  if (!call.gpu->cpu_affinity) return NVML_ERROR_NOT_SUPPORTED;
  const auto& words = *call.gpu->cpu_affinity;
  for (unsigned i = 0; i < cpuSetSize; ++i) cpuSet[i] = i < words.size() ? words[i] : 0;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type,
                                                     unsigned int* clock) {
  return clock_mhz(__func__, device, type, clock, &Gpu::clocks_mhz);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, int type,
                                                        unsigned int* clock) {
  return clock_mhz(__func__, device, type, clock, &Gpu::max_clocks_mhz);
}

#if !FAKE_NVML_OLD_DRIVER
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(
    nvmlDevice_t device, unsigned long long* clocksEventReasons) {
  return device_value(__func__, device, clocksEventReasons, &Gpu::clock_event_reasons);
}
#endif
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(
    nvmlDevice_t device, unsigned long long* clocksThrottleReasons) {
  return device_value(__func__, device, clocksThrottleReasons, &Gpu::clock_event_reasons);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device, int perfPolicyType,
                                                           nvmlViolationTime_t* violTime) {
  ++g_violation_calls;
  DeviceCall call;
  bool args_ok = violTime != nullptr && perfPolicyType >= 0 && perfPolicyType < 6;
  if (nvmlReturn_t rc = begin(__func__, device, args_ok, call); rc != NVML_SUCCESS) return rc;
  const auto& ns = call.gpu->violation_ns[static_cast<std::size_t>(perfPolicyType)];
  if (!ns) return NVML_ERROR_NOT_SUPPORTED;
  violTime->referenceTime = now_us();  // as NVML: a wall-clock timestamp in microseconds
  violTime->violationTime = *ns;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensorType,
                                                       unsigned int* temp) {
  DeviceCall call;
  bool args_ok = temp != nullptr && sensorType == NVML_TEMPERATURE_GPU;
  if (nvmlReturn_t rc = begin(__func__, device, args_ok, call); rc != NVML_SUCCESS) return rc;
  if (!call.gpu->temperature_c) return NVML_ERROR_NOT_SUPPORTED;
  *temp = *call.gpu->temperature_c;
  return NVML_SUCCESS;
}

// Thresholds 0-3 come from the scenario; 4-7 (acoustic, GPS) exist in NVML but not here.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device,
                                                                int thresholdType,
                                                                unsigned int* temp) {
  DeviceCall call;
  bool args_ok = temp != nullptr && thresholdType >= 0 && thresholdType < 8;
  if (nvmlReturn_t rc = begin(__func__, device, args_ok, call); rc != NVML_SUCCESS) return rc;
  if (thresholdType >= 4) return NVML_ERROR_NOT_SUPPORTED;
  const auto& value = call.gpu->thresholds_c[static_cast<std::size_t>(thresholdType)];
  if (!value) return NVML_ERROR_NOT_SUPPORTED;
  *temp = *value;
  return NVML_SUCCESS;
}

#if !FAKE_NVML_OLD_DRIVER
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMarginTemperature(nvmlDevice_t device,
                                                             nvmlMarginTemperature_t* margin) {
  DeviceCall call;
  if (nvmlReturn_t rc = begin(__func__, device, margin != nullptr, call); rc != NVML_SUCCESS) {
    return rc;
  }
  if (margin->version != NVML_MARGIN_TEMPERATURE_V1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (!call.gpu->margin_c) return NVML_ERROR_NOT_SUPPORTED;
  margin->marginTemperature = *call.gpu->margin_c;
  return NVML_SUCCESS;
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return device_value(__func__, device, power, &Gpu::power_draw_mw);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device,
                                                                unsigned int* limit) {
  return device_value(__func__, device, limit, &Gpu::power_limit_mw);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device,
                                                              unsigned int* limit) {
  return device_value(__func__, device, limit, &Gpu::power_enforced_limit_mw);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                                       unsigned int* defaultLimit) {
  return device_value(__func__, device, defaultLimit, &Gpu::power_default_limit_mw);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, int* current,
                                                   int* pending) {
  DeviceCall call;
  nvmlReturn_t rc = begin(__func__, device, current != nullptr && pending != nullptr, call);
  if (rc != NVML_SUCCESS) return rc;
  if (!call.gpu->ecc_enabled || !call.gpu->ecc_pending) return NVML_ERROR_NOT_SUPPORTED;
  *current = *call.gpu->ecc_enabled ? 1 : 0;
  *pending = *call.gpu->ecc_pending ? 1 : 0;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int errorType,
                                                          int counterType,
                                                          unsigned long long* eccCounts) {
  DeviceCall call;
  bool args_ok = eccCounts != nullptr &&
                 (errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED ||
                  errorType == NVML_MEMORY_ERROR_TYPE_UNCORRECTED) &&
                 (counterType == NVML_VOLATILE_ECC || counterType == NVML_AGGREGATE_ECC);
  if (nvmlReturn_t rc = begin(__func__, device, args_ok, call); rc != NVML_SUCCESS) return rc;
  const EccCounters& counters = call.gpu->ecc_counters[static_cast<std::size_t>(counterType)];
  const auto& value =
      errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED ? counters.corrected : counters.uncorrected;
  if (!value) return NVML_ERROR_NOT_SUPPORTED;
  *eccCounts = *value;
  return NVML_SUCCESS;
}

// The scenario gives counts; the addresses are made up (distinct, page-aligned).
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, int cause,
                                                        unsigned int* pageCount,
                                                        unsigned long long* addresses) {
  DeviceCall call;
  bool args_ok = pageCount != nullptr && (cause == 0 || cause == 1);
  if (nvmlReturn_t rc = begin(__func__, device, args_ok, call); rc != NVML_SUCCESS) return rc;
  const auto& pages = call.gpu->retired_pages[static_cast<std::size_t>(cause)];
  if (!pages) return NVML_ERROR_NOT_SUPPORTED;
  if (*pageCount < *pages) {
    *pageCount = *pages;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (*pages > 0 && addresses == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < *pages; ++i) {
    addresses[i] = (static_cast<unsigned long long>(cause) << 32) + 0x1000ULL * (i + 1);
  }
  *pageCount = *pages;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                                     int* isPending) {
  return device_value(__func__, device, isPending, &Gpu::retired_pending);
}

#if !FAKE_NVML_OLD_DRIVER
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows,
                                                        unsigned int* uncRows,
                                                        unsigned int* isPending,
                                                        unsigned int* failureOccurred) {
  DeviceCall call;
  bool args_ok = corrRows != nullptr && uncRows != nullptr && isPending != nullptr &&
                 failureOccurred != nullptr;
  if (nvmlReturn_t rc = begin(__func__, device, args_ok, call); rc != NVML_SUCCESS) return rc;
  if (!call.gpu->remapped) return NVML_ERROR_NOT_SUPPORTED;
  const RemappedRows& r = *call.gpu->remapped;
  *corrRows = r.correctable;
  *uncRows = r.uncorrectable;
  *isPending = r.pending ? 1 : 0;
  *failureOccurred = r.failure ? 1 : 0;
  return NVML_SUCCESS;
}
#endif

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return device_value(__func__, device, memory, &Gpu::memory);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                            nvmlUtilization_t* utilization) {
  return device_value(__func__, device, utilization, &Gpu::utilization);
}

#if !FAKE_NVML_OLD_DRIVER
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                      unsigned int* infoCount,
                                                                      nvmlProcessInfo_t* infos) {
  return running_processes(__func__, device, infoCount, infos);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                      unsigned int* infoCount,
                                                                      nvmlProcessInfo_t* infos) {
  return running_processes(__func__, device, infoCount, infos);
}
#endif
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                                   unsigned int* infoCount,
                                                                   nvmlProcessInfo_v1_t* infos) {
  return running_processes(__func__, device, infoCount, infos);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                                   unsigned int* pendingMode) {
  DeviceCall call;
  nvmlReturn_t rc = begin(__func__, device, currentMode != nullptr && pendingMode != nullptr, call);
  if (rc != NVML_SUCCESS) return rc;
  if (!call.gpu->mig) return NVML_ERROR_NOT_SUPPORTED;
  *currentMode = call.gpu->mig->first;
  *pendingMode = call.gpu->mig->second;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, int* mode) {
  return device_value(__func__, device, mode, &Gpu::persistence);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, int* pState) {
  return device_value(__func__, device, pState, &Gpu::pstate);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1,
                                                                  nvmlDevice_t device2,
                                                                  int* pathInfo) {
  std::shared_ptr<const Scenario> s;
  const PairInfo* pair = nullptr;
  nvmlReturn_t rc = begin_pair(__func__, device1, device2, pathInfo != nullptr, s, pair);
  if (rc != NVML_SUCCESS) return rc;
  if (!pair->level) return NVML_ERROR_NOT_SUPPORTED;
  *pathInfo = *pair->level;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                                     int p2pIndex, int* p2pStatus) {
  std::shared_ptr<const Scenario> s;
  const PairInfo* pair = nullptr;
  bool args_ok = p2pStatus != nullptr && p2pIndex >= 0 && p2pIndex < 5;
  nvmlReturn_t rc = begin_pair(__func__, device1, device2, args_ok, s, pair);
  if (rc != NVML_SUCCESS) return rc;
  const auto& status = pair->p2p[static_cast<std::size_t>(p2pIndex)];
  if (!status) return NVML_ERROR_NOT_SUPPORTED;
  *p2pStatus = *status;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                       int* isActive) {
  DeviceCall call;
  const NvLink* nvlink = nullptr;
  nvmlReturn_t rc = begin_link(__func__, device, link, isActive != nullptr, call, nvlink);
  if (rc != NVML_SUCCESS) return rc;
  if (!nvlink->active) return NVML_ERROR_NOT_SUPPORTED;
  *isActive = *nvlink->active ? 1 : 0;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t device, unsigned int link,
                                                         unsigned int* version) {
  DeviceCall call;
  const NvLink* nvlink = nullptr;
  nvmlReturn_t rc = begin_link(__func__, device, link, version != nullptr, call, nvlink);
  if (rc != NVML_SUCCESS) return rc;
  if (!nvlink->version) return NVML_ERROR_NOT_SUPPORTED;
  *version = *nvlink->version;
  return NVML_SUCCESS;
}

#if !FAKE_NVML_OLD_DRIVER
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                                  unsigned int link,
                                                                  nvmlPciInfo_t* pci) {
  return nvlink_remote_pci(__func__, device, link, pci, PciVersion::kV3);
}
#endif
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t device,
                                                               unsigned int link,
                                                               nvmlPciInfo_t* pci) {
  return nvlink_remote_pci(__func__, device, link, pci, PciVersion::kV2);
}

#if !FAKE_NVML_OLD_DRIVER
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device,
                                                         nvmlGpuFabricInfo_t* gpuFabricInfo) {
  return device_value(__func__, device, gpuFabricInfo, &Gpu::fabric);
}
#endif

#if !FAKE_NVML_OLD_DRIVER
// Only field 230 (the recovery action) is known; every other field is NOT_SUPPORTED in its
// value, as NVML answers for a field the device lacks.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                                       nvmlFieldValue_t* values) {
  DeviceCall call;
  if (nvmlReturn_t rc = begin(__func__, device, values != nullptr && valuesCount > 0, call);
      rc != NVML_SUCCESS)
    return rc;
  for (int i = 0; i < valuesCount; ++i) {
    nvmlFieldValue_t& v = values[i];
    if (v.fieldId == NVML_FI_DEV_GET_GPU_RECOVERY_ACTION && call.gpu->recovery_action) {
      v.nvmlReturn = NVML_SUCCESS;
      v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      v.value.uiVal = *call.gpu->recovery_action;
    } else {
      v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    }
  }
  return NVML_SUCCESS;
}
#endif

// ---------------------------------------------------------------------------------------------
// The exports must have the signatures the loader casts them to.

#define FAKE_NVML_SIGNATURE(fn, type) \
  static_assert(std::is_same_v<decltype(&fn), type>, #fn " does not match " #type);

FAKE_NVML_SIGNATURE(nvmlInit, nvmlInit_fn)
FAKE_NVML_SIGNATURE(nvmlShutdown, nvmlShutdown_fn)
FAKE_NVML_SIGNATURE(nvmlErrorString, nvmlErrorString_fn)
FAKE_NVML_SIGNATURE(nvmlSystemGetDriverVersion, nvmlSystemGetString_fn)
FAKE_NVML_SIGNATURE(nvmlSystemGetNVMLVersion, nvmlSystemGetString_fn)
FAKE_NVML_SIGNATURE(nvmlSystemGetCudaDriverVersion, nvmlSystemGetCudaDriverVersion_fn)
FAKE_NVML_SIGNATURE(nvmlSystemGetProcessName, nvmlSystemGetProcessName_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetCount, nvmlDeviceGetCount_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetHandleByIndex, nvmlDeviceGetHandleByIndex_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetName, nvmlDeviceGetString_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetUUID, nvmlDeviceGetString_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetSerial, nvmlDeviceGetString_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetVbiosVersion, nvmlDeviceGetString_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetPciInfo_v2, nvmlDeviceGetPciInfo_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetPciInfo, nvmlDeviceGetPciInfo_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetCurrPcieLinkGeneration, nvmlDeviceGetUInt_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetMaxPcieLinkGeneration, nvmlDeviceGetUInt_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetCurrPcieLinkWidth, nvmlDeviceGetUInt_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetMaxPcieLinkWidth, nvmlDeviceGetUInt_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetPcieReplayCounter, nvmlDeviceGetUInt_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetCpuAffinity, nvmlDeviceGetCpuAffinity_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetClockInfo, nvmlDeviceGetClockInfo_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetMaxClockInfo, nvmlDeviceGetClockInfo_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetCurrentClocksThrottleReasons, nvmlDeviceGetULL_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetViolationStatus, nvmlDeviceGetViolationStatus_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetTemperature, nvmlDeviceGetTemperature_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetTemperatureThreshold, nvmlDeviceGetTemperature_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetPowerUsage, nvmlDeviceGetUInt_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetPowerManagementLimit, nvmlDeviceGetUInt_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetEnforcedPowerLimit, nvmlDeviceGetUInt_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetPowerManagementDefaultLimit, nvmlDeviceGetUInt_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetEccMode, nvmlDeviceGetEnablePair_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetTotalEccErrors, nvmlDeviceGetTotalEccErrors_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetRetiredPages, nvmlDeviceGetRetiredPages_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetRetiredPagesPendingStatus, nvmlDeviceGetInt_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetMemoryInfo, nvmlDeviceGetMemoryInfo_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetUtilizationRates, nvmlDeviceGetUtilizationRates_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetComputeRunningProcesses, nvmlDeviceGetComputeRunningProcessesV1_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetPersistenceMode, nvmlDeviceGetInt_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetPerformanceState, nvmlDeviceGetInt_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetTopologyCommonAncestor, nvmlDeviceGetTopologyCommonAncestor_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetP2PStatus, nvmlDeviceGetP2PStatus_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetNvLinkState, nvmlDeviceGetNvLinkState_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetNvLinkVersion, nvmlDeviceGetNvLinkVersion_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetNvLinkRemotePciInfo, nvmlDeviceGetNvLinkRemotePciInfo_fn)
// nvmlDeviceGetMigMode has nvml.h's (unsigned*, unsigned*); nvml_api.h has no exact type for it.
#if !FAKE_NVML_OLD_DRIVER
FAKE_NVML_SIGNATURE(nvmlInit_v2, nvmlInit_fn)
FAKE_NVML_SIGNATURE(nvmlSystemGetCudaDriverVersion_v2, nvmlSystemGetCudaDriverVersion_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetCount_v2, nvmlDeviceGetCount_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetHandleByIndex_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetPciInfo_v3, nvmlDeviceGetPciInfo_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetGpuMaxPcieLinkGeneration, nvmlDeviceGetUInt_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetNumaNodeId, nvmlDeviceGetUInt_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetCurrentClocksEventReasons, nvmlDeviceGetULL_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetMarginTemperature, nvmlDeviceGetMarginTemperature_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetRemappedRows, nvmlDeviceGetRemappedRows_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetComputeRunningProcesses_v3,
                    nvmlDeviceGetComputeRunningProcesses_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetComputeRunningProcesses_v2,
                    nvmlDeviceGetComputeRunningProcesses_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetNvLinkRemotePciInfo_v2, nvmlDeviceGetNvLinkRemotePciInfo_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetGpuFabricInfo, nvmlDeviceGetGpuFabricInfo_fn)
FAKE_NVML_SIGNATURE(nvmlDeviceGetFieldValues, nvmlDeviceGetFieldValues_fn)
#endif
