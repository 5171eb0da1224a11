// gpuvet/baseline.h — a node's conformance fingerprint, the baseline file a platform team keeps
// per server model, and the comparison of a node with it.
//
// A NodePrint is what must not change between two healthy nodes of one server model: GPU
// count and model, per GPU its PCIe capability, NUMA node and NVLink count, per pair the path
// type and the P2P status, plus the configuration a team pins (driver, VBIOS, ECC mode, power
// limit). It is computed from Facts (live or imported) by node_print(), written into a
// `gpuvet.gate/1` report (report.h) and read back by the fleet history, so the gate and the
// fleet compare the same things.
//
// A Baseline is a NodePrint that a person can read and edit (TOML, see docs/baseline.md),
// where each value is "must equal" or "at least", plus optional bandwidth floors. compare()
// turns every difference into a Deviation with "expected X, found Y" evidence.
//
// Everything here is a pure function of its inputs except read_baseline_file().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/facts.h"
#include "gpuvet/severity.h"
#include "gpuvet/status.h"

namespace gpuvet {

struct GpuPrint {
  int index = 0;
  std::optional<std::string> name;
  std::optional<std::string> uuid;        // identity only: never compared
  std::optional<std::string> pci_bus_id;  // "0000:18:00.0"
  std::optional<int> pcie_gen_max;
  std::optional<int> pcie_width_max;
  std::optional<int>
      pcie_width;  // current width (a GPU drops its generation when idle, not its width)
  std::optional<int> numa_node;
  std::optional<int> nvlinks_up;      // active NVLink links; 0 on a PCIe-only GPU
  std::optional<std::string> fabric;  // NVSwitch fabric state, "completed", …; empty if none
  std::optional<std::string> vbios;
  std::optional<bool> ecc_enabled;
  std::optional<double> power_limit_w;  // the management limit in force
};

struct PairPrint {
  int a = 0;
  int b = 0;
  std::string path;                // "NV18", "PIX", "SYS", … ("?" when unknown)
  std::optional<std::string> p2p;  // read P2P status: "OK", "NS", "CNS", …
};

// A measured bandwidth as the gate and the floors know it. key: "h2d" (host to device, per
// GPU), "d2h", "peer" (per pair, GPU<a>-GPU<b>), "allreduce_busbw" (subject "node", at
// size_bytes).
struct BandwidthValue {
  std::string key;
  std::string subject;  // "GPU0", "GPU0-GPU1", "node"
  std::optional<std::uint64_t> size_bytes;
  double gbps = 0.0;
};

struct NodePrint {
  std::optional<std::string> host;
  std::optional<std::string> gpu_model;  // the GPUs' name when all agree, else "mixed: …"
  int gpu_count = 0;
  std::optional<std::string> driver_version;
  std::vector<GpuPrint> gpus;    // by index
  std::vector<PairPrint> pairs;  // a < b, sorted
  std::vector<BandwidthValue> bandwidth;
};

// The fingerprint of a node (no bandwidth: it comes from `bench`, see bandwidth_values()).
NodePrint node_print(const Facts& facts);

// The bandwidth values the floors compare, from measurements (gpuvet bench's, or imported
// nvbandwidth and nccl-tests outputs): h2d and d2h per GPU (copy engine), peer per pair (the
// slower direction of a device-to-device read), all-reduce bus bandwidth per size. A
// measurement whose data was wrong is left out.
std::vector<BandwidthValue> bandwidth_values(const std::vector<Measurement>& measurements);

// "GPU0" / "GPU0-GPU1".
std::string gpu_label(int index);
std::string pair_label(int a, int b);

// A short stable hash (16 hex digits, FNV-1a 64) of one categorical part of a print, so a
// fleet can group nodes by it: "topology" (every pair's path), "p2p" (every pair's P2P
// status), "links" (per GPU PCIe max gen/width, current width, NVLink count, NUMA node).
std::string print_hash(const NodePrint& print, std::string_view part);

// The same hash of any text (a baseline file's digest).
std::string text_hash(std::string_view text);

// How a baseline value is compared.
enum class Expect { kEqual, kAtLeast };

struct Floor {
  BandwidthValue value;  // the floor itself: a measurement below it is a deviation
  std::string source;    // where the number came from: "gpuvet bench on node7, 2026-12-03"
};

struct Baseline {
  std::string origin;               // file name, for messages
  std::string digest;               // print_hash-style hash of the file's text: "<file>@<digest>"
  std::optional<std::string> name;  // "HGX H100 8-GPU, board rev B"
  NodePrint expect;
  // Which of the configuration values are "at least" rather than "must equal": driver,
  // vbios, power_limit_w (ECC mode is always equal).
  Expect driver = Expect::kEqual;
  Expect vbios = Expect::kEqual;
  Expect power_limit = Expect::kEqual;
  std::vector<Floor> floors;
};

// Renders a baseline file from a node's print and optional floors; `provenance` says where
// the print came from ("live on node7", "gpuvet capture bundle /tmp/x"), `now` is the date
// written in its comments.
std::string baseline_toml(const NodePrint& print, const std::vector<Floor>& floors,
                          std::string_view provenance, std::string_view now);

// Parses a baseline file: unknown keys, wrong types, a GPU count that disagrees with the GPU
// tables or a pair outside them are errors that name the key (kInvalidInput).
Result<Baseline> parse_baseline(std::string_view toml_text, std::string_view origin);
// Reads at most 1 MiB from a regular file and parses it.
Result<Baseline> read_baseline_file(const std::string& path);

struct Deviation {
  std::string
      key;  // "gpu_count", "gpu.GPU1.pcie_width_max", "pair.GPU0-GPU1.path", "floor.h2d.GPU0"
  std::vector<std::string> subjects;
  std::string what;  // "path", "PCIe width", "h2d bandwidth"
  Severity severity = Severity::kCritical;
  std::string expected;
  std::string found;
  std::string evidence;  // "GPU0-GPU1 path SYS, baseline PIX"
  bool floor = false;    // a bandwidth floor (finding baseline-bandwidth-below-floor)
  bool unknown = false;  // the node did not report the value: it could not be checked
};

// Every difference between the node and the baseline, in baseline order. A value the
// baseline pins that the node does not report is a Deviation with `unknown` set ("found
// unknown"): the gate cannot pass such a node, nor fail it on that value alone. Floors are
// compared only when `check_floors` (the node's bandwidth comes from a bench run).
std::vector<Deviation> compare(const Baseline& baseline, const NodePrint& node, bool check_floors);

}  // namespace gpuvet
