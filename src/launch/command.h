// launch/command.h — what `gpuvet launch --per-gpu` and `--in-task` share: finding the command
// to run, and reading this process's memory policy.
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

// This process's memory policy (get_mempolicy) as numa_maps writes one: "default", "local",
// "bind:1", "prefer:0", "interleave:0-1"; empty when the call fails.
std::string read_mem_policy_of_this_process();

}  // namespace gpuvet
