// tests/fake_nvml_test.cc — the fake NVML (tests/fake_nvml), loaded with dlopen as gpuvet loads
// the driver's library: its exports, the values it reads from scenario files, NVML's calling
// conventions, injected faults and hangs, and malformed scenarios.
#include "probe/nvml_api.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuvet {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kScenarioEnv = "GPUVET_FAKE_NVML_SCENARIO";

std::string scenario(const std::string& name) {
  return std::string(GPUVET_TEST_DATA) + "/scenarios/" + name;
}

// A successful uint answer, to compare with FakeNvmlTest::uint().
std::pair<nvmlReturn_t, unsigned> ok(unsigned value) { return {NVML_SUCCESS, value}; }

long long elapsed_ms(Clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count();
}

// One dlopen'd build of the fake. Never closed: a thread may still sleep in an injected hang.
class Library {
 public:
  explicit Library(const char* path) : handle_(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
  }
  bool has(const char* name) const { return dlsym(handle_, name) != nullptr; }
  template <class F>
  F fn(const char* name) const {
    void* p = dlsym(handle_, name);
    if (p == nullptr) throw std::runtime_error(std::string("missing symbol ") + name);
    return reinterpret_cast<F>(p);
  }

 private:
  void* handle_;
};

const Library& fake() {
  static const Library* lib = new Library(GPUVET_FAKE_NVML);
  return *lib;
}
const Library& fake_old() {
  static const Library* lib = new Library(GPUVET_FAKE_NVML_OLD);
  return *lib;
}

// Each test starts and ends with both builds shut down and no scenario set.
class FakeNvmlTest : public ::testing::Test {
 protected:
  // Other tests in the binary may load the same library: start from a full shutdown too.
  void SetUp() override {
    shut_down_fully();
    unsetenv(kScenarioEnv);
  }
  void TearDown() override {
    shut_down_fully();
    unsetenv(kScenarioEnv);
    for (const auto& path : temp_files_) fs::remove(path);
  }

  static void shut_down_fully() {
    for (const Library* lib : {&fake(), &fake_old()}) {
      auto shutdown = lib->fn<nvmlShutdown_fn>("nvmlShutdown");
      for (int i = 0; i < 1000 && shutdown() == NVML_SUCCESS; ++i) {
      }
    }
  }

  // Sets the scenario (a file under tests/scenarios, or an absolute path) and calls nvmlInit_v2.
  nvmlReturn_t init(const std::string& file, const Library& lib = fake()) {
    std::string path = file.empty() || file[0] == '/' ? file : scenario(file);
    setenv(kScenarioEnv, path.c_str(), 1);
    return lib.has("nvmlInit_v2") ? lib.fn<nvmlInit_fn>("nvmlInit_v2")()
                                  : lib.fn<nvmlInit_fn>("nvmlInit")();
  }

  // A scenario written to a temporary file; returns its path.
  std::string write_scenario(const std::string& text) {
    static std::atomic<int> counter{0};
    std::string path = ::testing::TempDir() + "fake-nvml-" + std::to_string(::getpid()) + "-" +
                       std::to_string(counter++) + ".json";
    std::ofstream(path) << text;
    temp_files_.push_back(path);
    return path;
  }

  nvmlDevice_t handle(unsigned index, const Library& lib = fake()) {
    nvmlDevice_t device = nullptr;
    const char* name = lib.has("nvmlDeviceGetHandleByIndex_v2") ? "nvmlDeviceGetHandleByIndex_v2"
                                                                : "nvmlDeviceGetHandleByIndex";
    EXPECT_EQ(lib.fn<nvmlDeviceGetHandleByIndex_fn>(name)(index, &device), NVML_SUCCESS);
    return device;
  }

