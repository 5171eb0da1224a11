#include "import/load.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <system_error>

#include "core/util.h"
#include "import/importer.h"

namespace gpuvet::import {
namespace {

namespace fs = std::filesystem;

// Commands whose output gpuvet reads; a prompt line must run one of them to split a session.
constexpr std::array<std::string_view, 20> kKnownCommands = {"nvidia-smi",
                                                             "dmesg",
                                                             "journalctl",
                                                             "numactl",
                                                             "lscpu",
                                                             "mpstat",
                                                             "iostat",
                                                             "sar",
                                                             "gpuvet",
                                                             "nvbandwidth",
                                                             "cat",
                                                             "sudo",
                                                             "srun",
                                                             "mpirun",
                                                             "bandwidthTest",
                                                             "p2pBandwidthLatencyTest",
                                                             "all_reduce_perf",
                                                             "NCCL_DEBUG=INFO",
                                                             "python",
                                                             "torchrun"};

bool known_command(std::string_view cmd) {
  cmd = trim(cmd);
  auto word = cmd.substr(0, cmd.find_first_of(" \t"));
  if (auto slash = word.rfind('/'); slash != std::string_view::npos) word = word.substr(slash + 1);
  for (auto k : kKnownCommands)
    if (word == k || (k.back() != '=' && starts_with(word, k) && word.size() > k.size() &&
                      word[k.size()] == '_'))
      return true;
  if (word.size() > 5 && word.substr(word.size() - 5) == "_perf")
    return true;                                                              // nccl-tests binaries
  if (starts_with(word, "NCCL_") || starts_with(word, "CUDA_")) return true;  // env-prefixed runs
  return false;
}

// The command of a prompt line, or empty when the line is not a prompt.
std::string_view prompt_command(std::string_view line) {
  std::string_view rest;
  if (starts_with(line, "$ ") || starts_with(line, "# ") || starts_with(line, "> ")) {
    rest = line.substr(2);
  } else {
    // user@host:path$ cmd  /  [user@host dir]$ cmd  /  root@host:~# cmd
    auto at = line.find('@');
    if (at == std::string_view::npos || at > 64) return {};
    auto end = line.find_first_of("$#", at);
    if (end == std::string_view::npos || end + 1 >= line.size() || line[end + 1] != ' ') return {};
    if (line.substr(at, end - at).find(' ') != std::string_view::npos && line.front() != '[')
      return {};
    rest = line.substr(end + 2);
  }
  rest = trim(rest);
  return known_command(rest) ? rest : std::string_view{};
}

std::string first_line(std::string_view text) {
  auto lines = split_lines(text.substr(0, 4096));
  for (auto l : lines)
    if (!trim(l).empty()) {
      std::string s(trim(l).substr(0, 80));
      for (auto& c : s)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
      return s;
    }
  return "(empty)";
}

template <typename T>
void take(std::optional<T>& dst, const std::optional<T>& src) {
  if (!dst && src) dst = src;
}

// A fact that should not change between captures of one machine: disagreement is reported.
template <typename T>
void take_stable(std::optional<T>& dst, const std::optional<T>& src, const std::string& what,
                 const std::string& origin, std::vector<std::string>& notes) {
  if (!src) return;
  if (!dst) {
    dst = src;
    return;
  }
  if (!(*dst == *src))
    notes.push_back(
        fmt::format("conflict: {} is {} in an earlier input but {} in {}; keeping the first", what,
                    fmt::format("{}", *dst), fmt::format("{}", *src), origin));
}

void merge_gpu(GpuFacts& d, const GpuFacts& s, const std::string& origin,
               std::vector<std::string>& notes) {
  const std::string g = "GPU" + std::to_string(d.index);
  take_stable(d.uuid, s.uuid, g + " uuid", origin, notes);
  take_stable(d.name, s.name, g + " name", origin, notes);
  take_stable(d.serial, s.serial, g + " serial", origin, notes);
  take_stable(d.vbios, s.vbios, g + " vbios", origin, notes);
  take_stable(d.pci_bus_id, s.pci_bus_id, g + " pci_bus_id", origin, notes);
  take(d.unresponsive, s.unresponsive);
  take(d.pcie.gen_current, s.pcie.gen_current);
  take_stable(d.pcie.gen_max, s.pcie.gen_max, g + " pcie.gen_max", origin, notes);
  take(d.pcie.gen_device_max, s.pcie.gen_device_max);
  take(d.pcie.width_current, s.pcie.width_current);
  take_stable(d.pcie.width_max, s.pcie.width_max, g + " pcie.width_max", origin, notes);
  take(d.pcie.replay_counter, s.pcie.replay_counter);
  take_stable(d.numa_node, s.numa_node, g + " numa_node", origin, notes);
  if (d.cpu_affinity.empty()) d.cpu_affinity = s.cpu_affinity;
  take(d.clocks.sm_mhz, s.clocks.sm_mhz);
  take(d.clocks.mem_mhz, s.clocks.mem_mhz);
  take_stable(d.clocks.sm_max_mhz, s.clocks.sm_max_mhz, g + " clocks.sm_max_mhz", origin, notes);
  take_stable(d.clocks.mem_max_mhz, s.clocks.mem_max_mhz, g + " clocks.mem_max_mhz", origin, notes);
  if (!d.clock_events.active_mask && d.clock_events.active.empty()) {
    d.clock_events.active_mask = s.clock_events.active_mask;
    d.clock_events.active = s.clock_events.active;
  }
  for (const auto& [k, v] : s.clock_events.accumulated_ns)
    d.clock_events.accumulated_ns.emplace(k, v);
  take(d.thermal.gpu_c, s.thermal.gpu_c);
  take(d.thermal.margin_c, s.thermal.margin_c);
  take(d.thermal.slowdown_c, s.thermal.slowdown_c);
  take(d.thermal.shutdown_c, s.thermal.shutdown_c);
  take(d.thermal.gpu_max_operating_c, s.thermal.gpu_max_operating_c);
  take(d.thermal.memory_max_c, s.thermal.memory_max_c);
  take(d.thermal.memory_c, s.thermal.memory_c);
  take(d.power.draw_w, s.power.draw_w);
  take_stable(d.power.limit_w, s.power.limit_w, g + " power.limit_w", origin, notes);
  take(d.power.enforced_limit_w, s.power.enforced_limit_w);
  take_stable(d.power.default_limit_w, s.power.default_limit_w, g + " power.default_limit_w",
              origin, notes);
  take_stable(d.ecc.enabled, s.ecc.enabled, g + " ecc.enabled", origin, notes);
  take(d.ecc.pending_enabled, s.ecc.pending_enabled);
  take(d.ecc.volatile_counts.corrected, s.ecc.volatile_counts.corrected);
  take(d.ecc.volatile_counts.uncorrected, s.ecc.volatile_counts.uncorrected);
  take(d.ecc.aggregate_counts.corrected, s.ecc.aggregate_counts.corrected);
  take(d.ecc.aggregate_counts.uncorrected, s.ecc.aggregate_counts.uncorrected);
  take(d.ecc.retired_pages_sbe, s.ecc.retired_pages_sbe);
  take(d.ecc.retired_pages_dbe, s.ecc.retired_pages_dbe);
  take(d.ecc.retired_pages_pending, s.ecc.retired_pages_pending);
  take(d.ecc.remapped_rows_correctable, s.ecc.remapped_rows_correctable);
  take(d.ecc.remapped_rows_uncorrectable, s.ecc.remapped_rows_uncorrectable);
  take(d.ecc.remapping_pending, s.ecc.remapping_pending);
  take(d.ecc.remapping_failed, s.ecc.remapping_failed);
  take_stable(d.memory.total_bytes, s.memory.total_bytes, g + " memory.total_bytes", origin, notes);
  take(d.memory.used_bytes, s.memory.used_bytes);
  take(d.utilization.gpu_pct, s.utilization.gpu_pct);
  take(d.utilization.memory_pct, s.utilization.memory_pct);
  take_stable(d.mig_enabled, s.mig_enabled, g + " mig_enabled", origin, notes);
  take(d.persistence_mode, s.persistence_mode);
  take(d.pstate, s.pstate);
  if (d.nvlinks.empty()) {
    d.nvlinks = s.nvlinks;
  } else {
    for (const auto& sl : s.nvlinks)
      for (auto& dl : d.nvlinks)
        if (dl.link == sl.link) {
          take(dl.active, sl.active);
          take(dl.version, sl.version);
          take(dl.remote_pci_bus_id, sl.remote_pci_bus_id);
          take(dl.remote_gpu, sl.remote_gpu);
          take(dl.speed_gbps, sl.speed_gbps);
        }
  }
  take(d.fabric.state, s.fabric.state);
  take(d.fabric.status, s.fabric.status);
  take(d.fabric.clique_id, s.fabric.clique_id);
  take(d.fabric.cluster_uuid, s.fabric.cluster_uuid);
  take(d.acs_redirects_p2p, s.acs_redirects_p2p);
  if (d.acs_bridges.empty()) d.acs_bridges = s.acs_bridges;
  take(d.iommu_group, s.iommu_group);
  d.unreadable.insert(d.unreadable.end(), s.unreadable.begin(), s.unreadable.end());
}

// The GPU of `into` that `s` describes, or nullptr for a GPU not seen yet.
GpuFacts* find_gpu(Facts& into, const GpuFacts& s) {
  if (s.pci_bus_id)
    for (auto& g : into.gpus)
      if (g.pci_bus_id == s.pci_bus_id) return &g;
  if (s.uuid)
    for (auto& g : into.gpus)
      if (g.uuid == s.uuid) return &g;
  // By index only when neither side names the GPU differently.
  for (auto& g : into.gpus)
    if (g.index == s.index && (!s.pci_bus_id || !g.pci_bus_id) && (!s.uuid || !g.uuid)) return &g;
  return nullptr;
}

void merge_host(HostFacts& d, const HostFacts& s, const std::string& origin,
                std::vector<std::string>& notes) {
  take_stable(d.hostname, s.hostname, "hostname", origin, notes);
  take(d.kernel, s.kernel);
  take(d.os, s.os);
  take_stable(d.cpu_model, s.cpu_model, "cpu_model", origin, notes);
  take(d.logical_cpus, s.logical_cpus);
  take(d.physical_cores, s.physical_cores);
  take(d.sockets, s.sockets);
  take(d.memory_bytes, s.memory_bytes);
  if (d.numa_nodes.empty()) d.numa_nodes = s.numa_nodes;
  take_stable(d.driver_version, s.driver_version, "driver_version", origin, notes);
  take(d.nvml_version, s.nvml_version);
  take(d.cuda_driver_version, s.cuda_driver_version);
  take(d.nvlink_disabled_by_driver, s.nvlink_disabled_by_driver);
  for (const auto& [k, v] : s.driver_params) d.driver_params.emplace(k, v);
  take(d.virtual_machine, s.virtual_machine);
  take(d.iommu.active, s.iommu.active);
  take(d.iommu.passthrough, s.iommu.passthrough);
  take(d.iommu.cmdline_hint, s.iommu.cmdline_hint);
  take(d.uptime_s, s.uptime_s);
  take(d.collected_unix, s.collected_unix);
  if (s.pressure) {
    if (!d.pressure) {
      d.pressure = s.pressure;
    } else {
      auto& dp = *d.pressure;
      const auto& sp = *s.pressure;
      if (dp.cores.empty()) dp.cores = sp.cores;
      if (dp.disks.empty()) dp.disks = sp.disks;
      if (dp.nics.empty()) dp.nics = sp.nics;
      take(dp.iowait_pct, sp.iowait_pct);
      dp.window_s = std::max(dp.window_s, sp.window_s);
    }
  }
}

}  // namespace

std::vector<SessionPart> split_session(std::string_view text) {
  std::vector<SessionPart> parts;
  std::size_t part_start = 0;
  std::string command;
  std::size_t pos = 0;
  bool any_prompt = false;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    auto end = nl == std::string_view::npos ? text.size() : nl;
    auto line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // Prompt lines are short; a long line is output.
    if (line.size() < 512) {
      if (auto cmd = prompt_command(line); !cmd.empty()) {
        auto previous = text.substr(part_start, pos - part_start);
        if (!trim(previous).empty()) parts.push_back({command, previous});
        command = std::string(cmd);
        part_start = end + 1 > text.size() ? text.size() : end + 1;
        any_prompt = true;
      }
    }
    pos = end + 1;
  }
  auto last = text.substr(std::min(part_start, text.size()));
  if (!trim(last).empty() || !any_prompt) parts.push_back({command, last});
  return parts;
}

}  // namespace gpuvet::import

