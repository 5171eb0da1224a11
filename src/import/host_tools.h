// import/host_tools.h — importers for the host-side tools of a GPU triage: numactl, lscpu and
// the sysstat trio (mpstat, iostat, sar).
//
// They fill Facts::host only: the NUMA layout (numa_nodes: cpus, memory_bytes, SLIT distances),
// the CPU inventory (cpu_model, logical_cpus, physical_cores, sockets, virtual_machine) and a
// HostPressure window (per-core busy/iowait/steal, disks, NICs) from what the tools printed.
// The sysstat banner ("Linux 5.15.0 (host) 01/15/2024 _x86_64_ (96 CPU)") also gives the
// kernel, hostname and CPU count. Old and new column sets, 12- and 24-hour clocks, localised
// summary labels ("Average:", "Moyenne :") and decimal commas are read alike. What a tool
// prints that has no place in the model (numactl --show's policy) becomes a note.
//
// Hand-written scanners, no regular expressions; linear in the input; safe on garbage,
// truncated, binary or huge input. Stateless free functions, thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

// "numactl-hardware": `numactl --hardware` / `-H` → host.numa_nodes (memory from "size: N MB").
int sniff_numactl_hardware(std::string_view text);
Status import_numactl_hardware(std::string_view text, Facts& out);

// "numactl-show": `numactl --show` → a note with policy, physcpubind, nodebind, membind (the
// binding of the shell that ran it, not the machine's layout), and one Facts::numa_bindings
// entry {no pid, cpus = physcpubind, mems = membind (the preferred node(s) under a
// "preferred" policy; empty when neither is printed), source "numactl --show"}.
int sniff_numactl_show(std::string_view text);
Status import_numactl_show(std::string_view text, Facts& out);

// "lscpu": old flat and new sectioned layouts, x86_64 / aarch64 / ppc64le; CPU-less NUMA nodes
// become nodes with no cpus.
int sniff_lscpu(std::string_view text);
Status import_lscpu(std::string_view text, Facts& out);

// "mpstat": `mpstat -P ALL [interval [count]]` → host.pressure.cores (busy = 100 - %idle) and
// iowait_pct from the "all" row; the summary ("Average:") block when present, else the last
// sample.
int sniff_mpstat(std::string_view text);
Status import_mpstat(std::string_view text, Facts& out);

// "iostat-x": `iostat -x` / `-xz` / `-xm` → host.pressure.disks (%util, read/write bytes/s,
// last report) and iowait_pct from the last avg-cpu line.
int sniff_iostat(std::string_view text);
Status import_iostat(std::string_view text, Facts& out);

// "sar-net-dev": `sar -n DEV` → host.pressure.nics (rx/tx bytes/s, summary block when present;
// "lo" skipped; speed left empty).
int sniff_sar_net_dev(std::string_view text);
Status import_sar_net_dev(std::string_view text, Facts& out);

// "uptime": `uptime` (" 14:02:11 up 40 days,  2:03,  1 user,  load average: …"), `uptime -p`
// ("up 5 weeks, 3 days, 2 hours, 1 minute") and /proc/uptime ("3456789.12 1234.56") →
// host.uptime_s: the clock the kernel log's "[ 12345.678]" stamps are judged against, so an
// Xid of 40 days ago and one of 5 minutes ago are told apart. `uptime` prints minutes only:
// the value is exact to the minute.
int sniff_uptime(std::string_view text);
Status import_uptime(std::string_view text, Facts& out);
// Seconds since boot from one `uptime` / `uptime -p` line; empty when `line` is not one.
std::optional<double> parse_uptime_line(std::string_view line);

}  // namespace gpuvet::import
