#include "import/nvsmi_monitor.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/text_scan.h"
#include "core/util.h"

namespace gpuvet::import {
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

using text_scan::LineReader;
using text_scan::Word;

void add_note(Facts& out, std::string note) {
  if (out.notes.size() < kMaxNotes) out.notes.push_back(std::move(note));
}

// A monitor header: "# gpu pid type …" or "#Date Time gpu pwr …"; lowercased names.
// Empty when the '#' line is not a header (e.g. the units line "# Idx W C …").
std::vector<std::string> header_columns(std::string_view t) {
  std::vector<std::string> cols;
  if (t.empty() || t.front() != '#') return cols;
  std::vector<Word> w;
  text_scan::words(t.substr(1), kMaxColumns + 1, w);
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
    text_scan::words(t, 4, w);
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
  std::size_t rows = 0, bad_rows = 0, sm_known = 0, past_bound = 0;
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
    text_scan::words(line, cols.size(), w);
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
        ++past_bound;
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
  if (past_bound > 0)
    add_note(out, "pmon: " + std::to_string(past_bound) + " rows of processes past the first " +
                      std::to_string(kMaxProcesses) + " not read (a bound far above a real node)");
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

// The -d delay of a "nvidia-smi dmon … -d N" command line (a pasted prompt), in seconds.
std::optional<double> dmon_delay(std::string_view line) {
  if (line.find("nvidia-smi") == npos || line.find("dmon") == npos) return std::nullopt;
  std::vector<Word> w;
  text_scan::words(line, 64, w);
  for (std::size_t i = 0; i < w.size(); ++i) {
    std::string_view v;
    if ((w[i].text == "-d" || w[i].text == "--delay") && i + 1 < w.size()) {
      v = w[i + 1].text;
    } else if (starts_with(w[i].text, "--delay=")) {
      v = w[i].text.substr(8);
    } else {
      continue;
    }
    if (auto d = parse_int(v); d && *d > 0 && *d <= 86400) return static_cast<double>(*d);
  }
  return std::nullopt;
}

// dmon -o D date cell "20251202" → days since the epoch.
std::optional<std::int64_t> dmon_date(std::string_view s) {
  if (s.size() != 8) return std::nullopt;
  auto v = parse_int(s);
  if (!v || *v < 0) return std::nullopt;
  return SampleSeries::days_from_civil(*v / 10000, static_cast<int>(*v / 100 % 100),
                                       static_cast<int>(*v % 100));
}

}  // namespace

Status import_dmon(std::string_view text, Facts& out) {
  LineReader lines(text);
  GpuTable gpus(out);
  SampleSeries series(out, "dmon");
  std::vector<std::string> cols;
  struct Cols {
    int gpu = -1, pwr = -1, gtemp = -1, mtemp = -1, sm = -1, mem = -1, mclk = -1, pclk = -1,
        fb = -1, date = -1, time = -1;
  } c;
  std::map<int, std::size_t> samples;
  std::map<int, Range> power, sm;
  std::size_t bad_rows = 0;
  std::optional<double> delay_s;
  // -o T without D: the time of day wraps at midnight; count the days it did.
  std::optional<double> last_clock;
  std::int64_t wrapped_days = 0;
  bool any_date = false, any_time = false;
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
        c.date = column(cols, "date");
        c.time = column(cols, "time");
      }
      continue;
    }
    if (cols.empty()) {
      if (!delay_s) delay_s = dmon_delay(t);
      continue;
    }
    text_scan::words(t, cols.size() + 1, w);
    auto gpu = int_cell(w, c.gpu, 0, kMaxGpuIndex);
    if (!gpu || w.size() != cols.size()) {
      ++bad_rows;
      continue;
    }
    GpuFacts& g = gpus.at(*gpu);
    ++samples[*gpu];
    GpuSample sample;
    sample.gpu = *gpu;
    if (auto v = double_cell(w, c.pwr, 0, 1e5)) {
      g.power.draw_w = *v;
      sample.power_w = *v;
      power[*gpu].add(*v);
    }
    if (auto v = int_cell(w, c.gtemp, -100, 500)) g.thermal.gpu_c = sample.gpu_c = *v;
    if (auto v = int_cell(w, c.mtemp, -100, 500)) g.thermal.memory_c = *v;
    if (auto v = int_cell(w, c.sm, 0, 100)) {
      g.utilization.gpu_pct = sample.util_pct = *v;
      sm[*gpu].add(*v);
    }
    if (auto v = int_cell(w, c.mem, 0, 100)) g.utilization.memory_pct = *v;
    if (auto v = int_cell(w, c.mclk, 0, 1000000)) g.clocks.mem_mhz = *v;
    if (auto v = int_cell(w, c.pclk, 0, 1000000)) g.clocks.sm_mhz = sample.sm_mhz = *v;
    if (auto v = int_cell(w, c.fb, 0, 1 << 30)) g.memory.used_bytes = std::uint64_t(*v) * kMiB;
    // The row's time: -o DT gives date and time, -o T the time of day only.
    std::optional<double> abs_s;
    if (c.time >= 0) {
      any_time = true;
      std::optional<std::int64_t> day;
      if (c.date >= 0) {
        any_date = true;
        if (auto d = cell(w, c.date)) day = dmon_date(*d);
      }
      auto clock = cell(w, c.time) ? SampleSeries::clock_seconds(*cell(w, c.time)) : std::nullopt;
      if (clock && c.date >= 0 && day) {
        abs_s = static_cast<double>(*day) * 86400.0 + *clock;
      } else if (clock && c.date < 0) {
        if (last_clock && *clock + 43200.0 < *last_clock) ++wrapped_days;
        last_clock = *clock;
        abs_s = static_cast<double>(wrapped_days) * 86400.0 + *clock;
      }
    }
    series.add(sample, abs_s);
  }
  if (cols.empty()) {
    add_note(out, "dmon: no \"# gpu pwr … sm mem …\" header found");
    return Status::invalid_input("dmon: no header");
  }
  if (samples.empty()) {
    add_note(out, "dmon: header without any sample row");
    return Status::invalid_input("dmon: no samples");
  }
  series.finish(any_time ? (any_date ? "Date/Time" : "Time") : "", delay_s);
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

