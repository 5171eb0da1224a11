// The registry of offline importers: every format `--from` recognises.
#include <algorithm>

#include <nlohmann/json.hpp>
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
    out.notes.push_back(std::to_string(stats.unparsed_xid_lines) +
                        " Xid line(s) could not be read (cut off or garbled)");
  return Status::ok();
}

int sniff_capture_manifest(std::string_view text) {
  return text.substr(0, 256).find("\"schema\": \"gpuvet.capture/") != std::string_view::npos ? 100
                                                                                             : 0;
}

// The manifest says what could not be captured: each such command becomes a note.
Status import_capture_manifest(std::string_view text, Facts& out) {
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return Status::invalid_input("manifest is not valid JSON");
  const auto commands = doc.find("commands");
  if (commands == doc.end() || !commands->is_array()) return Status::ok();
  for (const auto& c : *commands) {
    if (!c.is_object()) continue;
    const std::string status = c.value("status", std::string("?"));
    if (status == "ok") continue;
    std::string argv;
    if (auto a = c.find("argv"); a != c.end() && a->is_array())
      for (const auto& w : *a)
        if (w.is_string()) argv += (argv.empty() ? "" : " ") + w.get<std::string>();
    out.notes.push_back("capture: `" + argv.substr(0, 60) + "` " + status);
  }
  return Status::ok();
}

}  // namespace

const std::vector<Importer>& importers() {
  static const std::vector<Importer> kImporters = {
      {"kernel-log", "dmesg, dmesg -T, journalctl -k, /dev/kmsg, syslog", sniff_kernel_log,
       import_kernel_log,
       "Xid events (code, bus id, pid, process, time), 'fallen off the bus' reports"},
      {"gpuvet-capture-manifest", "manifest.json of a gpuvet capture bundle",
       sniff_capture_manifest, import_capture_manifest,
       "notes: which commands could not be captured and why"},
  };
  return kImporters;
}

}  // namespace gpuvet::capture
