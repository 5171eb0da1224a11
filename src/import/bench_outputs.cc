#include "import/bench_outputs.h"

#include <string.h>  // memmem

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/text_scan.h"
#include "core/util.h"
#include "import/collective_log.h"
#include "import/importer.h"
#include "import/nccl_log.h"

namespace gpuvet::import {
namespace {

constexpr std::size_t npos = std::string_view::npos;
// Lines longer than this are looked at only up to here: benchmark lines are short.
constexpr std::size_t kMaxLine = 16 << 10;
// Measurements kept per input (a 10 MB shmoo log must not become a million facts).
constexpr std::size_t kMaxMeasurements = 20000;
constexpr std::size_t kMaxGpus = 1024;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_space(char c) { return text_scan::is_blank(c); }
using text_scan::contains;
using text_scan::find;

std::string clean(std::string_view s, std::size_t max = 256) {
  return text_scan::printable(s, max);
}

template <typename Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  text_scan::for_each_line(text, kMaxLine, std::forward<Fn>(fn));
}

std::vector<std::string_view> words(std::string_view s, std::size_t max_words = 4096) {
  return text_scan::words(s, max_words);
}

std::optional<double> number(std::string_view s) {
  auto v = parse_double(s);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return v;
}

std::optional<int> small_int(std::string_view s) {
  auto v = parse_int(s);
  if (!v || *v < 0 || *v > 1000000) return std::nullopt;
  return static_cast<int>(*v);
}

bool all_ints(const std::vector<std::string_view>& w, std::size_t from = 0) {
  if (w.size() <= from) return false;
  for (std::size_t i = from; i < w.size(); ++i)
    if (!small_int(w[i])) return false;
  return true;
}

GpuFacts& gpu_at(Facts& out, int index) {
  for (auto& g : out.gpus)
    if (g.index == index) return g;
  GpuFacts g;
  g.index = index;
  out.gpus.push_back(std::move(g));
  return out.gpus.back();
}

// A matrix alone still says how many GPUs the node has: every GPU index its rows, columns or
// peer-access lines name (from measurement `first` and pair `first_pair` on) becomes a GPU,
// unnamed unless a device line named it.
void add_matrix_gpus(Facts& out, std::size_t first, std::size_t first_pair, const char* tool) {
  std::vector<int> seen;
  auto see = [&](std::optional<int> i) {
    if (i && *i >= 0 && std::find(seen.begin(), seen.end(), *i) == seen.end()) seen.push_back(*i);
  };
  for (std::size_t i = first; i < out.measurements.size(); ++i) {
    see(out.measurements[i].src_gpu);
    see(out.measurements[i].dst_gpu);
  }
  for (std::size_t i = first_pair; i < out.pairs.size(); ++i) {
    see(out.pairs[i].a);
    see(out.pairs[i].b);
  }
  std::sort(seen.begin(), seen.end());
  std::size_t added = 0;
  for (int i : seen) {
    if (out.gpus.size() >= kMaxGpus) break;
    const bool known = std::any_of(out.gpus.begin(), out.gpus.end(),
                                   [&](const GpuFacts& g) { return g.index == i; });
    if (known) continue;
    GpuFacts g;
    g.index = i;
    out.gpus.push_back(std::move(g));
    ++added;
  }
  std::sort(out.gpus.begin(), out.gpus.end(),
            [](const GpuFacts& a, const GpuFacts& b) { return a.index < b.index; });
  if (added) {
    std::string names;
    for (int i : seen) names += (names.empty() ? "GPU" : ", GPU") + std::to_string(i);
    out.notes.push_back(std::string(tool) + ": " + std::to_string(added) +
                        " GPU(s) known only by their index in the matrix (" + names + ")");
  }
}

GpuPair& pair_of(Facts& out, int a, int b) {
  if (a > b) std::swap(a, b);
  for (auto& p : out.pairs)
    if (p.a == a && p.b == b) return p;
  GpuPair p;
  p.a = a;
  p.b = b;
  out.pairs.push_back(p);
  return out.pairs.back();
}

// Past the cap, figures whose data check failed still have this much room: corruption is
// the one thing a long output must not lose.
constexpr std::size_t kMaxWrongBeyondCap = 64;

bool room_for(std::size_t stored, const Measurement& m) {
  return stored < kMaxMeasurements ||
         (m.wrong_data && stored < kMaxMeasurements + kMaxWrongBeyondCap);
}

void add_measurement(Facts& out, Measurement m, std::size_t& dropped) {
  if (!room_for(out.measurements.size(), m)) {
    ++dropped;
    return;
  }
  out.measurements.push_back(std::move(m));
}

void note_dropped(Facts& out, const char* tool, std::size_t dropped) {
  if (dropped > 0)
    out.notes.push_back(std::string(tool) + ": " + std::to_string(dropped) +
                        " figures beyond the first " + std::to_string(kMaxMeasurements) +
                        " were dropped");
}

// ================================================================== nccl-tests

// A header line of the *_perf table: "#  size  count  type  redop  root  time  algbw  busbw …".
bool is_perf_header(const std::vector<std::string_view>& w) {
  bool size = false, count = false, algbw = false, busbw = false;
  for (auto t : w) {
    size = size || t == "size";
    count = count || t == "count";
    algbw = algbw || t == "algbw";
    busbw = busbw || t == "busbw";
  }
  return size && count && algbw && busbw;
}

// "all_reduce_perf" out of "./build/all_reduce_perf -b 8 -e 8G" or "all_reduce_perf_mpi".
std::optional<std::string> perf_binary_name(std::string_view line) {
  std::size_t p = 0;
  while ((p = find(line, "_perf", p)) != npos) {
    std::size_t b = p;
    while (b > 0 && (is_alpha(line[b - 1]) || line[b - 1] == '_')) --b;
    std::size_t e = p + 5;
    const bool ends = e == line.size() || is_space(line[e]) || line[e] == '_' || line[e] == '"' ||
                      line[e] == '\'' || line[e] == ',' || line[e] == ';';
    if (b < p && ends && p - b <= 32) return to_lower(line.substr(b, e - b));
    p += 5;
  }
  return std::nullopt;
}

struct PerfTable {
  std::vector<Measurement> rows;
  std::string redop;              // of the first row: "sum", "none", "" (column absent)
  std::optional<long long> root;  // of the first row
  double best_algbw = 0;          // of the row with the largest algbw
  double best_ratio = 0;          // busbw / algbw of that row
};

struct RankLine {
  int rank = 0;
  std::string host;
  int device = 0;
  std::optional<std::string> bus;
  std::string name;
};

// Which collective wrote a table the user did not name. busbw/algbw is 2(n-1)/n for
// all_reduce, (n-1)/n for reduce_scatter/all_gather/alltoall, 1 for reduce/broadcast.
std::string guess_collective(const PerfTable& t, std::optional<int> nranks) {
  const bool reduction = t.redop == "sum" || t.redop == "prod" || t.redop == "max" ||
                         t.redop == "min" || t.redop == "avg" || t.redop == "mulsum";
  if (reduction && t.root && *t.root >= 0) return "reduce_perf";
  if (reduction) {
    if (t.best_algbw < 1.0) return "all_reduce_perf";  // ratios of tiny figures are noise
    if (nranks && *nranks > 2) {
      const double n = *nranks;
      const double all_reduce = 2 * (n - 1) / n;
      const double reduce_scatter = (n - 1) / n;
      return std::abs(t.best_ratio - all_reduce) <= std::abs(t.best_ratio - reduce_scatter)
                 ? "all_reduce_perf"
                 : "reduce_scatter_perf";
    }
    return t.best_ratio >= 0.98 ? "all_reduce_perf" : "reduce_scatter_perf";
  }
  if (t.redop == "none" && t.root && *t.root >= 0) return "broadcast_perf";
  return "unknown";
}

}  // namespace

