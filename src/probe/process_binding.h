// probe/process_binding.h — where the processes that use the GPUs may run: the
// CPUs and memory nodes they are bound to, read from /proc/<pid>/status.
//
// NVML reports PIDs of the host PID namespace; gpuvet may itself run in a
// container, where those PIDs mean nothing or another process. NSpid lines
// (kernels >= 4.1) tie the two views together. All reads go through a
// gpuvet::FileSystem; a process that cannot be found or read leaves its
// binding empty and says why in `notes`. Stateless; safe to call from several
// threads on distinct ProcessFacts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuvet/env.h"
#include "gpuvet/facts.h"

namespace gpuvet::probe {

// Finds proc.host_pid in our /proc: /proc/<host_pid>/status whose NSpid starts
// with host_pid, else the /proc/<pid>/status (at most 100k scanned) whose NSpid
// lists host_pid further in (a PID of a nested namespace). Fills local_pid,
// ns_pids (NSpid), name (/proc/<pid>/comm, only when empty), cpus_allowed /
// mems_allowed (raw Cpus_allowed_list / Mems_allowed_list) and their parsed ids.
// Not found: the note "pid N (GPU g) not visible from this PID namespace
// (gpuvet runs in a container?): CPU/memory binding unknown".
void read_process_binding(const FileSystem& fs, ProcessFacts& proc,
                          std::vector<std::string>& notes);

// True when /proc/self/status NSpid has more than one entry (we run inside a
// child PID namespace); empty when unreadable or the kernel has no NSpid.
std::optional<bool> in_child_pid_namespace(const FileSystem& fs);

}  // namespace gpuvet::probe