namespace gpuvet {

using namespace import;  // the helpers above

Facts import_text(std::string_view text, const std::string& origin, const ImportOptions& options) {
  Facts out;
  const auto parts = split_session(text);
  int n = 0;
  for (const auto& part : parts) {
    ++n;
    const std::string where = parts.size() > 1 ? fmt::format("{}#part{}", origin, n) : origin;
    // The prompt's command is part of the evidence (`topo -p2p w` says which matrix it is).
    std::string with_command;
    std::string_view body = part.text;
    if (!part.command.empty()) {
      with_command = "$ " + part.command + "\n";
      with_command.append(part.text);
      body = with_command;
    }
    // Some formats are recognised by their first line; the prompt in front can hide it.
    // Each importer sees the part with and without the prompt, and keeps what it likes best.
    const Importer* best = nullptr;
    int best_score = 0;
    bool best_with_prompt = true;
    for (const auto& imp : importers()) {
      const int with_prompt = imp.sniff(body);
      const int without = body.size() == part.text.size() ? 0 : imp.sniff(part.text);
      const int score = std::max(with_prompt, without);
      if (score > best_score) {
        best_score = score;
        best = &imp;
        best_with_prompt = with_prompt >= without;
      }
    }
    if (!best_with_prompt) body = part.text;
    ImportedFile record{where, "unrecognised", {}};
    if (!best || best_score < options.min_confidence) {
      out.notes.push_back(
          fmt::format("{}: not recognised as any supported output{} (starts with \"{}\")", where,
                      part.command.empty() ? "" : " of `" + part.command + "`", first_line(body)));
      out.imported.push_back(std::move(record));
      continue;
    }
    record.format = best->format;
    Facts one;
    Status st = best->parse(body, one);
    for (auto& note : one.notes) record.notes.push_back(note);
    if (!st.is_ok() &&
        std::find(record.notes.begin(), record.notes.end(), st.message()) == record.notes.end())
      record.notes.push_back(st.to_string());
    one.notes.clear();
    for (const auto& note : record.notes) out.notes.push_back(where + ": " + note);
    out.imported.push_back(std::move(record));
    merge_facts(out, std::move(one), where);
  }
  return out;
}

}  // namespace gpuvet