// A result row of nccl-tests pasted without its header: size count type [redop] [root], then
// time algbw busbw #wrong for out-of-place and in-place. The type is one of NCCL's data types
// (ncclDataType_t names as nccl-tests prints them), which no other format's table holds there.
bool is_bare_row(std::string_view line) {
  static constexpr std::string_view kTypes[] = {"int8",   "uint8",    "int32",    "uint32",
                                                "int64",  "uint64",   "half",     "float",
                                                "double", "bfloat16", "fp8_e4m3", "fp8_e5m2"};
  const auto w = words(line, 16);
  if (w.size() < 11 || w.size() > 13 || !parse_uint(w[0]) || !parse_uint(w[1])) return false;
  return std::find(std::begin(kTypes), std::end(kTypes), w[2]) != std::end(kTypes);
}

int sniff_nccl_tests(std::string_view text) {
  text = first_lines(sniff_head(text), 4000);
  // Rows alone (the header and banner not pasted): three of them are nccl-tests' output.
  if (!contains(text, "nThread ") && !contains(text, "Avg bus bandwidth") &&
      !contains(text, "algbw")) {
    if (!contains(text, "float") && !contains(text, "half") && !contains(text, "int")) return 0;
    int rows = 0, lines = 0;
    for_each_line(text, [&](std::string_view line) {
      if (++lines > 4000) return false;
      rows += is_bare_row(strip_launcher_label(line)) ? 1 : 0;
      return rows < 3;
    });
    return rows >= 3 ? 80 : 0;
  }
  int best = 0;
  int lines = 0;
  for_each_line(text, [&](std::string_view line) {
    if (++lines > 4000) return false;
    std::string_view l = strip_launcher_label(line);
    if (!l.empty() && l.front() == '#') l.remove_prefix(1);
    l = trim(l);
    if (starts_with(l, "nThread ") && contains(l, " nGpus ")) best = std::max(best, 90);
    if (starts_with(l, "Avg bus bandwidth")) best = std::max(best, 90);
    if (contains(l, "algbw") && is_perf_header(words(l, 64))) {
      best = 100;
      return false;
    }
    return true;
  });
  return best;
}

