#include "import/nvsmi_topo.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/text_scan.h"
#include "core/util.h"

namespace gpuvet::import {
namespace {

constexpr std::size_t npos = std::string_view::npos;
// Bounds that keep garbage from costing more than a real machine would: 1024 GPUs (far more
// than a node has) and some NICs make the widest matrix row nvidia-smi could print.
constexpr int kMaxGpuIndex = 1023;
constexpr int kMaxLinkIndex = 255;
constexpr std::size_t kMaxColumns = 1024 + 64;
constexpr std::size_t kMaxNotes = 64;
constexpr std::size_t kMaxQuoted = 80;  // input text quoted in a note
// Sniffing looks at the start of the text only.
constexpr std::size_t kSniffLines = 300;
constexpr std::size_t kSniffBytes = 128u << 10;

// ------------------------------------------------------------------ text helpers

using text_scan::contains;
using text_scan::LineReader;
using text_scan::Word;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// nvidia-smi underlines the header row with ESC[4m … ESC[0m on a terminal; a captured
// file keeps them. Drops CSI sequences and lone ESC bytes; `buf` owns the result.
std::string_view strip_ansi(std::string_view line, std::string& buf) {
  if (line.find('\x1b') == npos) return line;
  buf.clear();
  for (std::size_t i = 0; i < line.size();) {
    if (line[i] != '\x1b') {
      buf.push_back(line[i++]);
      continue;
    }
    ++i;
    if (i < line.size() && line[i] == '[') {
      ++i;
      while (i < line.size() && !(line[i] >= 0x40 && line[i] <= 0x7e)) ++i;
      if (i < line.size()) ++i;
    }
  }
  return buf;
}

// Tab-separated cells, each trimmed; empty cells kept (they carry meaning in topo -m).
void split_tabs(std::string_view line, std::vector<std::string_view>& out, std::size_t max_cells) {
  out.clear();
  std::size_t start = 0;
  while (out.size() < max_cells) {
    const std::size_t tab = line.find('\t', start);
    out.push_back(trim(line.substr(start, tab == npos ? npos : tab - start)));
    if (tab == npos) break;
    start = tab + 1;
  }
}

// Input text safe to put in a note: clipped, control bytes replaced.
std::string shown_quoted(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, kMaxQuoted)) {
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u < 0x20 || u == 0x7f ? '?' : c);
  }
  if (s.size() > kMaxQuoted) out += "…";
  return out;
}

void add_note(Facts& out, std::string note) {
  if (out.notes.size() < kMaxNotes) out.notes.push_back(std::move(note));
}

// "GPU3" → 3.
std::optional<int> gpu_label(std::string_view w) {
  if (!starts_with(w, "GPU") || w.size() < 4 || w.size() > 7) return std::nullopt;
  int v = 0;
  for (char c : w.substr(3)) {
    if (!is_digit(c)) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v > kMaxGpuIndex) return std::nullopt;
  return v;
}

// "GPU1024" and above: a GPU label past the bound, said in a note rather than read as a NIC.
bool gpu_label_past_bound(std::string_view w) {
  if (!starts_with(w, "GPU") || w.size() < 4 || w.size() > 10) return false;
  for (char c : w.substr(3))
    if (!is_digit(c)) return false;
  return !gpu_label(w);
}

std::string past_bound_note(std::string_view what, std::size_t n) {
  return fmt::format(
      "{}: {} GPU column(s) past GPU{} not read: gpuvet reads the first {} GPUs of a matrix", what,
      n, kMaxGpuIndex, kMaxGpuIndex + 1);
}

// Small bounded decimal (up to 6 digits) of a whole token.
std::optional<int> small_int(std::string_view s) {
  s = trim(s);
  if (s.empty() || s.size() > 6) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (!is_digit(c)) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// Finds or adds the GPU of an index; the map keeps lookups cheap on big garbage.
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
  std::size_t size() const { return pos_.size(); }

 private:
  Facts& facts_;
  std::map<int, std::size_t> pos_;
};

void sort_gpus(Facts& out) {
  std::stable_sort(out.gpus.begin(), out.gpus.end(),
                   [](const GpuFacts& a, const GpuFacts& b) { return a.index < b.index; });
}

template <typename Container>
std::string gpu_list(const Container& gpus) {
  std::string s;
  std::size_t n = 0;
  for (int g : gpus) {
    if (++n > 32) return s + ", …";
    if (!s.empty()) s += ", ";
    s += "GPU" + std::to_string(g);
  }
  return s;
}

// ------------------------------------------------------------------ topo -m

struct PathCell {
  PathType type = PathType::kUnknown;
  std::optional<int> nvlinks;
};