  unsigned count() {
    unsigned n = 12345;
    EXPECT_EQ(fake().fn<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount_v2")(&n), NVML_SUCCESS);
    return n;
  }

  std::string text(const char* fn, nvmlDevice_t device, const Library& lib = fake()) {
    char buffer[128] = {};
    nvmlReturn_t rc = lib.fn<nvmlDeviceGetString_fn>(fn)(device, buffer, sizeof(buffer));
    return rc == NVML_SUCCESS ? std::string(buffer) : "error " + std::to_string(rc);
  }

  std::pair<nvmlReturn_t, unsigned> uint(const char* fn, nvmlDevice_t device) {
    unsigned value = 12345;
    nvmlReturn_t rc = fake().fn<nvmlDeviceGetUInt_fn>(fn)(device, &value);
    return {rc, value};
  }

  std::string error_string(nvmlReturn_t rc) {
    return fake().fn<nvmlErrorString_fn>("nvmlErrorString")(rc);
  }

  // Every answer the fake gives about one GPU, as text: scenarios compare by this.
  std::string describe(nvmlDevice_t d) {
    const Library& lib = fake();
    std::ostringstream out;
    auto put = [&](const char* what, nvmlReturn_t rc, auto... values) {
      out << what << "=" << rc;
      if (rc == NVML_SUCCESS) ((out << " " << values), ...);
      out << "\n";
    };
    for (const char* fn : {"nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetSerial",
                           "nvmlDeviceGetVbiosVersion"}) {
      out << fn << "=" << text(fn, d) << "\n";
    }
    nvmlPciInfo_t pci{};
    nvmlReturn_t rc = lib.fn<nvmlDeviceGetPciInfo_fn>("nvmlDeviceGetPciInfo_v3")(d, &pci);
    put("pci", rc, pci.busId, pci.busIdLegacy, pci.pciDeviceId, pci.pciSubSystemId);
    for (const char* fn :
         {"nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkGeneration",
          "nvmlDeviceGetGpuMaxPcieLinkGeneration", "nvmlDeviceGetCurrPcieLinkWidth",
          "nvmlDeviceGetMaxPcieLinkWidth", "nvmlDeviceGetPcieReplayCounter",
          "nvmlDeviceGetNumaNodeId", "nvmlDeviceGetPowerUsage", "nvmlDeviceGetPowerManagementLimit",
          "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetPowerManagementDefaultLimit"}) {
      auto [urc, value] = uint(fn, d);
      put(fn, urc, value);
    }
    for (const char* fn : {"nvmlDeviceGetPersistenceMode", "nvmlDeviceGetPerformanceState",
                           "nvmlDeviceGetRetiredPagesPendingStatus"}) {
      int value = 0;
      put(fn, lib.fn<nvmlDeviceGetInt_fn>(fn)(d, &value), value);
    }
    unsigned long mask[4] = {};
    put("affinity", lib.fn<nvmlDeviceGetCpuAffinity_fn>("nvmlDeviceGetCpuAffinity")(d, 4, mask),
        mask[0], mask[1], mask[2], mask[3]);
    for (int type = 0; type < 4; ++type) {
      unsigned now = 0, max = 0;
      put("clock", lib.fn<nvmlDeviceGetClockInfo_fn>("nvmlDeviceGetClockInfo")(d, type, &now), now);
      put("max_clock",
          lib.fn<nvmlDeviceGetClockInfo_fn>("nvmlDeviceGetMaxClockInfo")(d, type, &max), max);
    }
    unsigned long long reasons = 0;
    put("reasons",
        lib.fn<nvmlDeviceGetULL_fn>("nvmlDeviceGetCurrentClocksEventReasons")(d, &reasons),
        reasons);
    for (int policy = 0; policy < 6; ++policy) {
      nvmlViolationTime_t v{};
      put("violation",
          lib.fn<nvmlDeviceGetViolationStatus_fn>("nvmlDeviceGetViolationStatus")(d, policy, &v),
          v.violationTime);
    }
    unsigned temp = 0;
    put("temp", lib.fn<nvmlDeviceGetTemperature_fn>("nvmlDeviceGetTemperature")(d, 0, &temp), temp);
    for (int t = 0; t < 4; ++t) {
      put("threshold",
          lib.fn<nvmlDeviceGetTemperature_fn>("nvmlDeviceGetTemperatureThreshold")(d, t, &temp),
          temp);
    }
    nvmlMarginTemperature_t margin{NVML_MARGIN_TEMPERATURE_V1, 0};
    put("margin",
        lib.fn<nvmlDeviceGetMarginTemperature_fn>("nvmlDeviceGetMarginTemperature")(d, &margin),
        margin.marginTemperature);
    int current = 0, pending = 0;
    put("ecc", lib.fn<nvmlDeviceGetEnablePair_fn>("nvmlDeviceGetEccMode")(d, &current, &pending),
        current, pending);
    for (int type = 0; type < 2; ++type) {
      for (int counter = 0; counter < 2; ++counter) {
        unsigned long long n = 0;
        put("ecc_errors",
            lib.fn<nvmlDeviceGetTotalEccErrors_fn>("nvmlDeviceGetTotalEccErrors")(d, type, counter,
                                                                                  &n),
            n);
      }
    }
    unsigned rows[4] = {};
    put("remapped",
        lib.fn<nvmlDeviceGetRemappedRows_fn>("nvmlDeviceGetRemappedRows")(d, &rows[0], &rows[1],
                                                                          &rows[2], &rows[3]),
        rows[0], rows[1], rows[2], rows[3]);
    nvmlMemory_t memory{};
    put("memory", lib.fn<nvmlDeviceGetMemoryInfo_fn>("nvmlDeviceGetMemoryInfo")(d, &memory),
        memory.total, memory.free, memory.used);
    nvmlUtilization_t util{};
    put("util", lib.fn<nvmlDeviceGetUtilizationRates_fn>("nvmlDeviceGetUtilizationRates")(d, &util),
        util.gpu, util.memory);
    unsigned mig[2] = {};
    put("mig",
        lib.fn<nvmlReturn_t (*)(nvmlDevice_t, unsigned*, unsigned*)>("nvmlDeviceGetMigMode")(
            d, &mig[0], &mig[1]),
        mig[0], mig[1]);
    unsigned processes = 0;
    put("processes",
        lib.fn<nvmlDeviceGetComputeRunningProcesses_fn>("nvmlDeviceGetComputeRunningProcesses_v3")(
            d, &processes, nullptr),
        processes);
    int active = 0;
    put("nvlink0", lib.fn<nvmlDeviceGetNvLinkState_fn>("nvmlDeviceGetNvLinkState")(d, 0, &active),
        active);
    nvmlGpuFabricInfo_t fabric{};
    put("fabric", lib.fn<nvmlDeviceGetGpuFabricInfo_fn>("nvmlDeviceGetGpuFabricInfo")(d, &fabric),
        int(fabric.state), fabric.status, fabric.cliqueId);
    return out.str();
  }

 private:
  std::vector<std::string> temp_files_;
};

// ---------------------------------------------------------------------------------------------
// Exports.

#define FAKE_NVML_TEST_NAME(fn) #fn,
const std::vector<std::string> kGpuvetSymbols = {GPUVET_NVML_SYMBOLS(FAKE_NVML_TEST_NAME)};
#undef FAKE_NVML_TEST_NAME

// What drivers older than the versioned calls lack (the old-driver build leaves them out).
const std::set<std::string> kNewerSymbols = {
    "nvmlInit_v2",
    "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex_v2",
    "nvmlDeviceGetPciInfo_v3",
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetComputeRunningProcesses_v2",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetMarginTemperature",
    "nvmlDeviceGetGpuFabricInfo",
    "nvmlDeviceGetNumaNodeId",
    "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetGpuMaxPcieLinkGeneration",
    "nvmlSystemGetCudaDriverVersion_v2",
    "nvmlDeviceGetNvLinkRemotePciInfo_v2",
    "nvmlDeviceGetFieldValues",
};

TEST_F(FakeNvmlTest, ExportsEverySymbolGpuvetResolves) {
  for (const auto& name : kGpuvetSymbols) EXPECT_TRUE(fake().has(name.c_str())) << name;
}

TEST_F(FakeNvmlTest, OldDriverBuildLacksExactlyTheNewerSymbols) {
  for (const auto& name : kNewerSymbols) {
    EXPECT_NE(std::find(kGpuvetSymbols.begin(), kGpuvetSymbols.end(), name), kGpuvetSymbols.end())
        << name << " is not in GPUVET_NVML_SYMBOLS";
  }
  for (const auto& name : kGpuvetSymbols) {
    EXPECT_EQ(fake_old().has(name.c_str()), kNewerSymbols.count(name) == 0) << name;
  }
}

TEST_F(FakeNvmlTest, OldDriverBuildAnswersThroughTheOlderCalls) {
  const Library& old = fake_old();
  ASSERT_EQ(init("h200-1gpu-load.json", old), NVML_SUCCESS);
  unsigned n = 0;
  ASSERT_EQ(old.fn<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount")(&n), NVML_SUCCESS);
  EXPECT_EQ(n, 1u);
  nvmlDevice_t d = handle(0, old);
  EXPECT_EQ(text("nvmlDeviceGetName", d, old), "NVIDIA H200");
  unsigned long long reasons = 0;
  EXPECT_EQ(old.fn<nvmlDeviceGetULL_fn>("nvmlDeviceGetCurrentClocksThrottleReasons")(d, &reasons),
            NVML_SUCCESS);
  EXPECT_EQ(reasons, nvmlClocksEventReasonSwPowerCap);
  unsigned count = 1;
  nvmlProcessInfo_v1_t info[1] = {};
  EXPECT_EQ(old.fn<nvmlDeviceGetComputeRunningProcessesV1_fn>(
                "nvmlDeviceGetComputeRunningProcesses")(d, &count, info),
            NVML_SUCCESS);
  EXPECT_EQ(info[0].pid, 48213u);
  EXPECT_EQ(old.fn<nvmlShutdown_fn>("nvmlShutdown")(), NVML_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// Life cycle.

TEST_F(FakeNvmlTest, CallsBeforeInitAreUninitialized) {
  const Library& lib = fake();
  unsigned n = 0;
  EXPECT_EQ(lib.fn<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount_v2")(&n), NVML_ERROR_UNINITIALIZED);
  char buffer[80];
  EXPECT_EQ(lib.fn<nvmlSystemGetString_fn>("nvmlSystemGetDriverVersion")(buffer, sizeof(buffer)),
            NVML_ERROR_UNINITIALIZED);
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(lib.fn<nvmlDeviceGetHandleByIndex_fn>("nvmlDeviceGetHandleByIndex_v2")(0, &d),
            NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(lib.fn<nvmlShutdown_fn>("nvmlShutdown")(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(FakeNvmlTest, InitAndShutdownAreReferenceCounted) {
  const Library& lib = fake();
  auto shutdown = lib.fn<nvmlShutdown_fn>("nvmlShutdown");
  ASSERT_EQ(init("h200-1gpu-idle.json"), NVML_SUCCESS);
  nvmlDevice_t d = handle(0);
  ASSERT_EQ(lib.fn<nvmlInit_fn>("nvmlInit")(), NVML_SUCCESS);
  EXPECT_EQ(shutdown(), NVML_SUCCESS);
  EXPECT_EQ(count(), 1u);  // one init still open
  EXPECT_EQ(shutdown(), NVML_SUCCESS);
  EXPECT_EQ(uint("nvmlDeviceGetPowerUsage", d).first, NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(shutdown(), NVML_ERROR_UNINITIALIZED);
  // As in NVML, a handle stays valid across shutdown and a new init.
  ASSERT_EQ(init("h200-1gpu-idle.json"), NVML_SUCCESS);
  EXPECT_EQ(uint("nvmlDeviceGetPowerUsage", d), ok(79218u));
}

TEST_F(FakeNvmlTest, InitWithAnotherScenarioSwitchesEvenWhileInitialized) {
  // An earlier test may leave the library initialized (a call it abandoned after a hang).
  ASSERT_EQ(init("fault-gpu-lost.json"), NVML_SUCCESS);
  ASSERT_EQ(count(), 3u);
  ASSERT_EQ(init("8gpu-nvlink-h100.json"), NVML_SUCCESS);
  EXPECT_EQ(count(), 8u);
  ASSERT_EQ(init("8gpu-nvlink-h100.json"), NVML_SUCCESS);  // same file: only counts up
  auto shutdown = fake().fn<nvmlShutdown_fn>("nvmlShutdown");
  EXPECT_EQ(shutdown(), NVML_SUCCESS);
  EXPECT_EQ(shutdown(), NVML_SUCCESS);
  EXPECT_EQ(count(), 8u);
  EXPECT_EQ(shutdown(), NVML_SUCCESS);  // three inits, three shutdowns
  EXPECT_EQ(shutdown(), NVML_ERROR_UNINITIALIZED);
  // A failed load leaves the library as it was.
  ASSERT_EQ(init("h200-1gpu-idle.json"), NVML_SUCCESS);
  EXPECT_EQ(init("malformed.json"), NVML_ERROR_UNKNOWN);
  EXPECT_EQ(count(), 1u);
}

TEST_F(FakeNvmlTest, HungInitDoesNotBlockTheNextInit) {
  setenv(kScenarioEnv, write_scenario(R"({"init": {"hang_ms": 1000}, "gpus": []})").c_str(), 1);
  std::thread abandoned([] { fake().fn<nvmlInit_fn>("nvmlInit_v2")(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto start = Clock::now();
  EXPECT_EQ(init("h200-1gpu-idle.json"), NVML_SUCCESS);
  EXPECT_LT(elapsed_ms(start), 500);
  EXPECT_EQ(count(), 1u);
  abandoned.join();  // it then switches to its own scenario, as an init of another file does
  EXPECT_EQ(count(), 0u);
}

TEST_F(FakeNvmlTest, BuiltInScenarioIsTheLentH200) {
  ASSERT_EQ(fake().fn<nvmlInit_fn>("nvmlInit_v2")(), NVML_SUCCESS);  // no scenario set
  std::string builtin = describe(handle(0));
  EXPECT_EQ(fake().fn<nvmlShutdown_fn>("nvmlShutdown")(), NVML_SUCCESS);
  ASSERT_EQ(init("h200-1gpu-idle.json"), NVML_SUCCESS);
  EXPECT_EQ(count(), 1u);
  EXPECT_EQ(builtin, describe(handle(0)));
}

// ---------------------------------------------------------------------------------------------
// Values and NVML's calling conventions.

TEST_F(FakeNvmlTest, H200ValuesRoundTrip) {
  const Library& lib = fake();
  ASSERT_EQ(init("h200-1gpu-idle.json"), NVML_SUCCESS);
  char buffer[96];
  ASSERT_EQ(lib.fn<nvmlSystemGetString_fn>("nvmlSystemGetDriverVersion")(buffer, sizeof(buffer)),
            NVML_SUCCESS);
  EXPECT_STREQ(buffer, "580.159.04");
  ASSERT_EQ(lib.fn<nvmlSystemGetString_fn>("nvmlSystemGetNVMLVersion")(buffer, sizeof(buffer)),
            NVML_SUCCESS);
  EXPECT_STREQ(buffer, "13.580.159.04");
  int cuda = 0;
  EXPECT_EQ(lib.fn<nvmlSystemGetCudaDriverVersion_fn>("nvmlSystemGetCudaDriverVersion_v2")(&cuda),
            NVML_SUCCESS);
  EXPECT_EQ(cuda, 13000);
  ASSERT_EQ(count(), 1u);
  nvmlDevice_t d = handle(0);

  EXPECT_EQ(text("nvmlDeviceGetName", d), "NVIDIA H200");
  EXPECT_EQ(text("nvmlDeviceGetUUID", d), "GPU-bcc17cec-e461-7450-3893-0e8c087653bf");
  EXPECT_EQ(text("nvmlDeviceGetVbiosVersion", d), "96.00.A5.00.1A");

  nvmlPciInfo_t pci;
  std::memset(&pci, 'U', sizeof(pci));
  ASSERT_EQ(lib.fn<nvmlDeviceGetPciInfo_fn>("nvmlDeviceGetPciInfo_v3")(d, &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:00:06.0");
  EXPECT_STREQ(pci.busIdLegacy, "0000:00:06.0");
  EXPECT_EQ(pci.domain, 0u);
  EXPECT_EQ(pci.bus, 0u);
  EXPECT_EQ(pci.device, 6u);
  EXPECT_EQ(pci.pciDeviceId, 0x233510DEu);
  EXPECT_EQ(pci.pciSubSystemId, 0x18BF10DEu);
  // Seen on the real driver: v2 and v1 fill only the older layout's fields.
  std::memset(&pci, 'U', sizeof(pci));
  ASSERT_EQ(lib.fn<nvmlDeviceGetPciInfo_fn>("nvmlDeviceGetPciInfo_v2")(d, &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busIdLegacy, "0000:00:06.0");
  EXPECT_EQ(pci.pciSubSystemId, 0x18BF10DEu);
  EXPECT_EQ(pci.busId[0], 'U');
  std::memset(&pci, 'U', sizeof(pci));
  ASSERT_EQ(lib.fn<nvmlDeviceGetPciInfo_fn>("nvmlDeviceGetPciInfo")(d, &pci), NVML_SUCCESS);
  EXPECT_EQ(pci.pciDeviceId, 0x233510DEu);
  EXPECT_EQ(pci.pciSubSystemId, 0x55555555u);

  // NVML answers power in milliwatts.
  EXPECT_EQ(uint("nvmlDeviceGetPowerUsage", d), ok(79218u));
  EXPECT_EQ(uint("nvmlDeviceGetPowerManagementLimit", d), ok(700000u));
  EXPECT_EQ(uint("nvmlDeviceGetEnforcedPowerLimit", d), ok(700000u));
  EXPECT_EQ(uint("nvmlDeviceGetCurrPcieLinkGeneration", d), ok(5u));
  EXPECT_EQ(uint("nvmlDeviceGetCurrPcieLinkWidth", d), ok(16u));
  EXPECT_EQ(uint("nvmlDeviceGetNumaNodeId", d).first, NVML_ERROR_NOT_SUPPORTED);

  unsigned long mask[2] = {7, 7};
  auto affinity = lib.fn<nvmlDeviceGetCpuAffinity_fn>("nvmlDeviceGetCpuAffinity");
  ASSERT_EQ(affinity(d, 2, mask), NVML_SUCCESS);
  EXPECT_EQ(mask[0], 0xFFFFul);  // CPUs 0-15
  EXPECT_EQ(mask[1], 0ul);
  EXPECT_EQ(affinity(d, 0, mask), NVML_ERROR_INVALID_ARGUMENT);

  unsigned mhz = 0;
  auto clock = lib.fn<nvmlDeviceGetClockInfo_fn>("nvmlDeviceGetClockInfo");
  EXPECT_EQ(clock(d, NVML_CLOCK_SM, &mhz), NVML_SUCCESS);
  EXPECT_EQ(mhz, 345u);
  EXPECT_EQ(lib.fn<nvmlDeviceGetClockInfo_fn>("nvmlDeviceGetMaxClockInfo")(d, NVML_CLOCK_SM, &mhz),
            NVML_SUCCESS);
  EXPECT_EQ(mhz, 1980u);
  EXPECT_EQ(clock(d, 9, &mhz), NVML_ERROR_INVALID_ARGUMENT);
  unsigned long long reasons = 0;
  EXPECT_EQ(lib.fn<nvmlDeviceGetULL_fn>("nvmlDeviceGetCurrentClocksEventReasons")(d, &reasons),
            NVML_SUCCESS);
  EXPECT_EQ(reasons, nvmlClocksEventReasonGpuIdle);

  nvmlViolationTime_t violation{};
  EXPECT_EQ(lib.fn<nvmlDeviceGetViolationStatus_fn>("nvmlDeviceGetViolationStatus")(
                d, NVML_PERF_POLICY_LOW_UTILIZATION, &violation),
            NVML_SUCCESS);
  EXPECT_EQ(violation.violationTime, 43906218464ull);
  EXPECT_GT(violation.referenceTime, 0ull);

  auto margin_fn = lib.fn<nvmlDeviceGetMarginTemperature_fn>("nvmlDeviceGetMarginTemperature");
  nvmlMarginTemperature_t margin{NVML_MARGIN_TEMPERATURE_V1, 0};
  EXPECT_EQ(margin_fn(d, &margin), NVML_SUCCESS);
  EXPECT_EQ(margin.marginTemperature, 49);
  margin.version = 1;
  EXPECT_EQ(margin_fn(d, &margin), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  unsigned threshold = 0;
  EXPECT_EQ(lib.fn<nvmlDeviceGetTemperature_fn>("nvmlDeviceGetTemperatureThreshold")(
                d, NVML_TEMPERATURE_THRESHOLD_GPU_MAX, &threshold),
            NVML_SUCCESS);
  EXPECT_EQ(threshold, 87u);

  int ecc_current = -1, ecc_pending = -1;
  EXPECT_EQ(
      lib.fn<nvmlDeviceGetEnablePair_fn>("nvmlDeviceGetEccMode")(d, &ecc_current, &ecc_pending),
      NVML_SUCCESS);
  EXPECT_EQ(ecc_current, 1);
  unsigned pages = 0;
  EXPECT_EQ(
      lib.fn<nvmlDeviceGetRetiredPages_fn>("nvmlDeviceGetRetiredPages")(d, 0, &pages, nullptr),
      NVML_ERROR_NOT_SUPPORTED);  // Hopper remaps rows instead

  nvmlMemory_t memory{};
  EXPECT_EQ(lib.fn<nvmlDeviceGetMemoryInfo_fn>("nvmlDeviceGetMemoryInfo")(d, &memory),
            NVML_SUCCESS);
  EXPECT_EQ(memory.total, 143771ull << 20);
  EXPECT_EQ(memory.free + memory.used, memory.total);

  int active = 0;
  EXPECT_EQ(lib.fn<nvmlDeviceGetNvLinkState_fn>("nvmlDeviceGetNvLinkState")(d, 0, &active),
            NVML_ERROR_NOT_SUPPORTED);  // NvLinkDisable on the VM
  nvmlGpuFabricInfo_t fabric{};
  EXPECT_EQ(lib.fn<nvmlDeviceGetGpuFabricInfo_fn>("nvmlDeviceGetGpuFabricInfo")(d, &fabric),
            NVML_SUCCESS);
  EXPECT_EQ(fabric.state, NVML_GPU_FABRIC_STATE_NOT_SUPPORTED);
}

TEST_F(FakeNvmlTest, ArgumentsAreCheckedAsNvmlDoes) {
  const Library& lib = fake();
  ASSERT_EQ(init("h200-1gpu-idle.json"), NVML_SUCCESS);
  nvmlDevice_t d = handle(0);
  auto name = lib.fn<nvmlDeviceGetString_fn>("nvmlDeviceGetName");
  char buffer[96];
  EXPECT_EQ(name(d, buffer, 11), NVML_ERROR_INSUFFICIENT_SIZE);  // "NVIDIA H200" + NUL is 12
  EXPECT_EQ(name(d, buffer, 12), NVML_SUCCESS);
  EXPECT_EQ(name(d, nullptr, 96), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lib.fn<nvmlSystemGetString_fn>("nvmlSystemGetDriverVersion")(buffer, 10),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(uint("nvmlDeviceGetPowerUsage", d).first, NVML_SUCCESS);
  EXPECT_EQ(fake().fn<nvmlDeviceGetUInt_fn>("nvmlDeviceGetPowerUsage")(d, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  // Handles the library did not hand out, never dereferenced.
  nvmlDevice_t bogus = reinterpret_cast<nvmlDevice_t>(buffer);
  EXPECT_EQ(uint("nvmlDeviceGetPowerUsage", bogus).first, NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(uint("nvmlDeviceGetPowerUsage", nullptr).first, NVML_ERROR_INVALID_ARGUMENT);
  nvmlDevice_t out = nullptr;
  EXPECT_EQ(lib.fn<nvmlDeviceGetHandleByIndex_fn>("nvmlDeviceGetHandleByIndex_v2")(1, &out),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lib.fn<nvmlDeviceGetHandleByIndex_fn>("nvmlDeviceGetHandleByIndex_v2")(0, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lib.fn<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount_v2")(nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  unsigned temp = 0;
  EXPECT_EQ(lib.fn<nvmlDeviceGetTemperature_fn>("nvmlDeviceGetTemperature")(d, 1, &temp),
            NVML_ERROR_INVALID_ARGUMENT);
  nvmlViolationTime_t v{};
  EXPECT_EQ(lib.fn<nvmlDeviceGetViolationStatus_fn>("nvmlDeviceGetViolationStatus")(d, 6, &v),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(FakeNvmlTest, ProcessListFollowsNvmlCountProtocol) {
  const Library& lib = fake();
  ASSERT_EQ(init("h200-1gpu-load.json"), NVML_SUCCESS);
  nvmlDevice_t d = handle(0);
  auto v3 =
      lib.fn<nvmlDeviceGetComputeRunningProcesses_fn>("nvmlDeviceGetComputeRunningProcesses_v3");
  unsigned n = 0;
  EXPECT_EQ(v3(d, &n, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);  // size query
  EXPECT_EQ(n, 1u);
  nvmlProcessInfo_t infos[4] = {};
  n = 4;
  ASSERT_EQ(v3(d, &n, infos), NVML_SUCCESS);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(infos[0].pid, 48213u);
  EXPECT_EQ(infos[0].usedGpuMemory, 1050673152ull);
  EXPECT_EQ(infos[0].gpuInstanceId, 0xFFFFFFFFu);  // no MIG
  EXPECT_EQ(v3(d, nullptr, infos), NVML_ERROR_INVALID_ARGUMENT);

  nvmlProcessInfo_v1_t old_infos[2] = {};
  n = 2;
  ASSERT_EQ(lib.fn<nvmlDeviceGetComputeRunningProcessesV1_fn>(
                "nvmlDeviceGetComputeRunningProcesses")(d, &n, old_infos),
            NVML_SUCCESS);
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(old_infos[0].pid, 48213u);
  EXPECT_EQ(old_infos[0].usedGpuMemory, 1050673152ull);
  EXPECT_EQ(old_infos[1].pid, 0u);

  auto process_name = lib.fn<nvmlSystemGetProcessName_fn>("nvmlSystemGetProcessName");
  char name[64];
  ASSERT_EQ(process_name(48213, name, sizeof(name)), NVML_SUCCESS);
  EXPECT_STREQ(name, "python3");
  ASSERT_EQ(process_name(48213, name, 5), NVML_SUCCESS);  // cropped, as NVML does
  EXPECT_STREQ(name, "pyth");
  EXPECT_EQ(process_name(1, name, sizeof(name)), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(process_name(48213, name, 0), NVML_ERROR_INVALID_ARGUMENT);

  // No processes: the size query succeeds with 0.
  lib.fn<nvmlShutdown_fn>("nvmlShutdown")();
  ASSERT_EQ(init("h200-1gpu-idle.json"), NVML_SUCCESS);
  n = 0;
  EXPECT_EQ(v3(handle(0), &n, nullptr), NVML_SUCCESS);
  EXPECT_EQ(n, 0u);
}

TEST_F(FakeNvmlTest, CpuListBecomesAffinityMaskWords) {
  ASSERT_EQ(init("8gpu-nvlink-h100.json"), NVML_SUCCESS);
  ASSERT_EQ(count(), 8u);
  auto affinity = fake().fn<nvmlDeviceGetCpuAffinity_fn>("nvmlDeviceGetCpuAffinity");
  unsigned long mask[4] = {};
  ASSERT_EQ(affinity(handle(4), 4, mask), NVML_SUCCESS);  // "56-111,168-223"
  EXPECT_EQ(mask[0], 0xFF00000000000000ul);
  EXPECT_EQ(mask[1], 0x0000FFFFFFFFFFFFul);
  EXPECT_EQ(mask[2], 0xFFFFFF0000000000ul);
  EXPECT_EQ(mask[3], 0x00000000FFFFFFFFul);
  unsigned long one = 0;
  ASSERT_EQ(affinity(handle(0), 1, &one), NVML_SUCCESS);  // "0-55,112-167", cut to 64 CPUs
  EXPECT_EQ(one, 0x00FFFFFFFFFFFFFFul);
}

TEST_F(FakeNvmlTest, PairsAreSymmetricWithADefault) {
  const Library& lib = fake();
  ASSERT_EQ(init("8gpu-nvlink-h100.json"), NVML_SUCCESS);
  auto level = [&](unsigned a, unsigned b) {
    int out = -1;
    nvmlReturn_t rc = lib.fn<nvmlDeviceGetTopologyCommonAncestor_fn>(
        "nvmlDeviceGetTopologyCommonAncestor")(handle(a), handle(b), &out);
    return rc == NVML_SUCCESS ? out : -1000 - rc;
  };
  auto p2p = [&](unsigned a, unsigned b, int index) {
    int out = -1;
    nvmlReturn_t rc = lib.fn<nvmlDeviceGetP2PStatus_fn>("nvmlDeviceGetP2PStatus")(
        handle(a), handle(b), index, &out);
    return rc == NVML_SUCCESS ? out : -1000 - rc;
  };
  EXPECT_EQ(level(0, 3), NVML_TOPOLOGY_NODE);
  EXPECT_EQ(level(3, 0), NVML_TOPOLOGY_NODE);
  EXPECT_EQ(level(5, 7), NVML_TOPOLOGY_NODE);
  EXPECT_EQ(level(2, 6), NVML_TOPOLOGY_SYSTEM);  // default_pair
  EXPECT_EQ(level(6, 2), NVML_TOPOLOGY_SYSTEM);
  EXPECT_EQ(level(1, 1), -1000 - NVML_ERROR_NOT_SUPPORTED);  // as the real driver answers
  EXPECT_EQ(p2p(0, 7, NVML_P2P_CAPS_INDEX_NVLINK), NVML_P2P_STATUS_OK);
  EXPECT_EQ(p2p(0, 1, NVML_P2P_CAPS_INDEX_READ), NVML_P2P_STATUS_OK);  // pair inherits p2p
  EXPECT_EQ(p2p(0, 1, 4), -1000 - NVML_ERROR_NOT_SUPPORTED);           // "pci" not given
  EXPECT_EQ(p2p(0, 1, 5), -1000 - NVML_ERROR_INVALID_ARGUMENT);
  lib.fn<nvmlShutdown_fn>("nvmlShutdown")();

  ASSERT_EQ(init("2gpu-pcie-sys.json"), NVML_SUCCESS);
  EXPECT_EQ(level(1, 0), NVML_TOPOLOGY_SYSTEM);
  EXPECT_EQ(p2p(0, 1, NVML_P2P_CAPS_INDEX_READ), NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED);
  EXPECT_EQ(p2p(1, 0, NVML_P2P_CAPS_INDEX_WRITE), NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED);
  EXPECT_EQ(p2p(0, 1, NVML_P2P_CAPS_INDEX_NVLINK), NVML_P2P_STATUS_NOT_SUPPORTED);
  int active = 0;
  EXPECT_EQ(lib.fn<nvmlDeviceGetNvLinkState_fn>("nvmlDeviceGetNvLinkState")(handle(0), 0, &active),
            NVML_ERROR_NOT_SUPPORTED);  // no "nvlinks": a PCIe card
}

TEST_F(FakeNvmlTest, NvLinksLeadToSwitchesOrToPeers) {
  const Library& lib = fake();
  auto state = lib.fn<nvmlDeviceGetNvLinkState_fn>("nvmlDeviceGetNvLinkState");
  auto version = lib.fn<nvmlDeviceGetNvLinkVersion_fn>("nvmlDeviceGetNvLinkVersion");
  auto remote = lib.fn<nvmlDeviceGetNvLinkRemotePciInfo_fn>("nvmlDeviceGetNvLinkRemotePciInfo_v2");
  auto gpu_bus_ids = [&] {
    std::set<std::string> ids;
    for (unsigned i = 0; i < count(); ++i) {
      nvmlPciInfo_t pci{};
      EXPECT_EQ(lib.fn<nvmlDeviceGetPciInfo_fn>("nvmlDeviceGetPciInfo_v3")(handle(i), &pci),
                NVML_SUCCESS);
      ids.insert(pci.busId);
    }
    return ids;
  };

  ASSERT_EQ(init("8gpu-nvlink-h100.json"), NVML_SUCCESS);
  std::set<std::string> gpus = gpu_bus_ids();
  for (unsigned i = 0; i < 8; ++i) {
    nvmlDevice_t d = handle(i);
    std::set<std::string> switches;
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
      int active = 0;
      unsigned v = 0;
      nvmlPciInfo_t pci{};
      ASSERT_EQ(state(d, link, &active), NVML_SUCCESS);
      EXPECT_EQ(active, 1);
      ASSERT_EQ(version(d, link, &v), NVML_SUCCESS);
      EXPECT_EQ(v, 4u);
      ASSERT_EQ(remote(d, link, &pci), NVML_SUCCESS);
      EXPECT_EQ(pci.pciDeviceId, 0x22A310DEu);
      EXPECT_EQ(gpus.count(pci.busId), 0u) << pci.busId << " is a GPU, not an NVSwitch";
      switches.insert(pci.busId);
    }
    EXPECT_EQ(switches.size(), 4u);
    int active = 0;
    EXPECT_EQ(state(d, NVML_NVLINK_MAX_LINKS, &active), NVML_ERROR_INVALID_ARGUMENT);
    nvmlGpuFabricInfo_t fabric{};
    EXPECT_EQ(lib.fn<nvmlDeviceGetGpuFabricInfo_fn>("nvmlDeviceGetGpuFabricInfo")(d, &fabric),
              NVML_SUCCESS);
    EXPECT_EQ(fabric.state, NVML_GPU_FABRIC_STATE_COMPLETED);
    EXPECT_EQ(fabric.status, NVML_SUCCESS);
  }
  lib.fn<nvmlShutdown_fn>("nvmlShutdown")();

  ASSERT_EQ(init("4gpu-nvlink-direct.json"), NVML_SUCCESS);
  gpus = gpu_bus_ids();
  for (unsigned i = 0; i < 4; ++i) {
    nvmlDevice_t d = handle(i);
    std::map<std::string, int> links_to;
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
      nvmlPciInfo_t pci{};
      ASSERT_EQ(remote(d, link, &pci), NVML_SUCCESS);
      links_to[pci.busId]++;
    }
    EXPECT_EQ(links_to.size(), 3u);
    for (const auto& [bus_id, n] : links_to) {
      EXPECT_EQ(gpus.count(bus_id), 1u) << bus_id << " is not a GPU";
      EXPECT_EQ(n, 6);
    }
    // The old call fills only the older layout's fields.
    nvmlPciInfo_t pci;
    std::memset(&pci, 'U', sizeof(pci));
    ASSERT_EQ(
        lib.fn<nvmlDeviceGetNvLinkRemotePciInfo_fn>("nvmlDeviceGetNvLinkRemotePciInfo")(d, 0, &pci),
        NVML_SUCCESS);
    EXPECT_EQ(std::string(pci.busIdLegacy).size(), 12u);
    EXPECT_EQ(pci.busId[0], 'U');
  }
}

// ---------------------------------------------------------------------------------------------
// Faults.

TEST_F(FakeNvmlTest, LostGpuFailsEveryCallButItsHandleLookup) {
  const Library& lib = fake();
  ASSERT_EQ(init("fault-gpu-lost.json"), NVML_SUCCESS);
  ASSERT_EQ(count(), 3u);
  nvmlDevice_t lost = handle(1);
  EXPECT_EQ(text("nvmlDeviceGetName", lost), "error " + std::to_string(NVML_ERROR_GPU_IS_LOST));
  EXPECT_EQ(uint("nvmlDeviceGetPowerUsage", lost).first, NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(uint("nvmlDeviceGetPowerUsage", handle(0)).first, NVML_SUCCESS);
  EXPECT_EQ(uint("nvmlDeviceGetPowerUsage", handle(2)).first, NVML_SUCCESS);
  nvmlPciInfo_t pci{};
  EXPECT_EQ(lib.fn<nvmlDeviceGetPciInfo_fn>("nvmlDeviceGetPciInfo_v3")(lost, &pci),
            NVML_ERROR_GPU_IS_LOST);
  int level = 0;
  auto topology =
      lib.fn<nvmlDeviceGetTopologyCommonAncestor_fn>("nvmlDeviceGetTopologyCommonAncestor");
  EXPECT_EQ(topology(handle(0), lost, &level), NVML_ERROR_GPU_IS_LOST);  // either end fails it
  EXPECT_EQ(topology(handle(0), handle(2), &level), NVML_SUCCESS);
  EXPECT_EQ(error_string(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
}

TEST_F(FakeNvmlTest, SingleCallsFailWithTheConfiguredErrors) {
  const Library& lib = fake();
  ASSERT_EQ(init("fault-call-errors.json"), NVML_SUCCESS);
  nvmlDevice_t d = handle(0);
  EXPECT_EQ(uint("nvmlDeviceGetPcieReplayCounter", d).first, NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(uint("nvmlDeviceGetCurrPcieLinkWidth", d), ok(16u));
  int current = 0, pending = 0;
  EXPECT_EQ(lib.fn<nvmlDeviceGetEnablePair_fn>("nvmlDeviceGetEccMode")(d, &current, &pending),
            NVML_ERROR_NO_PERMISSION);
  unsigned long long errors = 0;
  EXPECT_EQ(lib.fn<nvmlDeviceGetTotalEccErrors_fn>("nvmlDeviceGetTotalEccErrors")(
                d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, &errors),
            NVML_ERROR_NO_PERMISSION);
  unsigned n = 0;
  for (const char* fn :
       {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"}) {
    EXPECT_EQ(lib.fn<nvmlDeviceGetComputeRunningProcesses_fn>(fn)(d, &n, nullptr),
              NVML_ERROR_UNKNOWN)
        << fn;
  }
  EXPECT_EQ(lib.fn<nvmlDeviceGetComputeRunningProcessesV1_fn>(
                "nvmlDeviceGetComputeRunningProcesses")(d, &n, nullptr),
            NVML_ERROR_UNKNOWN);
  EXPECT_EQ(error_string(NVML_ERROR_UNKNOWN), "Unknown Error");  // init succeeded
  // GPU 1 is healthy.
  EXPECT_EQ(
      lib.fn<nvmlDeviceGetEnablePair_fn>("nvmlDeviceGetEccMode")(handle(1), &current, &pending),
      NVML_SUCCESS);
}

TEST_F(FakeNvmlTest, DegradedMixScenarioReadsBack) {
  const Library& lib = fake();
  ASSERT_EQ(init("degraded-mix.json"), NVML_SUCCESS);
  ASSERT_EQ(count(), 4u);
  EXPECT_EQ(uint("nvmlDeviceGetCurrPcieLinkWidth", handle(0)), ok(8u));
  EXPECT_EQ(uint("nvmlDeviceGetMaxPcieLinkWidth", handle(0)), ok(16u));
  unsigned long long reasons = 0;
  ASSERT_EQ(
      lib.fn<nvmlDeviceGetULL_fn>("nvmlDeviceGetCurrentClocksThrottleReasons")(handle(1), &reasons),
      NVML_SUCCESS);
  EXPECT_EQ(reasons, nvmlClocksThrottleReasonHwSlowdown |
                         nvmlClocksThrottleReasonHwThermalSlowdown |
                         nvmlClocksEventReasonSwThermalSlowdown);
  unsigned long long errors = 0;
  ASSERT_EQ(lib.fn<nvmlDeviceGetTotalEccErrors_fn>("nvmlDeviceGetTotalEccErrors")(
                handle(2), NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, &errors),
            NVML_SUCCESS);
  EXPECT_EQ(errors, 2u);
  unsigned rows[4] = {};
  ASSERT_EQ(lib.fn<nvmlDeviceGetRemappedRows_fn>("nvmlDeviceGetRemappedRows")(
                handle(3), &rows[0], &rows[1], &rows[2], &rows[3]),
            NVML_SUCCESS);
  EXPECT_EQ(rows[1], 1u);
  EXPECT_EQ(rows[2], 1u);  // pending
}

// Catches: a timeline that never moves the readings, moves the wrong call, restarts its clock
// when a program shuts NVML down and initialises it again (a collection, then a sampler), or
// interpolates the clock-event mask (a step) instead of holding it.
TEST_F(FakeNvmlTest, TimelineMovesReadingsWithTimeSinceTheScenarioWasLoaded) {
  const Library& lib = fake();
  std::string path = write_scenario(R"({"gpus": [{
    "name": "warming", "temperature": 40, "clocks": {"sm": 1980, "graphics": 1980},
    "power": {"draw_w": 300}, "utilization": {"gpu": 100, "memory": 7},
    "pcie": {"replay_counter": 0},
    "timeline": [
      {"t_s": 0, "temperature": 40, "sm_mhz": 1980, "clock_event_reasons": 0, "pcie_replays": 0},
      {"t_s": 0.4, "temperature": 80, "sm_mhz": 1500, "power_w": 650,
       "clock_event_reasons": ["sw_thermal_slowdown"], "pcie_replays": 100,
       "utilization_gpu": 0}
    ]}]})");
  const auto t0 = Clock::now();
  ASSERT_EQ(init(path), NVML_SUCCESS);
  auto temperature = [&] {
    unsigned c = 0;
    EXPECT_EQ(lib.fn<nvmlDeviceGetTemperature_fn>("nvmlDeviceGetTemperature")(
                  handle(0), NVML_TEMPERATURE_GPU, &c),
              NVML_SUCCESS);
    return c;
  };
  auto reasons = [&] {
    unsigned long long r = 99;
    EXPECT_EQ(lib.fn<nvmlDeviceGetULL_fn>("nvmlDeviceGetCurrentClocksEventReasons")(handle(0), &r),
              NVML_SUCCESS);
    return r;
  };
  if (elapsed_ms(t0) < 100) {  // on a loaded machine the first reading may come late
    EXPECT_LE(temperature(), 50u);
    EXPECT_EQ(reasons(), 0u);
  }
  // Shut down and initialise again with the same file: the timeline's clock goes on.
  ASSERT_EQ(fake().fn<nvmlShutdown_fn>("nvmlShutdown")(), NVML_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_EQ(init(path), NVML_SUCCESS);
  EXPECT_EQ(temperature(), 80u);
  EXPECT_EQ(reasons(), nvmlClocksEventReasonSwThermalSlowdown);
  unsigned mhz = 0;
  ASSERT_EQ(
      lib.fn<nvmlDeviceGetClockInfo_fn>("nvmlDeviceGetClockInfo")(handle(0), NVML_CLOCK_SM, &mhz),
      NVML_SUCCESS);
  EXPECT_EQ(mhz, 1500u);
  EXPECT_EQ(uint("nvmlDeviceGetPowerUsage", handle(0)), ok(650000u));
  EXPECT_EQ(uint("nvmlDeviceGetPcieReplayCounter", handle(0)), ok(100u));
  nvmlUtilization_t u{};
  ASSERT_EQ(
      lib.fn<nvmlDeviceGetUtilizationRates_fn>("nvmlDeviceGetUtilizationRates")(handle(0), &u),
      NVML_SUCCESS);
  EXPECT_EQ(u.gpu, 0u);
  EXPECT_EQ(u.memory, 7u);  // not on the timeline: the scenario's value
}

TEST_F(FakeNvmlTest, InitFailsWithTheConfiguredError) {
  EXPECT_EQ(init("fault-init-mismatch.json"), NVML_ERROR_LIB_RM_VERSION_MISMATCH);
  EXPECT_EQ(error_string(NVML_ERROR_LIB_RM_VERSION_MISMATCH), "Driver/library version mismatch");
  unsigned n = 0;
  EXPECT_EQ(fake().fn<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount_v2")(&n),
            NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(init("fault-driver-not-loaded.json"), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_EQ(fake().fn<nvmlShutdown_fn>("nvmlShutdown")(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(FakeNvmlTest, HangLastsAboutTheConfiguredTime) {
  std::string path = write_scenario(R"({
    "gpus": [{"name": "hung", "faults": {"nvmlDeviceGetName": {"hang_ms": 200, "then": "TIMEOUT"}}},
             {"name": "fine", "faults": {"nvmlDeviceGetUUID": {"hang_ms": 200}}, "uuid": "GPU-1"}]
  })");
  ASSERT_EQ(init(path), NVML_SUCCESS);
  auto start = Clock::now();
  EXPECT_EQ(text("nvmlDeviceGetName", handle(0)), "error " + std::to_string(NVML_ERROR_TIMEOUT));
  EXPECT_GE(elapsed_ms(start), 200);
  EXPECT_LT(elapsed_ms(start), 2000);
  start = Clock::now();
  EXPECT_EQ(text("nvmlDeviceGetUUID", handle(1)), "GPU-1");  // then defaults to SUCCESS
  EXPECT_GE(elapsed_ms(start), 200);
  start = Clock::now();
  EXPECT_EQ(text("nvmlDeviceGetName", handle(1)), "fine");
  EXPECT_LT(elapsed_ms(start), 150);
}

TEST_F(FakeNvmlTest, HangOnOneGpuDoesNotBlockOthers) {
  std::string path = write_scenario(R"({
    "gpus": [{"name": "a"}, {"name": "b", "faults": {"nvmlDeviceGetName": {"hang_ms": 500}}}]
  })");
  ASSERT_EQ(init(path), NVML_SUCCESS);
  nvmlDevice_t hung = handle(1);
  std::string hung_name;
  std::thread caller([&] { hung_name = text("nvmlDeviceGetName", hung); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto start = Clock::now();
  EXPECT_EQ(text("nvmlDeviceGetName", handle(0)), "a");
  EXPECT_LT(elapsed_ms(start), 150);
  caller.join();
  EXPECT_EQ(hung_name, "b");
}

TEST_F(FakeNvmlTest, InitHangDelaysInit) {
  std::string path = write_scenario(R"({"init": {"hang_ms": 200}, "gpus": []})");
  auto start = Clock::now();
  EXPECT_EQ(init(path), NVML_SUCCESS);
  EXPECT_GE(elapsed_ms(start), 200);
  EXPECT_EQ(count(), 0u);
}

TEST_F(FakeNvmlTest, TopLevelFaultsReachEveryGpuAndSystemCalls) {
  std::string path = write_scenario(R"({
    "faults": {"nvmlDeviceGetPowerUsage": "NO_PERMISSION", "nvmlSystemGetDriverVersion": "UNKNOWN"},
    "count_error": "NVML_ERROR_IRQ_ISSUE",
    "gpus": [{"power": {"draw_w": 10}},
             {"power": {"draw_w": 20}, "faults": {"nvmlDeviceGetPowerUsage": "SUCCESS"}},
             {"handle_error": "GPU_IS_LOST"}]
  })");
  ASSERT_EQ(init(path), NVML_SUCCESS);
  EXPECT_EQ(uint("nvmlDeviceGetPowerUsage", handle(0)).first, NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(uint("nvmlDeviceGetPowerUsage", handle(1)), ok(20000u));
  char buffer[80];
  EXPECT_EQ(fake().fn<nvmlSystemGetString_fn>("nvmlSystemGetDriverVersion")(buffer, 80),
            NVML_ERROR_UNKNOWN);
  unsigned n = 0;
  EXPECT_EQ(fake().fn<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount_v2")(&n), NVML_ERROR_IRQ_ISSUE);
  EXPECT_EQ(fake().fn<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount")(&n), NVML_ERROR_IRQ_ISSUE);
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(fake().fn<nvmlDeviceGetHandleByIndex_fn>("nvmlDeviceGetHandleByIndex")(2, &d),
            NVML_ERROR_GPU_IS_LOST);
}

// ---------------------------------------------------------------------------------------------
// Bad scenarios: an error with a reason, never a crash.

TEST_F(FakeNvmlTest, MalformedScenarioReportsWhereItBroke) {
  std::string path = scenario("malformed.json");
  EXPECT_EQ(init(path), NVML_ERROR_UNKNOWN);
  std::string why = error_string(NVML_ERROR_UNKNOWN);
  EXPECT_NE(why.find("fake NVML: scenario " + path + ": parse error at line 3"), std::string::npos)
      << why;
  unsigned n = 0;
  EXPECT_EQ(fake().fn<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount_v2")(&n),
            NVML_ERROR_UNINITIALIZED);
  // The message stays until an init succeeds.
  EXPECT_EQ(init("h200-1gpu-idle.json"), NVML_SUCCESS);
  EXPECT_EQ(error_string(NVML_ERROR_UNKNOWN), "Unknown Error");
}

TEST_F(FakeNvmlTest, BadScenariosNameTheProblem) {
  struct Case {
    std::string json;
    std::string message;
  };
  const Case cases[] = {
      {R"({"gpus": [{"pcie": {"gen": "5"}}]})",
       "gpus[0].pcie.gen: expected a non-negative integer, got string"},
      {R"({"gpus": [{"temprature": 40}]})", "gpus[0].temprature: unknown key"},
      {R"({"gpus": [{"faults": {"nvmlDeviceGetFoo": "UNKNOWN"}}]})",
       "gpus[0].faults.nvmlDeviceGetFoo: not a function"},
      {R"({"gpus": [{"faults": {"nvmlDeviceGetName": "BROKEN"}}]})",
       "unknown NVML return \"BROKEN\""},
      {R"({"gpus": [{"faults": {"nvmlDeviceGetCount": "UNKNOWN"}}]})",
       "a system call cannot fail for one GPU"},
      {R"({"gpus": [{"cpu_affinity": "0-15,x"}]})",
       "gpus[0].cpu_affinity: \"0-15,x\" is not a CPU list"},
      {R"({"gpus": [{"pci_bus_id": "00000000:zz:00.0"}]})", "is not a PCI bus id"},
      {R"({"gpus": [{}], "pairs": [{"a": 0, "b": 1}]})", "pairs[0]: GPU index out of range"},
      {R"({"gpus": [{"clock_event_reasons": ["idle", "sleepy"]}]})", "unknown name \"sleepy\""},
      {R"({"gpus": [{"nvlinks": [{"repeat": 18}, {"active": true}]}]})",
       "gpus[0].nvlinks[1]: more than NVML_NVLINK_MAX_LINKS (18) links"},
      {R"({"gpus": [{"memory": {"total": 10, "used": 11}}]})",
       "gpus[0].memory.used: value 11 is above the maximum 10"},
      {R"({"gpus": {"name": "x"}})", "gpus: expected an array, got object"},
      {R"([1, 2])", "top level: expected an object, got array"},
      {R"({"gpus": [{"timeline": [{"temperature": 40}]}]})",
       "gpus[0].timeline[0]: \"t_s\" (seconds after the scenario was loaded) is required"},
      {R"({"gpus": [{"timeline": [{"t_s": 2}, {"t_s": 1}]}]})",
       "gpus[0].timeline[1].t_s: keyframes must be in time order"},
      {R"({"gpus": [{"timeline": [{"t_s": 0, "temp": 1}]}]})",
       "gpus[0].timeline[0].temp: unknown key"},
      {"", "parse error at line 1, column 1"},
  };
  for (const Case& c : cases) {
    std::string path = write_scenario(c.json);
    EXPECT_EQ(init(path), NVML_ERROR_UNKNOWN) << c.json;
    std::string why = error_string(NVML_ERROR_UNKNOWN);
    EXPECT_NE(why.find("fake NVML: scenario " + path + ": "), std::string::npos) << why;
    EXPECT_NE(why.find(c.message), std::string::npos) << "got: " << why;
  }
  EXPECT_EQ(init("/nonexistent/scenario.json"), NVML_ERROR_UNKNOWN);
  EXPECT_EQ(
      error_string(NVML_ERROR_UNKNOWN),
      "fake NVML: scenario /nonexistent/scenario.json: cannot read: No such file or directory");
}

TEST_F(FakeNvmlTest, EveryScenarioFileLoads) {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(std::string(GPUVET_TEST_DATA) + "/scenarios")) {
    std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".json" || name == "malformed.json") continue;
    std::string path = entry.path().string();
    if (name == "fault-init-hang.json") {
      // Same file with a short hang, so the rest of it is still checked.
      std::ifstream in(path);
      nlohmann::json j = nlohmann::json::parse(in);
      EXPECT_EQ(j["init"]["hang_ms"], 60000);
      j["init"]["hang_ms"] = 1;
      path = write_scenario(j.dump());
    }
    nvmlReturn_t rc = init(path);
    nvmlReturn_t expected = name == "fault-init-mismatch.json" ? NVML_ERROR_LIB_RM_VERSION_MISMATCH
                            : name == "fault-driver-not-loaded.json" ? NVML_ERROR_DRIVER_NOT_LOADED
                                                                     : NVML_SUCCESS;
    EXPECT_EQ(rc, expected) << name << ": " << error_string(NVML_ERROR_UNKNOWN);
    if (rc == NVML_SUCCESS) {
      EXPECT_EQ(fake().fn<nvmlShutdown_fn>("nvmlShutdown")(), NVML_SUCCESS);
    }
    ++checked;
  }
  EXPECT_GE(checked, 12);
}

// ---------------------------------------------------------------------------------------------
// Threads.

TEST_F(FakeNvmlTest, ConcurrentCallsWhileInitAndShutdownCycle) {
  ASSERT_EQ(init("8gpu-nvlink-h100.json"), NVML_SUCCESS);
  std::vector<nvmlDevice_t> devices;
  for (unsigned i = 0; i < 8; ++i) devices.push_back(handle(i));
  std::atomic<bool> stop{false};
  std::atomic<int> unexpected{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto power = fake().fn<nvmlDeviceGetUInt_fn>("nvmlDeviceGetPowerUsage");
      auto name = fake().fn<nvmlDeviceGetString_fn>("nvmlDeviceGetName");
      char buffer[96];
      while (!stop) {
        unsigned mw = 0;
        nvmlReturn_t rc = power(devices[t], &mw);
        if (!(rc == NVML_SUCCESS && mw == 71450) && rc != NVML_ERROR_UNINITIALIZED) ++unexpected;
        rc = name(devices[t], buffer, sizeof(buffer));
        if (rc != NVML_SUCCESS && rc != NVML_ERROR_UNINITIALIZED) ++unexpected;
      }
    });
  }
  auto shutdown = fake().fn<nvmlShutdown_fn>("nvmlShutdown");
  for (int cycle = 0; cycle < 50; ++cycle) {
    EXPECT_EQ(shutdown(), NVML_SUCCESS);
    EXPECT_EQ(fake().fn<nvmlInit_fn>("nvmlInit_v2")(), NVML_SUCCESS);
  }
  stop = true;
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(unexpected, 0);
}

}  // namespace
}  // namespace gpuvet
