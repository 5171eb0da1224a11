#include "import/host_tools.h"

#include <string.h>  // memmem

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/text_scan.h"
#include "core/util.h"
#include "import/importer.h"

namespace gpuvet::import {
namespace {

constexpr std::size_t npos = std::string_view::npos;
constexpr std::size_t kMaxLine = 64 << 10;
// Rows kept per table: more CPUs, disks or NICs than any machine has.
constexpr std::size_t kMaxRows = 8192;
constexpr int kMaxNumaId = 4096;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
using text_scan::contains;
using text_scan::find;

std::string clean(std::string_view s, std::size_t max = 256) {
  return text_scan::printable(s, max);
}

template <typename Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  text_scan::for_each_line(text, kMaxLine, std::forward<Fn>(fn));
}

std::vector<std::string_view> words(std::string_view s, std::size_t max_words = 8192) {
  return text_scan::words(s, max_words);
}

// A figure as sysstat prints it, "96.11" or, in a comma locale, "96,11".
std::optional<double> figure(std::string_view s) {
  if (s.size() > 32) return std::nullopt;
  std::string t(s);
  std::replace(t.begin(), t.end(), ',', '.');
  auto v = parse_double(t);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return v;
}

std::optional<int> small_int(std::string_view s) {
  auto v = parse_int(s);
  if (!v || *v < 0 || *v > 1000000) return std::nullopt;
  return static_cast<int>(*v);
}

// "10:15:01" (maybe followed by AM/PM in the next word) → seconds since midnight.
std::optional<int> clock_of(std::string_view t) {
  if (t.size() != 8 || t[2] != ':' || t[5] != ':') return std::nullopt;
  for (int i : {0, 1, 3, 4, 6, 7})
    if (!is_digit(t[i])) return std::nullopt;
  return ((t[0] - '0') * 10 + (t[1] - '0')) * 3600 + ((t[3] - '0') * 10 + (t[4] - '0')) * 60 +
         (t[6] - '0') * 10 + (t[7] - '0');
}

bool is_meridiem(std::string_view t) { return t == "AM" || t == "PM" || t == "am" || t == "pm"; }

// The sysstat banner: "Linux 5.15.0-91-generic (gpu-node-01) \t01/15/2024 \t_x86_64_\t(96 CPU)".
void read_sysstat_banner(std::string_view text, Facts& out) {
  for_each_line(text.substr(0, 1 << 16), [&](std::string_view line) {
    line = trim(line);
    if (!starts_with(line, "Linux ")) return true;
    auto w = words(line, 16);
    if (w.size() < 3 || w[2].size() < 3 || w[2].front() != '(' || w[2].back() != ')') return true;
    out.host.kernel = clean(w[1], 96);
    out.host.hostname = clean(w[2].substr(1, w[2].size() - 2), 128);
    for (std::size_t i = 3; i + 1 < w.size(); ++i)
      if (w[i + 1] == "CPU)" && w[i].size() > 1 && w[i].front() == '(')
        if (auto n = small_int(w[i].substr(1)); n && *n > 0) out.host.logical_cpus = *n;
    return false;
  });
}

// ------------------------------------------------------------------ sysstat tables

// One block of a sysstat report: a header ("10:15:01 AM  CPU  %usr … %idle") and its rows,
// right-aligned to the header so that a 12-hour clock (two words), a 24-hour clock (one) and
// a localised summary label ("Average:", "Moyenne :") all line up.
struct Block {
  std::vector<std::string> columns;  // header words from the key column on
  bool summary = false;              // "Average:" block (no clock in front)
  std::optional<int> clock_s;
  std::vector<std::vector<std::string>> rows;  // each: key value, then the figures
};

struct Report {
  std::vector<Block> blocks;
};

// Reads every block whose header holds `key` (the row-name column) and `required`.
Report read_blocks(std::string_view text, std::string_view key, std::string_view required) {
  Report rep;
  Block* cur = nullptr;
  std::size_t header_words = 0;
  std::size_t key_index = 0;
  std::size_t total_rows = 0;
  for_each_line(text, [&](std::string_view line) {
    auto w = words(line, 256);
    if (w.empty()) {
      cur = nullptr;
      return true;
    }
    std::size_t k = npos;
    for (std::size_t i = 0; i < w.size() && i < 4; ++i)
      if (w[i] == key ||
          (w[i].size() == key.size() + 1 && starts_with(w[i], key) && w[i].back() == ':'))
        k = i;
    if (k != npos && std::find(w.begin(), w.end(), required) != w.end()) {
      Block b;
      for (std::size_t i = k; i < w.size(); ++i) b.columns.emplace_back(w[i]);
      if (k > 0) {
        b.clock_s = clock_of(w[0]);
        b.summary = !b.clock_s;
        if (b.clock_s && k > 1 && is_meridiem(w[1])) {
          // 12:xx AM is just after midnight, 12:xx PM just after noon.
          const bool pm = w[1][0] == 'P' || w[1][0] == 'p';
          const int hour = *b.clock_s / 3600;
          if (hour == 12 && !pm) *b.clock_s -= 12 * 3600;
          if (hour < 12 && pm) *b.clock_s += 12 * 3600;
        }
      }
      rep.blocks.push_back(std::move(b));
      cur = &rep.blocks.back();
      header_words = w.size();
      key_index = k;
      return true;
    }
    if (!cur || total_rows >= kMaxRows) return true;
    const std::size_t ncols = header_words - key_index;
    if (w.size() < ncols) {
      cur = nullptr;
      return true;
    }
    const std::size_t prefix = w.size() - ncols;
    if (prefix > 2) return true;
    // Rows of a clocked block start with a clock; rows of a summary block do not.
    if (prefix > 0 && cur->summary == clock_of(w[0]).has_value()) return true;
    std::vector<std::string> row;
    row.reserve(ncols);
    for (std::size_t i = prefix; i < w.size(); ++i) row.emplace_back(w[i]);
    cur->rows.push_back(std::move(row));
    ++total_rows;
    return true;
  });
  return rep;
}

int column_of(const Block& b, std::initializer_list<std::string_view> names) {
  for (auto n : names)
    for (std::size_t i = 0; i < b.columns.size(); ++i)
      if (b.columns[i] == n) return static_cast<int>(i);
  return -1;
}

std::optional<double> cell(const std::vector<std::string>& row, int col) {
  if (col < 0 || static_cast<std::size_t>(col) >= row.size()) return std::nullopt;
  return figure(row[col]);
}

// The summary block, else the last block with rows; the sample window it covers.
const Block* pick_block(const Report& rep, double& window_s) {
  const Block* summary = nullptr;
  const Block* last = nullptr;
  std::vector<int> clocks;
  for (const auto& b : rep.blocks) {
    if (b.rows.empty()) continue;
    if (b.summary)
      summary = &b;
    else
      last = &b;
    if (b.clock_s && (clocks.empty() || clocks.back() != *b.clock_s)) clocks.push_back(*b.clock_s);
  }
  window_s = 0;
  if (clocks.size() >= 2) {
    const int interval = (clocks[1] - clocks[0] + 86400) % 86400;
    if (summary)
      window_s = (clocks.back() - clocks.front() + 86400) % 86400 + interval;
    else
      window_s = interval;
  }
  return summary ? summary : last;
}

HostPressure& pressure(Facts& out) {
  if (!out.host.pressure) out.host.pressure = HostPressure{};
  return *out.host.pressure;
}

}  // namespace

