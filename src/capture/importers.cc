// The registry of offline importers: every format `--from` recognises.
#include <algorithm>

#include "capture/importer.h"
#include "capture/kernel_log.h"

namespace gpuvet::capture {
namespace {

int sniff_kernel_log(std::string_view text) {
  if (!looks_like_kernel_log(text)) return 0;
  // An NVRM line is specific; a plain timestamped log less so.
  return text.substr(0, 1 << 20).find("NVRM") != std::string_view::npos ? 90 : 60;
}

Status import_kernel_log(std::string_view text, Facts& out) {
  out.kernel_log.source = "kernel log file";
  out.kernel_log.readable = true;
  KernelLogParseStats stats;
  parse_kernel_log(text, out.kernel_log, KernelLogParseOptions{}, &stats);
  if (stats.unparsed_xid_lines > 0)
    out.notes.push_back(std::to_string(stats.unparsed_xid_lines) + " Xid line(s) could not be read (cut off or garbled)");
  return Status::ok();
}

}  // namespace

const std::vector<Importer>& importers() {
  static const std::vector<Importer> kImporters = {
      {"kernel-log", "dmesg, dmesg -T, journalctl -k, /dev/kmsg, syslog", sniff_kernel_log, import_kernel_log,
       "Xid events (code, bus id, pid, process, time), 'fallen off the bus' reports"},
  };
  return kImporters;
}

}  // namespace gpuvet::capture