// A topo -m cell: X, NV#, PIX, PXB, PHB, NODE, SYS, and SOC (drivers before ~384 named
// SYS that way). Empty when the cell is none of them.
std::optional<PathCell> parse_path(std::string_view c) {
  if (c == "X") return PathCell{PathType::kSelf, std::nullopt};
  if (c == "PIX") return PathCell{PathType::kPIX, std::nullopt};
  if (c == "PXB") return PathCell{PathType::kPXB, std::nullopt};
  if (c == "PHB") return PathCell{PathType::kPHB, std::nullopt};
  if (c == "NODE") return PathCell{PathType::kNODE, std::nullopt};
  if (c == "SYS" || c == "SOC") return PathCell{PathType::kSYS, std::nullopt};
  if (starts_with(c, "NV") && c.size() > 2) {
    auto n = small_int(c.substr(2));
    if (n && *n > 0 && *n < 1000) return PathCell{PathType::kNVLink, *n};
  }
  return std::nullopt;
}

// A topo -p2p cell. kSelf is reported as nullopt status with self = true.
struct P2PCell {
  bool self = false;
  P2PStatus status = P2PStatus::kUnknown;
};

std::optional<P2PCell> parse_p2p(std::string_view c) {
  if (c == "X") return P2PCell{true, P2PStatus::kUnknown};
  if (c == "OK") return P2PCell{false, P2PStatus::kOk};
  if (c == "CNS") return P2PCell{false, P2PStatus::kChipsetNotSupported};
  if (c == "GNS") return P2PCell{false, P2PStatus::kGpuNotSupported};
  if (c == "TNS") return P2PCell{false, P2PStatus::kTopologyNotSupported};
  if (c == "NS") return P2PCell{false, P2PStatus::kNotSupported};
  if (c == "DR") return P2PCell{false, P2PStatus::kDisabledByRegkey};
  if (c == "U") return P2PCell{false, P2PStatus::kUnknown};
  return std::nullopt;
}

// The column-header line of either matrix: it starts with GPU0 (after leading blanks),
// and unlike the GPU0 row its next word is not the "X" of the diagonal.
bool is_matrix_header(const std::vector<Word>& words) {
  return !words.empty() && words[0].text == "GPU0" && (words.size() == 1 || words[1].text != "X");
}

enum class Trail { kCpuAffinity, kNumaAffinity, kGpuNumaId };

struct TrailColumn {
  Trail kind;
  std::size_t offset;
};

struct TopoColumn {
  std::string name;         // "GPU3", "NIC0", "mlx5_2"
  std::optional<int> gpu;   // set for GPU columns
  bool past_bound = false;  // a GPU past kMaxGpuIndex: neither read nor taken for a NIC
};

struct TopoHeader {
  bool tabs = false;  // tab-separated (as printed) rather than space-aligned (terminal copy)
  std::vector<TopoColumn> columns;
  std::vector<TrailColumn> trailing;
};

TopoHeader parse_topo_header(std::string_view line, const std::vector<Word>& w) {
  TopoHeader h;
  h.tabs = contains(line, "\t");
  for (std::size_t i = 0; i < w.size();) {
    auto is = [&](std::size_t k, std::string_view s) {
      return i + k < w.size() && w[i + k].text == s;
    };
    if (is(0, "CPU") && is(1, "Affinity")) {
      h.trailing.push_back({Trail::kCpuAffinity, w[i].offset});
      i += 2;
    } else if (is(0, "NUMA") && is(1, "Affinity")) {
      h.trailing.push_back({Trail::kNumaAffinity, w[i].offset});
      i += 2;
    } else if (is(0, "GPU") && is(1, "NUMA") && is(2, "ID")) {
      h.trailing.push_back({Trail::kGpuNumaId, w[i].offset});
      i += 3;
    } else {
      if (h.trailing.empty() && h.columns.size() < kMaxColumns)
        h.columns.push_back(
            {std::string(w[i].text), gpu_label(w[i].text), gpu_label_past_bound(w[i].text)});
      ++i;
    }
  }
  return h;
}

// "NIC0: mlx5_0" of the NIC Legend.
std::optional<std::pair<std::string, std::string>> nic_legend_entry(std::string_view t) {
  if (!starts_with(t, "NIC")) return std::nullopt;
  const std::size_t colon = t.find(':');
  if (colon == npos || colon <= 3 || colon > 8) return std::nullopt;
  for (char c : t.substr(3, colon - 3))
    if (!is_digit(c)) return std::nullopt;
  std::string_view name = trim(t.substr(colon + 1));
  if (name.empty() || name.size() > 64 || contains(name, " ") || contains(name, "\t"))
    return std::nullopt;
  return std::make_pair(std::string(t.substr(0, colon)), std::string(name));
}

struct TopoState {
  std::map<std::pair<int, int>, GpuPair> pairs;
  std::set<std::pair<int, int>> asymmetric;
  std::map<std::string, int> nic_ordinal;             // first-appearance order of NIC names
  std::map<std::pair<int, int>, PathType> nic_paths;  // (nic ordinal, gpu) → path
  std::vector<std::string> nic_names;                 // by ordinal
  std::map<std::string, std::string> nic_legend;      // "NIC0" → "mlx5_0"
  std::set<int> empty_cpu_affinity;
  std::map<std::string, std::set<int>> bad_cpu_affinity;  // quoted cell → GPUs
  std::set<int> rows_in_matrix;                           // GPU rows seen under the current header
  std::size_t duplicate_rows = 0;
  // CPU ids left to expand from affinity lists: garbage full of "0-65535" cells must not
  // cost more than a real node (1024 GPUs x 2048 CPUs) would.
  std::size_t cpu_id_budget = 1u << 21;
  std::set<std::string> unknown_cells;
  std::size_t gpu_rows = 0;
  std::size_t nic_rows = 0;
  std::size_t gpus_past_bound = 0;  // in the widest header
};