// ================================================================== numactl --hardware

int sniff_numactl_hardware(std::string_view text) {
  text = sniff_head(text);
  int best = 0;
  int lines = 0;
  for_each_line(text, [&](std::string_view line) {
    if (++lines > 2000) return false;
    line = trim(line);
    if (starts_with(line, "available: ") && contains(line, " nodes")) {
      best = 100;
      return false;
    }
    if (starts_with(line, "node distances:")) best = std::max(best, 90);
    if (starts_with(line, "No NUMA available on this system")) best = std::max(best, 80);
    return true;
  });
  return best;
}

Status import_numactl_hardware(std::string_view text, Facts& out) {
  std::map<int, NumaNode> nodes;
  std::vector<int> distance_order;
  bool in_distances = false;
  bool no_numa = false;
  std::optional<int> announced;
  for_each_line(text, [&](std::string_view raw) {
    std::string_view line = trim(raw);
    if (starts_with(line, "No NUMA available")) {
      no_numa = true;
      return true;
    }
    if (starts_with(line, "available: ")) {
      auto w = words(line, 4);
      if (w.size() >= 2) announced = small_int(w[1]);
      return true;
    }
    if (starts_with(line, "node distances:")) {
      in_distances = true;
      return true;
    }
    auto w = words(line);
    if (w.empty()) return true;
    if (in_distances) {
      if (w[0] == "node") {
        distance_order.clear();
        for (std::size_t i = 1; i < w.size(); ++i)
          if (auto id = small_int(w[i]); id && *id <= kMaxNumaId) distance_order.push_back(*id);
        return true;
      }
      if (w[0].size() > 1 && w[0].back() == ':') {
        auto id = small_int(w[0].substr(0, w[0].size() - 1));
        if (!id || *id > kMaxNumaId) return true;
        std::vector<int> row;
        for (std::size_t i = 1; i < w.size(); ++i) {
          auto d = small_int(w[i]);
          if (!d) return true;
          row.push_back(*d);
        }
        NumaNode& n = nodes[*id];
        n.id = *id;
        n.distances = std::move(row);
        return true;
      }
    }
    // "node 0 cpus: 0 2 4", "node 0 size: 515020 MB", "node 0 free: 509047 MB"
    if (w.size() >= 3 && w[0] == "node") {
      auto id = small_int(w[1]);
      if (!id || *id > kMaxNumaId) return true;
      NumaNode& n = nodes[*id];
      n.id = *id;
      if (w[2] == "cpus:") {
        n.cpus.clear();
        for (std::size_t i = 3; i < w.size(); ++i)
          if (auto c = small_int(w[i])) n.cpus.push_back(*c);
        std::sort(n.cpus.begin(), n.cpus.end());
        n.cpus.erase(std::unique(n.cpus.begin(), n.cpus.end()), n.cpus.end());
      } else if (w[2] == "size:" && w.size() >= 5) {
        auto v = parse_uint(w[3]);
        std::uint64_t unit = w[4] == "MB"   ? 1ull << 20
                             : w[4] == "GB" ? 1ull << 30
                             : w[4] == "kB" ? 1ull << 10
                                            : 0;
        if (v && unit && *v < (1ull << 44)) n.memory_bytes = *v * unit;
      }
    }
    return true;
  });
  if (nodes.empty()) {
    out.notes.push_back(no_numa ? "numactl: \"No NUMA available on this system\""
                                : "numactl --hardware: no node line");
    return Status::invalid_input("no NUMA node in the numactl output");
  }
  // Distances are printed in the header's node order; the model wants them by position too.
  for (auto& [id, node] : nodes) out.host.numa_nodes.push_back(std::move(node));
  if (announced && *announced != static_cast<int>(out.host.numa_nodes.size()))
    out.notes.push_back("numactl --hardware: announces " + std::to_string(*announced) +
                        " nodes but lists " + std::to_string(out.host.numa_nodes.size()));
  if (!distance_order.empty()) {
    bool sorted = std::is_sorted(distance_order.begin(), distance_order.end());
    if (!sorted) out.notes.push_back("numactl --hardware: distance columns are not in node order");
  }
  return Status::ok();
}

