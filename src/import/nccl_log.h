// import/nccl_log.h — importers for what NCCL itself prints: NCCL_DEBUG=INFO logs (with the
// PyTorch ProcessGroupNCCL watchdog lines that usually sit beside them) and the topology dump
// that NCCL_TOPO_DUMP_FILE writes (XML).
//
// Both fill Facts::nccl_events only (kinds: "version", "transport", "net", "nvls", "channels",
// "tree", "warn", "timeout", "error", "fallback", "link"; see facts.h). Log lines are read one by
// one, whatever launcher prefixed them: mpirun "[1,0]<stdout>:", Slurm/srun "0: ", a date, or
// nothing at all when the user pasted only the message. Identical events are kept once, with
// "(seen N times)" appended to their detail. No regular expressions; linear in the input; safe on
// garbage, truncated, binary or huge input. Stateless free functions, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

// Format "nccl-debug-log". sniff: 100 with "host:pid:tid [dev] NCCL INFO|WARN" lines or the
// PyTorch watchdog timeout; 0 when the text is a nccl-tests *_perf output (that importer reads
// the NCCL lines inside it as well).
int sniff_nccl_log(std::string_view text);
Status import_nccl_log(std::string_view text, Facts& out);

// Format "nccl-topo-xml": <system version=…><cpu …><pci busid=… link_speed=… link_width=…>
// <gpu dev=… sm=… rank=…><nvlink target=… count=…/></gpu>… and <nic><net name=… speed=…/></nic>.
// One "link" event per GPU and per NIC, with its PCIe speed/width, the narrowest link on its way
// up to the CPU, and its NVLink targets.
int sniff_nccl_topo_xml(std::string_view text);
Status import_nccl_topo_xml(std::string_view text, Facts& out);

// Appends the NCCL events of `text` to `events` (the log parser without the Facts wrapper), for
// other importers whose inputs carry NCCL_DEBUG lines (nccl-tests output). Returns how many
// lines looked like NCCL log lines.
std::size_t parse_nccl_log_events(std::string_view text, std::vector<NcclEvent>& events,
                                  std::vector<std::string>* notes = nullptr);

// NCCL prints bus ids as the int64 it packs them into ("%lx"): "1b000" is "0000:1b:00.0".
std::optional<std::string> bus_id_from_nccl_hex(std::string_view s);

// Removes what launchers put in front of a program's output line: mpirun "[1,0]<stdout>:" (with
// or without a date before it), srun "0: " labels, and leading blanks. Returns the rest.
std::string_view strip_launcher_label(std::string_view line);

}  // namespace gpuvet::import