int nic_id(TopoState& st, std::string_view name) {
  auto [it, inserted] = st.nic_ordinal.try_emplace(std::string(name), st.nic_names.size());
  if (inserted) st.nic_names.emplace_back(name);
  return it->second;
}

void record_pair(TopoState& st, Facts& out, int i, int k, const PathCell& pc) {
  const auto key = std::make_pair(std::min(i, k), std::max(i, k));
  auto [it, inserted] = st.pairs.try_emplace(key);
  GpuPair& p = it->second;
  if (inserted) {
    p.a = key.first;
    p.b = key.second;
    p.path = pc.type;
    p.nvlinks = pc.nvlinks;
    return;
  }
  if ((p.path != pc.type || p.nvlinks != pc.nvlinks) && st.asymmetric.insert(key).second)
    add_note(out, "topo -m: GPU" + std::to_string(key.first) + "/GPU" + std::to_string(key.second) +
                      " path differs by direction; kept GPU" + std::to_string(key.first) +
                      "'s row (" + path_type_name(p.path) + ")");
}

void apply_trailing(Facts& out, GpuFacts& g, TopoState& st,
                    const std::vector<std::pair<Trail, std::string_view>>& values) {
  std::optional<int> gpu_numa_id;
  for (const auto& [kind, raw] : values) {
    const std::string_view v = trim(raw);
    switch (kind) {
      case Trail::kCpuAffinity:
        if (v.empty() || v == "N/A") {
          st.empty_cpu_affinity.insert(g.index);
        } else if (st.cpu_id_budget == 0) {
          break;
        } else if (auto cpus = parse_cpu_list(v)) {
          st.cpu_id_budget -= std::min(st.cpu_id_budget, cpus->size() + 1);
          g.cpu_affinity = *cpus;
        } else if (st.bad_cpu_affinity.size() < 16 || st.bad_cpu_affinity.count(shown_quoted(v))) {
          st.bad_cpu_affinity[shown_quoted(v)].insert(g.index);
        }
        break;
      case Trail::kNumaAffinity:
        if (auto n = small_int(v)) g.numa_node = *n;
        break;
      case Trail::kGpuNumaId:
        if (auto n = small_int(v)) gpu_numa_id = *n;
        break;
    }
  }
  if (!g.numa_node && gpu_numa_id) {
    g.numa_node = *gpu_numa_id;
    add_note(out, "topo -m: GPU" + std::to_string(g.index) +
                      " NUMA node taken from the GPU NUMA ID column (NUMA Affinity not given)");
  }
}

// Maps the cells after the matrix to the trailing header columns.
std::vector<std::pair<Trail, std::string_view>> trailing_values(
    const TopoHeader& h, const std::vector<std::string_view>& tab_rest,
    const std::vector<Word>& word_rest) {
  std::vector<std::pair<Trail, std::string_view>> values;
  const std::size_t t = h.trailing.size();
  if (t == 0) return values;
  if (h.tabs) {
    // nvidia-smi prints an empty cell before "GPU NUMA ID" (and older ones an "N/A" after
    // an empty NUMA Affinity): with more cells than columns the last column takes the last
    // non-empty cell.
    if (tab_rest.size() <= t) {
      for (std::size_t k = 0; k < tab_rest.size(); ++k)
        values.emplace_back(h.trailing[k].kind, tab_rest[k]);
    } else {
      for (std::size_t k = 0; k + 1 < t; ++k) values.emplace_back(h.trailing[k].kind, tab_rest[k]);
      std::string_view last;
      for (std::size_t k = t - 1; k < tab_rest.size(); ++k)
        if (!tab_rest[k].empty()) last = tab_rest[k];
      values.emplace_back(h.trailing[t - 1].kind, last);
    }
    return values;
  }
  // Space-aligned: a cell belongs to the column whose header starts at (or just before)
  // it; when that is ambiguous, cells are taken in order.
  std::vector<int> col(word_rest.size(), -1);
  std::set<int> used;
  bool by_offset = true;
  for (std::size_t i = 0; i < word_rest.size() && by_offset; ++i) {
    for (std::size_t k = 0; k < t; ++k)
      if (h.trailing[k].offset <= word_rest[i].offset + 2) col[i] = static_cast<int>(k);
    if (col[i] < 0 || !used.insert(col[i]).second) by_offset = false;
  }
  for (std::size_t i = 0; i < word_rest.size(); ++i) {
    const std::size_t k = by_offset ? static_cast<std::size_t>(col[i]) : i;
    if (k < t) values.emplace_back(h.trailing[k].kind, word_rest[i].text);
  }
  return values;
}

}  // namespace

// ------------------------------------------------------------------ topo -m: sniff