// ================================================================== numactl --show

int sniff_numactl_show(std::string_view text) {
  text = sniff_head(text);
  bool policy = false, physcpubind = false;
  int lines = 0;
  for_each_line(text, [&](std::string_view line) {
    if (++lines > 2000) return false;
    line = trim(line);
    policy = policy || starts_with(line, "policy: ");
    physcpubind = physcpubind || starts_with(line, "physcpubind:");
    return !(policy && physcpubind);
  });
  return policy && physcpubind ? 100 : 0;
}

Status import_numactl_show(std::string_view text, Facts& out) {
  std::string note;
  auto append = [&](std::string_view key, std::string_view value) {
    if (!note.empty()) note += "; ";
    note += std::string(key) + " " + std::string(value);
  };
  std::string policy;
  std::optional<std::vector<int>> physcpubind, membind, preferred;
  std::optional<int> preferred_node;
  for_each_line(text, [&](std::string_view raw) {
    std::string_view line = trim(raw);
    std::size_t colon = line.find(':');
    if (colon == npos) return true;
    std::string_view key = trim(line.substr(0, colon));
    std::string_view value = trim(line.substr(colon + 1));
    if (key == "policy" || key == "preferred node") {
      append(key, clean(value, 64));
      if (key == "policy") policy = clean(value, 64);
      if (key == "preferred node")
        if (auto w = words(value, 2); !w.empty())
          if (auto v = small_int(w[0]); v && *v <= kMaxNumaId) preferred_node = *v;
    } else if (key == "physcpubind" || key == "cpubind" || key == "nodebind" || key == "membind" ||
               key == "preferred") {
      std::vector<int> ids;
      for (auto t : words(value))
        if (auto v = small_int(t)) ids.push_back(*v);
      std::string list = format_cpu_list(ids);
      if (key == "physcpubind") list += " (" + std::to_string(ids.size()) + " CPUs)";
      append(key, list);
      if (key == "physcpubind")
        physcpubind = std::move(ids);
      else if (key == "membind")
        membind = std::move(ids);
      else if (key == "preferred")
        preferred = std::move(ids);
    }
    return true;
  });
  if (note.empty()) {
    out.notes.push_back("numactl --show: no policy or binding line");
    return Status::invalid_input("no numactl --show fields");
  }
  out.notes.push_back("numactl --show (binding of the shell that ran it): " + note);
  if (physcpubind || membind || preferred || preferred_node) {
    NumaBinding b;
    b.source = "numactl --show";
    if (physcpubind) b.cpus = std::move(*physcpubind);
    // "preferred" / "preferred-many": memory comes from the preferred node(s) first.
    if (starts_with(policy, "preferred") && (preferred || preferred_node)) {
      if (preferred)
        b.mems = std::move(*preferred);
      else
        b.mems = {*preferred_node};
    } else if (membind) {
      b.mems = std::move(*membind);
    }
    auto sort_unique = [](std::vector<int>& v) {
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
    };
    sort_unique(b.cpus);
    sort_unique(b.mems);
    out.numa_bindings.push_back(std::move(b));
  }
  return Status::ok();
}