// ------------------------------------------------------------------ SampleSeries

SampleSeries::SampleSeries(Facts& out, std::string tool)
    : out_(out), tool_(std::move(tool)), first_(out.samples.size()) {}

void SampleSeries::reserve(std::size_t rows) {
  rows = std::min(rows, kMaxSamples - std::min(kMaxSamples, out_.samples.size()));
  out_.samples.reserve(out_.samples.size() + rows);
  abs_s_.reserve(rows);
}

void SampleSeries::add(const GpuSample& sample, std::optional<double> abs_s) {
  if (out_.samples.size() >= kMaxSamples) {
    ++dropped_;
    return;
  }
  out_.samples.push_back(sample);
  abs_s_.push_back(abs_s && std::isfinite(*abs_s) ? *abs_s
                                                  : std::numeric_limits<double>::quiet_NaN());
}

void SampleSeries::finish(std::string_view time_source, std::optional<double> interval_s) {
  auto first = out_.samples.begin() + static_cast<std::ptrdiff_t>(first_);
  const std::size_t n = out_.samples.size() - first_;
  // Counts per GPU; rows of one GPU often follow each other, so the last entry is cached.
  std::map<int, std::size_t> per_gpu;
  auto count_of = [](std::map<int, std::size_t>& m, int gpu, auto& cache) -> std::size_t& {
    if (cache == m.end() || cache->first != gpu) cache = m.try_emplace(gpu, 0).first;
    return cache->second;
  };
  {
    auto cache = per_gpu.end();
    for (auto it = first; it != out_.samples.end(); ++it) ++count_of(per_gpu, it->gpu, cache);
  }
  bool several = dropped_ > 0;
  for (const auto& [gpu, count] : per_gpu) several = several || count >= 2;
  if (!several || n == 0) {  // one snapshot, not a series
    out_.samples.resize(first_);
    abs_s_.clear();
    return;
  }
  std::size_t timed = 0;
  double origin = std::numeric_limits<double>::infinity();
  for (double a : abs_s_)
    if (!std::isnan(a)) {
      ++timed;
      origin = std::min(origin, a);
    }
  char buf[64];
  std::string how;
  if (timed == n) {
    for (std::size_t i = 0; i < n; ++i)
      (first + static_cast<std::ptrdiff_t>(i))->t_s = abs_s_[i] - origin;
    how = "t_s from the " + std::string(time_source) + " timestamps";
  } else {
    const bool known = interval_s && *interval_s > 0 && std::isfinite(*interval_s);
    const double step = known ? *interval_s : 1.0;
    std::map<int, std::size_t> ordinal;
    auto cache = ordinal.end();
    for (auto it = first; it != out_.samples.end(); ++it)
      it->t_s = static_cast<double>(count_of(ordinal, it->gpu, cache)++) * step;
    if (known) {
      std::snprintf(buf, sizeof buf, "%g", step);
      how = "t_s = sample order x " + std::string(buf) + " s (the sampling interval)";
    } else {
      how = "no timestamps: t_s is the sample order in seconds (interval unknown, 1 s assumed)";
    }
    if (!time_source.empty())
      how += "; " + std::to_string(n - timed) + " of " + std::to_string(n) +
             " rows had no readable " + std::string(time_source) + " timestamp";
  }
  auto by_gpu_time = [](const GpuSample& a, const GpuSample& b) {
    return a.gpu != b.gpu ? a.gpu < b.gpu : a.t_s < b.t_s;
  };
  if (!std::is_sorted(first, out_.samples.end(), by_gpu_time))
    std::stable_sort(first, out_.samples.end(), by_gpu_time);
  out_.notes.push_back(tool_ + ": time series of " + std::to_string(n) + " samples of " +
                       std::to_string(per_gpu.size()) + " GPU(s), " + how);
  if (dropped_ > 0)
    out_.notes.push_back(tool_ + ": time series capped at " + std::to_string(kMaxSamples) +
                         " samples; " + std::to_string(dropped_) +
                         " later rows only update the GPUs' last values");
  abs_s_.clear();
}