int sniff_topo_m(std::string_view text) {
  LineReader lines(text, kSniffBytes);
  std::string buf;
  std::vector<Word> w;
  bool header = false, header_affinity = false, legend = false, p2p = false;
  int path_rows = 0, real_paths = 0;
  std::string_view line;
  for (std::size_t n = 0; n < kSniffLines && lines.next(line); ++n) {
    line = strip_ansi(line, buf);
    text_scan::words(line, kMaxColumns + 8, w);
    if (w.empty()) continue;
    if (contains(line, "Connection traversing")) legend = true;
    if (contains(line, "= Status Ok") || contains(line, "Chipset not supported")) p2p = true;
    if (is_matrix_header(w)) {
      header = true;
      if (contains(line, "Affinity")) header_affinity = true;
      continue;
    }
    if (!gpu_label(w[0].text) || w.size() < 2) continue;
    bool row_paths = false;
    for (std::size_t i = 1; i < w.size(); ++i) {
      if (w[i].text != "X" && parse_p2p(w[i].text)) p2p = true;
      if (auto pc = parse_path(w[i].text)) {
        row_paths = true;
        if (pc->type != PathType::kSelf) ++real_paths;
      }
    }
    if (row_paths) ++path_rows;
  }
  if (p2p) return 0;
  int score = 0;
  if (header && path_rows > 0 && (header_affinity || real_paths > 0))
    score = header_affinity ? 70 : 55;
  else if (!header && path_rows >= 2 && real_paths > 0 && legend)
    score = 40;  // header lost in a copy
  // A real topo -m always ends with its Legend; without it the matrix may be a copy inside
  // another report (gpuvet's own text report prints one).
  if (score > 0 && legend) score += 25;
  return std::min(score, 100);
}

// ------------------------------------------------------------------ topo -m: import

Status import_topo_m(std::string_view text, Facts& out) {
  LineReader lines(text);
  GpuTable gpus(out);
  TopoState st;
  std::optional<TopoHeader> header;
  std::string buf;
  std::vector<Word> w;
  std::vector<std::string_view> cells;
  bool in_legend = false;
  std::string_view line;
  while (lines.next(line)) {
    line = strip_ansi(line, buf);
    const std::string_view t = trim(line);
    if (t.empty()) continue;
    if (auto e = nic_legend_entry(t)) {
      st.nic_legend[e->first] = e->second;
      continue;
    }
    if (starts_with(t, "Legend") || starts_with(t, "NIC Legend")) {
      in_legend = true;
      continue;
    }
    text_scan::words(line, kMaxColumns + 8, w);
    if (is_matrix_header(w)) {
      header = parse_topo_header(line, w);
      in_legend = false;
      st.rows_in_matrix.clear();
      std::size_t past = 0;
      for (const auto& c : header->columns) {
        if (c.gpu)
          gpus.at(*c.gpu);
        else if (c.past_bound)
          ++past;
        else
          nic_id(st, c.name);
      }
      st.gpus_past_bound = std::max(st.gpus_past_bound, past);
      continue;
    }
    if (!header || in_legend || w.size() < 2 || w[1].text == "=") continue;
    const std::size_t ncol = header->columns.size();
    // The cells after the row label, and the trailing ones (affinity columns).
    std::vector<std::string_view> tab_rest;
    std::vector<Word> word_rest;
    std::vector<std::string_view> matrix;
    if (header->tabs && contains(line, "\t")) {
      split_tabs(line, cells, ncol + 16);
      for (std::size_t i = 1; i < cells.size(); ++i)
        (i - 1 < ncol ? matrix : tab_rest).push_back(cells[i]);
    } else {
      for (std::size_t i = 1; i < w.size(); ++i) {
        if (i - 1 < ncol)
          matrix.push_back(w[i].text);
        else
          word_rest.push_back(w[i]);
      }
    }
    const std::string_view label = w[0].text;
    if (gpu_label_past_bound(label)) continue;  // said with its column
    if (auto gi = gpu_label(label)) {
      if (!st.rows_in_matrix.insert(*gi).second) {
        ++st.duplicate_rows;
        continue;
      }
      GpuFacts& g = gpus.at(*gi);
      ++st.gpu_rows;
      for (std::size_t j = 0; j < matrix.size(); ++j) {
        auto pc = parse_path(matrix[j]);
        if (!pc) {
          if (!matrix[j].empty() && st.unknown_cells.size() < 8)
            st.unknown_cells.insert(shown_quoted(matrix[j]));
          continue;
        }
        const TopoColumn& col = header->columns[j];
        if (col.gpu) {
          if (*col.gpu != *gi && pc->type != PathType::kSelf)
            record_pair(st, out, *gi, *col.gpu, *pc);
        } else if (pc->type != PathType::kSelf && !col.past_bound) {
          st.nic_paths[{nic_id(st, col.name), *gi}] = pc->type;
        }
      }
      apply_trailing(out, g, st, trailing_values(*header, tab_rest, word_rest));
      continue;
    }
    // A NIC row ("NIC0", "mlx5_0"): its cells under GPU columns give the NIC's path to each
    // GPU, which matters when the GPU rows carry no NIC columns (clipped copies).
    if (matrix.empty() || !parse_path(matrix[0]) || contains(label, "=") || contains(label, ":"))
      continue;
    ++st.nic_rows;
    const int nic = nic_id(st, label);
    for (std::size_t j = 0; j < matrix.size(); ++j) {
      const TopoColumn& col = header->columns[j];
      auto pc = parse_path(matrix[j]);
      if (!col.gpu || !pc || pc->type == PathType::kSelf) continue;
      st.nic_paths.try_emplace({nic, *col.gpu}, pc->type);
    }
  }

  if (st.gpu_rows == 0) {
    add_note(out, header ? "topo -m: matrix header without any GPU row (truncated?)"
                         : "topo -m: no matrix header (\"GPU0 GPU1 … CPU Affinity\") found");
    sort_gpus(out);
    return Status::invalid_input("topo -m: no GPU rows");
  }
  for (auto& [key, pair] : st.pairs) out.pairs.push_back(pair);
  for (const auto& [key, path] : st.nic_paths) {
    const std::string& raw = st.nic_names[static_cast<std::size_t>(key.first)];
    auto it = st.nic_legend.find(raw);
    out.nic_paths.push_back({it != st.nic_legend.end() ? it->second : raw, key.second, path});
  }
  bool nic_without_legend = false;
  for (const auto& name : st.nic_names)
    if (gpu_label(name) == std::nullopt && starts_with(name, "NIC") && !st.nic_legend.count(name))
      nic_without_legend = true;
  if (nic_without_legend) add_note(out, "topo -m: NIC Legend missing; NICs keep their NICn names");
  if (!st.empty_cpu_affinity.empty())
    add_note(out, "topo -m: CPU Affinity empty for " + gpu_list(st.empty_cpu_affinity) +
                      " (cpuset-restricted job, VM or Windows): affinity unknown");
  for (const auto& [cellv, list] : st.bad_cpu_affinity)
    add_note(out, "topo -m: CPU Affinity \"" + cellv + "\" of " + gpu_list(list) +
                      " is not a CPU list (clipped copy?); left unknown");
  if (st.duplicate_rows > 0)
    add_note(out, "topo -m: " + std::to_string(st.duplicate_rows) +
                      " repeated GPU rows of one matrix ignored (first kept)");
  if (st.cpu_id_budget == 0)
    add_note(out, "topo -m: CPU Affinity lists too large to expand; the rest left unknown");
  if (st.gpus_past_bound > 0) add_note(out, past_bound_note("topo -m", st.gpus_past_bound));
  if (!st.unknown_cells.empty()) {
    std::string s;
    for (const auto& c : st.unknown_cells) s += (s.empty() ? "" : ", ") + c;
    add_note(out, "topo -m: unrecognised matrix cells ignored: " + s);
  }
  sort_gpus(out);
  return Status::ok();
}