// ================================================================== lscpu

int sniff_lscpu(std::string_view text) {
  text = sniff_head(text);
  bool arch = false, cpus = false, model = false, threads = false;
  int lines = 0;
  for_each_line(text, [&](std::string_view line) {
    if (++lines > 400) return false;
    line = trim(line);
    arch = arch || starts_with(line, "Architecture:");
    cpus = cpus || starts_with(line, "CPU(s):");
    model = model || starts_with(line, "Model name:");
    threads = threads || starts_with(line, "Thread(s) per core:");
    return true;
  });
  if (arch && cpus) return 100;
  if (cpus && (model || threads)) return 90;
  return 0;
}

Status import_lscpu(std::string_view text, Facts& out) {
  std::vector<std::string> models;
  std::vector<int> cores_per, sockets, threads_per;
  std::optional<int> logical;
  std::optional<bool> vm;
  std::map<int, NumaNode> numa;
  int fields = 0;
  for_each_line(text, [&](std::string_view raw) {
    std::string_view line = trim(raw);
    std::size_t colon = line.find(':');
    if (colon == npos || colon == 0) return true;
    std::string_view key = trim(line.substr(0, colon));
    std::string_view value = trim(line.substr(colon + 1));
    if (key == "Model name") {
      ++fields;
      if (!value.empty() && value != "-" && models.size() < 16) models.push_back(clean(value, 128));
    } else if (key == "CPU(s)") {
      ++fields;
      if (auto v = small_int(value); v && *v > 0) logical = *v;
    } else if (key == "Core(s) per socket" || key == "Core(s) per cluster") {
      ++fields;
      if (auto v = small_int(value); v && *v > 0 && cores_per.size() < 16) cores_per.push_back(*v);
    } else if (key == "Socket(s)" || key == "Cluster(s)") {
      ++fields;
      // "Socket(s): -" on some arm64 machines; their "Cluster(s)" then counts instead.
      if (auto v = small_int(value); v && *v > 0 && sockets.size() < 16) {
        if (key == "Socket(s)") out.host.sockets = out.host.sockets.value_or(0) + *v;
        sockets.push_back(*v);
      }
    } else if (key == "Thread(s) per core") {
      ++fields;
      if (auto v = small_int(value); v && *v > 0 && threads_per.size() < 16)
        threads_per.push_back(*v);
    } else if (key == "Hypervisor vendor") {
      ++fields;
      if (!value.empty()) vm = true;
    } else if (key == "Virtualization type") {
      if (value == "full" || value == "para") vm = true;
    } else if (key == "Flags") {
      if (!vm) {
        bool hv = false;
        for (auto f : words(value))
          if (f == "hypervisor") hv = true;
        vm = hv;
      }
    } else if (starts_with(key, "NUMA node") && key.size() > 9 && is_digit(key[9]) &&
               key.substr(key.size() - 7) == " CPU(s)") {
      ++fields;
      auto id = small_int(key.substr(9, key.size() - 16));
      if (!id || *id > kMaxNumaId) return true;
      NumaNode& n = numa[*id];
      n.id = *id;
      if (auto cpus = parse_cpu_list(value)) n.cpus = *cpus;
    }
    return true;
  });
  if (fields == 0) {
    out.notes.push_back("lscpu: no CPU field");
    return Status::invalid_input("no lscpu fields");
  }
  if (!models.empty()) {
    std::string model = models.front();
    for (std::size_t i = 1; i < models.size(); ++i)
      if (models[i] != models.front()) model += " + " + models[i];
    out.host.cpu_model = model;
  }
  out.host.logical_cpus = logical;
  // Hybrid/multi-cluster parts print one "Core(s) per …" and "Socket(s)" per model section.
  if (!cores_per.empty() && cores_per.size() == sockets.size()) {
    int cores = 0;
    for (std::size_t i = 0; i < cores_per.size(); ++i) cores += cores_per[i] * sockets[i];
    out.host.physical_cores = cores;
  } else if (logical && threads_per.size() == 1) {
    out.host.physical_cores = *logical / threads_per.front();
  }
  out.host.virtual_machine = vm;
  for (auto& [id, node] : numa) out.host.numa_nodes.push_back(std::move(node));
  return Status::ok();
}