Status import_nccl_tests(std::string_view text, Facts& out) {
  const std::size_t before = out.measurements.size();
  std::size_t dropped = 0;
  std::optional<std::string> named;  // binary name seen in a command line
  std::string last_test;
  bool in_table = false;
  int blocks = 2;
  PerfTable table;
  std::vector<RankLine> ranks;
  std::vector<RankLine> all_ranks;
  bool unknown_noted = false;
  bool header_seen = false;

  auto finish_table = [&]() {
    if (!in_table) return;
    in_table = false;
    if (table.rows.empty()) return;
    std::optional<int> nranks;
    if (!ranks.empty()) nranks = static_cast<int>(ranks.size());
    std::string test = named ? *named : guess_collective(table, nranks);
    if (test == "unknown" && !unknown_noted) {
      out.notes.push_back(
          "nccl-tests: the output does not name its *_perf binary and the columns do not tell "
          "the collective (no reduction operator); test recorded as \"unknown\"");
      unknown_noted = true;
    }
    for (auto& m : table.rows) {
      m.test = test;
      add_measurement(out, std::move(m), dropped);
    }
    last_test = test;
    table = PerfTable{};
  };

  for_each_line(text, [&](std::string_view raw) {
    std::string_view line = strip_launcher_label(raw);
    std::string_view body = line;
    const bool comment = !body.empty() && body.front() == '#';
    if (comment) body.remove_prefix(1);
    body = trim(body);

    if (starts_with(body, "nThread ") && contains(body, " nGpus ")) {
      finish_table();
      ranks.clear();
      return true;
    }
    if (starts_with(body, "Rank ") && contains(body, " device ")) {
      // "Rank  0 Group  0 Pid  31706 on host device  0 [0000:b4:00] NVIDIA GeForce RTX 2080 Ti"
      auto w = words(body, 64);
      RankLine r;
      auto rank = w.size() > 1 ? small_int(w[1]) : std::nullopt;
      std::size_t on = 0, dev = 0;
      for (std::size_t i = 2; i + 1 < w.size(); ++i) {
        if (w[i] == "on" && on == 0) on = i;
        if (w[i] == "device" && on != 0 && dev == 0) dev = i;
      }
      if (rank && on && dev == on + 2 && dev + 1 < w.size()) {
        r.rank = *rank;
        r.host = clean(w[on + 1], 128);
        if (auto d = small_int(w[dev + 1])) {
          r.device = *d;
          std::size_t name_from = dev + 2;
          if (name_from < w.size() && w[name_from].front() == '[') {
            std::string_view b = w[name_from];
            b.remove_prefix(1);
            if (!b.empty() && b.back() == ']') b.remove_suffix(1);
            if (contains(b, ":")) r.bus = normalize_pci_bus_id(b);
            ++name_from;
          }
          if (name_from < w.size()) {
            const char* s = w[name_from].data();
            const char* e = w.back().data() + w.back().size();
            r.name = clean(std::string_view(s, static_cast<std::size_t>(e - s)), 96);
          }
          if (ranks.size() < kMaxGpus) ranks.push_back(r);
          if (all_ranks.size() < kMaxGpus) all_ranks.push_back(r);
        }
      }
      return true;
    }
    if (contains(body, "algbw")) {
      auto w = words(body, 64);
      if (is_perf_header(w)) {
        finish_table();
        in_table = true;
        header_seen = true;
        int times = 0;
        for (auto t : w) times += t == "time";
        blocks = std::clamp(times, 1, 2);
        return true;
      }
    }
    if (starts_with(body, "Avg bus bandwidth")) {
      finish_table();
      std::size_t colon = body.find(':');
      auto avg = colon == npos ? std::nullopt : number(body.substr(colon + 1));
      if (avg) {
        Measurement m;
        m.tool = "nccl-tests";
        m.test = named ? *named : (last_test.empty() ? "unknown" : last_test);
        m.busbw_gbps = avg;
        m.note = "avg bus bandwidth";
        add_measurement(out, std::move(m), dropped);
      }
      return true;
    }
    if (starts_with(body, "Out of bounds values") && !contains(body, " OK")) {
      out.notes.push_back("nccl-tests: " + clean(body));
      return true;
    }
    if (comment) return true;
    if (!in_table && is_bare_row(body)) {
      // Rows pasted without the table's header: the usual two blocks (out-of-place, in-place).
      in_table = true;
      blocks = 2;
      out.notes.push_back(
          "nccl-tests: result rows without the table's header; read as "
          "out-of-place and in-place blocks");
    }
    if (!in_table) {
      if (auto name = perf_binary_name(line)) named = *name;
      return true;
    }
    // A data row: size count type [redop] [root] then, per block, time algbw busbw #wrong.
    auto w = words(body, 32);
    const std::size_t n = w.size();
    const std::size_t tail = 4 * static_cast<std::size_t>(blocks);
    if (n < 3 + tail || n > 5 + tail) {
      // NCCL INFO lines and warnings can interleave with the rows: keep the table open.
      return true;
    }
    auto size = parse_uint(w[0]);
    auto count = parse_uint(w[1]);
    if (!size || !count || w[2].empty() || !is_alpha(w[2].front())) return true;
    const std::size_t left = n - tail;
    std::string redop;
    std::optional<long long> root;
    if (left >= 4) {
      if (is_alpha(w[3].front())) {
        redop = std::string(w[3]);
        if (left == 5) root = parse_int(w[4]);
      } else {
        root = parse_int(w[3]);
      }
    }
    if (table.rows.empty()) {
      table.redop = redop;
      table.root = root;
    }
    for (int b = 0; b < blocks; ++b) {
      const std::size_t k = left + 4 * static_cast<std::size_t>(b);
      auto time = number(w[k]);
      auto alg = number(w[k + 1]);
      auto bus = number(w[k + 2]);
      if (!alg && !bus && !time) continue;
      Measurement m;
      m.tool = "nccl-tests";
      m.size_bytes = size;
      m.latency_us = time;
      m.bandwidth_gbps = alg;
      m.busbw_gbps = bus;
      m.note = blocks == 2 && b == 1 ? "in-place" : "out-of-place";
      // "N/A": not checked (-c 0); 0: checked and right.
      if (auto wrong = parse_uint(w[k + 3]); wrong && *wrong > 0)
        m.wrong_data = "#wrong " + std::to_string(*wrong);
      if (b == 0 && alg && bus && *alg > table.best_algbw) {
        table.best_algbw = *alg;
        table.best_ratio = *alg > 0 ? *bus / *alg : 0;
      }
      if (room_for(table.rows.size(), m)) table.rows.push_back(std::move(m));
    }
    return true;
  });
  finish_table();
  note_dropped(out, "nccl-tests", dropped);

  // The GPUs of a single-host run ("#  Rank 0 … on host device 0 [bus] name").
  if (!all_ranks.empty() && out.gpus.empty()) {
    bool one_host = true;
    std::vector<int> seen;
    for (const auto& r : all_ranks) {
      one_host = one_host && r.host == all_ranks.front().host;
      if (std::find(seen.begin(), seen.end(), r.device) != seen.end()) one_host = false;
      seen.push_back(r.device);
    }
    if (one_host) {
      for (const auto& r : all_ranks) {
        GpuFacts& g = gpu_at(out, r.device);
        if (!r.name.empty()) g.name = r.name;
        if (r.bus) g.pci_bus_id = r.bus;
      }
    }
  }

  const std::size_t events_before = out.nccl_events.size();
  parse_nccl_log_events(text, out.nccl_events, &out.notes);
  // Its NCCL init lines say which rank is which GPU (for culprit).
  parse_collective_log(text, out.collective_ranks, &out.notes);

  if (out.measurements.size() == before) {
    const bool failed =
        std::any_of(out.nccl_events.begin() + static_cast<std::ptrdiff_t>(events_before),
                    out.nccl_events.end(), [](const NcclEvent& e) { return e.kind == "error"; });
    if (failed) return Status::ok();  // the test's own failure lines (NCCL or CUDA errors)
    const bool started = header_seen || (contains(text, "nThread ") && contains(text, " nGpus "));
    if (started && !contains(text, "Avg bus bandwidth")) {
      // The table header and no row: the first size never completed. nccl-tests prints each
      // row as soon as its size is done, so a run that stops here hung in its first collective.
      NcclEvent ev;
      ev.kind = "stalled";
      ev.detail = header_seen ? "nccl-tests printed its result table header and no row: the "
                                "first collective never completed"
                              : "nccl-tests started (its nThread line) and printed no result "
                                "row: NCCL's init or the first collective never completed";
      out.nccl_events.push_back(std::move(ev));
      out.notes.push_back("nccl-tests: the output ends before any result row");
      return Status::ok();
    }
    out.notes.push_back("nccl-tests: no result row in the *_perf table");
    return Status::invalid_input("no nccl-tests result rows");
  }
  return Status::ok();
}