std::optional<std::int64_t> SampleSeries::days_from_civil(std::int64_t y, int m, int d) {
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (y < 1970 || y > 9999 || m < 1 || m > 12 || d < 1 || d > kDays[m - 1]) return std::nullopt;
  // H. Hinnant's days_from_civil.
  y -= m <= 2;
  const std::int64_t era = y / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

std::optional<double> SampleSeries::clock_seconds(std::string_view t) {
  t = trim(t);
  if (t.size() < 8 || t[2] != ':' || t[5] != ':') return std::nullopt;
  for (int i : {0, 1, 3, 4, 6, 7})
    if (t[i] < '0' || t[i] > '9') return std::nullopt;
  const int h = (t[0] - '0') * 10 + (t[1] - '0');
  const int mi = (t[3] - '0') * 10 + (t[4] - '0');
  const int sec = (t[6] - '0') * 10 + (t[7] - '0');
  if (h > 23 || mi > 59 || sec > 60) return std::nullopt;
  double frac = 0;
  if (t.size() > 8) {
    if (t[8] != '.' && t[8] != ',') return std::nullopt;
    std::string_view digits = t.substr(9);
    if (digits.empty() || digits.size() > 9) return std::nullopt;
    double scale = 0.1;
    for (char ch : digits) {
      if (ch < '0' || ch > '9') return std::nullopt;
      frac += (ch - '0') * scale;
      scale /= 10;
    }
  }
  return h * 3600.0 + mi * 60.0 + sec + frac;
}

}  // namespace gpuvet::import