// ================================================================== mpstat -P ALL

int sniff_mpstat(std::string_view text) {
  text = first_lines(sniff_head(text), 4000);
  if (!contains(text, "%idle")) return 0;  // the header below needs it: no line-by-line search
  int best = 0;
  int lines = 0;
  for_each_line(text, [&](std::string_view line) {
    if (++lines > 4000) return false;
    if (!contains(line, "%idle") || !contains(line, "CPU")) return true;
    auto w = words(line, 64);
    bool cpu = false, idle = false, usr = false, iowait = false;
    for (std::size_t i = 0; i < w.size(); ++i) {
      cpu = cpu || (w[i] == "CPU" && i < 3);
      idle = idle || w[i] == "%idle";
      usr = usr || w[i] == "%usr" || w[i] == "%user";
      iowait = iowait || w[i] == "%iowait";
    }
    if (cpu && idle && usr && iowait) {
      best = 100;
      return false;
    }
    return true;
  });
  return best;
}

Status import_mpstat(std::string_view text, Facts& out) {
  Report rep = read_blocks(text, "CPU", "%idle");
  double window = 0;
  const Block* b = pick_block(rep, window);
  if (!b) {
    out.notes.push_back("mpstat: no per-CPU table with %idle");
    return Status::invalid_input("no mpstat table");
  }
  const int idle = column_of(*b, {"%idle"});
  const int iowait = column_of(*b, {"%iowait"});
  const int steal = column_of(*b, {"%steal"});
  std::vector<CpuCoreLoad> cores;
  std::optional<double> all_iowait;
  for (const auto& row : b->rows) {
    auto idle_v = cell(row, idle);
    if (!idle_v) continue;
    if (row[0] == "all") {
      all_iowait = cell(row, iowait);
      continue;
    }
    auto id = small_int(row[0]);
    if (!id) continue;
    CpuCoreLoad c;
    c.cpu = *id;
    c.busy_pct = std::clamp(100.0 - *idle_v, 0.0, 100.0);
    c.iowait_pct = cell(row, iowait).value_or(0);
    c.steal_pct = cell(row, steal).value_or(0);
    cores.push_back(c);
  }
  if (cores.empty() && !all_iowait) {
    out.notes.push_back("mpstat: the table has no readable CPU row");
    return Status::invalid_input("no mpstat rows");
  }
  read_sysstat_banner(text, out);
  HostPressure& p = pressure(out);
  p.window_s = window;
  p.cores = std::move(cores);
  p.iowait_pct = all_iowait;
  if (iowait < 0) out.notes.push_back("mpstat: no %iowait column (very old sysstat)");
  if (!b->summary && rep.blocks.size() > 1)
    out.notes.push_back("mpstat: no summary block; the last sample is used");
  return Status::ok();
}