// ------------------------------------------------------------------ topo -p2p

namespace {

struct P2PCapabilities {
  bool read = false, write = false, nvlink = false, atomics = false, prop = false;
  bool any() const { return read || write || nvlink || atomics || prop; }
};

// The capability letters after "-p2p" on a command line kept in the text.
void capabilities_from_command(std::string_view line, P2PCapabilities& caps) {
  const std::size_t at = line.find("-p2p");
  if (at == npos) return;
  std::size_t i = at + 4;
  while (i < line.size() && text_scan::is_blank(line[i])) ++i;
  for (; i < line.size() && !text_scan::is_blank(line[i]); ++i) {
    switch (line[i]) {
      case 'r':
        caps.read = true;
        break;
      case 'w':
        caps.write = true;
        break;
      case 'n':
        caps.nvlink = true;
        break;
      case 'a':
        caps.atomics = true;
        break;
      case 'p':
        caps.prop = true;
        break;
      default:
        break;
    }
  }
}

// A title line ("P2P Read", "NVLink P2P", …) some wrappers print above the matrix.
void capabilities_from_title(std::string_view line, P2PCapabilities& caps) {
  const std::string l = to_lower(line.substr(0, 200));
  if (!contains(l, "p2p")) return;
  if (contains(l, "read")) caps.read = true;
  if (contains(l, "write")) caps.write = true;
  if (contains(l, "atomic")) caps.atomics = true;
  if (contains(l, "nvlink")) caps.nvlink = true;
}

void set_capability(GpuPair& p, const P2PCapabilities& caps, P2PStatus s) {
  if (caps.read) p.p2p_read = s;
  if (caps.write) p.p2p_write = s;
  if (caps.nvlink) p.p2p_nvlink = s;
  if (caps.atomics) p.p2p_atomics = s;
  if (caps.prop) p.p2p_pcie = s;
}

// The status already set for the first capability the matrix stands for.
P2PStatus first_capability(const GpuPair& p, const P2PCapabilities& caps) {
  return caps.read      ? *p.p2p_read
         : caps.write   ? *p.p2p_write
         : caps.nvlink  ? *p.p2p_nvlink
         : caps.atomics ? *p.p2p_atomics
                        : *p.p2p_pcie;
}

}  // namespace

