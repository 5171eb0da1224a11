#include "capture/nvsmi_monitor.h"

#include <string.h>  // memchr

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/util.h"

namespace gpuvet::capture {
namespace {

constexpr std::size_t npos = std::string_view::npos;
constexpr int kMaxGpuIndex = 1023;
constexpr std::size_t kMaxColumns = 64;        // nvidia-smi prints ~20 at most
constexpr std::size_t kMaxProcesses = 100000;  // bounds garbage, far above a real node
constexpr std::size_t kMaxNotes = 64;
constexpr std::size_t kMaxName = 256;
constexpr std::size_t kSniffLines = 300;
constexpr std::size_t kSniffBytes = 128u << 10;
constexpr std::uint64_t kMiB = 1024ull * 1024ull;

class LineReader {
 public:
  explicit LineReader(std::string_view text, std::size_t max_bytes = npos)
      : text_(text.substr(0, std::min(text.size(), max_bytes))) {}
  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    const void* nl = memchr(text_.data() + pos_, '\n', text_.size() - pos_);
    const std::size_t end =
        nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - text_.data()) : text_.size();
    line = text_.substr(pos_, end - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos_ = end + 1;
    return true;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

struct Word {
  std::string_view text;
  std::size_t offset = 0;
};

void split_words(std::string_view line, std::vector<Word>& out, std::size_t max_words) {
  out.clear();
  std::size_t i = 0;
  while (i < line.size() && out.size() < max_words) {
    while (i < line.size() && is_space(line[i])) ++i;
    const std::size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > start) out.push_back({line.substr(start, i - start), start});
  }
}

void add_note(Facts& out, std::string note) {
  if (out.notes.size() < kMaxNotes) out.notes.push_back(std::move(note));
}

// A monitor header: "# gpu pid type …" or "#Date Time gpu pwr …"; lowercased names.
// Empty when the '#' line is not a header (e.g. the units line "# Idx W C …").
std::vector<std::string> header_columns(std::string_view t) {
  std::vector<std::string> cols;
  if (t.empty() || t.front() != '#') return cols;
  std::vector<Word> w;
  split_words(t.substr(1), w, kMaxColumns + 1);
  if (w.size() > kMaxColumns) return cols;
  bool has_gpu = false;
  for (const auto& x : w) {
    cols.push_back(to_lower(x.text));
    if (cols.back() == "gpu") has_gpu = true;
  }
  if (!has_gpu) cols.clear();
  return cols;
}

int column(const std::vector<std::string>& cols, std::string_view name) {
  for (std::size_t i = 0; i < cols.size(); ++i)
    if (cols[i] == name) return static_cast<int>(i);
  return -1;
}

bool is_pmon_header(const std::vector<std::string>& cols) {
  return column(cols, "gpu") >= 0 && column(cols, "pid") >= 0;
}

bool is_dmon_header(const std::vector<std::string>& cols) {
  if (column(cols, "gpu") < 0 || column(cols, "pid") >= 0) return false;
  for (std::string_view c : {"pwr", "gtemp", "temp", "sm", "mclk", "pclk", "fb"})
    if (column(cols, c) >= 0) return true;
  return false;
}

// The cell of column `c` ("-" and absent cells are unknown).
std::optional<std::string_view> cell(const std::vector<Word>& w, int c) {
  if (c < 0 || static_cast<std::size_t>(c) >= w.size() || w[c].text == "-") return std::nullopt;
  return w[c].text;
}

std::optional<int> int_cell(const std::vector<Word>& w, int c, std::int64_t lo, std::int64_t hi) {
  auto s = cell(w, c);
  if (!s) return std::nullopt;
  auto v = parse_int(*s);
  if (!v || *v < lo || *v > hi) return std::nullopt;
  return static_cast<int>(*v);
}

std::optional<double> double_cell(const std::vector<Word>& w, int c, double lo, double hi) {
  auto s = cell(w, c);
  if (!s) return std::nullopt;
  auto v = parse_double(*s);
  if (!v || !(*v >= lo && *v <= hi)) return std::nullopt;
  return v;
}

class GpuTable {
 public:
  explicit GpuTable(Facts& facts) : facts_(facts) {
    for (std::size_t i = 0; i < facts_.gpus.size(); ++i) pos_[facts_.gpus[i].index] = i;
  }
  GpuFacts& at(int index) {
    auto [it, inserted] = pos_.try_emplace(index, facts_.gpus.size());
    if (inserted) {
      facts_.gpus.emplace_back();
      facts_.gpus.back().index = index;
    }
    return facts_.gpus[it->second];
  }

