// import/kernel_log.h — the kernel-log text parser: NVRM Xid events, "GPU has fallen off the
// bus" reports, PCIe AER errors and IOMMU faults, out of any saved or live kernel log.
//
// One parser for every source: the live reader (probe/kernel_log_source.h) hands it what
// /dev/kmsg or `dmesg` returned, the offline importer hands it whatever file a user saved.
// It reads, line by line and in one pass, the formats the kernel log comes in:
//   raw dmesg        "[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=..., ..."
//   dmesg -T/--ctime "[Mon Dec  1 10:00:00 2025] NVRM: Xid ..."
//   dmesg -x / iso   "kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid ..."
//   /dev/kmsg        "4,1234,5678901234,-;NVRM: Xid ..."   (3rd field: µs since boot)
//   journalctl -k    "Dec 01 10:00:00 host kernel: NVRM: Xid ...", "-o short-iso", short-full,
//   syslog files     "Dec  1 10:00:00 host kernel: [ 1234.5] NVRM: Xid ..." — and bare lines.
// Old driver wordings are accepted too ("Xid (0000:3b:00): 13, ..." without "PCI:", no pid).
// Lines it does not recognise are skipped; binary garbage, truncated or huge lines never make
// it fail. Linear time, no regular expressions.
//
// Stateless free functions; safe to call from several threads on different outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "gpuvet/facts.h"

namespace gpuvet::import {

struct KernelLogParseOptions {
  // Wall-clock time of boot (/proc/stat btime). With it, events stamped with seconds since
  // boot (raw dmesg, /dev/kmsg) also get a unix_time.
  std::optional<std::int64_t> boot_unix_time;
  // Syslog stamps ("Dec 01 10:00:00") carry no year; with this they get a unix_time,
  // without it they get none (a guessed year would be wrong across New Year).
  std::optional<int> syslog_year;
};

// What the parser saw besides events, for notes and for mapping bus ids to GPUs.
struct KernelLogParseStats {
  std::size_t lines = 0;
  // Lines that held "Xid (" but no readable Xid code (cut off, garbled): worth a note.
  std::size_t unparsed_xid_lines = 0;
  // From "NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-…": normalised bus id → GPU UUID.
  std::map<std::string, std::string> gpu_uuid_by_bus_id;
  // From an `uptime` line pasted with the log (the last one): seconds since boot, the clock
  // the "[ 12345.678]" stamps are judged against.
  std::optional<double> uptime_s;
};

// Also counts, per device and kind, the PCIe AER errors of the kernel's aer driver ("AER:
// Corrected error received: 0000:01:00.0", "AER: Multiple Uncorrectable (Fatal) error message
// received from …", "PCIe Bus Error: severity=…, type=…, (Receiver ID)", the "[ 0] RxErr" detail
// lines, 3.x "id=00e0" forms) into out.pcie_aer, and IOMMU faults (Intel "DMAR: [DMA Read
// NO_PASID] Request device [17:00.0] … [fault reason 0x06] …", "DMAR: DRHD: handling fault
// status reg", AMD "AMD-Vi: Event logged [IO_PAGE_FAULT device=17:00.0 …]" with the device in
// the event or in the line's prefix) into out.iommu_faults.
//
// Appends every Xid event of `text` to out.xids and every record mentioning "fallen off the
// bus" (an Xid 79 line, "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.", the legacy
// "NVRM: GPU at 0000:01:00.0 has fallen off the bus." or the multi-line "The NVIDIA GPU …
// fallen off the bus and is not responding" banner) to out.fallen_off_bus, one entry per log
// record: its timestamp as printed (kmsg records rendered "[   seconds]") and its text, with
// continuation lines joined, and the same record to out.fallen_off_bus_events as an event (code
// 79, message the entry, times as for an Xid below). Does not touch out.source / readable /
// why_unreadable.
//
// Each XidEvent gets: code; pci_bus_id normalised ("0000:3b:00.0") when the driver printed one
// that parses; uptime_s from a bracket or kmsg stamp; unix_time from an absolute stamp or from
// boot_unix_time + uptime; pid and process unless "<unknown>"; message = the text after the
// pid/name fields. gpu is left empty (the caller maps bus ids to its GPU indices).
void parse_kernel_log(std::string_view text, KernelLog& out,
                      std::optional<std::int64_t> boot_unix_time = std::nullopt);
void parse_kernel_log(std::string_view text, KernelLog& out, const KernelLogParseOptions& options,
                      KernelLogParseStats* stats = nullptr);

// Content sniffing for the offline importer: true when the text has an NVRM/Xid line or most
// of its first lines carry a kernel-log stamp (dmesg, kmsg, journalctl -k / syslog "kernel:").
bool looks_like_kernel_log(std::string_view text);

}  // namespace gpuvet::import