int sniff_topo_p2p(std::string_view text) {
  LineReader lines(text, kSniffBytes);
  std::string buf;
  std::vector<Word> w;
  bool header = false, legend = false, topo_like = false;
  int p2p_rows = 0, self_rows = 0;
  std::string_view line;
  for (std::size_t n = 0; n < kSniffLines && lines.next(line); ++n) {
    line = strip_ansi(line, buf);
    text_scan::words(line, kMaxColumns + 8, w);
    if (w.empty()) continue;
    if (contains(line, "= Status Ok") || contains(line, "Chipset not supported")) legend = true;
    if (contains(line, "Connection traversing")) topo_like = true;
    if (is_matrix_header(w)) {
      header = true;
      if (contains(line, "Affinity")) topo_like = true;
      continue;
    }
    if (!gpu_label(w[0].text) || w.size() < 2) continue;
    bool row_p2p = false, row_self = false, row_bad = false;
    for (std::size_t i = 1; i < w.size(); ++i) {
      auto c = parse_p2p(w[i].text);
      if (!c) {
        row_bad = true;
        if (parse_path(w[i].text)) topo_like = true;
      } else if (c->self) {
        row_self = true;
      } else {
        row_p2p = true;
      }
    }
    if (row_bad) continue;
    if (row_p2p) ++p2p_rows;
    if (row_self) ++self_rows;
  }
  if (topo_like || !header) return 0;
  int score = 0;
  if (p2p_rows > 0)
    score = 70;
  else if (self_rows > 0 && legend)
    score = 50;  // one GPU: only "X"
  if (score > 0 && legend) score += 25;
  return std::min(score, 100);
}

Status import_topo_p2p(std::string_view text, Facts& out) {
  LineReader lines(text);
  GpuTable gpus(out);
  std::string buf;
  std::vector<Word> w;
  P2PCapabilities caps;
  std::vector<std::optional<int>> columns;
  bool header = false;
  std::map<std::pair<int, int>, P2PStatus> dir;  // (row, column) → status
  std::set<std::string> unknown_cells;
  std::size_t rows = 0;
  std::size_t gpus_past_bound = 0;
  std::string_view line;
  while (lines.next(line)) {
    line = strip_ansi(line, buf);
    text_scan::words(line, kMaxColumns + 8, w);
    if (w.empty()) continue;
    if (contains(line, "-p2p")) capabilities_from_command(line, caps);
    if (is_matrix_header(w)) {
      header = true;
      columns.clear();
      std::size_t past = 0;
      for (const auto& x : w) {
        if (columns.size() < kMaxColumns) columns.push_back(gpu_label(x.text));
        past += gpu_label_past_bound(x.text);
      }
      gpus_past_bound = std::max(gpus_past_bound, past);
      for (const auto& c : columns)
        if (c) gpus.at(*c);
      continue;
    }
    auto gi = gpu_label(w[0].text);
    if (!header) {
      capabilities_from_title(line, caps);
      continue;
    }
    if (!gi) continue;
    ++rows;
    gpus.at(*gi);
    for (std::size_t j = 1; j < w.size() && j - 1 < columns.size(); ++j) {
      auto c = parse_p2p(w[j].text);
      if (!c) {
        if (unknown_cells.size() < 8) unknown_cells.insert(shown_quoted(w[j].text));
        continue;
      }
      const auto& col = columns[j - 1];
      if (c->self || !col || *col == *gi) continue;
      dir[{*gi, *col}] = c->status;
    }
  }
  if (rows == 0) {
    add_note(out, header ? "topo -p2p: matrix header without any GPU row (truncated?)"
                         : "topo -p2p: no matrix header (\"GPU0 GPU1 …\") found");
    sort_gpus(out);
    return Status::invalid_input("topo -p2p: no GPU rows");
  }
  if (!caps.any()) {
    caps.read = true;
    add_note(out,
             "topo -p2p: the capability (r/w/n/a/p) is not stated in the text; the matrix is "
             "taken as P2P read (nvidia-smi topo -p2p r)");
  }
  std::map<std::pair<int, int>, GpuPair> pairs;
  for (const auto& [key, status] : dir) {
    const auto k = std::make_pair(std::min(key.first, key.second), std::max(key.first, key.second));
    auto [it, inserted] = pairs.try_emplace(k);
    GpuPair& p = it->second;
    p.a = k.first;
    p.b = k.second;
    if (inserted) {
      set_capability(p, caps, status);
      continue;
    }
    // The other direction, already set: a pair is as capable as its weaker direction.
    const P2PStatus first = first_capability(p, caps);
    if (first != status) {
      add_note(out, "topo -p2p: GPU" + std::to_string(k.first) + "/GPU" + std::to_string(k.second) +
                        " differs by direction (" + p2p_status_code(first) + " vs " +
                        p2p_status_code(status) + "); kept the one that is not OK");
      if (first == P2PStatus::kOk) set_capability(p, caps, status);
    }
  }
  for (auto& [k, p] : pairs) out.pairs.push_back(p);
  if (gpus_past_bound > 0) add_note(out, past_bound_note("topo -p2p", gpus_past_bound));
  if (!unknown_cells.empty()) {
    std::string s;
    for (const auto& c : unknown_cells) s += (s.empty() ? "" : ", ") + c;
    add_note(out, "topo -p2p: unrecognised matrix cells ignored: " + s);
  }
  sort_gpus(out);
  return Status::ok();
}