// ================================================================== nvbandwidth

namespace {

// "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)" and friends.
struct MatrixTitle {
  bool row_gpu = false;
  bool col_gpu = false;
  int arrow = 0;  // 1 "->", -1 "<-", 2 "<->"
  // nvbandwidth v0.8's device_to_device_bidirectional_* print Read1/Read2 (or Write1/Write2),
  // one direction each, then "Total": their sum, both directions at once.
  bool total = false;
  bool latency = false;
  double to_unit = 1;  // value × to_unit = GB/s or µs
  std::string text;
};

std::optional<MatrixTitle> parse_matrix_title(std::string_view l) {
  std::size_t row = find(l, "(row)");
  std::size_t col = find(l, "(column)");
  if (row == npos || col == npos || col < row || row < 3) return std::nullopt;
  MatrixTitle t;
  t.row_gpu = l.substr(row - 3, 3) == "GPU";
  if (!t.row_gpu && l.substr(row - 3, 3) != "CPU") return std::nullopt;
  if (col < 3) return std::nullopt;
  t.col_gpu = l.substr(col - 3, 3) == "GPU";
  if (!t.col_gpu && l.substr(col - 3, 3) != "CPU") return std::nullopt;
  std::string_view between = l.substr(row + 5, col - row - 5);
  if (contains(between, "<->"))
    t.arrow = 2;
  else if (contains(between, "->"))
    t.arrow = 1;
  else if (contains(between, "<-"))
    t.arrow = -1;
  else
    return std::nullopt;
  t.total = t.arrow == 2 && contains(l.substr(col), " Total ");
  if (contains(l, "(ns)")) {
    t.latency = true;
    t.to_unit = 1e-3;
  } else if (contains(l, "(us)")) {
    t.latency = true;
  } else if (contains(l, "(MB/s)")) {
    t.to_unit = 1e-3;
  }
  t.text = clean(l);
  return t;
}

std::string_view strip_quote(std::string_view l) {
  l = trim(l);
  while (!l.empty() && l.front() == '>') l = trim(l.substr(1));
  return l;
}

}  // namespace

int sniff_nvbandwidth(std::string_view text) {
  std::string_view head = sniff_head(text);
  if (contains(head, "nvbandwidth Version")) return 100;
  std::size_t p = find(head, "Running ");
  if (p != npos && contains(head, "memcpy_") && contains(head, "(row)")) return 100;
  int best = 0;
  // A matrix title counts only on a line naming one of these: without them, no line search.
  const bool titled =
      contains(head, "memcpy") || contains(head, "bandwidth") || contains(head, "latency");
  for_each_line(titled ? head : std::string_view(), [&](std::string_view line) {
    auto t = parse_matrix_title(strip_quote(line));
    if (t &&
        (contains(line, "memcpy") || contains(line, "bandwidth") || contains(line, "latency"))) {
      best = 90;
      return false;
    }
    return true;
  });
  if (best == 0 && p != npos && contains(head, "SUM ") &&
      (contains(head, "_memcpy_") || contains(head, "_bidirectional_")))
    best = 60;
  return best;
}

