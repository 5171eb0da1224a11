// tests/fake_nvml/scenario.h — the fake NVML's machine description: data model and JSON loader.
//
// A Scenario describes one machine as NVML would report it (format: README.md beside this
// file). load_scenario() builds it from JSON once; it is immutable afterwards, so any number of
// threads may read it without locking. Every value that a machine may lack is std::optional:
// absent means the matching NVML call answers NVML_ERROR_NOT_SUPPORTED. Loading never throws;
// a malformed file comes back as a message naming the file and the offending field.
//
// Header-only on purpose: tests/CMakeLists.txt builds the fake from fake_nvml.cc alone.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// The target has no include path to src/; a path relative to this file needs no CMake change.
#include "probe/nvml_api.h"

namespace fake_nvml {

inline constexpr unsigned kMaxGpus = 64;
inline constexpr unsigned kMaxCpus = 4096;
inline constexpr unsigned kBitsPerWord = 8 * sizeof(unsigned long);
inline constexpr unsigned kNotAvailable = 0xFFFFFFFFu;  // NVML's "no MIG instance"

// An injected fault: wait hang_ms, then answer normally (result == NVML_SUCCESS) or with result.
struct Fault {
  unsigned hang_ms = 0;
  nvmlReturn_t result = NVML_SUCCESS;
};
// Keyed by an exported function name, its base name (without _vN) or "*".
using FaultMap = std::map<std::string, Fault, std::less<>>;

struct PciAddress {
  unsigned domain = 0;
  unsigned bus = 0;
  unsigned device = 0;
  unsigned function = 0;
};

struct PciIdentity {
  PciAddress address;
  unsigned device_id = 0;     // pciDeviceId: device << 16 | vendor
  unsigned subsystem_id = 0;  // pciSubSystemId
};

struct NvLink {
  std::optional<bool> active;
  std::optional<unsigned> version;
  std::optional<PciIdentity> remote;
};

struct Process {
  unsigned pid = 0;
  unsigned long long used_memory = 0;
  std::optional<std::string> name;
  unsigned gpu_instance_id = kNotAvailable;
  unsigned compute_instance_id = kNotAvailable;
};

struct EccCounters {
  std::optional<unsigned long long> corrected;    // NVML_MEMORY_ERROR_TYPE_CORRECTED
  std::optional<unsigned long long> uncorrected;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
};

struct RemappedRows {
  unsigned correctable = 0;
  unsigned uncorrectable = 0;
  bool pending = false;
  bool failure = false;
};

// One point of a GPU's timeline: the values it reads at `t_s` seconds after the scenario was
// loaded. Each value is its own track (a key left out of a keyframe is not a point of that
// track); between two points of a track the value moves linearly, before its first point it
// is that point's value and after its last the last's. clock_event_reasons steps instead.
struct Keyframe {
  double t_s = 0;
  std::optional<double> temperature, margin, sm_mhz, power_w, utilization_gpu;
  std::optional<double> pcie_replays, ecc_corrected, ecc_uncorrected;
  std::optional<unsigned long long> clock_event_reasons;
};

struct Gpu {
  std::optional<std::string> name, uuid, serial, vbios;
  std::optional<PciIdentity> pci;
  std::optional<unsigned> pcie_gen, pcie_gen_max, pcie_gen_device_max;
  std::optional<unsigned> pcie_width, pcie_width_max, pcie_replay_counter;
  std::optional<unsigned> numa_node;
  std::optional<std::vector<unsigned long>> cpu_affinity;  // mask words, kBitsPerWord CPUs each
  std::array<std::optional<unsigned>, 4> clocks_mhz;       // by nvmlClockType_t
  std::array<std::optional<unsigned>, 4> max_clocks_mhz;
  std::optional<unsigned long long> clock_event_reasons;
  std::array<std::optional<unsigned long long>, 6> violation_ns;  // by nvmlPerfPolicyType_t
  std::optional<unsigned> temperature_c;
  std::optional<int> margin_c;
  std::array<std::optional<unsigned>, 4> thresholds_c;  // by nvmlTemperatureThresholds_t
  std::optional<unsigned> power_draw_mw, power_limit_mw, power_enforced_limit_mw;
  std::optional<unsigned> power_default_limit_mw;
  std::optional<bool> ecc_enabled, ecc_pending;
  std::array<EccCounters, 2> ecc_counters;  // by nvmlEccCounterType_t (volatile, aggregate)
  std::array<std::optional<unsigned>, 2> retired_pages;  // by nvmlPageRetirementCause_t
  std::optional<bool> retired_pending;
  std::optional<RemappedRows> remapped;
  std::optional<nvmlMemory_t> memory;
  std::optional<nvmlUtilization_t> utilization;
  std::optional<std::pair<unsigned, unsigned>> mig;  // current, pending
  std::optional<bool> persistence;
  std::optional<unsigned> pstate;
  std::optional<std::vector<Process>> processes;
  std::optional<std::vector<NvLink>> nvlinks;
  std::optional<nvmlGpuFabricInfo_t> fabric;
  std::optional<unsigned> recovery_action;  // nvmlDeviceGpuRecoveryAction_t (field 230)
  FaultMap faults;
  std::vector<Keyframe> timeline;  // in time order; empty: the values above never change
};

// What the two-device calls answer for one pair of GPUs.
struct PairInfo {
  std::optional<int> level;               // nvmlGpuTopologyLevel_t; absent: NOT_SUPPORTED
  std::array<std::optional<int>, 5> p2p;  // nvmlGpuP2PStatus_t by caps index; absent: NOT_SUPPORTED
};

struct Scenario {
  std::string source;  // the file it came from, for messages
  std::string driver_version = "580.159.04";
  std::string nvml_version = "13.580.159.04";
  int cuda_driver_version = 13000;
  Fault init;
  FaultMap faults;  // apply to every call; a GPU's own faults take precedence
  std::vector<Gpu> gpus;
  std::map<std::pair<unsigned, unsigned>, PairInfo> pairs;  // keyed (lower, higher) index
  PairInfo default_pair;

