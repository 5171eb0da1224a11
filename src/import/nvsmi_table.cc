#include "import/nvsmi_table.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/text_scan.h"
#include "core/util.h"
#include "import/nvsmi_text.h"

namespace gpuvet::import {
namespace {

using text_scan::contains;
using text_scan::LineReader;

constexpr std::size_t kSniffBytes = 256u << 10;
constexpr std::size_t kSniffLines = 400;
constexpr std::size_t kMaxLine = 4096;
// Far above any one node; bounds what garbage can make us allocate.
constexpr std::size_t kMaxGpus = 1024;
constexpr std::size_t kMaxProcesses = 100000;
constexpr std::size_t kMaxWords = 64;

constexpr std::string_view kErr = "ERR!";

std::optional<int> small_int(std::string_view s, std::int64_t max) {
  auto v = parse_int(trim(s));
  if (!v || *v < 0 || *v > max) return std::nullopt;
  return static_cast<int>(*v);
}

// The cells of a "| a | b | c |" row, without the outer bars; empty when the line is no row.
std::vector<std::string_view> cells(std::string_view line) {
  std::vector<std::string_view> out;
  line = trim(line);
  if (line.empty() || line.front() != '|') return out;
  line.remove_prefix(1);
  if (!line.empty() && line.back() == '|') line.remove_suffix(1);
  for (std::size_t n = 0; n < 8; ++n) {
    const auto bar = line.find('|');
    out.push_back(line.substr(0, bar));
    if (bar == std::string_view::npos) break;
    line.remove_prefix(bar + 1);
  }
  return out;
}

bool is_rule_line(std::string_view line) {  // "+----+", "|====|", "|----+----|"
  line = trim(line);
  if (line.size() < 8 || line.find_first_of("-=") == std::string_view::npos) return false;
  return line.find_first_not_of("+-=| ") == std::string_view::npos;
}

std::optional<int> temperature(std::string_view v) {
  auto t = nvsmi::integer(v);
  if (!t || *t < -100 || *t > 1000) return std::nullopt;
  return static_cast<int>(*t);
}

// The first word of a cell, or an empty view.
std::string_view first_word(std::string_view cell) {
  const auto w = text_scan::words(cell, 1);
  return w.empty() ? std::string_view{} : w[0];
}

// The word after `key` ("Driver Version:" → "550.54.15"), if any.
std::optional<std::string> word_after(std::string_view line, std::string_view key) {
  const auto at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const auto ws = text_scan::words(line.substr(at + key.size()), 1);
  if (ws.empty()) return std::nullopt;
  return nvsmi::text(ws[0]);
}

// One GPU as its table block shows it, with the fields that read "ERR!".
struct Block {
  GpuFacts gpu;
  int rows = 0;
  std::vector<std::string> errs;
};

void read_first_row(const std::vector<std::string_view>& c, bool wddm, Block& b) {
  const auto left = text_scan::words(c[0], kMaxWords);
  // "  0  NVIDIA H100 80GB HBM3          On  ": index, name, persistence (or TCC/WDDM).
  std::size_t name_end = left.size();
  if (left.size() >= 3) {
    const std::string_view last = left.back();
    if (!wddm) {
      if (auto pm = nvsmi::enabled(last)) {
        b.gpu.persistence_mode = *pm ? "enabled" : "disabled";
        name_end = left.size() - 1;
      } else if (last == "N/A" || last == kErr) {
        name_end = left.size() - 1;
      }
    } else if (last == "WDDM" || last == "TCC" || last == "MCDM" || last == "N/A") {
      name_end = left.size() - 1;
    }
  }
  if (name_end > 1) {
    const auto from = left[1].data() - c[0].data();
    const auto to = left[name_end - 1].data() + left[name_end - 1].size() - c[0].data();
    b.gpu.name = std::string(c[0].substr(from, to - from));
  }
  const auto mid = text_scan::words(c[1], 4);
  if (!mid.empty()) b.gpu.pci_bus_id = normalize_pci_bus_id(mid[0]);
  // Volatile Uncorr. ECC: a count when ECC is on, "Off" when it is off, "N/A" without ECC.
  const std::string_view ecc = trim(c[2]);
  if (ecc == kErr) {
    b.errs.emplace_back("volatile uncorrected ECC");
  } else if (auto n = nvsmi::count(ecc)) {
    b.gpu.ecc.enabled = true;
    b.gpu.ecc.volatile_counts.uncorrected = n;
  } else if (auto on = nvsmi::enabled(ecc)) {
    b.gpu.ecc.enabled = *on;
  }
}

void read_second_row(const std::vector<std::string_view>& c, Block& b,
                     std::vector<std::string>& notes) {
  GpuFacts& g = b.gpu;
  // "33%   18C    P8    16W / 260W": fan, temperature, perf state, power draw / cap.
  const auto left = text_scan::words(c[0], kMaxWords);
  const auto slash = std::find(left.begin(), left.end(), std::string_view("/"));
  const std::size_t before = static_cast<std::size_t>(slash - left.begin());
  static constexpr const char* kLeft[] = {"fan", "temperature", "perf state", "power draw"};
  for (std::size_t i = 0; i < before && i < 4; ++i)
    if (left[i] == kErr) b.errs.emplace_back(kLeft[i]);
  if (before >= 2) g.thermal.gpu_c = temperature(left[1]);
  if (before >= 3) g.pstate = nvsmi::pstate(left[2]);
  if (before >= 4) g.power.draw_w = nvsmi::number(left[3]);
  if (slash != left.end() && slash + 1 != left.end()) {
    if (slash[1] == kErr) b.errs.emplace_back("power cap");
    g.power.limit_w = nvsmi::number(slash[1]);
  }
  // "1MiB / 48601MiB"
  const auto mem = text_scan::words(c[1], 8);
  const auto mslash = std::find(mem.begin(), mem.end(), std::string_view("/"));
  if (mslash != mem.end() && mslash != mem.begin()) {
    if (mslash[-1] == kErr) b.errs.emplace_back("memory used");
    g.memory.used_bytes = nvsmi::mib_bytes(mslash[-1]);
    if (mslash + 1 != mem.end()) g.memory.total_bytes = nvsmi::mib_bytes(mslash[1]);
  }
  // "0%      Default" / "100%   E. Process"
  const auto right = text_scan::words(c[2], 8);
  if (!right.empty()) {
    if (right[0] == kErr) b.errs.emplace_back("utilisation");
    if (auto u = nvsmi::integer(right[0]); u && *u >= 0 && *u <= 100)
      g.utilization.gpu_pct = static_cast<int>(*u);
  }
  if (right.size() >= 2) {
    const auto from = right[1].data() - c[2].data();
    const std::string mode(trim(c[2].substr(from)));
    if (mode == kErr)
      b.errs.emplace_back("compute mode");
    else if (mode != "Default" && !nvsmi::is_missing(mode))
      notes.push_back(fmt::format(
          "GPU{}: compute mode {} ({})", g.index, mode,
          mode == "Prohibited" ? "no process can use it"
                               : "one process at a time: a second one gets \"all CUDA-capable "
                                 "devices are busy or unavailable\""));
  }
}

void read_third_row(const std::vector<std::string_view>& c, Block& b) {
  const std::string_view mig = trim(c[2]);
  if (mig == kErr) b.errs.emplace_back("MIG mode");
  if (auto on = nvsmi::enabled(mig)) b.gpu.mig_enabled = *on;
}

// "ERR!" where a reading belongs: in one field a sensor (a fan) failed; in several the GPU
// no longer answers its driver, as after it fell off the bus.
void judge_errs(Block& b, std::vector<std::string>& notes) {
  if (b.errs.empty()) return;
  const std::string fields = fmt::format("{}", fmt::join(b.errs, ", "));
  if (b.errs.size() >= 2) {
    b.gpu.unresponsive = fmt::format(
        "nvidia-smi shows ERR! for {}: the GPU does not answer its driver (lost, or waiting "
        "for a reset)",
        fields);
    return;
  }
  b.gpu.unreadable.push_back(fields + ": ERR! in nvidia-smi");
  notes.push_back(fmt::format("GPU{}: nvidia-smi shows ERR! for the {} (a failed sensor{})",
                              b.gpu.index, fields, b.errs[0] == "fan" ? " or fan" : ""));
}

bool valid_process_type(std::string_view t) {
  return !t.empty() && t.size() <= 5 && t.find_first_not_of("CGM+") == std::string_view::npos;
}

struct ProcessRow {
  int gpu = 0;
  int pid = 0;
  std::string_view type;
  std::optional<std::string> name;
  std::optional<std::uint64_t> memory;
};

// "    0   N/A  N/A      1234      C   python      500MiB" (GI/CI columns from driver 450).
std::optional<ProcessRow> read_process_row(std::string_view cell, bool gi_ci) {
  auto w = text_scan::words(cell, kMaxWords);
  // The memory column: "500MiB", "500 MiB" or "N/A".
  if (w.size() >= 2 && w.back() == "MiB" && parse_double(w[w.size() - 2])) {
    w.pop_back();
  }
  const std::size_t head = gi_ci ? 5 : 3;  // GPU [GI CI] PID Type
  if (w.size() < head + 1) return std::nullopt;
  ProcessRow r;
  auto gpu = small_int(w[0], static_cast<std::int64_t>(kMaxGpus));
  auto pid = small_int(w[head - 2], std::numeric_limits<int>::max());
  if (!gpu || !pid || !valid_process_type(w[head - 1])) return std::nullopt;
  r.gpu = *gpu;
  r.pid = *pid;
  r.type = w[head - 1];
  const std::string_view mem = w.back();
  r.memory = nvsmi::mib_bytes(mem);
  if (w.size() > head + 1) {
    const auto from = w[head].data() - cell.data();
    const auto to = w[w.size() - 2].data() + w[w.size() - 2].size() - cell.data();
    r.name = nvsmi::text(cell.substr(from, to - from));
  } else if (!r.memory && !nvsmi::is_missing(mem)) {
    r.name = std::string(mem);  // no memory column: the last word is the name
  }
  return r;
}

enum class Section { kNone, kGpus, kMig, kProcesses };

// ---------------------------------------------------------------- error lines

enum class ErrorKind { kNone, kLostGpu, kNoDriver };

struct ErrorLine {
  ErrorKind kind = ErrorKind::kNone;
  std::optional<std::string> bus;
  std::string reason;
};

// The bus id at the start of s ("0000:09:00.0: Unknown Error", "0000:3B:00.0:"), if any.
std::optional<std::string> leading_bus_id(std::string_view s, std::size_t& end) {
  s = s.substr(0, std::min<std::size_t>(s.size(), 64));
  std::size_t k = 0;
  while (k < s.size() &&
         (std::isxdigit(static_cast<unsigned char>(s[k])) || s[k] == ':' || s[k] == '.'))
    ++k;
  std::string_view token = s.substr(0, k);
  while (!token.empty() && (token.back() == ':' || token.back() == '.')) token.remove_suffix(1);
  end = k;
  return normalize_pci_bus_id(token);
}

ErrorLine classify(std::string_view raw) {
  ErrorLine e;
  const std::string_view line = trim(raw.substr(0, kMaxLine));
  constexpr std::string_view kHandle = "Unable to determine the device handle for ";
  if (auto at = line.find(kHandle); at != std::string_view::npos) {
    std::string_view rest = line.substr(at + kHandle.size());
    if (starts_with(rest, "GPU") || starts_with(rest, "gpu")) rest.remove_prefix(3);
    rest = trim(rest);
    std::size_t end = 0;
    e.kind = ErrorKind::kLostGpu;
    e.bus = leading_bus_id(rest, end);
    if (!e.bus) {  // an address nvidia-smi could not print whole: the reason follows ": "
      const auto colon = rest.find(": ");
      end = colon == std::string_view::npos ? rest.size() : colon + 1;
    }
    e.reason = std::string(trim(rest.substr(end)));
    return e;
  }
  if (starts_with(line, "GPU is lost")) {
    e.kind = ErrorKind::kLostGpu;
    e.reason = "GPU is lost";
    return e;
  }
  if (contains(line,
               "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
               "driver") ||
      starts_with(line, "Failed to initialize NVML") ||
      contains(line, "NVIDIA-SMI couldn't find libnvidia-ml.so") ||
      line == "No devices were found") {
    e.kind = ErrorKind::kNoDriver;
    e.reason = std::string(line);
  }
  return e;
}

}  // namespace

namespace nvsmi {

bool is_error_line(std::string_view line) { return classify(line).kind != ErrorKind::kNone; }

std::size_t read_error_lines(std::string_view text, Facts& out) {
  // Most inputs hold no error line: a few vectorised searches of the whole text (the words every
  // error line of classify() has) instead of three searches on every line.
  constexpr std::string_view kMarks[] = {"Unable to determine the device handle", "GPU is lost",
                                         "NVIDIA-SMI", "Failed to initialize NVML",
                                         "No devices were found"};
  if (std::none_of(std::begin(kMarks), std::end(kMarks),
                   [&](std::string_view m) { return text_scan::contains(text, m); }))
    return 0;
  std::size_t n = 0;
  std::set<int> used;
  for (const auto& g : out.gpus) used.insert(g.index);
  bool no_driver = false;
  text_scan::for_each_line(text, kMaxLine, [&](std::string_view line) {
    // Error lines are short; a long line (or a table row) is something else.
    if (line.size() > 400 || starts_with(trim(line), "|")) return true;
    ErrorLine e = classify(line);
    if (e.kind == ErrorKind::kNone) return true;
    ++n;
    const std::string quoted = text_scan::printable(line, 200);
    if (e.kind == ErrorKind::kNoDriver) {
      if (!no_driver) {
        out.sources.push_back({"nvml", false, "nvidia-smi: " + quoted, 0, {}});
        out.gpu_facts_unavailable = true;
        out.notes.push_back("nvidia-smi got no GPU facts from the driver: \"" + quoted + "\"");
      }
      no_driver = true;
      return true;
    }
    const std::string reason = e.reason.empty() ? "no reason printed" : e.reason;
    const std::string why = fmt::format("cannot get a handle: {} (nvidia-smi: \"{}\")",
                                        text_scan::printable(reason, 120), quoted);
    // The same GPU named twice (or in the table too) is one GPU; a "GPU is lost" without an
    // address is the GPU already known not to answer, if there is one.
    GpuFacts* same = nullptr;
    for (auto& g : out.gpus)
      if (e.bus ? g.pci_bus_id == e.bus : g.unresponsive.has_value()) same = &g;
    if (same) {
      if (!same->unresponsive) same->unresponsive = why;
      return true;
    }
    if (out.gpus.size() >= kMaxGpus) return true;
    int index = 0;
    while (used.count(index)) ++index;
    used.insert(index);
    GpuFacts g;
    g.index = index;
    g.pci_bus_id = e.bus;
    g.unresponsive = why;
    out.notes.push_back(fmt::format(
        "GPU{}{}: nvidia-smi prints no index for a GPU it cannot reach; GPU{} is the first number "
        "the other GPUs leave free",
        index, e.bus ? " (" + *e.bus + ")" : "", index));
    out.gpus.push_back(std::move(g));
    return true;
  });
  std::sort(out.gpus.begin(), out.gpus.end(),
            [](const GpuFacts& a, const GpuFacts& b) { return a.index < b.index; });
  return n;
}

}  // namespace nvsmi

int sniff_nvsmi_table(std::string_view text) {
  LineReader reader(text, kSniffBytes);
  std::size_t lines = 0, errors = 0;
  bool banner = false, processes = false, process_header = false, gpu_row = false;
  for (std::string_view raw; reader.next(raw);) {
    if (++lines > kSniffLines) break;
    const std::string_view line = trim(raw.substr(0, kMaxLine));
    if (line.empty()) continue;
    if (line.front() == '|') {
      if ((contains(line, "Persistence-M") || contains(line, "TCC/WDDM")) &&
          contains(line, "Bus-Id"))
        return 100;
      if (contains(line, "Pwr:Usage/Cap") && contains(line, "Memory-Usage")) return 100;
      if (contains(line, "NVIDIA-SMI ") && contains(line, "Driver Version:")) banner = true;
      if (contains(line, "Processes:")) processes = true;
      if (contains(line, "PID") && contains(line, "Type") && contains(line, "Process name"))
        process_header = true;
      // A GPU's first row alone: "|   1  Tesla V100-PCIE...  On   | 00008ED0:00:00.0 Off |".
      if (!gpu_row) {
        const auto c = cells(line);
        gpu_row = c.size() == 3 && small_int(first_word(c[0]), kMaxGpus) &&
                  normalize_pci_bus_id(first_word(c[1]));
      }
    } else if (line.size() <= 400 && nvsmi::is_error_line(line)) {
      ++errors;
    }
  }
  if (banner) return 95;
  if (processes && process_header) return 90;
  if (gpu_row) return 85;
  // Error lines alone: below every format that recognises its own lines (nvidia-smi -q, -L,
  // a kernel log), which read what they know around such a line.
  if (errors) return 35;
  return 0;
}

Status import_nvsmi_table(std::string_view text, Facts& out) {
  Section section = Section::kNone;
  bool wddm = false, mig_row = false, gi_ci = false, any = false;
  std::vector<Block> blocks;
  std::size_t tables = 0, graphics = 0, migs = 0, past_bound = 0;
  std::set<std::pair<int, int>> seen_processes;

  text_scan::for_each_line(text, kMaxLine, [&](std::string_view raw) {
    const std::string_view line = trim(raw);
    if (line.empty() || is_rule_line(line)) return true;
    if (contains(line, "NVIDIA-SMI ") && contains(line, "Driver Version:")) {
      if (auto v = word_after(line, "Driver Version:")) out.host.driver_version = v;
      if (auto v = word_after(line, "CUDA Version:")) out.host.cuda_driver_version = v;
      any = true;
      return true;
    }
    if (line.front() != '|') {
      if (line.size() <= 40) nvsmi::read_timestamp(line, out);  // the line above the table
      return true;
    }
    const auto c = cells(line);
    if (c.size() == 3 && contains(c[0], "GPU") && contains(c[0], "Name") &&
        contains(c[1], "Bus-Id")) {
      section = Section::kGpus;
      wddm = contains(c[0], "TCC/WDDM");
      // A new table: `nvidia-smi -l` repeats it; the last one is what the GPUs were at the end.
      if (!blocks.empty()) {
        blocks.clear();
        out.processes.clear();
        seen_processes.clear();
      }
      ++tables;
      any = true;
      return true;
    }
    if (section == Section::kGpus && c.size() == 3 && contains(c[2], "MIG M.") &&
        trim(c[0]).empty()) {
      mig_row = true;
      return true;
    }
    if (c.size() == 3 && contains(c[0], "Fan") && contains(c[0], "Temp")) return true;
    if (c.size() == 1 && contains(c[0], "MIG devices:")) {
      section = Section::kMig;
      return true;
    }
    if (c.size() == 1 && contains(c[0], "Processes:")) {
      section = Section::kProcesses;
      any = true;
      return true;
    }
    if (section == Section::kProcesses && c.size() == 1) {
      if (contains(c[0], "PID") && contains(c[0], "Type")) {
        gi_ci = contains(c[0], " GI ");
        return true;
      }
      auto p = read_process_row(c[0], gi_ci);
      if (!p) return true;
      if (p->type.find('C') == std::string_view::npos) {
        ++graphics;  // the live probe, like NVML's compute list, leaves graphics-only ones out
        return true;
      }
      if (out.processes.size() >= kMaxProcesses) {
        past_bound += !seen_processes.count({p->gpu, p->pid});
        return true;
      }
      if (!seen_processes.emplace(p->gpu, p->pid).second) return true;
      ProcessFacts pf;
      pf.host_pid = p->pid;
      pf.gpu = p->gpu;
      pf.name = p->name;
      pf.used_memory_bytes = p->memory;
      out.processes.push_back(std::move(pf));
      return true;
    }
    if (section == Section::kMig) {
      // "|  0    1   0   0  |  10MiB / 19968MiB  | …": GPU GI CI MIG Dev.
      if (c.size() >= 4 && text_scan::words(c[0], 8).size() == 4 &&
          small_int(first_word(c[0]), static_cast<std::int64_t>(kMaxGpus)))
        ++migs;
      return true;
    }
    if (c.size() != 3) return true;
    const auto index = small_int(first_word(c[0]), kMaxGpus);
    // One row or a few pasted without the table's header: a GPU's first row (index, name |
    // bus id | …) starts the GPU section all the same.
    if (section == Section::kNone && index && normalize_pci_bus_id(first_word(c[1]))) {
      section = Section::kGpus;
      any = true;
      out.notes.push_back("nvidia-smi: table rows without the table's header");
    }
    if (section != Section::kGpus) return true;
    if (index && normalize_pci_bus_id(first_word(c[1]))) {
      if (blocks.size() >= kMaxGpus) return true;
      Block b;
      b.gpu.index = *index;
      read_first_row(c, wddm, b);
      b.rows = 1;
      blocks.push_back(std::move(b));
      return true;
    }
    if (blocks.empty()) return true;
    Block& b = blocks.back();
    if (b.rows == 1) {
      read_second_row(c, b, out.notes);
      b.rows = 2;
    } else if (b.rows == 2 && mig_row) {
      read_third_row(c, b);
      b.rows = 3;
    }
    return true;
  });
  for (auto& b : blocks) judge_errs(b, out.notes);

  std::set<int> indices;
  for (auto& b : blocks) {
    if (!indices.insert(b.gpu.index).second) {
      out.notes.push_back(
          fmt::format("nvidia-smi: GPU{} listed twice; the first kept", b.gpu.index));
      continue;
    }
    out.gpus.push_back(std::move(b.gpu));
  }
  std::sort(out.gpus.begin(), out.gpus.end(),
            [](const GpuFacts& a, const GpuFacts& b) { return a.index < b.index; });
  if (tables > 1)
    out.notes.push_back(
        fmt::format("nvidia-smi: {} tables (a looped run); the last one read", tables));
  if (past_bound)
    out.notes.push_back(fmt::format(
        "nvidia-smi: {} process row(s) past the first {} not read (a bound far above a real node)",
        past_bound, kMaxProcesses));
  if (graphics)
    out.notes.push_back(fmt::format(
        "nvidia-smi: {} graphics-only process(es) (type G) not counted as GPU work", graphics));
  if (migs) out.notes.push_back(fmt::format("nvidia-smi: {} MIG device row(s) listed", migs));
  const std::size_t errors = nvsmi::read_error_lines(text, out);
  if (!any && out.gpus.empty() && errors == 0) {
    out.notes.push_back("nvidia-smi: no GPU table, process table or error line found");
    return Status::invalid_input("nvidia-smi table: nothing readable");
  }
  return Status::ok();
}

}  // namespace gpuvet::import
