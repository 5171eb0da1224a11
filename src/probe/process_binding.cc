#include "probe/process_binding.h"

#include <algorithm>

#include "core/util.h"
#include "probe/host_sysfs.h"

namespace gpuvet::probe {
namespace {

constexpr std::size_t kMaxScannedProcs = 100'000;

struct ProcStatus {
  bool has_nspid_line = false;
  std::optional<std::vector<int>> nspid;  // empty when the line is junk
  std::optional<std::string> cpus_allowed_list;
  std::optional<std::string> mems_allowed_list;
};

bool is_printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u != 0x7f;
  });
}

std::optional<std::vector<int>> parse_pid_list(std::string_view s) {
  std::vector<int> pids;
  for (auto w : split(trim(s), '\t')) {
    for (auto part : split(w, ' ')) {
      if (trim(part).empty()) continue;
      auto v = parse_int(part);
      if (!v || *v <= 0 || *v > (1 << 30)) return std::nullopt;
      pids.push_back(static_cast<int>(*v));
    }
  }
  if (pids.empty()) return std::nullopt;
  return pids;
}

ProcStatus parse_status(std::string_view text) {
  ProcStatus st;
  for (auto line : split_lines(text)) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    auto key = line.substr(0, colon);
    auto value = trim(line.substr(colon + 1));
    if (key == "NSpid") {
      st.has_nspid_line = true;
      st.nspid = parse_pid_list(value);
    } else if (key == "Cpus_allowed_list" && !value.empty() && is_printable(value)) {
      st.cpus_allowed_list = std::string(value);
    } else if (key == "Mems_allowed_list" && !value.empty() && is_printable(value)) {
      st.mems_allowed_list = std::string(value);
    }
  }
  return st;
}

bool all_digits(std::string_view s) {
  return !s.empty() && s.size() < 11 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

void read_process_binding(const FileSystem& fs, ProcessFacts& proc,
                          std::vector<std::string>& notes) {
  const std::string who =
      "pid " + std::to_string(proc.host_pid) + " (GPU " + std::to_string(proc.gpu) + ")";
  const std::string not_visible =
      who +
      " not visible from this PID namespace (gpuvet runs in a container?): "
      "CPU/memory binding unknown";
  if (proc.host_pid <= 0) {
    notes.push_back(who + ": not a valid PID, CPU/memory binding unknown");
    return;
  }

  std::optional<int> local;
  ProcStatus status;
  const std::string direct = "/proc/" + std::to_string(proc.host_pid) + "/status";
  if (auto r = fs.read_file(direct, 1 << 20); r.is_ok()) {
    ProcStatus st = parse_status(r.value());
    // Without NSpid (kernel < 4.1, or a junk line) there is nothing to check
    // against: the directory of that number is our best answer.
    if (!st.nspid || st.nspid->front() == proc.host_pid) {
      local = proc.host_pid;
      status = std::move(st);
    }
  } else if (r.status().code() != StatusCode::kNotFound) {
    notes.push_back(who + ": " + direct + " unreadable (" + read_failure_words(r.status()) +
                    "): CPU/memory binding unknown");
    return;
  }

  // Not there under its own number: a process whose NSpid lists that PID in a
  // nested namespace (a driver that reports container-relative PIDs, or a
  // /proc of an ancestor namespace).
  if (!local) {
    auto names = fs.list_dir("/proc");
    std::size_t scanned = 0;
    for (const auto& name : names.ok_value().value_or(std::vector<std::string>{})) {
      if (!all_digits(name)) continue;
      if (++scanned > kMaxScannedProcs) break;
      auto r = fs.read_file("/proc/" + name + "/status", 1 << 20);
      if (!r.is_ok()) continue;  // exited meanwhile, or hidden
      ProcStatus st = parse_status(r.value());
      if (!st.nspid || st.nspid->size() < 2) continue;
      if (std::find(st.nspid->begin() + 1, st.nspid->end(), proc.host_pid) == st.nspid->end()) {
        continue;
      }
      auto pid = parse_int(name);
      if (!pid) continue;
      local = static_cast<int>(*pid);
      status = std::move(st);
      break;
    }
  }

  if (!local) {
    notes.push_back(not_visible);
    return;
  }
  proc.local_pid = local;
  if (status.nspid) proc.ns_pids = *status.nspid;
  const std::string dir = "/proc/" + std::to_string(*local);
  if (!proc.name) {
    if (auto comm = fs.read_file(dir + "/comm", 256); comm.is_ok()) {
      auto v = trim(comm.value());
      if (!v.empty() && is_printable(v)) proc.name = std::string(v);
    }
  }
  // Raw text only when it parses: junk must not reach the rules as a binding.
  bool cpus_ok = false;
  bool mems_ok = false;
  if (status.cpus_allowed_list) {
    if (auto ids = parse_cpu_list(*status.cpus_allowed_list); ids && !ids->empty()) {
      proc.cpus_allowed = status.cpus_allowed_list;
      proc.cpus_allowed_ids = std::move(*ids);
      cpus_ok = true;
    }
  }
  if (status.mems_allowed_list) {
    if (auto ids = parse_cpu_list(*status.mems_allowed_list); ids && !ids->empty()) {
      proc.mems_allowed = status.mems_allowed_list;
      proc.mems_allowed_ids = std::move(*ids);
      mems_ok = true;
    }
  }
  if (!cpus_ok || !mems_ok) {
    notes.push_back(who + ": " + dir + "/status has no readable Cpus_allowed_list/" +
                    "Mems_allowed_list: binding partly unknown");
  }
}

std::optional<bool> in_child_pid_namespace(const FileSystem& fs) {
  auto r = fs.read_file("/proc/self/status", 1 << 20);
  if (!r.is_ok()) return std::nullopt;
  ProcStatus st = parse_status(r.value());
  if (!st.nspid) return std::nullopt;
  return st.nspid->size() > 1;
}

}  // namespace gpuvet::probe