  const PairInfo& pair(unsigned a, unsigned b) const {
    // Observed on a real H200: a GPU paired with itself has no topology level and no P2P.
    static const PairInfo kSelf = [] {
      PairInfo p;
      p.p2p.fill(NVML_P2P_STATUS_NOT_SUPPORTED);
      return p;
    }();
    if (a == b) return kSelf;
    auto it = pairs.find({std::min(a, b), std::max(a, b)});
    return it == pairs.end() ? default_pair : it->second;
  }
};

struct LoadResult {
  std::shared_ptr<const Scenario> scenario;  // null on failure
  std::string error;                         // "fake NVML: scenario PATH: ..." on failure
};

// ---------------------------------------------------------------------------------------------
// Name tables.

struct NamedValue {
  std::string_view name;
  long long value;
};

inline constexpr NamedValue kReturnNames[] = {
    {"SUCCESS", NVML_SUCCESS},
    {"UNINITIALIZED", NVML_ERROR_UNINITIALIZED},
    {"INVALID_ARGUMENT", NVML_ERROR_INVALID_ARGUMENT},
    {"NOT_SUPPORTED", NVML_ERROR_NOT_SUPPORTED},
    {"NO_PERMISSION", NVML_ERROR_NO_PERMISSION},
    {"ALREADY_INITIALIZED", NVML_ERROR_ALREADY_INITIALIZED},
    {"NOT_FOUND", NVML_ERROR_NOT_FOUND},
    {"INSUFFICIENT_SIZE", NVML_ERROR_INSUFFICIENT_SIZE},
    {"INSUFFICIENT_POWER", NVML_ERROR_INSUFFICIENT_POWER},
    {"DRIVER_NOT_LOADED", NVML_ERROR_DRIVER_NOT_LOADED},
    {"TIMEOUT", NVML_ERROR_TIMEOUT},
    {"IRQ_ISSUE", NVML_ERROR_IRQ_ISSUE},
    {"LIBRARY_NOT_FOUND", NVML_ERROR_LIBRARY_NOT_FOUND},
    {"FUNCTION_NOT_FOUND", NVML_ERROR_FUNCTION_NOT_FOUND},
    {"CORRUPTED_INFOROM", NVML_ERROR_CORRUPTED_INFOROM},
    {"GPU_IS_LOST", NVML_ERROR_GPU_IS_LOST},
    {"RESET_REQUIRED", NVML_ERROR_RESET_REQUIRED},
    {"OPERATING_SYSTEM", NVML_ERROR_OPERATING_SYSTEM},
    {"LIB_RM_VERSION_MISMATCH", NVML_ERROR_LIB_RM_VERSION_MISMATCH},
    {"IN_USE", NVML_ERROR_IN_USE},
    {"MEMORY", NVML_ERROR_MEMORY},
    {"NO_DATA", NVML_ERROR_NO_DATA},
    {"VGPU_ECC_NOT_SUPPORTED", NVML_ERROR_VGPU_ECC_NOT_SUPPORTED},
    {"INSUFFICIENT_RESOURCES", NVML_ERROR_INSUFFICIENT_RESOURCES},
    {"FREQ_NOT_SUPPORTED", NVML_ERROR_FREQ_NOT_SUPPORTED},
    {"ARGUMENT_VERSION_MISMATCH", NVML_ERROR_ARGUMENT_VERSION_MISMATCH},
    {"DEPRECATED", NVML_ERROR_DEPRECATED},
    {"NOT_READY", NVML_ERROR_NOT_READY},
    {"GPU_NOT_FOUND", NVML_ERROR_GPU_NOT_FOUND},
    {"INVALID_STATE", NVML_ERROR_INVALID_STATE},
    {"UNKNOWN", NVML_ERROR_UNKNOWN},
};

inline constexpr NamedValue kP2PStatusNames[] = {
    {"OK", NVML_P2P_STATUS_OK},
    {"CHIPSET_NOT_SUPPORTED", NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED},
    {"GPU_NOT_SUPPORTED", NVML_P2P_STATUS_GPU_NOT_SUPPORTED},
    {"IOH_TOPOLOGY_NOT_SUPPORTED", NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED},
    {"DISABLED_BY_REGKEY", NVML_P2P_STATUS_DISABLED_BY_REGKEY},
    {"NOT_SUPPORTED", NVML_P2P_STATUS_NOT_SUPPORTED},
    {"UNKNOWN", NVML_P2P_STATUS_UNKNOWN},
};

// NVML's names, then nvidia-smi topo -m's abbreviations for the same levels.
inline constexpr NamedValue kTopologyNames[] = {
    {"INTERNAL", NVML_TOPOLOGY_INTERNAL}, {"SINGLE", NVML_TOPOLOGY_SINGLE},
    {"MULTIPLE", NVML_TOPOLOGY_MULTIPLE}, {"HOSTBRIDGE", NVML_TOPOLOGY_HOSTBRIDGE},
    {"NODE", NVML_TOPOLOGY_NODE},         {"SYSTEM", NVML_TOPOLOGY_SYSTEM},
    {"PIX", NVML_TOPOLOGY_SINGLE},        {"PXB", NVML_TOPOLOGY_MULTIPLE},
    {"PHB", NVML_TOPOLOGY_HOSTBRIDGE},    {"SYS", NVML_TOPOLOGY_SYSTEM},
};

inline constexpr NamedValue kFabricStateNames[] = {
    {"NOT_SUPPORTED", NVML_GPU_FABRIC_STATE_NOT_SUPPORTED},
    {"NOT_STARTED", NVML_GPU_FABRIC_STATE_NOT_STARTED},
    {"IN_PROGRESS", NVML_GPU_FABRIC_STATE_IN_PROGRESS},
    {"COMPLETED", NVML_GPU_FABRIC_STATE_COMPLETED},
};

inline constexpr NamedValue kClockEventReasonNames[] = {
    {"idle", static_cast<long long>(nvmlClocksEventReasonGpuIdle)},
    {"applications_clocks_setting",
     static_cast<long long>(nvmlClocksEventReasonApplicationsClocksSetting)},
    {"sw_power_cap", static_cast<long long>(nvmlClocksEventReasonSwPowerCap)},
    {"hw_slowdown", static_cast<long long>(nvmlClocksThrottleReasonHwSlowdown)},
    {"sync_boost", static_cast<long long>(nvmlClocksEventReasonSyncBoost)},
    {"sw_thermal_slowdown", static_cast<long long>(nvmlClocksEventReasonSwThermalSlowdown)},
    {"hw_thermal_slowdown", static_cast<long long>(nvmlClocksThrottleReasonHwThermalSlowdown)},
    {"hw_power_brake_slowdown",
     static_cast<long long>(nvmlClocksThrottleReasonHwPowerBrakeSlowdown)},
    {"display_clock_setting", static_cast<long long>(nvmlClocksEventReasonDisplayClockSetting)},
};

template <std::size_t N>
std::optional<long long> lookup_name(const NamedValue (&table)[N], std::string_view name) {
  for (const auto& entry : table) {
    if (entry.name == name) return entry.value;
  }
  return std::nullopt;
}

template <std::size_t N>
std::string list_names(const NamedValue (&table)[N]) {
  std::string out;
  for (const auto& entry : table) {
    if (!out.empty()) out += ", ";
    out += entry.name;
  }
  return out;
}

// "nvmlDeviceGetPciInfo_v3" -> "nvmlDeviceGetPciInfo"
inline std::string_view base_name(std::string_view fn) {
  auto pos = fn.rfind("_v");
  if (pos == std::string_view::npos || pos + 2 == fn.size()) return fn;
  for (auto i = pos + 2; i < fn.size(); ++i) {
    if (fn[i] < '0' || fn[i] > '9') return fn;
  }
  return fn.substr(0, pos);
}

// Calls that take no device handle: only top-level faults reach them.
inline bool is_system_call(std::string_view fn) {
  fn = base_name(fn);
  return fn.rfind("nvmlSystem", 0) == 0 || fn == "nvmlDeviceGetCount" ||
         fn == "nvmlDeviceGetHandleByIndex";
}

// Every name a "faults" key may use: the exported functions and their base names, less the
// ones faults cannot reach (init has its own "init" key; shutdown and nvmlErrorString never fail).
inline bool is_faultable_function(std::string_view key) {
#define FAKE_NVML_NAME(fn) #fn,
  static constexpr std::string_view kExported[] = {GPUVET_NVML_SYMBOLS(FAKE_NVML_NAME)};
#undef FAKE_NVML_NAME
  for (auto fn : kExported) {
    if (base_name(fn) == "nvmlInit" || fn == "nvmlShutdown" || fn == "nvmlErrorString") continue;
    if (key == fn || key == base_name(fn)) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Loader.

class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One JSON value being read, with its path ("gpus[1].pcie.gen") for error messages.
class Node {
 public:
  Node(const nlohmann::json& value, std::string path) : value_(value), path_(std::move(path)) {}

  const nlohmann::json& json() const { return value_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& what) const {
    throw ScenarioError((path_.empty() ? std::string("top level") : path_) + ": " + what);
  }
  [[noreturn]] void expected(const char* what) const {
    fail(std::string("expected ") + what + ", got " + describe());
  }

  void require_object() const {
    if (!value_.is_object()) expected("an object");
  }
  void require_array() const {
    if (!value_.is_array()) expected("an array");
  }

  // Rejects keys not listed, so a misspelt key is an error rather than a silent
  // NOT_SUPPORTED. Keys starting with '_' are free-form comments.
  void only_keys(std::initializer_list<std::string_view> allowed) const {
    require_object();
    for (const auto& item : value_.items()) {
      const std::string& key = item.key();
      if (!key.empty() && key[0] == '_') continue;
      bool known = false;
      for (auto name : allowed) known = known || name == key;
      if (!known) {
        std::string list;
        for (auto name : allowed) list += (list.empty() ? "" : ", ") + std::string(name);
        child_path_fail(key, "unknown key (expected one of: " + list + ")");
      }
    }
  }

  // A present, non-null member; JSON null counts as absent.
  std::optional<Node> get(std::string_view key) const {
    require_object();
    auto it = value_.find(key);
    if (it == value_.end() || it->is_null()) return std::nullopt;
    return Node(*it, child_path(key));
  }

  std::vector<Node> elements() const {
    require_array();
    std::vector<Node> out;
    for (std::size_t i = 0; i < value_.size(); ++i) {
      out.emplace_back(value_[i], path_ + "[" + std::to_string(i) + "]");
    }
    return out;
  }

  std::vector<std::pair<std::string, Node>> members() const {
    require_object();
    std::vector<std::pair<std::string, Node>> out;
    for (const auto& item : value_.items()) {
      if (!item.key().empty() && item.key()[0] == '_') continue;
      out.emplace_back(item.key(), Node(item.value(), child_path(item.key())));
    }
    return out;
  }

  unsigned long long as_uint(unsigned long long max) const {
    unsigned long long v = 0;
    if (value_.is_number_unsigned()) {
      v = value_.get<unsigned long long>();
    } else if (value_.is_number_integer() && value_.get<long long>() >= 0) {
      v = static_cast<unsigned long long>(value_.get<long long>());
    } else {
      expected("a non-negative integer");
    }
    if (v > max)
      fail("value " + std::to_string(v) + " is above the maximum " + std::to_string(max));
    return v;
  }
  unsigned as_u32(unsigned max = 0xFFFFFFFFu) const { return static_cast<unsigned>(as_uint(max)); }

  int as_int(int min, int max) const {
    if (!value_.is_number_integer()) expected("an integer");
    long long v = value_.is_number_unsigned() ? static_cast<long long>(std::min<unsigned long long>(
                                                    value_.get<unsigned long long>(), 1ULL << 62))
                                              : value_.get<long long>();
    if (v < min || v > max) {
      fail("value " + std::to_string(v) + " is outside " + std::to_string(min) + ".." +
           std::to_string(max));
    }
    return static_cast<int>(v);
  }

  double as_number(double min, double max) const {
    if (!value_.is_number()) expected("a number");
    double v = value_.get<double>();
    if (!(v >= min && v <= max)) fail("value is outside " + fmt(min) + ".." + fmt(max));
    return v;
  }

  bool as_bool() const {
    if (!value_.is_boolean()) expected("true or false");
    return value_.get<bool>();
  }
  // Enable-state style fields: true/false or 0/1.
  unsigned as_flag() const {
    if (value_.is_boolean()) return value_.get<bool>() ? 1 : 0;
    if (value_.is_number_integer()) return as_u32(1);
    expected("true, false, 0 or 1");
  }

  std::string as_string() const {
    if (!value_.is_string()) expected("a string");
    return value_.get<std::string>();
  }

  template <std::size_t N>
  long long as_name(const NamedValue (&table)[N], std::string_view strip_prefix = {}) const {
    std::string s = as_string();
    std::string_view name = s;
    if (!strip_prefix.empty() && name.rfind(strip_prefix, 0) == 0) {
      name.remove_prefix(strip_prefix.size());
    }
    auto v = lookup_name(table, name);
    if (!v) fail("unknown name \"" + s + "\" (expected one of: " + list_names(table) + ")");
    return *v;
  }

  // Hex string ("0x233510DE") or integer.
  unsigned as_hex_u32() const {
    if (value_.is_number()) return as_u32();
    std::string s = as_string();
    std::string_view digits = s;
    if (digits.rfind("0x", 0) == 0 || digits.rfind("0X", 0) == 0) digits.remove_prefix(2);
    auto v = parse_hex(digits, 8);
    if (!v) fail("\"" + s + "\" is not a 32-bit hexadecimal number");
    return static_cast<unsigned>(*v);
  }

  static std::optional<unsigned long long> parse_hex(std::string_view s, std::size_t max_digits) {
    if (s.empty() || s.size() > max_digits) return std::nullopt;
    unsigned long long v = 0;
    for (char c : s) {
      int d = (c >= '0' && c <= '9')   ? c - '0'
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10
              : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                       : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + static_cast<unsigned>(d);
    }
    return v;
  }

 private:
  std::string child_path(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  [[noreturn]] void child_path_fail(std::string_view key, const std::string& what) const {
    throw ScenarioError(child_path(key) + ": " + what);
  }
  std::string describe() const {
    std::string dump = value_.dump();
    if (dump.size() > 40) dump = dump.substr(0, 37) + "...";
    return std::string(value_.type_name()) + " " + dump;
  }
  static std::string fmt(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
  }

  const nlohmann::json& value_;
  std::string path_;
};

// "00000000:18:00.0", "0000:18:00.0" or "18:00.0" (hex, any case).
inline PciAddress parse_bus_id(const Node& node) {
  std::string s = node.as_string();
  std::string_view rest = s;
  std::vector<std::string_view> parts;
  for (std::size_t pos; (pos = rest.find(':')) != std::string_view::npos;) {
    parts.push_back(rest.substr(0, pos));
    rest.remove_prefix(pos + 1);
  }
  auto dot = rest.find('.');
  bool ok = dot != std::string_view::npos && (parts.size() == 1 || parts.size() == 2);
  PciAddress a;
  if (ok) {
    auto domain = parts.size() == 2 ? Node::parse_hex(parts[0], 8) : std::optional(0ULL);
    auto bus = Node::parse_hex(parts.back(), 2);
    auto device = Node::parse_hex(rest.substr(0, dot), 2);
    auto function = Node::parse_hex(rest.substr(dot + 1), 1);
    ok = domain && bus && device && *device < 32 && function && *function < 8;
    if (ok) a = {unsigned(*domain), unsigned(*bus), unsigned(*device), unsigned(*function)};
  }
  if (!ok) node.fail("\"" + s + "\" is not a PCI bus id like \"00000000:18:00.0\"");
  return a;
}

// "0-15,32,48-63" -> mask words.
inline std::vector<unsigned long> parse_cpu_list(const Node& node) {
  std::string s = node.as_string();
  std::vector<unsigned long> words;
  auto bad = [&](const std::string& why) {
    node.fail("\"" + s + "\" is not a CPU list like \"0-15,32-47\": " + why);
  };
  auto number = [&](std::string_view t) -> unsigned {
    if (t.empty() || t.size() > 5) bad("bad number");
    unsigned v = 0;
    for (char c : t) {
      if (c < '0' || c > '9') bad("bad number");
      v = v * 10 + unsigned(c - '0');
    }
    if (v >= kMaxCpus) bad("CPU id above " + std::to_string(kMaxCpus - 1));
    return v;
  };
  std::string_view rest = s;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    auto dash = item.find('-');
    unsigned lo = number(item.substr(0, dash));
    unsigned hi = dash == std::string_view::npos ? lo : number(item.substr(dash + 1));
    if (hi < lo) bad("range goes backwards");
    if (words.size() <= hi / kBitsPerWord) words.resize(hi / kBitsPerWord + 1, 0);
    for (unsigned cpu = lo; cpu <= hi; ++cpu) {
      words[cpu / kBitsPerWord] |= 1UL << (cpu % kBitsPerWord);
    }
  }
  return words;
}

// "a1b2c3d4-..." (32 hex digits, dashes anywhere) -> 16 bytes.
inline void parse_uuid_bytes(const Node& node, unsigned char (&out)[16]) {
  std::string s = node.as_string();
  std::string hex;
  for (char c : s) {
    if (c != '-') hex += c;
  }
  bool ok = hex.size() == 32;
  for (std::size_t i = 0; ok && i < 16; ++i) {
    auto byte = Node::parse_hex(std::string_view(hex).substr(2 * i, 2), 2);
    ok = byte.has_value();
    if (ok) out[i] = static_cast<unsigned char>(*byte);
  }
  if (!ok) node.fail("\"" + s + "\" is not a UUID of 32 hex digits");
}

// "UNKNOWN", "NVML_ERROR_UNKNOWN", "SUCCESS", "NVML_SUCCESS".
inline nvmlReturn_t parse_return(const Node& node) {
  std::string s = node.as_string();
  std::string_view name = s;
  if (name.rfind("NVML_ERROR_", 0) == 0) {
    name.remove_prefix(11);
  } else if (name == "NVML_SUCCESS") {
    name = "SUCCESS";
  }
  auto v = lookup_name(kReturnNames, name);
  if (!v)
    node.fail("unknown NVML return \"" + s + "\" (expected one of: " + list_names(kReturnNames) +
              ")");
  return static_cast<nvmlReturn_t>(*v);
}

// An error name, or {"hang_ms": N, "then": NAME} ("error" is accepted for "then").
inline Fault parse_fault(const Node& node) {
  Fault f;
  if (node.json().is_string()) {
    f.result = parse_return(node);
    return f;
  }
  if (!node.json().is_object()) node.expected("an NVML error name or {\"hang_ms\", \"then\"}");
  node.only_keys({"hang_ms", "then", "error"});
  if (auto n = node.get("hang_ms")) f.hang_ms = n->as_u32(24 * 3600 * 1000);
  auto then = node.get("then");
  auto error = node.get("error");
  if (then && error) node.fail("give \"then\" or \"error\", not both");
  if (then) f.result = parse_return(*then);
  if (error) f.result = parse_return(*error);
  return f;
}

inline FaultMap parse_faults(const Node& node, bool per_gpu) {
  FaultMap faults;
  for (const auto& [key, value] : node.members()) {
    bool ok = key == "*" || is_faultable_function(key);
    if (!ok) value.fail("not a function the fake exports (or one that cannot fail)");
    if (per_gpu && key != "*" && is_system_call(key) &&
        base_name(key) != "nvmlDeviceGetHandleByIndex") {
      value.fail("a system call cannot fail for one GPU; put it in the top-level \"faults\"");
    }
    faults[key] = parse_fault(value);
  }
  return faults;
}

inline PciIdentity parse_pci_identity(const Node& owner, std::string_view bus_key,
                                      std::string_view device_key, std::string_view subsystem_key) {
  PciIdentity id;
  id.address = parse_bus_id(*owner.get(bus_key));
  if (auto n = owner.get(device_key)) id.device_id = n->as_hex_u32();
  if (auto n = owner.get(subsystem_key)) id.subsystem_id = n->as_hex_u32();
  return id;
}

inline std::optional<unsigned> opt_u32(const Node& node, std::string_view key,
                                       unsigned max = 0xFFFFFFFFu) {
  if (auto n = node.get(key)) return n->as_u32(max);
  return std::nullopt;
}

inline std::optional<std::string> opt_string(const Node& node, std::string_view key) {
  if (auto n = node.get(key)) return n->as_string();
  return std::nullopt;
}

inline std::optional<unsigned> opt_milliwatts(const Node& node, std::string_view key) {
  if (auto n = node.get(key))
    return static_cast<unsigned>(std::llround(n->as_number(0, 1e6) * 1000));
  return std::nullopt;
}

inline void parse_pcie(const Node& node, Gpu& gpu) {
  node.only_keys({"gen", "gen_max", "gen_device_max", "width", "width_max", "replay_counter"});
  gpu.pcie_gen = opt_u32(node, "gen", 16);
  gpu.pcie_gen_max = opt_u32(node, "gen_max", 16);
  gpu.pcie_gen_device_max = opt_u32(node, "gen_device_max", 16);
  gpu.pcie_width = opt_u32(node, "width", 32);
  gpu.pcie_width_max = opt_u32(node, "width_max", 32);
  gpu.pcie_replay_counter = opt_u32(node, "replay_counter");
}

inline void parse_clocks(const Node& node, Gpu& gpu) {
  node.only_keys(
      {"graphics", "sm", "mem", "video", "graphics_max", "sm_max", "mem_max", "video_max"});
  static constexpr std::string_view kTypes[] = {"graphics", "sm", "mem", "video"};
  for (std::size_t t = 0; t < 4; ++t) {
    gpu.clocks_mhz[t] = opt_u32(node, kTypes[t], 100000);
    gpu.max_clocks_mhz[t] = opt_u32(node, std::string(kTypes[t]) + "_max", 100000);
  }
}

inline unsigned long long parse_clock_event_reasons(const Node& node) {
  if (node.json().is_number()) return node.as_uint(~0ULL);
  if (!node.json().is_array()) node.expected("a bitmask integer or a list of reason names");
  unsigned long long mask = 0;
  for (const auto& item : node.elements()) {
    mask |= static_cast<unsigned long long>(item.as_name(kClockEventReasonNames));
  }
  return mask;
}

inline void parse_violations(const Node& node, Gpu& gpu) {
  static constexpr std::string_view kPolicies[] = {"power",       "thermal",         "sync_boost",
                                                   "board_limit", "low_utilization", "reliability"};
  node.only_keys(
      {"power", "thermal", "sync_boost", "board_limit", "low_utilization", "reliability"});
  for (std::size_t p = 0; p < 6; ++p) {
    if (auto n = node.get(kPolicies[p])) gpu.violation_ns[p] = n->as_uint(~0ULL);
  }
}

inline void parse_thresholds(const Node& node, Gpu& gpu) {
  node.only_keys({"shutdown", "slowdown", "mem_max", "gpu_max"});
  gpu.thresholds_c[NVML_TEMPERATURE_THRESHOLD_SHUTDOWN] = opt_u32(node, "shutdown", 300);
  gpu.thresholds_c[NVML_TEMPERATURE_THRESHOLD_SLOWDOWN] = opt_u32(node, "slowdown", 300);
  gpu.thresholds_c[NVML_TEMPERATURE_THRESHOLD_MEM_MAX] = opt_u32(node, "mem_max", 300);
  gpu.thresholds_c[NVML_TEMPERATURE_THRESHOLD_GPU_MAX] = opt_u32(node, "gpu_max", 300);
}

inline void parse_power(const Node& node, Gpu& gpu) {
  node.only_keys({"draw_w", "limit_w", "enforced_limit_w", "default_limit_w"});
  gpu.power_draw_mw = opt_milliwatts(node, "draw_w");
  gpu.power_limit_mw = opt_milliwatts(node, "limit_w");
  gpu.power_enforced_limit_mw = opt_milliwatts(node, "enforced_limit_w");
  gpu.power_default_limit_mw = opt_milliwatts(node, "default_limit_w");
}

inline EccCounters parse_ecc_counters(const Node& node) {
  node.only_keys({"corrected", "uncorrected"});
  EccCounters c;
  if (auto n = node.get("corrected")) c.corrected = n->as_uint(~0ULL);
  if (auto n = node.get("uncorrected")) c.uncorrected = n->as_uint(~0ULL);
  return c;
}

inline void parse_ecc(const Node& node, Gpu& gpu) {
  node.only_keys({"enabled", "pending", "volatile", "aggregate", "retired_sbe", "retired_dbe",
                  "retired_pending", "remapped"});
  if (auto n = node.get("enabled")) gpu.ecc_enabled = n->as_bool();
  if (auto n = node.get("pending")) gpu.ecc_pending = n->as_bool();
  if (gpu.ecc_enabled.has_value() != gpu.ecc_pending.has_value()) {
    node.fail("give both \"enabled\" and \"pending\" (one NVML call answers both), or neither");
  }
  if (auto n = node.get("volatile")) gpu.ecc_counters[NVML_VOLATILE_ECC] = parse_ecc_counters(*n);
  if (auto n = node.get("aggregate")) gpu.ecc_counters[NVML_AGGREGATE_ECC] = parse_ecc_counters(*n);
  gpu.retired_pages[NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS] =
      opt_u32(node, "retired_sbe", 1u << 20);
  gpu.retired_pages[NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR] =
      opt_u32(node, "retired_dbe", 1u << 20);
  if (auto n = node.get("retired_pending")) gpu.retired_pending = n->as_bool();
  if (auto n = node.get("remapped")) {
    n->only_keys({"correctable", "uncorrectable", "pending", "failure"});
    RemappedRows r;
    r.correctable = opt_u32(*n, "correctable").value_or(0);
    r.uncorrectable = opt_u32(*n, "uncorrectable").value_or(0);
    if (auto p = n->get("pending")) r.pending = p->as_bool();
    if (auto f = n->get("failure")) r.failure = f->as_bool();
    gpu.remapped = r;
  }
}

inline void parse_memory(const Node& node, Gpu& gpu) {
  node.only_keys({"total", "used"});
  auto total = node.get("total");
  if (!total) node.fail("\"total\" is required");
  nvmlMemory_t m{};
  m.total = total->as_uint(~0ULL);
  if (auto used = node.get("used")) m.used = used->as_uint(m.total);
  m.free = m.total - m.used;
  gpu.memory = m;
}

inline std::vector<Process> parse_processes(const Node& node) {
  std::vector<Process> out;
  for (const auto& item : node.elements()) {
    item.only_keys({"pid", "used_memory", "name", "gpu_instance_id", "compute_instance_id"});
    auto pid = item.get("pid");
    if (!pid) item.fail("\"pid\" is required");
    Process p;
    p.pid = pid->as_u32();
    if (auto n = item.get("used_memory")) p.used_memory = n->as_uint(~0ULL);
    p.name = opt_string(item, "name");
    if (auto n = item.get("gpu_instance_id")) p.gpu_instance_id = n->as_u32();
    if (auto n = item.get("compute_instance_id")) p.compute_instance_id = n->as_u32();
    out.push_back(std::move(p));
  }
  return out;
}

inline std::vector<NvLink> parse_nvlinks(const Node& node) {
  std::vector<NvLink> links;
  for (const auto& item : node.elements()) {
    item.only_keys({"active", "version", "remote_pci_bus_id", "remote_pci_device_id",
                    "remote_pci_subsystem_id", "repeat"});
    NvLink link;
    if (auto n = item.get("active")) link.active = n->as_bool();
    link.version = opt_u32(item, "version", 100);
    if (item.get("remote_pci_bus_id")) {
      link.remote = parse_pci_identity(item, "remote_pci_bus_id", "remote_pci_device_id",
                                       "remote_pci_subsystem_id");
    } else if (item.get("remote_pci_device_id") || item.get("remote_pci_subsystem_id")) {
      item.fail("a remote device id needs \"remote_pci_bus_id\"");
    }
    unsigned repeat = opt_u32(item, "repeat", NVML_NVLINK_MAX_LINKS).value_or(1);
    if (repeat == 0) item.fail("\"repeat\" must be at least 1");
    links.insert(links.end(), repeat, link);
    if (links.size() > NVML_NVLINK_MAX_LINKS) {
      item.fail("more than NVML_NVLINK_MAX_LINKS (" + std::to_string(NVML_NVLINK_MAX_LINKS) +
                ") links");
    }
  }
  return links;
}

inline nvmlGpuFabricInfo_t parse_fabric(const Node& node) {
  node.only_keys({"state", "status", "clique_id", "cluster_uuid"});
  nvmlGpuFabricInfo_t f{};
  f.state = NVML_GPU_FABRIC_STATE_NOT_SUPPORTED;
  f.status = NVML_SUCCESS;
  if (auto n = node.get("state")) {
    f.state = static_cast<unsigned char>(
        n->json().is_number() ? n->as_u32(NVML_GPU_FABRIC_STATE_COMPLETED)
                              : static_cast<unsigned>(n->as_name(kFabricStateNames)));
  }
  if (auto n = node.get("status")) f.status = parse_return(*n);
  if (auto n = node.get("clique_id")) f.cliqueId = n->as_u32();
  if (auto n = node.get("cluster_uuid")) parse_uuid_bytes(*n, f.clusterUuid);
  return f;
}

inline unsigned parse_pstate(const Node& node) {
  if (node.json().is_string()) {
    std::string s = node.as_string();
    bool ok = (s.size() == 2 || s.size() == 3) && s[0] == 'P' && s[1] >= '0' && s[1] <= '9' &&
              (s.size() == 2 || (s[1] == '1' && s[2] >= '0' && s[2] <= '5'));
    if (!ok) node.fail("\"" + s + "\" is not a performance state P0..P15");
    return static_cast<unsigned>(std::stoi(s.substr(1)));
  }
  unsigned v = node.as_u32(32);
  if (v > 15 && v != 32) node.fail("performance state must be 0..15 or 32 (unknown)");
  return v;
}

inline std::vector<Keyframe> parse_timeline(const Node& node) {
  std::vector<Keyframe> out;
  for (const auto& item : node.elements()) {
    item.only_keys({"t_s", "temperature", "margin", "sm_mhz", "power_w", "utilization_gpu",
                    "clock_event_reasons", "pcie_replays", "ecc_corrected", "ecc_uncorrected"});
    Keyframe k;
    auto t = item.get("t_s");
    if (!t) item.fail("\"t_s\" (seconds after the scenario was loaded) is required");
    k.t_s = t->as_number(0, 1e7);
    if (!out.empty() && k.t_s < out.back().t_s) t->fail("keyframes must be in time order");
    if (auto n = item.get("temperature")) k.temperature = n->as_number(0, 300);
    if (auto n = item.get("margin")) k.margin = n->as_number(-300, 300);
    if (auto n = item.get("sm_mhz")) k.sm_mhz = n->as_number(0, 100000);
    if (auto n = item.get("power_w")) k.power_w = n->as_number(0, 100000);
    if (auto n = item.get("utilization_gpu")) k.utilization_gpu = n->as_number(0, 100);
    if (auto n = item.get("pcie_replays")) k.pcie_replays = n->as_number(0, 4e9);
    if (auto n = item.get("ecc_corrected")) k.ecc_corrected = n->as_number(0, 1e15);
    if (auto n = item.get("ecc_uncorrected")) k.ecc_uncorrected = n->as_number(0, 1e15);
    if (auto n = item.get("clock_event_reasons"))
      k.clock_event_reasons = parse_clock_event_reasons(*n);
    out.push_back(k);
  }
  return out;
}

// A track of the timeline at `t`: linear between its points (nullopt when no keyframe names it).
template <class T>
std::optional<double> track_at(const std::vector<Keyframe>& timeline,
                               std::optional<T> Keyframe::*field, double t, bool step = false) {
  const Keyframe* before = nullptr;
  const Keyframe* after = nullptr;
  for (const auto& k : timeline) {
    if (!(k.*field)) continue;
    if (k.t_s <= t) {
      before = &k;
    } else {
      after = &k;
      break;
    }
  }
  if (!before && !after) return std::nullopt;
  if (!before) return static_cast<double>(*(after->*field));
  if (!after || step || after->t_s <= before->t_s) return static_cast<double>(*(before->*field));
  const double a = static_cast<double>(*(before->*field));
  const double b = static_cast<double>(*(after->*field));
  return a + (b - a) * (t - before->t_s) / (after->t_s - before->t_s);
}

// `gpu` as it reads `t` seconds after the scenario was loaded.
inline Gpu gpu_at(const Gpu& gpu, double t) {
  Gpu g = gpu;
  const auto& tl = gpu.timeline;
  auto rounded = [](double x) { return static_cast<long long>(std::llround(x)); };
  if (auto v = track_at(tl, &Keyframe::temperature, t))
    g.temperature_c = static_cast<unsigned>(rounded(*v));
  if (auto v = track_at(tl, &Keyframe::margin, t)) g.margin_c = static_cast<int>(rounded(*v));
  if (auto v = track_at(tl, &Keyframe::sm_mhz, t)) {
    g.clocks_mhz[NVML_CLOCK_GRAPHICS] = static_cast<unsigned>(rounded(*v));
    g.clocks_mhz[NVML_CLOCK_SM] = static_cast<unsigned>(rounded(*v));
  }
  if (auto v = track_at(tl, &Keyframe::power_w, t))
    g.power_draw_mw = static_cast<unsigned>(rounded(*v * 1000));
  if (auto v = track_at(tl, &Keyframe::utilization_gpu, t)) {
    nvmlUtilization_t u = g.utilization.value_or(nvmlUtilization_t{0, 0});
    u.gpu = static_cast<unsigned>(rounded(*v));
    g.utilization = u;
  }
  // Counters count whole events: they move when the next one has happened.
  if (auto v = track_at(tl, &Keyframe::pcie_replays, t))
    g.pcie_replay_counter = static_cast<unsigned>(std::floor(*v));
  auto& vol = g.ecc_counters[NVML_VOLATILE_ECC];
  if (auto v = track_at(tl, &Keyframe::ecc_corrected, t))
    vol.corrected = static_cast<unsigned long long>(std::floor(*v));
  if (auto v = track_at(tl, &Keyframe::ecc_uncorrected, t))
    vol.uncorrected = static_cast<unsigned long long>(std::floor(*v));
  if (auto v = track_at(tl, &Keyframe::clock_event_reasons, t, /*step=*/true))
    g.clock_event_reasons = static_cast<unsigned long long>(*v);
  return g;
}

inline Gpu parse_gpu(const Node& node) {
  node.only_keys({"name",
                  "uuid",
                  "serial",
                  "vbios",
                  "pci_bus_id",
                  "pci_device_id",
                  "pci_subsystem_id",
                  "pcie",
                  "numa_node",
                  "cpu_affinity",
                  "clocks",
                  "clock_event_reasons",
                  "violation_ns",
                  "temperature",
                  "margin",
                  "thresholds",
                  "power",
                  "ecc",
                  "memory",
                  "utilization",
                  "mig",
                  "persistence",
                  "pstate",
                  "processes",
                  "nvlinks",
                  "fabric",
                  "faults",
                  "handle_error",
                  "timeline",
                  "recovery_action"});
  Gpu gpu;
  gpu.name = opt_string(node, "name");
  gpu.uuid = opt_string(node, "uuid");
  gpu.serial = opt_string(node, "serial");
  gpu.vbios = opt_string(node, "vbios");
  if (node.get("pci_bus_id")) {
    gpu.pci = parse_pci_identity(node, "pci_bus_id", "pci_device_id", "pci_subsystem_id");
  } else if (node.get("pci_device_id") || node.get("pci_subsystem_id")) {
    node.fail("\"pci_device_id\"/\"pci_subsystem_id\" need \"pci_bus_id\"");
  }
  if (auto n = node.get("pcie")) parse_pcie(*n, gpu);
  gpu.numa_node = opt_u32(node, "numa_node", 1023);
  if (auto n = node.get("cpu_affinity")) gpu.cpu_affinity = parse_cpu_list(*n);
  if (auto n = node.get("clocks")) parse_clocks(*n, gpu);
  if (auto n = node.get("clock_event_reasons"))
    gpu.clock_event_reasons = parse_clock_event_reasons(*n);
  if (auto n = node.get("violation_ns")) parse_violations(*n, gpu);
  gpu.temperature_c = opt_u32(node, "temperature", 300);
  if (auto n = node.get("margin")) gpu.margin_c = n->as_int(-300, 300);
  if (auto n = node.get("thresholds")) parse_thresholds(*n, gpu);
  if (auto n = node.get("power")) parse_power(*n, gpu);
  if (auto n = node.get("ecc")) parse_ecc(*n, gpu);
  if (auto n = node.get("memory")) parse_memory(*n, gpu);
  if (auto n = node.get("utilization")) {
    n->only_keys({"gpu", "memory"});
    gpu.utilization = nvmlUtilization_t{opt_u32(*n, "gpu", 100).value_or(0),
                                        opt_u32(*n, "memory", 100).value_or(0)};
  }
  if (auto n = node.get("mig")) {
    n->only_keys({"current", "pending"});
    auto current = n->get("current");
    auto pending = n->get("pending");
    gpu.mig = std::pair(current ? current->as_flag() : 0u, pending ? pending->as_flag() : 0u);
  }
  if (auto n = node.get("persistence")) gpu.persistence = n->as_flag() != 0;
  gpu.recovery_action = opt_u32(node, "recovery_action", 7);
  if (auto n = node.get("pstate")) gpu.pstate = parse_pstate(*n);
  if (auto n = node.get("processes")) gpu.processes = parse_processes(*n);
  if (auto n = node.get("nvlinks")) gpu.nvlinks = parse_nvlinks(*n);
  if (auto n = node.get("fabric")) gpu.fabric = parse_fabric(*n);
  if (auto n = node.get("faults")) gpu.faults = parse_faults(*n, /*per_gpu=*/true);
  if (auto n = node.get("handle_error")) {
    if (gpu.faults.count("nvmlDeviceGetHandleByIndex")) {
      n->fail("give \"handle_error\" or faults.nvmlDeviceGetHandleByIndex, not both");
    }
    gpu.faults["nvmlDeviceGetHandleByIndex"] = parse_fault(*n);
  }
  if (auto n = node.get("timeline")) gpu.timeline = parse_timeline(*n);
  return gpu;
}

inline void parse_p2p(const Node& node, PairInfo& pair) {
  if (node.json().is_string()) {
    pair.p2p.fill(static_cast<int>(node.as_name(kP2PStatusNames)));
    return;
  }
  static constexpr std::string_view kIndexes[] = {"read", "write", "nvlink", "atomics", "pci"};
  node.only_keys({"read", "write", "nvlink", "atomics", "pci"});
  for (std::size_t i = 0; i < pair.p2p.size(); ++i) {
    if (auto n = node.get(kIndexes[i])) pair.p2p[i] = static_cast<int>(n->as_name(kP2PStatusNames));
  }
}

// Fields of `node` over `base`: what a pair does not say comes from default_pair.
inline PairInfo parse_pair_fields(const Node& node, PairInfo base) {
  if (auto n = node.get("level")) base.level = static_cast<int>(n->as_name(kTopologyNames));
  if (auto n = node.get("p2p")) parse_p2p(*n, base);
  return base;
}

inline std::shared_ptr<const Scenario> parse_scenario(const nlohmann::json& root,
                                                      const std::string& source) {
  Node top(root, "");
  top.only_keys({"description", "driver_version", "nvml_version", "cuda_driver_version", "init",
                 "count_error", "faults", "gpus", "pairs", "default_pair"});
  auto s = std::make_shared<Scenario>();
  s->source = source;
  if (auto n = top.get("description")) n->as_string();
  if (auto v = opt_string(top, "driver_version")) s->driver_version = *v;
  if (auto v = opt_string(top, "nvml_version")) s->nvml_version = *v;
  if (auto n = top.get("cuda_driver_version")) s->cuda_driver_version = n->as_int(0, 1000000);
  if (auto n = top.get("init")) s->init = parse_fault(*n);
  if (auto n = top.get("faults")) s->faults = parse_faults(*n, /*per_gpu=*/false);
  if (auto n = top.get("count_error")) {
    if (s->faults.count("nvmlDeviceGetCount")) {
      n->fail("give \"count_error\" or faults.nvmlDeviceGetCount, not both");
    }
    s->faults["nvmlDeviceGetCount"] = parse_fault(*n);
  }
  if (auto n = top.get("gpus")) {
    for (const auto& item : n->elements()) s->gpus.push_back(parse_gpu(item));
    if (s->gpus.size() > kMaxGpus) n->fail("more than " + std::to_string(kMaxGpus) + " GPUs");
  }
  if (auto n = top.get("default_pair")) {
    n->only_keys({"level", "p2p"});
    s->default_pair = parse_pair_fields(*n, PairInfo{});
  }
  if (auto n = top.get("pairs")) {
    for (const auto& item : n->elements()) {
      item.only_keys({"a", "b", "level", "p2p"});
      auto a = item.get("a");
      auto b = item.get("b");
      if (!a || !b) item.fail("\"a\" and \"b\" (GPU indexes) are required");
      unsigned ia = a->as_u32(kMaxGpus);
      unsigned ib = b->as_u32(kMaxGpus);
      if (ia >= s->gpus.size() || ib >= s->gpus.size()) {
        item.fail("GPU index out of range (the scenario has " + std::to_string(s->gpus.size()) +
                  " GPUs)");
      }
      if (ia == ib) item.fail("a GPU cannot be paired with itself");
      auto key = std::pair(std::min(ia, ib), std::max(ia, ib));
      if (s->pairs.count(key)) item.fail("pair listed twice");
      s->pairs[key] = parse_pair_fields(item, s->default_pair);
    }
  }
  return s;
}

// Parses text; never throws.
inline LoadResult load_scenario_text(const std::string& text, const std::string& source) {
  const std::string prefix = "fake NVML: scenario " + source + ": ";
  try {
    nlohmann::json root = nlohmann::json::parse(text);
    return {parse_scenario(root, source), {}};
  } catch (const nlohmann::json::parse_error& e) {
    // what() is "[json.exception.parse_error.101] parse error at line 3, column 5: ...".
    std::string what = e.what();
    auto pos = what.find("] ");
    return {nullptr, prefix + (pos == std::string::npos ? what : what.substr(pos + 2))};
  } catch (const ScenarioError& e) {
    return {nullptr, prefix + e.what()};
  } catch (const std::exception& e) {
    return {nullptr, prefix + e.what()};
  }
}

inline LoadResult load_scenario_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return {nullptr, "fake NVML: scenario " + path + ": cannot read: Is a directory"};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return {nullptr, "fake NVML: scenario " + path + ": cannot read: " + std::strerror(errno)};
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return {nullptr, "fake NVML: scenario " + path + ": read error"};
  return load_scenario_text(text.str(), path);
}

}  // namespace fake_nvml