Status import_nvbandwidth(std::string_view text, Facts& out) {
  const std::size_t before = out.measurements.size();
  const std::size_t gpus_before = out.gpus.size();
  std::size_t dropped = 0;
  std::string test;  // from "Running <test>."
  bool test_has_figures = false;
  bool test_failed = false;
  std::size_t test_first = before;      // index of the test's first measurement
  std::optional<std::size_t> wrong_at;  // the test's wrong-data measurement
  std::optional<MatrixTitle> title;
  std::vector<int> columns;
  bool expect_header = false;
  std::size_t matrix_first = 0;  // index in out.measurements of the matrix's first cell

  auto end_matrix = [&]() {
    title.reset();
    columns.clear();
    expect_header = false;
  };

  for_each_line(text, [&](std::string_view raw) {
    std::string_view l = strip_quote(raw);
    if (starts_with(l, "Running ") && l.size() > 8) {
      end_matrix();
      std::string_view name = trim(l.substr(8));
      if (!name.empty() && name.back() == '.') name.remove_suffix(1);
      test = clean(name, 96);
      test_has_figures = false;
      test_failed = false;
      test_first = out.measurements.size();
      wrong_at.reset();
      return true;
    }
    if (auto t = parse_matrix_title(l)) {
      end_matrix();
      title = t;
      expect_header = true;
      matrix_first = out.measurements.size();
      return true;
    }
    if (title && expect_header) {
      auto w = words(l, 4096);
      if (w.empty()) return true;
      if (!all_ints(w)) {
        end_matrix();
      } else {
        for (auto c : w) columns.push_back(*small_int(c));
        expect_header = false;
        return true;
      }
    } else if (title) {
      auto w = words(l, 4096);
      auto row = w.empty() ? std::nullopt : small_int(w[0]);
      if (!row || w.size() != columns.size() + 1) {
        end_matrix();
      } else {
        for (std::size_t c = 0; c < columns.size(); ++c) {
          auto v = number(w[c + 1]);
          if (!v) continue;  // N/A
          const int col = columns[c];
          if (title->row_gpu && title->col_gpu && *row == col) continue;  // not measured
          Measurement m;
          m.tool = "nvbandwidth";
          m.test = test.empty() ? title->text : test;
          const bool reversed = title->arrow == -1;
          const bool src_gpu = reversed ? title->col_gpu : title->row_gpu;
          const bool dst_gpu = reversed ? title->row_gpu : title->col_gpu;
          const int src = reversed ? col : *row;
          const int dst = reversed ? *row : col;
          if (src_gpu) m.src_gpu = src;
          if (dst_gpu) m.dst_gpu = dst;
          if (title->latency)
            m.latency_us = *v * title->to_unit;
          else
            m.bandwidth_gbps = *v * title->to_unit;
          if (title->arrow == 2) m.note = title->total ? "bidirectional total" : "bidirectional";
          add_measurement(out, std::move(m), dropped);
          test_has_figures = true;
        }
        return true;
      }
    }
    if (starts_with(l, "SUM ")) {
      auto w = words(l, 8);
      if (w.size() == 3) {
        if (auto v = number(w[2])) {
          std::string name = clean(w[1], 96);
          // A matrix printed without its "Running" line takes the name the SUM line gives it.
          if (test.empty())
            for (std::size_t i = matrix_first; i < out.measurements.size(); ++i)
              out.measurements[i].test = name;
          Measurement m;
          m.tool = "nvbandwidth";
          m.test = name;
          m.bandwidth_gbps = *v;
          m.note = "sum";
          add_measurement(out, std::move(m), dropped);
          test_has_figures = true;
        }
      }
      return true;
    }
    if (starts_with(l, "Device ") && l.size() > 7 && is_digit(l[7])) {
      // "Device 0: NVIDIA A100-SXM4-80GB (00000000:34:00)"
      std::size_t colon = l.find(':');
      auto index = colon == npos ? std::nullopt : small_int(l.substr(7, colon - 7));
      if (index && out.gpus.size() < kMaxGpus) {
        std::string_view rest = trim(l.substr(colon + 1));
        std::optional<std::string> bus;
        if (!rest.empty() && rest.back() == ')') {
          std::size_t open = rest.rfind('(');
          if (open != npos) {
            bus = normalize_pci_bus_id(rest.substr(open + 1, rest.size() - open - 2));
            if (bus) rest = trim(rest.substr(0, open));
          }
        }
        GpuFacts& g = gpu_at(out, *index);
        if (!rest.empty()) g.name = clean(rest, 96);
        if (bus) g.pci_bus_id = bus;
      }
      return true;
    }
    if (starts_with(l, "CUDA Driver Version:")) {
      // 12060 → "12.6"
      if (auto v = parse_int(l.substr(20)); v && *v >= 1000 && *v < 100000)
        out.host.cuda_driver_version =
            std::to_string(*v / 1000) + "." + std::to_string((*v % 1000) / 10);
      return true;
    }
    if (starts_with(l, "Driver Version:")) {
      std::string_view v = trim(l.substr(15));
      if (!v.empty() && is_digit(v.front())) out.host.driver_version = clean(v, 32);
      return true;
    }
    // nvbandwidth's data check (memcmpPatternHelper): the kernel prints "Invalid value when
    // checking the pattern at <address>" and "Current offset : <n>", then the ASSERT on its
    // error flag aborts the run. The copies of this test moved wrong data: whatever figures
    // it printed are not bandwidth, and the test is a measurement with wrong_data.
    const bool pattern_failed =
        contains(l, "Invalid value when checking the pattern") ||
        (starts_with(l, "ASSERT") && contains(l, "h_errorFlag") && contains(l, "Pattern"));
    if (!test.empty() && pattern_failed) {
      if (!wrong_at) {
        const std::string what = clean(l, 200);
        for (std::size_t i = test_first; i < out.measurements.size(); ++i)
          out.measurements[i].wrong_data = what;
        Measurement m;
        m.tool = "nvbandwidth";
        m.test = test;
        m.note = "failed: " + what;
        m.wrong_data = what;
        const std::size_t n = out.measurements.size();
        add_measurement(out, std::move(m), dropped);
        if (out.measurements.size() > n) wrong_at = n;
      }
      test_failed = true;
      return true;
    }
    if (wrong_at && starts_with(l, "Current offset")) {
      const std::size_t colon = l.find(':');
      if (auto offset = colon == npos ? std::nullopt : parse_uint(trim(l.substr(colon + 1)));
          offset && out.measurements[*wrong_at].wrong_data->find("(offset") == std::string::npos)
        *out.measurements[*wrong_at].wrong_data += " (offset " + std::to_string(*offset) + ")";
      return true;
    }
    if (!test.empty() && !test_has_figures && !test_failed &&
        (starts_with(l, "ASSERT") || contains(l, "Invalid value when checking") ||
         starts_with(l, "CUDA_ERROR") || contains(l, "CUDA error") || starts_with(l, "Error"))) {
      Measurement m;
      m.tool = "nvbandwidth";
      m.test = test;
      m.note = "failed: " + clean(l, 200);
      add_measurement(out, std::move(m), dropped);
      test_failed = true;
      return true;
    }
    // A testcase nvbandwidth skipped because its filter refused it: the device-to-device
    // ones (and all_to_one, one_to_all) are waived when no pair of GPUs can map peer memory
    // (cuDeviceCanAccessPeer is 0 for every pair). Three eras print it: "Waiving <test>."
    // (up to v0.4), "<test> Waived." and, since v0.5, "Waived: " with no name (it replaces
    // the "Running" line, so the test before it is not the one waived).
    std::optional<std::string> waived;
    if (starts_with(l, "Waiving ") && l.size() > 8) {
      std::string_view name = trim(l.substr(8));
      if (!name.empty() && name.back() == '.') name.remove_suffix(1);
      if (!name.empty() && name.find(' ') == npos) waived = clean(name, 96);
    } else if (l.size() > 8 && l.substr(l.size() - 8) == " Waived.") {
      std::string_view name = trim(l.substr(0, l.size() - 8));
      if (!name.empty() && name.find(' ') == npos) waived = clean(name, 96);
    } else if (l == "Waived" || starts_with(l, "Waived:")) {
      waived = std::string();
    }
    if (waived) {
      end_matrix();
      test.clear();
      Measurement m;
      m.tool = "nvbandwidth";
      m.test = waived->empty() ? std::string("(a testcase nvbandwidth did not name)") : *waived;
      m.note = "waived";
      add_measurement(out, std::move(m), dropped);
      return true;
    }
    return true;
  });
  note_dropped(out, "nvbandwidth", dropped);
  add_matrix_gpus(out, before, out.pairs.size(), "nvbandwidth");
  if (out.measurements.size() == before && out.gpus.size() == gpus_before) {
    out.notes.push_back("nvbandwidth: no result matrix, SUM line or device list");
    return Status::invalid_input("no nvbandwidth results");
  }
  return Status::ok();
}