// ================================================================== iostat -x

int sniff_iostat(std::string_view text) {
  text = sniff_head(text);
  int best = 0;
  int lines = 0;
  for_each_line(text, [&](std::string_view line) {
    if (++lines > 4000) return false;
    line = trim(line);
    if ((starts_with(line, "Device ") || starts_with(line, "Device:")) && contains(line, "%util")) {
      best = 100;
      return false;
    }
    if (starts_with(line, "avg-cpu:") && contains(line, "%iowait")) best = std::max(best, 70);
    return true;
  });
  return best;
}

Status import_iostat(std::string_view text, Facts& out) {
  std::optional<double> iowait;
  bool expect_cpu_values = false;
  std::vector<std::string> cpu_cols;
  for_each_line(text, [&](std::string_view raw) {
    std::string_view line = trim(raw);
    if (starts_with(line, "avg-cpu:")) {
      cpu_cols.clear();
      for (auto w : words(line.substr(8), 32)) cpu_cols.emplace_back(w);
      expect_cpu_values = true;
      return true;
    }
    if (expect_cpu_values && !line.empty()) {
      expect_cpu_values = false;
      auto w = words(line, 32);
      if (w.size() == cpu_cols.size())
        for (std::size_t i = 0; i < w.size(); ++i)
          if (cpu_cols[i] == "%iowait")
            if (auto v = figure(w[i])) iowait = v;
    }
    return true;
  });

  Report rep = read_blocks(text, "Device", "%util");
  const Block* last = nullptr;
  std::size_t reports = 0;
  for (const auto& b : rep.blocks) {
    ++reports;
    last = &b;
  }
  std::vector<DiskLoad> disks;
  if (last) {
    const int util = column_of(*last, {"%util"});
    struct Rate {
      int col;
      double scale;
    };
    auto rate_col = [&](std::initializer_list<std::pair<std::string_view, double>> names) {
      for (auto [n, s] : names)
        if (int c = column_of(*last, {n}); c >= 0) return Rate{c, s};
      return Rate{-1, 0};
    };
    const Rate rd = rate_col({{"rkB/s", 1024.0},
                              {"rMB/s", 1048576.0},
                              {"rsec/s", 512.0},
                              {"rd_sec/s", 512.0},
                              {"kB_read/s", 1024.0}});
    const Rate wr = rate_col({{"wkB/s", 1024.0},
                              {"wMB/s", 1048576.0},
                              {"wsec/s", 512.0},
                              {"wr_sec/s", 512.0},
                              {"kB_wrtn/s", 1024.0}});
    for (const auto& row : last->rows) {
      auto u = cell(row, util);
      auto r = cell(row, rd.col);
      auto w = cell(row, wr.col);
      if (!u || !r || !w) continue;
      DiskLoad d;
      d.device = clean(row[0], 64);
      d.util_pct = *u;
      d.read_bytes_per_s = *r * rd.scale;
      d.write_bytes_per_s = *w * wr.scale;
      disks.push_back(std::move(d));
    }
  }
  if (disks.empty() && !iowait) {
    out.notes.push_back("iostat: no device row with %util and no avg-cpu line");
    return Status::invalid_input("no iostat figures");
  }
  read_sysstat_banner(text, out);
  HostPressure& p = pressure(out);
  p.disks = std::move(disks);
  p.iowait_pct = iowait;
  if (reports == 1)
    out.notes.push_back(
        "iostat: a single report, i.e. averages since boot rather than a current window "
        "(run `iostat -x 5 2` and keep the second)");
  if (!last) out.notes.push_back("iostat: no extended device table (-x); only avg-cpu read");
  return Status::ok();
}