 private:
  Facts& facts_;
  std::map<int, std::size_t> pos_;
};

void sort_gpus(Facts& out) {
  std::stable_sort(out.gpus.begin(), out.gpus.end(),
                   [](const GpuFacts& a, const GpuFacts& b) { return a.index < b.index; });
}

// Sniff shared by both: a header of the right kind, the units line, data rows.
int sniff_monitor(std::string_view text, bool (*is_header)(const std::vector<std::string>&)) {
  LineReader lines(text, kSniffBytes);
  bool header = false, units = false;
  int rows = 0;
  std::vector<Word> w;
  std::string_view line;
  for (std::size_t n = 0; n < kSniffLines && lines.next(line); ++n) {
    const std::string_view t = trim(line);
    if (t.empty()) continue;
    if (t.front() == '#') {
      auto cols = header_columns(t);
      if (!cols.empty()) {
        if (is_header(cols))
          header = true;
        else
          return 0;  // the other monitor's header
      } else if (header && (t.find("Idx") != npos)) {
        units = true;
      }
      continue;
    }
    if (!header) continue;
    split_words(t, w, 4);
    if (!w.empty() && parse_int(w[0].text)) ++rows;
  }
  if (!header) return 0;
  int score = 60;
  if (units) score += 30;
  if (rows > 0) score += 5;
  return score;
}

}  // namespace

// ------------------------------------------------------------------ pmon

int sniff_pmon(std::string_view text) { return sniff_monitor(text, is_pmon_header); }

Status import_pmon(std::string_view text, Facts& out) {
  LineReader lines(text);
  GpuTable gpus(out);
  std::vector<std::string> cols;
  int c_gpu = -1, c_pid = -1, c_cmd = -1, c_fb = -1, c_sm = -1;
  std::map<std::pair<int, int>, std::size_t> seen;  // (gpu, pid) → index in out.processes
  std::size_t rows = 0, bad_rows = 0, sm_known = 0;
  std::vector<Word> w;
  std::string_view line;
  while (lines.next(line)) {
    const std::string_view t = trim(line);
    if (t.empty()) continue;
    if (t.front() == '#') {
      auto h = header_columns(t);
      if (!h.empty() && is_pmon_header(h)) {
        cols = std::move(h);
        c_gpu = column(cols, "gpu");
        c_pid = column(cols, "pid");
        c_cmd = column(cols, "command");
        c_fb = column(cols, "fb");
        c_sm = column(cols, "sm");
      }
      continue;
    }
    if (cols.empty()) continue;
    split_words(line, w, cols.size());
    auto gpu = int_cell(w, c_gpu, 0, kMaxGpuIndex);
    if (!gpu || w.size() + 1 < cols.size()) {
      ++bad_rows;
      continue;
    }
    ++rows;
    gpus.at(*gpu);
    if (!cell(w, c_pid)) continue;  // "-": no process on this GPU in this sample
    auto pid = int_cell(w, c_pid, 0, 0x7fffffff);
    if (!pid) {
      ++bad_rows;
      continue;
    }
    if (cell(w, c_sm)) ++sm_known;
    std::optional<std::string> name;
    if (c_cmd >= 0 && static_cast<std::size_t>(c_cmd) < w.size()) {
      // The command is the rest of the line: Windows names hold spaces ("NVIDIA Overlay.").
      std::string_view rest = trim(line.substr(w[c_cmd].offset));
      if (!rest.empty() && rest != "-") name = std::string(rest.substr(0, kMaxName));
    }
    auto [it, inserted] = seen.try_emplace({*gpu, *pid}, out.processes.size());
    if (inserted) {
      if (out.processes.size() >= kMaxProcesses) {
        seen.erase(it);
        continue;
      }
      ProcessFacts p;
      p.host_pid = *pid;
      p.gpu = *gpu;
      out.processes.push_back(std::move(p));
    }
    ProcessFacts& p = out.processes[it->second];
    if (!p.name && name) p.name = name;
    if (auto fb = int_cell(w, c_fb, 0, 1 << 30)) p.used_memory_bytes = std::uint64_t(*fb) * kMiB;
  }
  if (cols.empty()) {
    add_note(out, "pmon: no \"# gpu pid type … command\" header found");
    return Status::invalid_input("pmon: no header");
  }
  if (rows == 0) {
    add_note(out, "pmon: header without any sample row");
    return Status::invalid_input("pmon: no samples");
  }
  if (!out.processes.empty() && c_sm >= 0 && sm_known == 0)
    add_note(out,
             "pmon: no per-process SM/memory utilisation (all \"-\"): MIG mode, or the "
             "processes were idle while sampled");
  if (bad_rows > 0) add_note(out, "pmon: " + std::to_string(bad_rows) + " unreadable rows ignored");
  sort_gpus(out);
  return Status::ok();
}

// ------------------------------------------------------------------ dmon

int sniff_dmon(std::string_view text) { return sniff_monitor(text, is_dmon_header); }

namespace {

struct Range {
  double lo = 0, hi = 0;
  bool any = false;
  void add(double v) {
    lo = any ? std::min(lo, v) : v;
    hi = any ? std::max(hi, v) : v;
    any = true;
  }
};

std::string fmt_num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

}  // namespace

Status import_dmon(std::string_view text, Facts& out) {
  LineReader lines(text);
  GpuTable gpus(out);
  std::vector<std::string> cols;
  struct Cols {
    int gpu = -1, pwr = -1, gtemp = -1, mtemp = -1, sm = -1, mem = -1, mclk = -1, pclk = -1,
        fb = -1;
  } c;
  std::map<int, std::size_t> samples;
  std::map<int, Range> power, sm;
  std::size_t bad_rows = 0;
  std::vector<Word> w;
  std::string_view line;
  while (lines.next(line)) {
    const std::string_view t = trim(line);
    if (t.empty()) continue;
    if (t.front() == '#') {
      auto h = header_columns(t);
      if (!h.empty() && is_dmon_header(h)) {
        cols = std::move(h);
        c.gpu = column(cols, "gpu");
        c.pwr = column(cols, "pwr");
        c.gtemp = column(cols, "gtemp") >= 0 ? column(cols, "gtemp") : column(cols, "temp");
        c.mtemp = column(cols, "mtemp");
        c.sm = column(cols, "sm");
        c.mem = column(cols, "mem");
        c.mclk = column(cols, "mclk");
        c.pclk = column(cols, "pclk");
        c.fb = column(cols, "fb");
      }
      continue;
    }
    if (cols.empty()) continue;
    split_words(t, w, cols.size() + 1);
    auto gpu = int_cell(w, c.gpu, 0, kMaxGpuIndex);
    if (!gpu || w.size() != cols.size()) {
      ++bad_rows;
      continue;
    }
    GpuFacts& g = gpus.at(*gpu);
    ++samples[*gpu];
    if (auto v = double_cell(w, c.pwr, 0, 1e5)) {
      g.power.draw_w = *v;
      power[*gpu].add(*v);
    }
    if (auto v = int_cell(w, c.gtemp, -100, 500)) g.thermal.gpu_c = *v;
    if (auto v = int_cell(w, c.mtemp, -100, 500)) g.thermal.memory_c = *v;
    if (auto v = int_cell(w, c.sm, 0, 100)) {
      g.utilization.gpu_pct = *v;
      sm[*gpu].add(*v);
    }
    if (auto v = int_cell(w, c.mem, 0, 100)) g.utilization.memory_pct = *v;
    if (auto v = int_cell(w, c.mclk, 0, 1000000)) g.clocks.mem_mhz = *v;
    if (auto v = int_cell(w, c.pclk, 0, 1000000)) g.clocks.sm_mhz = *v;
    if (auto v = int_cell(w, c.fb, 0, 1 << 30)) g.memory.used_bytes = std::uint64_t(*v) * kMiB;
  }
  if (cols.empty()) {
    add_note(out, "dmon: no \"# gpu pwr … sm mem …\" header found");
    return Status::invalid_input("dmon: no header");
  }
  if (samples.empty()) {
    add_note(out, "dmon: header without any sample row");
    return Status::invalid_input("dmon: no samples");
  }
  std::string s = "dmon: values from the last sample;";
  for (const auto& [gpu, n] : samples) {
    if (s.size() > 1000) break;
    s += " GPU" + std::to_string(gpu) + " " + std::to_string(n) + " samples";
    if (auto p = power.find(gpu); p != power.end())
      s += ", power " + fmt_num(p->second.lo) + "-" + fmt_num(p->second.hi) + " W";
    if (auto u = sm.find(gpu); u != sm.end())
      s += ", sm " + fmt_num(u->second.lo) + "-" + fmt_num(u->second.hi) + " %";
    s += ";";
  }
  s.pop_back();
  add_note(out, s);
  if (bad_rows > 0) add_note(out, "dmon: " + std::to_string(bad_rows) + " unreadable rows ignored");
  sort_gpus(out);
  return Status::ok();
}

}  // namespace gpuvet::capture
