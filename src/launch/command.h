// launch/command.h — what `gpuvet launch --per-gpu` and `--in-task` share: finding the command
// to run, its environment and descriptors, and the memory-policy system calls.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gpuvet/status.h"

namespace gpuvet {

// The executable execve will run: `name` as a path when it has a '/', else searched on PATH
// as execvp does. Not found or not executable: an error that says so ("nothing started").
Result<std::string> resolve_launch_command(const std::string& name);

// This process's environment with `overrides` set on top (later pairs win), as "KEY=value"
// strings in key order: what execve gets. Call before fork (it allocates).
std::vector<std::string> environment_with(
    const std::vector<std::pair<std::string, std::string>>& overrides);

// The descriptors this process has open (/proc/self/fd), sorted; empty when /proc cannot be
// read.
std::vector<int> open_fds();

// MPOL_* of <numaif.h>, which only libnuma's -dev package ships.
constexpr int kMpolDefault = 0, kMpolPreferred = 1, kMpolBind = 2, kMpolInterleave = 3,
              kMpolLocal = 4, kMpolPreferredMany = 5, kMpolWeightedInterleave = 6;

// The node mask set_mempolicy and get_mempolicy take (maxnode = kMaxNodes).
struct NodeMask {
  static constexpr unsigned long kMaxNodes = 1024;
  static constexpr unsigned long kBitsPerWord = 8 * sizeof(unsigned long);
  unsigned long bits[kMaxNodes / kBitsPerWord] = {};
  static NodeMask of(const std::vector<int>& nodes);  // nodes outside 0..kMaxNodes-1 dropped
  std::vector<int> nodes() const;
};

// This process's memory policy (get_mempolicy) as numa_maps writes one: "default", "local",
// "bind:1", "prefer:0", "interleave:0-1"; empty when the call fails.
std::string read_mem_policy_of_this_process();

// The elements of both sorted lists, sorted.
std::vector<int> intersect_sorted(const std::vector<int>& a, const std::vector<int>& b);

}  // namespace gpuvet
