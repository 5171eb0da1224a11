// hw/subject_gpus.h — the GPUs a finding's subjects name, with their identities from Facts.
//
// Subjects name GPUs as "GPU3", pairs as "GPU0-GPU1", ranges of a node-level finding as
// "GPU0–GPU7" (en dash), and a GPU that has no index (lost before NVML saw it) by its PCI
// bus id. Reports carry each GPU's UUID and bus id beside that name, since indices are not
// stable across reboots. Plain functions of their inputs: thread-safe, no I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/facts.h"

namespace gpuvet::hw {

struct SubjectGpu {
  std::optional<int> index;               // empty: known by its bus id only
  std::optional<std::string> uuid;        // "GPU-…" when the facts have it
  std::optional<std::string> pci_bus_id;  // "0000:18:00.0" when the facts (or subject) have it
};

// The GPU indices one subject names ("GPU3" → {3}; "GPU0-GPU1" → {0, 1}; "GPU0–GPU3" →
// {0, 1, 2, 3}); empty for anything else ("host", "pid 42", "nvme0n1", a bus id).
std::vector<int> subject_gpu_indices(std::string_view subject);

// Every GPU the subjects name, in order of first mention, each once, with the UUID and bus
// id the facts have for it (null when they do not). A subject that is a PCI bus id names the
// GPU at that address (or, when the facts have none there, a GPU with that bus id only).
std::vector<SubjectGpu> subject_gpus(const Facts& facts, const std::vector<std::string>& subjects);

}  // namespace gpuvet::hw