// ================================================================== bandwidthTest

namespace {

std::string direction_key(std::string_view l) {
  if (contains(l, "Host to Device") || contains(l, "H2D")) return "host_to_device";
  if (contains(l, "Device to Host") || contains(l, "D2H")) return "device_to_host";
  if (contains(l, "Device to Device") || contains(l, "D2D")) return "device_to_device";
  return {};
}

void set_gpus(Measurement& m, const std::string& dir, std::optional<int> gpu) {
  if (!gpu) return;
  if (dir == "host_to_device") m.dst_gpu = gpu;
  if (dir == "device_to_host") m.src_gpu = gpu;
  if (dir == "device_to_device") m.src_gpu = m.dst_gpu = gpu;
}

}  // namespace

int sniff_bandwidth_test(std::string_view text) {
  std::string_view head = sniff_head(text);
  if (contains(head, "[CUDA Bandwidth Test]")) return 100;
  if (contains(head, "Transfer Size (Bytes)") && contains(head, "Bandwidth(")) return 100;
  if (contains(head, "bandwidthTest-") && contains(head, "Bandwidth = ")) return 100;
  return 0;
}

Status import_bandwidth_test(std::string_view text, Facts& out) {
  const std::size_t before = out.measurements.size();
  std::size_t dropped = 0;
  std::string dir;
  std::string memory = "pinned";
  double to_gbps = 1;
  bool in_rows = false;
  std::optional<int> gpu;  // the one device a "1 Device(s)" section ran on
  std::vector<int> devices;
  bool single_device_section = false;

  for_each_line(text, [&](std::string_view raw) {
    std::string_view l = trim(raw);
    if (starts_with(l, "Device ") && l.size() > 7 && is_digit(l[7])) {
      std::size_t colon = l.find(':');
      if (colon != npos)
        if (auto i = small_int(l.substr(7, colon - 7))) {
          if (devices.size() < kMaxGpus) devices.push_back(*i);
          std::string_view name = trim(l.substr(colon + 1));
          if (!name.empty() && out.gpus.size() < kMaxGpus) gpu_at(out, *i).name = clean(name, 96);
        }
      return true;
    }
    if (contains(l, " Bandwidth, ") && contains(l, "Device(s)")) {
      dir = direction_key(l);
      in_rows = false;
      single_device_section = starts_with(trim(l.substr(l.find(", ") + 2)), "1 Device");
      gpu = single_device_section && devices.size() == 1 ? std::optional<int>(devices.front())
                                                         : std::nullopt;
      return true;
    }
    if (contains(l, "Memory Transfers")) {
      memory = contains(l, "PAGEABLE") || contains(l, "Pageable") ? "pageable" : "pinned";
      return true;
    }
    if (starts_with(l, "Transfer Size (Bytes)")) {
      // Old samples print MB/s computed as bytes / 1,024,000 per second.
      to_gbps = contains(l, "(MB/s)") ? 1.024e-3 : 1.0;
      in_rows = !dir.empty();
      return true;
    }
    if (starts_with(l, "bandwidthTest-")) {
      // "bandwidthTest-H2D-Pinned, Bandwidth = 0.4 GB/s, Time = 0.00000 s, Size = 1000 bytes, …"
      auto fields = split(l, ',');
      std::string d = direction_key(fields[0]);
      if (d.empty()) return true;
      std::string mem = contains(fields[0], "Pinned") ? "pinned" : "pageable";
      Measurement m;
      m.tool = "bandwidthTest";
      m.test = d + "_" + mem;
      for (auto f : fields) {
        f = trim(f);
        if (starts_with(f, "Bandwidth = ")) {
          auto w = words(f.substr(12), 4);
          if (!w.empty())
            if (auto v = number(w[0]))
              m.bandwidth_gbps = *v * (w.size() > 1 && w[1] == "MB/s" ? 1e-3 : 1.0);
        } else if (starts_with(f, "Size = ")) {
          auto w = words(f.substr(7), 4);
          if (!w.empty()) m.size_bytes = parse_uint(w[0]);
        }
      }
      set_gpus(m, d, devices.size() == 1 ? std::optional<int>(devices.front()) : std::nullopt);
      if (m.bandwidth_gbps) add_measurement(out, std::move(m), dropped);
      return true;
    }
    if (starts_with(l, "Result = ") && !contains(l, "PASS")) {
      out.notes.push_back("bandwidthTest: " + clean(l));
      return true;
    }
    if (in_rows) {
      auto w = words(l, 4);
      auto size = w.size() == 2 ? parse_uint(w[0]) : std::nullopt;
      auto bw = w.size() == 2 ? number(w[1]) : std::nullopt;
      if (!size || !bw) {
        in_rows = false;
        return true;
      }
      Measurement m;
      m.tool = "bandwidthTest";
      m.test = dir + "_" + memory;
      m.size_bytes = size;
      m.bandwidth_gbps = *bw * to_gbps;
      set_gpus(m, dir, gpu);
      add_measurement(out, std::move(m), dropped);
    }
    return true;
  });
  note_dropped(out, "bandwidthTest", dropped);
  if (out.measurements.size() == before) {
    out.notes.push_back("bandwidthTest: no bandwidth row");
    return Status::invalid_input("no bandwidthTest results");
  }
  return Status::ok();
}