// ================================================================== sar -n DEV

int sniff_sar_net_dev(std::string_view text) {
  text = first_lines(sniff_head(text), 4000);
  if (!contains(text, "IFACE")) return 0;  // the header below needs it: no line-by-line search
  int lines = 0;
  int best = 0;
  for_each_line(text, [&](std::string_view line) {
    if (++lines > 4000) return false;
    if (contains(line, "IFACE") && (contains(line, "rxkB/s") || contains(line, "rxbyt/s"))) {
      best = 100;
      return false;
    }
    return true;
  });
  return best;
}

Status import_sar_net_dev(std::string_view text, Facts& out) {
  Report rep = read_blocks(text, "IFACE", "rxkB/s");
  double scale = 1024;
  if (rep.blocks.empty()) {
    rep = read_blocks(text, "IFACE", "rxbyt/s");
    scale = 1;
  }
  double window = 0;
  const Block* b = pick_block(rep, window);
  if (!b) {
    out.notes.push_back("sar -n DEV: no IFACE table");
    return Status::invalid_input("no sar -n DEV table");
  }
  const int rx = column_of(*b, {"rxkB/s", "rxbyt/s"});
  const int tx = column_of(*b, {"txkB/s", "txbyt/s"});
  const int ifutil = column_of(*b, {"%ifutil"});
  std::vector<NicLoad> nics;
  for (const auto& row : b->rows) {
    if (row[0] == "lo") continue;
    auto r = cell(row, rx);
    auto t = cell(row, tx);
    if (!r || !t) continue;
    NicLoad n;
    n.device = clean(row[0], 64);
    n.rx_bytes_per_s = *r * scale;
    n.tx_bytes_per_s = *t * scale;
    // sar prints 0.00 when it does not know the link speed: only a positive figure means something.
    if (auto u = cell(row, ifutil); u && *u > 0) n.peak_util_pct = u;
    nics.push_back(std::move(n));
  }
  if (nics.empty()) {
    out.notes.push_back("sar -n DEV: no interface row besides lo");
    return Status::invalid_input("no sar -n DEV rows");
  }
  read_sysstat_banner(text, out);
  HostPressure& p = pressure(out);
  p.window_s = window;
  p.nics = std::move(nics);
  if (!b->summary && rep.blocks.size() > 1)
    out.notes.push_back("sar -n DEV: no summary block; the last sample is used");
  return Status::ok();
}

// ================================================================== uptime