namespace gpuvet::import {

void merge_facts(Facts& into, Facts&& from, const std::string& origin) {
  merge_host(into.host, from.host, origin, into.notes);
  for (auto& s : from.gpus) {
    if (GpuFacts* d = find_gpu(into, s)) {
      merge_gpu(*d, s, origin, into.notes);
    } else {
      for (const auto& g : into.gpus)
        if (g.index == s.index) {
          into.notes.push_back(
              fmt::format("conflict: {} describes GPU{} as {} but an earlier input gave GPU{} {}; "
                          "indexed as GPU{}",
                          origin, s.index, s.pci_bus_id.value_or(s.uuid.value_or("?")), g.index,
                          g.pci_bus_id.value_or(g.uuid.value_or("?")), into.gpus.size()));
          s.index = static_cast<int>(into.gpus.size());
          break;
        }
      into.gpus.push_back(std::move(s));
    }
  }
  std::sort(into.gpus.begin(), into.gpus.end(),
            [](const GpuFacts& a, const GpuFacts& b) { return a.index < b.index; });
  for (const auto& p : from.pairs) {
    auto it = std::find_if(into.pairs.begin(), into.pairs.end(),
                           [&](const GpuPair& q) { return q.a == p.a && q.b == p.b; });
    if (it == into.pairs.end()) {
      into.pairs.push_back(p);
      continue;
    }
    if (it->path == PathType::kUnknown) it->path = p.path;
    take(it->nvlinks, p.nvlinks);
    take(it->p2p_read, p.p2p_read);
    take(it->p2p_write, p.p2p_write);
    take(it->p2p_nvlink, p.p2p_nvlink);
    take(it->p2p_atomics, p.p2p_atomics);
  }
  std::sort(into.pairs.begin(), into.pairs.end(), [](const GpuPair& x, const GpuPair& y) {
    return std::tie(x.a, x.b) < std::tie(y.a, y.b);
  });
  for (auto& p : from.processes) {
    bool dup = std::any_of(
        into.processes.begin(), into.processes.end(),
        [&](const ProcessFacts& q) { return q.gpu == p.gpu && q.host_pid == p.host_pid; });
    if (!dup) into.processes.push_back(std::move(p));
  }
  if (!from.kernel_log.source.empty() || !from.kernel_log.xids.empty()) {
    if (into.kernel_log.source.empty()) {
      into.kernel_log = std::move(from.kernel_log);
    } else {
      auto& k = into.kernel_log;
      k.readable = k.readable || from.kernel_log.readable;
      k.xids.insert(k.xids.end(), from.kernel_log.xids.begin(), from.kernel_log.xids.end());
      k.fallen_off_bus.insert(k.fallen_off_bus.end(), from.kernel_log.fallen_off_bus.begin(),
                              from.kernel_log.fallen_off_bus.end());
      if (k.source.find(from.kernel_log.source) == std::string::npos)
        k.source += ", " + from.kernel_log.source;
    }
  }
  auto append = [](auto& dst, auto& src) { dst.insert(dst.end(), src.begin(), src.end()); };
  append(into.nic_paths, from.nic_paths);
  append(into.nccl_events, from.nccl_events);
  append(into.measurements, from.measurements);
  // Each input's series keeps its own time origin: appended, not interleaved.
  append(into.samples, from.samples);
  append(into.numa_bindings, from.numa_bindings);
  append(into.scale_runs, from.scale_runs);
  append(into.sources, from.sources);
  append(into.imported, from.imported);
  for (auto& n : from.notes) into.notes.push_back(origin + ": " + n);
}

}  // namespace gpuvet::import