// ------------------------------------------------------------------ nvlink -s / -R, dcgmi

namespace {

constexpr std::string_view kNoNvlink = "Device does not have or support Nvlink";
constexpr std::string_view kAllInactive = "all links are inActive";
constexpr std::string_view kDcgmTitle = "NvLink Link Status";

// "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-…)" → index, name, uuid.
struct GpuHeading {
  int index = 0;
  std::optional<std::string> name;
  std::optional<std::string> uuid;
};

std::optional<GpuHeading> parse_gpu_heading(std::string_view t) {
  if (!starts_with(t, "GPU ")) return std::nullopt;
  std::size_t i = 4;
  std::size_t start = i;
  while (i < t.size() && is_digit(t[i]) && i - start < 5) ++i;
  if (i == start || i >= t.size() || t[i] != ':') return std::nullopt;
  auto idx = small_int(t.substr(start, i - start));
  if (!idx || *idx > kMaxGpuIndex) return std::nullopt;
  GpuHeading h;
  h.index = *idx;
  std::string_view rest = trim(t.substr(i + 1));
  const std::size_t u = rest.find("(UUID:");
  std::string_view name = trim(u == npos ? rest : rest.substr(0, u));
  if (!name.empty() && name.size() <= 128) h.name = std::string(name);
  if (u != npos) {
    std::string_view uuid = rest.substr(u + 6);
    const std::size_t close = uuid.find(')');
    uuid = trim(close == npos ? uuid : uuid.substr(0, close));
    if (!uuid.empty() && uuid.size() <= 128) h.uuid = std::string(uuid);
  }
  return h;
}

enum class LinkKind { kSpeed, kInactive, kRemote, kOther };

struct LinkLine {
  int link = 0;
  LinkKind kind = LinkKind::kOther;
  std::optional<double> speed_gbps;
  std::optional<std::string> remote_bus_id;
};

// "Link 3: 26.562 GB/s", "Link 4: <inactive>", "Link 0: Remote Device 00000000:D5:00.0: Link 0".
// -c ("Link 0, P2P is supported: true") is not a link line; -gt/-e counters are kOther.
std::optional<LinkLine> parse_link_line(std::string_view t) {
  if (!starts_with(t, "Link ")) return std::nullopt;
  std::size_t i = 5;
  const std::size_t start = i;
  while (i < t.size() && is_digit(t[i]) && i - start < 4) ++i;
  if (i == start || i >= t.size() || t[i] != ':') return std::nullopt;
  auto n = small_int(t.substr(start, i - start));
  if (!n || *n > kMaxLinkIndex) return std::nullopt;
  LinkLine l;
  l.link = *n;
  const std::string_view v = trim(t.substr(i + 1));
  if (v == "<inactive>") {
    l.kind = LinkKind::kInactive;
  } else if (v.size() > 4 && v.substr(v.size() - 4) == "GB/s") {
    if (auto s = parse_double(v.substr(0, v.size() - 4)); s && *s >= 0 && *s < 1e6) {
      l.kind = LinkKind::kSpeed;
      l.speed_gbps = *s;
    }
  } else if (starts_with(v, "Remote Device ")) {
    std::string_view bus = v.substr(14);
    const std::size_t end = bus.find(": Link");
    bus = trim(end == npos ? bus : bus.substr(0, end));
    if (auto norm = normalize_pci_bus_id(bus)) {
      l.kind = LinkKind::kRemote;
      l.remote_bus_id = *norm;
    }
  }
  return l;
}

NvLink& link_at(GpuFacts& g, int link) {
  for (auto& l : g.nvlinks)
    if (l.link == link) return l;
  g.nvlinks.emplace_back();
  g.nvlinks.back().link = link;
  return g.nvlinks.back();
}

// "gpuId 3:" of dcgmi nvlink -s.
std::optional<int> dcgm_gpu_id(std::string_view t) {
  if (!starts_with(t, "gpuId ") || t.empty() || t.back() != ':') return std::nullopt;
  auto n = small_int(t.substr(6, t.size() - 7));
  if (!n || *n > kMaxGpuIndex) return std::nullopt;
  return n;
}

// "U U D X _ …": the link-state grid under a dcgmi gpuId line.
bool is_dcgm_grid(const std::vector<Word>& w) {
  if (w.empty()) return false;
  for (const auto& x : w)
    if (x.text != "U" && x.text != "D" && x.text != "X" && x.text != "_") return false;
  return true;
}

}  // namespace