namespace {

// "40 days", "1 day", "12 min", "3 hours", "5 weeks" → seconds; "2:03" → h:mm.
std::optional<double> uptime_part(std::string_view part) {
  part = trim(part);
  if (part.empty()) return std::nullopt;
  if (auto colon = part.find(':'); colon != std::string_view::npos) {
    auto h = parse_uint(trim(part.substr(0, colon)));
    auto m = parse_uint(trim(part.substr(colon + 1)));
    if (!h || !m || *m >= 60 || *h > 100000) return std::nullopt;
    return static_cast<double>(*h * 3600 + *m * 60);
  }
  const auto space = part.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  auto n = parse_uint(part.substr(0, space));
  if (!n || *n > 10000000) return std::nullopt;
  const std::string_view unit = trim(part.substr(space + 1));
  double scale = 0;
  if (starts_with(unit, "week"))
    scale = 7 * 86400;
  else if (starts_with(unit, "day"))
    scale = 86400;
  else if (starts_with(unit, "hour"))
    scale = 3600;
  else if (starts_with(unit, "min"))
    scale = 60;
  else if (starts_with(unit, "sec"))
    scale = 1;
  else if (starts_with(unit, "year"))
    scale = 365 * 86400;
  else
    return std::nullopt;
  return static_cast<double>(*n) * scale;
}

// "3456789.12 1234.56": /proc/uptime.
std::optional<double> proc_uptime(std::string_view text) {
  const auto lines = split_lines(text.substr(0, 256));
  std::optional<double> up;
  for (auto line : lines) {
    line = trim(line);
    if (line.empty()) continue;
    if (up) return std::nullopt;  // one line only
    const auto w = split(line, ' ');
    if (w.size() != 2) return std::nullopt;
    auto a = parse_double(w[0]);
    auto b = parse_double(w[1]);
    if (!a || !b || *a < 0 || *b < 0 || w[0].find('.') == std::string_view::npos)
      return std::nullopt;
    up = a;
  }
  return up;
}

}  // namespace

std::optional<double> parse_uptime_line(std::string_view line) {
  line = trim(line);
  if (line.size() > 256) return std::nullopt;
  std::size_t at;
  if (starts_with(line, "up ")) {
    at = 0;
  } else {
    // " 14:02:11 up …": a clock (hh:mm:ss, maybe with am/pm words) before " up ".
    at = line.find(" up ");
    if (at == std::string_view::npos || at < 5 || at > 16) return std::nullopt;
    const auto clock = trim(line.substr(0, at));
    if (clock.size() < 5 || clock[2] != ':' || !std::isdigit(static_cast<unsigned char>(clock[0])))
      return std::nullopt;
    at += 1;
  }
  std::string_view rest = line.substr(at + 3);
  // The parts up to the users count or the load average.
  if (auto load = rest.find("load average"); load != std::string_view::npos)
    rest = rest.substr(0, load);
  double total = 0;
  int parts = 0;
  for (auto part : split(rest, ',')) {
    part = trim(part);
    if (part.empty()) continue;
    if (part.find("user") != std::string_view::npos) break;
    auto s = uptime_part(part);
    if (!s) {
      if (parts == 0) return std::nullopt;
      break;
    }
    total += *s;
    ++parts;
  }
  if (parts == 0) return std::nullopt;
  return total;
}

int sniff_uptime(std::string_view text) {
  text = sniff_head(text);
  int found = 0, other = 0, lines = 0;
  for_each_line(text, [&](std::string_view line) {
    if (++lines > 64) return false;
    line = trim(line);
    if (line.empty()) return true;
    if (parse_uptime_line(line))
      ++found;
    else
      ++other;
    return true;
  });
  if (found && other == 0) return 95;
  if (found && other <= 2) return 60;  // a prompt or two around it
  if (proc_uptime(text)) return 40;
  return 0;
}

Status import_uptime(std::string_view text, Facts& out) {
  std::optional<double> up;
  for_each_line(text, [&](std::string_view line) {
    if (auto s = parse_uptime_line(line)) up = s;  // the last one: the latest reading
    return true;
  });
  if (!up) up = proc_uptime(text);
  if (!up) return Status::invalid_input("no `uptime` line");
  out.host.uptime_s = up;
  return Status::ok();
}

}  // namespace gpuvet::import