// ================================================================== p2pBandwidthLatencyTest

int sniff_p2p_bandwidth_latency_test(std::string_view text) {
  std::string_view head = sniff_head(text);
  if (contains(head, "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]")) return 100;
  if ((contains(head, "P2P=Enabled") || contains(head, "P2P=Disabled")) &&
      contains(head, "Matrix") && contains(head, "D\\D"))
    return 100;
  if (contains(head, "CANNOT Access Peer Device=") || contains(head, "CAN Access Peer Device="))
    return 80;
  return 0;
}

Status import_p2p_bandwidth_latency_test(std::string_view text, Facts& out) {
  const std::size_t before = out.measurements.size();
  const std::size_t pairs_before = out.pairs.size();
  std::size_t dropped = 0;
  std::string base;  // "bidirectional p2p enabled", "latency p2p disabled", "" (not a figure)
  bool latency = false;
  std::string test;
  std::vector<int> columns;
  bool in_rows = false;

  for_each_line(text, [&](std::string_view raw) {
    std::string_view l = trim(raw);
    if (starts_with(l, "Device: ")) {
      // "Device: 0, NVIDIA GeForce RTX 2080 Ti, pciBusID: b4, pciDeviceID: 0, pciDomainID:0"
      auto f = split(l.substr(8), ',');
      auto index = small_int(f[0]);
      if (!index || f.size() < 2 || out.gpus.size() >= kMaxGpus) return true;
      GpuFacts& g = gpu_at(out, *index);
      g.name = clean(f[1], 96);
      std::string bus, dev = "0", dom = "0";
      for (auto part : f) {
        part = trim(part);
        auto colon = part.find(':');
        if (colon == npos) continue;
        auto key = part.substr(0, colon);
        auto value = trim(part.substr(colon + 1));
        if (key == "pciBusID") bus = value;
        if (key == "pciDeviceID") dev = value;
        if (key == "pciDomainID") dom = value;
      }
      if (!bus.empty()) g.pci_bus_id = normalize_pci_bus_id(dom + ":" + bus + ":" + dev);
      return true;
    }
    if (starts_with(l, "Device=") && contains(l, "Access Peer Device=")) {
      auto a = small_int(l.substr(7, l.find(' ') - 7));
      auto b = small_int(l.substr(find(l, "Peer Device=") + 12));
      if (a && b && *a != *b) {
        GpuPair& p = pair_of(out, *a, *b);
        if (contains(l, "CANNOT"))
          p.p2p_read = P2PStatus::kNotSupported;
        else if (!p.p2p_read)
          p.p2p_read = P2PStatus::kOk;
      }
      return true;
    }
    if (contains(l, "Matrix") && (contains(l, "P2P=Enabled") || contains(l, "P2P=Disabled"))) {
      const bool enabled = contains(l, "P2P=Enabled");
      latency = contains(l, "Latency");
      if (latency)
        base = std::string("latency p2p ") + (enabled ? "enabled" : "disabled");
      else
        base = std::string(contains(l, "Bidirectional") ? "bidirectional" : "unidirectional") +
               " p2p " + (enabled ? "enabled" : "disabled");
      if (contains(l, "P2P Reads")) base += " (reads)";
      in_rows = false;
      return true;
    }
    if (starts_with(l, "P2P Connectivity Matrix")) {
      base.clear();
      in_rows = false;
      return true;
    }
    auto w = words(l, 4096);
    if (w.size() >= 2 && (w[0] == "D\\D" || w[0] == "GPU" || w[0] == "CPU") && all_ints(w, 1)) {
      columns.clear();
      for (std::size_t i = 1; i < w.size(); ++i) columns.push_back(*small_int(w[i]));
      in_rows = !base.empty();
      test = base;
      if (latency) test += w[0] == "CPU" ? " cpu" : " gpu";
      return true;
    }
    if (in_rows) {
      auto row = w.empty() ? std::nullopt : small_int(w[0]);
      if (!row || w.size() != columns.size() + 1) {
        in_rows = false;
        return true;
      }
      for (std::size_t c = 0; c < columns.size(); ++c) {
        auto v = number(w[c + 1]);
        if (!v) continue;
        Measurement m;
        m.tool = "p2pBandwidthLatencyTest";
        m.test = test;
        m.src_gpu = *row;
        m.dst_gpu = columns[c];
        if (latency)
          m.latency_us = v;
        else
          m.bandwidth_gbps = v;
        add_measurement(out, std::move(m), dropped);
      }
    }
    return true;
  });
  note_dropped(out, "p2pBandwidthLatencyTest", dropped);
  add_matrix_gpus(out, before, pairs_before, "p2pBandwidthLatencyTest");
  if (out.measurements.size() == before && out.pairs.size() == pairs_before) {
    out.notes.push_back("p2pBandwidthLatencyTest: no matrix and no peer-access line");
    return Status::invalid_input("no p2pBandwidthLatencyTest results");
  }
  return Status::ok();
}