int sniff_nvlink_status(std::string_view text) {
  LineReader lines(text, kSniffBytes);
  int headings = 0, status_lines = 0, negatives = 0, dcgm = 0;
  bool dcgm_title = false;
  bool pending_dcgm = false;
  std::vector<Word> w;
  std::string_view line;
  for (std::size_t n = 0; n < kSniffLines && lines.next(line); ++n) {
    const std::string_view t = trim(line);
    if (t.empty()) continue;
    if (contains(t, kDcgmTitle)) dcgm_title = true;
    if (pending_dcgm) {
      text_scan::words(t, 300, w);
      if (is_dcgm_grid(w)) ++dcgm;
      pending_dcgm = false;
    }
    if (dcgm_gpu_id(t)) pending_dcgm = true;
    if (parse_gpu_heading(t)) ++headings;
    if (contains(t, kNoNvlink) || contains(t, kAllInactive)) ++negatives;
    if (auto l = parse_link_line(t); l && l->kind != LinkKind::kOther) ++status_lines;
  }
  if (status_lines > 0 && headings > 0) return 95;
  if (negatives > 0 && headings > 0) return 90;
  if (dcgm > 0) return dcgm_title ? 95 : 60;
  if (status_lines >= 2) return 50;  // headings lost in a copy
  return 0;
}

Status import_nvlink_status(std::string_view text, Facts& out) {
  LineReader lines(text);
  GpuTable gpus(out);
  std::optional<int> current;       // nvidia-smi "GPU n:" section
  std::optional<int> dcgm_current;  // dcgmi "gpuId n:" awaiting its grid
  std::size_t link_facts = 0, orphan_links = 0, counter_lines = 0;
  bool elided = false, dcgm = false;
  std::set<int> no_nvlink, all_inactive;
  std::vector<Word> w;
  std::string_view line;
  while (lines.next(line)) {
    const std::string_view t = trim(line);
    if (t.empty()) continue;
    if (dcgm_current) {
      text_scan::words(t, kMaxLinkIndex + 1, w);
      const int gi = *dcgm_current;
      dcgm_current.reset();
      if (is_dcgm_grid(w)) {
        dcgm = true;
        GpuFacts& g = gpus.at(gi);
        for (std::size_t k = 0; k < w.size(); ++k) {
          if (w[k].text == "_") continue;  // link not supported: not a link
          link_at(g, static_cast<int>(k)).active = w[k].text == "U";
          ++link_facts;
        }
        continue;
      }
    }
    if (auto id = dcgm_gpu_id(t)) {
      dcgm_current = *id;
      continue;
    }
    if (auto h = parse_gpu_heading(t)) {
      GpuFacts& g = gpus.at(h->index);
      if (h->name && !g.name) g.name = h->name;
      if (h->uuid && !g.uuid) g.uuid = h->uuid;
      current = h->index;
      continue;
    }
    if (t == "..." || t == "…") {
      elided = true;
      continue;
    }
    if (contains(t, kNoNvlink)) {
      if (current) no_nvlink.insert(*current);
      continue;
    }
    if (contains(t, kAllInactive)) {
      if (current) {
        all_inactive.insert(*current);
        gpus.at(*current).nvlinks_all_inactive = true;
      }
      continue;
    }
    auto l = parse_link_line(t);
    if (!l) continue;
    if (l->kind == LinkKind::kOther) {
      ++counter_lines;
      continue;
    }
    if (!current) {
      ++orphan_links;
      continue;
    }
    NvLink& nl = link_at(gpus.at(*current), l->link);
    switch (l->kind) {
      case LinkKind::kSpeed:
        nl.active = true;
        nl.speed_gbps = l->speed_gbps;
        break;
      case LinkKind::kInactive:
        nl.active = false;
        break;
      case LinkKind::kRemote:
        nl.remote_pci_bus_id = l->remote_bus_id;
        break;
      case LinkKind::kOther:
        break;
    }
    ++link_facts;
  }
  if (!no_nvlink.empty())
    add_note(out,
             "nvlink: " + gpu_list(no_nvlink) + ": \"" + std::string(kNoNvlink) + "\" (no NVLink)");
  if (!all_inactive.empty())
    add_note(out, "nvlink: " + gpu_list(all_inactive) +
                      ": NVML could not read NVLink information, all links are inactive");
  if (elided) add_note(out, "nvlink: output elided (\"...\"): GPUs not listed are unknown");
  if (dcgm)
    add_note(out,
             "nvlink: dcgmi nvlink -s grid read (U up, D down, X disabled, _ not supported); "
             "DCGM gpuId taken as the GPU index");
  if (orphan_links > 0)
    add_note(out, "nvlink: " + std::to_string(orphan_links) +
                      " link lines before any \"GPU n:\" heading ignored");
  if (counter_lines > 0 && link_facts == 0)
    add_note(out, "nvlink: only counter/capability lines (nvlink -gt/-e/-c), no link status");
  sort_gpus(out);
  if (link_facts == 0 && no_nvlink.empty() && all_inactive.empty()) {
    add_note(out, "nvlink: no link status line (\"Link n: … GB/s\" or \"<inactive>\") found");
    return Status::invalid_input("nvlink: no link status");
  }
  for (auto& g : out.gpus)
    std::sort(g.nvlinks.begin(), g.nvlinks.end(),
              [](const NvLink& a, const NvLink& b) { return a.link < b.link; });
  return Status::ok();
}

}  // namespace gpuvet::import