namespace gpuvet {

using namespace import;  // the helpers above

Result<Facts> import_path(const std::string& path, const ImportOptions& options) {
  std::error_code ec;
  auto status = fs::symlink_status(path, ec);
  if (ec || !fs::exists(status)) return Status::not_found(path + ": no such file or directory");
  std::vector<fs::path> files;
  if (fs::is_directory(status)) {
    fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec),
        end;
    if (ec) return Status::permission_denied(path + ": " + ec.message());
    for (; it != end; it.increment(ec)) {
      if (ec) break;
      if (it->is_regular_file(ec) && !it->is_symlink(ec)) files.push_back(it->path());
      if (files.size() >= options.max_files) break;
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  if (files.empty()) return Status::invalid_input(path + ": no files to read");

  Facts all;
  std::size_t readable = 0;
  for (const auto& file : files) {
    const std::string name = file.string();
    auto size = fs::file_size(file, ec);
    if (ec) {
      all.notes.push_back(name + ": cannot read: " + ec.message());
      continue;
    }
    if (size > options.max_file_bytes) {
      all.notes.push_back(fmt::format("{}: skipped, {} MB is over the {} MB limit", name,
                                      size >> 20, options.max_file_bytes >> 20));
      continue;
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      all.notes.push_back(name + ": cannot open");
      continue;
    }
    std::string text(static_cast<std::size_t>(size), '\0');
    in.read(text.data(), static_cast<std::streamsize>(size));
    text.resize(static_cast<std::size_t>(in.gcount()));
    ++readable;
    Facts one = import_text(text, name, options);
    // import_text already prefixed its notes with the origin.
    auto notes = std::move(one.notes);
    one.notes.clear();
    merge_facts(all, std::move(one), name);
    all.notes.insert(all.notes.end(), notes.begin(), notes.end());
  }
  if (readable == 0) return Status::permission_denied(path + ": no readable file");
  if (all.gpus.empty()) {
    all.gpu_facts_unavailable = true;
    all.notes.push_back(
        "no input describes a GPU (no nvidia-smi, topo or gpuvet output among the files)");
  }
  return all;
}

}  // namespace gpuvet
