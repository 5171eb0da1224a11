// import/machines.h — which machine each input describes, so that a directory holding the
// outputs of several machines is refused instead of being merged into one imaginary box.
//
// Each input's identity is what names a machine: its host name (sysstat banner, gpuvet JSON)
// and its GPUs' UUIDs and serials with the bus id (or, for outputs without bus ids, the index)
// they sit at. Inputs are grouped in order: an input joins the first machine it shares a host
// name, UUID or serial with and does not contradict; else the first it does not contradict;
// else it starts a machine of its own. Contradictions are two host names, two different
// boards (UUID or serial) at one bus id or (both without bus ids) one index, or two driver
// versions between inputs that both list GPUs and share no host name, UUID or serial (a
// machine whose driver was upgraded between captures still shares its boards' UUIDs). An input that
// names nothing (lscpu, a kernel log, a topology matrix) contradicts no machine and joins
// the first. A whole GPU listing (the nvidia-smi table, -L, -q's "Attached GPUs") contradicts
// one of the same kind that lists another number of GPUs, unless both list bus ids and one
// set holds the other (a GPU missing from one listing is a fault of that machine), or as many
// GPUs at other bus ids; it is filled for the outputs of one pasted file (paste_machines.h),
// where two listings of one kind are two snapshots of the same box or of two boxes.
// Stateless free functions; thread-safe.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpuvet/facts.h"

namespace gpuvet::import {

struct GpuIdentity {
  int index = 0;
  std::optional<std::string> bus;  // normalised bus id
  std::optional<std::string> uuid;
  std::optional<std::string> serial;
  std::optional<std::string> name;
};

// The GPUs one output lists when it lists every GPU of its machine.
struct GpuListing {
  std::string kind;             // "nvidia-smi table", "nvidia-smi -L", "nvidia-smi -q", …
  int count = 0;                // GPUs the machine has by this output (-q: Attached GPUs)
  std::set<std::string> buses;  // normalised bus ids of the GPUs it shows
  bool complete() const { return buses.size() == static_cast<std::size_t>(count); }
};

struct MachineIdentity {
  std::optional<std::string> host;    // as printed
  std::optional<std::string> driver;  // NVIDIA driver version
  std::vector<GpuIdentity> gpus;      // only GPUs with a UUID or a serial
  std::optional<GpuListing> listing;  // set by paste_machines only
  bool names_nothing() const { return !host && gpus.empty() && !listing; }
};

MachineIdentity identity_of(const Facts& f);

// One machine found among the inputs.
struct MachineGroup {
  std::optional<std::string> host;
  std::optional<std::string> driver;
  std::vector<GpuIdentity> gpus;      // every board seen on it, first input's first
  std::vector<std::string> inputs;    // the inputs that name it, in order
  std::optional<GpuListing> listing;  // the first whole GPU listing seen on it
};

struct MachineSplit {
  std::vector<MachineGroup> machines;
  std::vector<std::string> unnamed;  // inputs that name no machine
  std::vector<std::string> reasons;  // the contradictions that made a second machine
};

// `inputs`: (origin, identity) in the order they were read.
MachineSplit group_by_machine(const std::vector<std::pair<std::string, MachineIdentity>>& inputs);

// The refusal for a split of two or more machines: which machines, which inputs hold each,
// why they differ, and how to run one at a time. `top` is the --from path; inputs under it are
// named relative to it.
std::string several_machines_message(const MachineSplit& split, const std::string& top);

}  // namespace gpuvet::import