// ================================================================== simpleP2P

namespace {

// "(GPU1)" → 1, searching from `from`.
std::optional<int> gpu_tag(std::string_view l, std::size_t& from) {
  std::size_t p = find(l, "(GPU", from);
  if (p == npos) return std::nullopt;
  std::size_t e = l.find(')', p);
  if (e == npos) return std::nullopt;
  from = e;
  return small_int(l.substr(p + 4, e - p - 4));
}

}  // namespace

int sniff_simple_p2p(std::string_view text) {
  std::string_view head = sniff_head(text);
  if (contains(head, "simpleP2P]")) return 100;
  if (contains(head, "cudaMemcpyPeer / cudaMemcpy between GPU")) return 100;
  if (contains(head, "> Peer access from ") && contains(head, "(GPU")) return 80;
  return 0;
}

Status import_simple_p2p(std::string_view text, Facts& out) {
  const std::size_t before = out.measurements.size();
  const std::size_t pairs_before = out.pairs.size();
  std::size_t dropped = 0;
  for_each_line(text, [&](std::string_view raw) {
    std::string_view l = strip_quote(raw);
    if (starts_with(l, "Peer access from ")) {
      std::size_t from = 0;
      auto a = gpu_tag(l, from);
      auto b = gpu_tag(l, from);
      std::size_t colon = l.rfind(':');
      if (a && b && *a != *b && colon != npos) {
        std::string_view answer = trim(l.substr(colon + 1));
        GpuPair& p = pair_of(out, *a, *b);
        if (answer == "No")
          p.p2p_read = P2PStatus::kNotSupported;
        else if (answer == "Yes" && !p.p2p_read)
          p.p2p_read = P2PStatus::kOk;
      }
      return true;
    }
    if (starts_with(l, "cudaMemcpyPeer / cudaMemcpy between GPU")) {
      // "… between GPU0 and GPU1: 236.01GB/s"
      std::size_t g0 = find(l, "between GPU") + 11;
      std::size_t and_pos = find(l, " and GPU", g0);
      std::size_t colon = and_pos == npos ? npos : l.find(':', and_pos);
      if (colon == npos) return true;
      auto a = small_int(l.substr(g0, and_pos - g0));
      auto b = small_int(l.substr(and_pos + 8, colon - and_pos - 8));
      std::string_view value = trim(l.substr(colon + 1));
      double scale = 1;
      if (value.size() > 4 && value.substr(value.size() - 4) == "GB/s") {
        value.remove_suffix(4);
      } else if (value.size() > 4 && value.substr(value.size() - 4) == "MB/s") {
        value.remove_suffix(4);
        scale = 1e-3;
      }
      if (auto v = number(value)) {
        Measurement m;
        m.tool = "simpleP2P";
        m.test = "cudaMemcpyPeer";
        m.src_gpu = a;
        m.dst_gpu = b;
        m.bandwidth_gbps = *v * scale;
        add_measurement(out, std::move(m), dropped);
      }
      return true;
    }
    if (contains(l, "Peer-to-Peer access capability are required") || contains(l, "waived")) {
      out.notes.push_back("simpleP2P: " + clean(l));
    }
    return true;
  });
  if (out.measurements.size() == before && out.pairs.size() == pairs_before) {
    out.notes.push_back("simpleP2P: no peer-access line and no cudaMemcpyPeer figure");
    return Status::invalid_input("no simpleP2P results");
  }
  return Status::ok();
}

}  // namespace gpuvet::import
