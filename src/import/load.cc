#include "import/load.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include "core/facts_fields.h"
#include "core/gzip.h"
#include "core/util.h"
#include "import/collective_log.h"
#include "import/importer.h"
#include "import/kineto_trace.h"
#include "import/machines.h"
#include "import/paste_machines.h"
#include "import/step_log.h"

namespace gpuvet::import {
namespace {

namespace fs = std::filesystem;

// Commands whose output gpuvet reads; a prompt line must run one of them to split a session.
constexpr std::array<std::string_view, 25> kKnownCommands = {"nvidia-smi",
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
                                                             "torchrun",
                                                             "lspci",
                                                             "uptime",
                                                             "grep",
                                                             "egrep",
                                                             "dcgmi"};

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

// Merges one struct of a later input into the same struct of an earlier one, field by field as
// fields() lists them: what is empty is filled and what is known stays; a conflict on a kStable
// field is a note naming the field, both values and the later input.
class Merger {
 public:
  // `prefix` names the struct in conflict notes ("GPU0 " → "GPU0 pcie.width_max").
  Merger(std::string prefix, const std::string& origin, std::vector<std::string>& notes)
      : prefix_(std::move(prefix)), origin_(origin), notes_(notes) {}

  template <class T>
  void merge(T& d, const T& s) {
    fields(*this, d, s);
  }
  // Runs on to a later input's pressure window: the longer window is the one kept.
  void merge(HostPressure& d, const HostPressure& s) {
    fields(*this, d, s);
    d.window_s = std::max(d.window_s, s.window_s);
  }
  // `active` is `active_mask` spelled out: the two come from one input, never half from each.
  void merge(ClockEventReasons& d, const ClockEventReasons& s) {
    if (!d.active_mask && d.active.empty()) {
      d.active_mask = s.active_mask;
      d.active = s.active;
    }
    ClockEventReasons rest = s;
    rest.active_mask.reset();
    rest.active.clear();
    fields(*this, d, rest);
  }

  template <class T>
  void operator()(std::string_view key, std::optional<T>& d, const std::optional<T>& s) {
    if constexpr (Described<T>) {
      if (d && s) {
        sub(key).merge(*d, *s);
        return;
      }
    }
    if (!d) d = s;
  }
  // A fact that should not change between captures of one machine: disagreement is reported.
  template <class T>
  void operator()(std::string_view key, std::optional<T>& d, const std::optional<T>& s, Stable) {
    if (!s) return;
    if (!d) {
      d = s;
      return;
    }
    if (!(*d == *s))
      notes_.push_back(
          fmt::format("conflict: {}{} is {} in an earlier input but {} in {}; keeping the first",
                      prefix_, key, fmt::format("{}", *d), fmt::format("{}", *s), origin_));
  }
  template <Described T>
  void operator()(std::string_view key, T& d, const T& s) {
    sub(key).merge(d, s);
  }
  template <class T>
  void operator()(std::string_view, std::vector<T>& d, const std::vector<T>& s) {
    if (d.empty()) d = s;
  }
  template <class T>
  void operator()(std::string_view, std::vector<T>& d, const std::vector<T>& s, Append) {
    d.insert(d.end(), s.begin(), s.end());
  }
  // Links are matched by number; a link only the later input names is not added.
  void operator()(std::string_view key, std::vector<NvLink>& d, const std::vector<NvLink>& s) {
    if (d.empty()) {
      d = s;
      return;
    }
    for (const auto& sl : s)
      for (auto& dl : d)
        if (dl.link == sl.link) sub(key).merge(dl, sl);
  }
  // A key the earlier input has keeps its value.
  template <class K, class T>
  void operator()(std::string_view, std::map<K, T>& d, const std::map<K, T>& s) {
    for (const auto& [k, v] : s) d.emplace(k, v);
  }
  void operator()(std::string_view, PathType& d, const PathType& s) {
    if (d == PathType::kUnknown) d = s;
  }
  // A flag an input saw (all NVLinks inactive, a stuck watchdog) stays seen.
  void operator()(std::string_view, bool& d, const bool& s) { d = d || s; }
  // A plain value has no "not known" state to fill: it is what identifies the record (a GPU's
  // index, a link's number, a pair's ends) or its struct has a rule of its own (merge above,
  // the kernel log in FactsMerger). The first input's stays.
  template <class T>
  requires(!kIsOptional<T> && !kIsVector<T> && !kIsMap<T> && !Described<T>) void operator()(
      std::string_view, T&, const T&) {}
  template <class T, class Tag>
  requires(!std::is_same_v<Tag, Stable> && !std::is_same_v<Tag, Append>) void operator()(
      std::string_view key, T& d, const T& s, Tag) {
    (*this)(key, d, s);
  }
  template <class Fn>
  void nested(std::string_view key, Fn&& fn) {
    Merger in = sub(key);
    fn(in);
  }

 private:
  Merger sub(std::string_view key) const {
    return Merger(prefix_ + std::string(key) + ".", origin_, notes_);
  }

  std::string prefix_;
  const std::string& origin_;
  std::vector<std::string>& notes_;
};

// The GPU of `into` that `s` describes, or nullptr for a GPU not seen yet. `by_bus` is false
// when the input of `s` gives its bus id to more than one GPU: that id then names none of them.
GpuFacts* find_gpu(std::vector<GpuFacts>& into, const GpuFacts& s, bool by_bus) {
  if (by_bus && s.pci_bus_id)
    for (auto& g : into)
      if (g.pci_bus_id == s.pci_bus_id) return &g;
  if (s.uuid)
    for (auto& g : into)
      if (g.uuid == s.uuid) return &g;
  if (!by_bus) return nullptr;
  // By index only when neither side names the GPU differently.
  for (auto& g : into)
    if (g.index == s.index && (!s.pci_bus_id || !g.pci_bus_id) && (!s.uuid || !g.uuid)) return &g;
  return nullptr;
}

// Bus ids that one input gives to GPUs with different UUIDs: distinct boards cannot share a
// PCI address, so such an input is damaged or mixes machines.
std::set<std::string> shared_bus_ids(const std::vector<GpuFacts>& gpus) {
  std::map<std::string, std::string> uuid_of;  // bus id → the first UUID seen on it
  std::set<std::string> shared;
  for (const auto& g : gpus) {
    if (!g.pci_bus_id || !g.uuid) continue;
    auto [it, inserted] = uuid_of.try_emplace(*g.pci_bus_id, *g.uuid);
    if (!inserted && it->second != *g.uuid) shared.insert(*g.pci_bus_id);
  }
  return shared;
}

// One input that gives one PCI address to GPUs with different UUIDs: kept apart by the merge,
// and said as a problem of the input, since no verdict about "the GPU at X" can be trusted.
void report_shared_bus_ids(Facts& f, const std::string& origin) {
  std::map<std::string, std::vector<const GpuFacts*>> on_bus;
  for (const auto& g : f.gpus)
    if (g.pci_bus_id && g.uuid) on_bus[*g.pci_bus_id].push_back(&g);
  for (const auto& [bus, gpus] : on_bus) {
    std::set<std::string> uuids;
    for (const GpuFacts* g : gpus) uuids.insert(*g->uuid);
    if (uuids.size() < 2) continue;
    std::string names;
    for (std::size_t i = 0; i < gpus.size() && i < 8; ++i)
      names += (i ? ", GPU" : "GPU") + std::to_string(gpus[i]->index) + " " + *gpus[i]->uuid;
    if (gpus.size() > 8) names += fmt::format(", {} more", gpus.size() - 8);
    f.input_problems.push_back(fmt::format(
        "{}: {} GPUs with different UUIDs claim PCI bus id {} ({}): one address holds one "
        "board, so this input is damaged or mixes machines; they are kept apart",
        origin, gpus.size(), bus, names));
    f.notes.push_back(f.input_problems.back());
  }
}

// Merges a later input's Facts into the earlier ones, member by member as fields(Facts) lists
// them: each list has its rule for telling a record seen before from a new one. Conflict notes
// go to the earlier input's notes, before the later input's own.
class FactsMerger {
 public:
  FactsMerger(const std::string& origin, std::vector<std::string>& notes)
      : origin_(origin), notes_(notes) {}

  void operator()(std::string_view, HostFacts& d, HostFacts& s) {
    Merger("", origin_, notes_).merge(d, s);
  }
  // The same GPU (bus id, then UUID, then index) is merged field by field; a new one is added,
  // under a free index when its own is taken by another GPU.
  void operator()(std::string_view, std::vector<GpuFacts>& d, std::vector<GpuFacts>& s) {
    const std::set<std::string> shared = shared_bus_ids(s);
    for (auto& g : s) {
      const bool by_bus = !g.pci_bus_id || shared.count(*g.pci_bus_id) == 0;
      if (GpuFacts* same = find_gpu(d, g, by_bus)) {
        Merger("GPU" + std::to_string(same->index) + " ", origin_, notes_).merge(*same, g);
        continue;
      }
      for (const auto& other : d)
        if (other.index == g.index) {
          notes_.push_back(fmt::format(
              "conflict: {} describes GPU{} as {} but an earlier input gave GPU{} {}; "
              "indexed as GPU{}",
              origin_, g.index, g.pci_bus_id.value_or(g.uuid.value_or("?")), other.index,
              other.pci_bus_id.value_or(other.uuid.value_or("?")), d.size()));
          g.index = static_cast<int>(d.size());
          break;
        }
      d.push_back(std::move(g));
    }
    std::sort(d.begin(), d.end(),
              [](const GpuFacts& a, const GpuFacts& b) { return a.index < b.index; });
  }
  // gpu_facts_unavailable: import_path decides it for the merged whole.
  void operator()(std::string_view, bool&, bool&) {}
  // The same pair (a, b) is merged field by field.
  void operator()(std::string_view, std::vector<GpuPair>& d, std::vector<GpuPair>& s) {
    std::map<std::pair<int, int>, std::size_t> at;  // (a, b) → index in d
    for (std::size_t i = 0; i < d.size(); ++i) at.try_emplace({d[i].a, d[i].b}, i);
    for (auto& p : s) {
      auto [it, inserted] = at.try_emplace({p.a, p.b}, d.size());
      if (inserted)
        d.push_back(std::move(p));
      else
        Merger("", origin_, notes_).merge(d[it->second], p);
    }
    std::sort(d.begin(), d.end(), [](const GpuPair& x, const GpuPair& y) {
      return std::tie(x.a, x.b) < std::tie(y.a, y.b);
    });
  }
  // Two kernel logs of one node (dmesg and journalctl -k) become one, named by both sources.
  void operator()(std::string_view, KernelLog& d, KernelLog& s) {
    if (s.source.empty() && s.xids.empty() && s.pcie_aer.empty() && s.iommu_faults.empty() &&
        s.driver_failures.empty() && s.hung_tasks.empty())
      return;
    if (d.source.empty()) {
      d = std::move(s);
      return;
    }
    if (d.source.find(s.source) == std::string::npos) d.source += ", " + s.source;
    d.readable = d.readable || s.readable;
    Merger("kernel_log.", origin_, notes_).merge(d, s);
  }
  // The same PCI device (bdf) of two lspci inputs is merged field by field.
  void operator()(std::string_view, std::vector<PciDevice>& d, std::vector<PciDevice>& s) {
    std::map<std::string, std::size_t> at;  // bdf → index in d
    for (std::size_t i = 0; i < d.size(); ++i) at.try_emplace(d[i].bdf, i);
    for (auto& p : s) {
      auto [it, inserted] = at.try_emplace(p.bdf, d.size());
      if (inserted)
        d.push_back(std::move(p));
      else
        Merger("pci " + p.bdf + " ", origin_, notes_).merge(d[it->second], p);
    }
    std::sort(d.begin(), d.end(),
              [](const PciDevice& x, const PciDevice& y) { return x.bdf < y.bdf; });
  }
  // A process seen on the same GPU with the same host pid is the same process.
  void operator()(std::string_view, std::vector<ProcessFacts>& d, std::vector<ProcessFacts>& s) {
    std::set<std::pair<int, int>> seen;  // (gpu, host pid)
    for (const auto& q : d) seen.emplace(q.gpu, q.host_pid);
    for (auto& p : s)
      if (seen.emplace(p.gpu, p.host_pid).second) d.push_back(std::move(p));
  }
  template <class T>
  void operator()(std::string_view, std::vector<T>& d, std::vector<T>& s, Append) {
    d.insert(d.end(), std::make_move_iterator(s.begin()), std::make_move_iterator(s.end()));
  }
  // Facts::notes, the later input's: each says which input it is about.
  void operator()(std::string_view, std::vector<std::string>& d, std::vector<std::string>& s) {
    for (auto& n : s) d.push_back(origin_ + ": " + n);
  }

 private:
  const std::string& origin_;
  std::vector<std::string>& notes_;
};

// File names `gpuvet capture` writes. Names carry no meaning for what a file holds; they only
// tell a capture bundle that lost its manifest from a directory of saved outputs.
constexpr std::array<std::string_view, 23> kCaptureFileNames = {"nvidia-smi-q.txt",
                                                                "nvidia-smi-q.xml",
                                                                "nvidia-smi-topo-m.txt",
                                                                "nvidia-smi-topo-p2p-r.txt",
                                                                "nvidia-smi-topo-p2p-w.txt",
                                                                "nvidia-smi-topo-p2p-n.txt",
                                                                "nvidia-smi-topo-p2p-a.txt",
                                                                "nvidia-smi-nvlink-s.txt",
                                                                "nvidia-smi-query-gpu.csv",
                                                                "nvidia-smi-pmon.txt",
                                                                "nvidia-smi-dmon.txt",
                                                                "dmesg.txt",
                                                                "journalctl-k.txt",
                                                                "numactl-hardware.txt",
                                                                "numactl-show.txt",
                                                                "lscpu.txt",
                                                                "mpstat.txt",
                                                                "iostat.txt",
                                                                "sar-net-dev.txt",
                                                                "pressure.txt",
                                                                "nvidia-driver-params.txt",
                                                                "nvidia-driver-version.txt",
                                                                "gpuvet-facts.json"};
// A capture's own files this many or more (or its gpuvet-facts.json) and no manifest.json:
// a bundle whose capture did not finish. Fewer is too weak a sign (a user's own "dmesg.txt").
constexpr int kBundleNameThreshold = 3;
constexpr int kMaxWalkDepth = 64;  // links are not followed, so only a deep tree is bounded here

struct Walk {
  std::vector<fs::path> files;               // in name order, at most max_files
  std::vector<std::string> notes;            // directories not read, files left out
  std::vector<std::string> problems;         // capture bundles without their manifest
  std::optional<std::error_code> top_error;  // the directory itself could not be listed
  std::size_t unreadable_dirs = 0;
};

// Lists every regular file under `top` (links not followed), then keeps the first max_files in
// name order, so which files are read does not depend on the order the file system lists them.
Walk walk_directory(const fs::path& top, std::size_t max_files) {
  Walk w;
  std::size_t total = 0;
  // Only the max_files smallest names are kept while walking: memory stays bounded by the cut.
  auto keep = [&](fs::path p) {
    ++total;
    w.files.push_back(std::move(p));
    if (w.files.size() > 2 * max_files + 1024) {
      std::nth_element(w.files.begin(), w.files.begin() + static_cast<std::ptrdiff_t>(max_files),
                       w.files.end());
      w.files.resize(max_files);
    }
  };
  std::vector<std::pair<fs::path, int>> pending{{top, 0}};
  while (!pending.empty()) {
    auto [dir, depth] = std::move(pending.back());
    pending.pop_back();
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) {
      if (depth == 0) {
        w.top_error = ec;
        return w;
      }
      ++w.unreadable_dirs;
      w.notes.push_back(dir.string() + ": directory not read: " + ec.message());
      continue;
    }
    bool manifest = false, facts_json = false;
    int capture_names = 0;
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) break;
      const fs::directory_entry& e = *it;
      std::error_code sec;
      const auto st = e.symlink_status(sec);
      if (sec) {
        w.notes.push_back(e.path().string() + ": not read: " + sec.message());
        continue;
      }
      if (fs::is_directory(st)) {
        if (depth + 1 < kMaxWalkDepth)
          pending.emplace_back(e.path(), depth + 1);
        else
          w.notes.push_back(e.path().string() + ": not read: more than " +
                            std::to_string(kMaxWalkDepth) + " directories deep");
        continue;
      }
      if (!fs::is_regular_file(st)) continue;  // links, FIFOs and devices are not read
      const std::string name = e.path().filename().string();
      if (name == "manifest.json") manifest = true;
      if (name == "gpuvet-facts.json") facts_json = true;
      if (std::find(kCaptureFileNames.begin(), kCaptureFileNames.end(), name) !=
          kCaptureFileNames.end())
        ++capture_names;
      keep(e.path());
    }
    if (ec) w.notes.push_back(dir.string() + ": listing stopped: " + ec.message());
    if (!manifest && (facts_json || capture_names >= kBundleNameThreshold))
      w.problems.push_back(
          dir.string() +
          ": looks like a gpuvet capture bundle but has no manifest.json: the capture did not "
          "finish (interrupted, or a write failed), so what it holds may be partial");
  }
  std::sort(w.files.begin(), w.files.end());
  if (w.files.size() > max_files) w.files.resize(max_files);
  // A cut input is judged only in part: an input problem (the verdict says INCOMPLETE), not a
  // note lost among the others.
  if (total > w.files.size())
    w.problems.push_back(fmt::format(
        "{} files not read (more than {}): the first {} in name order under {} were read; point "
        "--from at the files that matter",
        total - w.files.size(), max_files, w.files.size(), top.string()));
  return w;
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

// A rank's records say which input they came from; a flight-recorder dump, a trace or a per-rank
// log without prefixes is named after its rank ("nccl_trace_rank_3", "rank3.log").
namespace {
template <class Rank>
void name_ranks(std::vector<Rank>& ranks, const std::string& where, std::string_view file) {
  for (auto& r : ranks) {
    if (!r.origin) r.origin = where;
    if (!r.rank) r.rank = rank_from_file_name(file);
  }
}
}  // namespace

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
    // The user's own step pattern (--step-regex) reads any log, recognised or not.
    if (!options.step_regex.empty()) {
      Facts steps;
      if (const std::size_t matched = parse_step_log_with(part.text, options.step_regex, steps)) {
        name_ranks(steps.job_ranks, where, origin);
        record.notes.push_back(fmt::format("--step-regex matched {} line(s)", matched));
        if (!best || best_score < options.min_confidence) record.format = "step-log (--step-regex)";
        merge_facts(out, std::move(steps), where);
        if (!best || best_score < options.min_confidence) {
          out.imported.push_back(std::move(record));
          continue;
        }
      }
    }
    if (!best || best_score < options.min_confidence) {
      out.notes.push_back(
          fmt::format("{}: not recognised as any supported output{} (starts with \"{}\")", where,
                      part.command.empty() ? "" : " of `" + part.command + "`", first_line(body)));
      out.imported.push_back(std::move(record));
      continue;
    }
    record.format = best->format;
    Facts one;
    const Status st = best->parse(body, one);
    name_ranks(one.collective_ranks, where, origin);
    name_ranks(one.job_ranks, where, origin);
    add_parsed(out, std::move(one), st, std::move(record), where, origin);
  }
  report_shared_bus_ids(out, origin);
  return out;
}

}  // namespace gpuvet

namespace gpuvet::import {

void add_parsed(Facts& into, Facts&& one, const Status& st, ImportedFile record,
                const std::string& where, const std::string& origin) {
  for (auto& note : one.notes) record.notes.push_back(note);
  if (!st.is_ok() &&
      std::find(record.notes.begin(), record.notes.end(), st.message()) == record.notes.end())
    record.notes.push_back(st.to_string());
  one.notes.clear();
  for (const auto& note : record.notes) into.notes.push_back(where + ": " + note);
  for (auto& m : one.measurements)
    if (!m.origin) m.origin = origin;
  into.imported.push_back(std::move(record));
  merge_facts(into, std::move(one), where);
}

void merge_facts(Facts& into, Facts&& from, const std::string& origin) {
  FactsMerger merger(origin, into.notes);
  fields(merger, into, from);
}

}  // namespace gpuvet::import

namespace gpuvet {

using namespace import;  // the helpers above

namespace {

// At most this many files are read at once (each holds its text in memory while it is parsed).
constexpr std::size_t kMaxImportThreads = 4;
// A profiler trace larger than this, or compressed, is parsed from the file in chunks
// (parse_kineto_trace_file) rather than read whole.
constexpr std::size_t kStreamTraceBytes = std::size_t{8} << 20;

// One file read and imported: its facts and notes, or why it was skipped, or why the whole
// input is refused (one file holding several machines' outputs).
struct FileOutcome {
  std::string name;
  Facts facts;
  std::vector<std::string> notes;
  std::string skipped;  // non-empty: not read, and why
  bool permission = false;
  std::string refused;  // non-empty: the input is refused, and why
};

FileOutcome read_one(const fs::path& file, const ImportOptions& options) {
  FileOutcome o;
  o.name = file.string();
  const std::string& name = o.name;
  std::error_code ec;
  auto size = fs::file_size(file, ec);
  if (ec) {
    o.skipped = name + ": cannot read: " + ec.message();
    o.permission = ec == std::errc::permission_denied;
    return o;
  }
  if (size > options.max_file_bytes) {
    o.skipped = fmt::format("{}: skipped, {} MiB is over the {} MiB limit", name, size >> 20,
                            options.max_file_bytes >> 20);
    return o;
  }
  errno = 0;
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    const int err = errno;
    o.skipped = name + ": cannot open" +
                (err ? ": " + std::error_code(err, std::generic_category()).message() : "");
    o.permission = err == EACCES || err == EPERM;
    return o;
  }
  // A large or compressed profiler trace is parsed in chunks from the file: its text is never
  // held whole (a 12 MB .json.gz may hold 120 MB). Its head says which: read once, then the file
  // is read from its start again.
  if (options.step_regex.empty()) {
    constexpr std::size_t kHead = 256u << 10;
    std::string head(std::min<std::size_t>(size, kHead), '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    const bool gz = looks_gzipped(head);
    if ((size > kStreamTraceBytes || gz) &&
        sniff_kineto_trace(gz ? gunzip_prefix(head, kHead) : head) >= 90) {
      ImportedFile record{name, "pytorch-profiler-trace", {}};
      Status st = parse_kineto_trace_file(name, options.max_file_bytes, o.facts);
      if (!st.is_ok()) record.notes.push_back(st.message());
      name_ranks(o.facts.job_ranks, name, name);
      for (const auto& note : record.notes) o.notes.push_back(name + ": " + note);
      o.facts.imported.push_back(std::move(record));
      return o;
    }
    in.clear();
    in.seekg(0);
  }
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<std::size_t>(in.gcount()));
  // A gzip-compressed output (a profiler trace's .json.gz) is read as what it holds, under the
  // same size limit.
  if (looks_gzipped(text)) {
    auto inflated = gunzip(text, options.max_file_bytes);
    if (!inflated.is_ok()) {
      o.skipped = name + ": " + inflated.status().message();
      return o;
    }
    text = std::move(inflated).value();
  }
  // One file may hold the outputs of several machines too ("node A:" … "node B:").
  if (const MachineSplit in_file = machines_in_paste(text, name, options);
      in_file.machines.size() > 1) {
    o.refused = several_machines_in_paste_message(in_file, name);
    return o;
  }
  o.facts = import_text(text, name, options);
  // import_text already prefixed its notes with the origin.
  o.notes = std::move(o.facts.notes);
  o.facts.notes.clear();
  return o;
}

}  // namespace

Result<Facts> import_path(const std::string& path, const ImportOptions& options) {
  std::error_code ec;
  // The path itself is followed if it is a link; links inside a directory are not.
  auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    if (!ec || ec == std::errc::no_such_file_or_directory)
      return Status::not_found(path + ": no such file or directory");
    if (ec == std::errc::permission_denied)
      return Status::permission_denied(path + ": " + ec.message());
    return Status::invalid_input(path + ": " + ec.message());
  }
  Facts all;
  std::vector<fs::path> files;
  if (fs::is_directory(status)) {
    Walk walk = walk_directory(path, options.max_files);
    if (walk.top_error) return Status::permission_denied(path + ": " + walk.top_error->message());
    files = std::move(walk.files);
    all.notes = std::move(walk.notes);
    all.input_problems = std::move(walk.problems);
    all.notes.insert(all.notes.end(), all.input_problems.begin(), all.input_problems.end());
    if (files.empty())
      return walk.unreadable_dirs > 0
                 ? Status::permission_denied(path + ": no file could be listed (" +
                                             all.notes.front() + ")")
                 : Status::invalid_input(path + ": no files to read");
  } else if (fs::is_regular_file(status)) {
    files.push_back(path);
  } else {
    return Status::invalid_input(path + ": not a regular file or a directory");
  }

  std::size_t readable = 0;
  std::vector<std::string> why_not;  // for the error when no file could be read
  bool denied = false;
  auto skip = [&](std::string why, bool permission) {
    denied = denied || permission;
    why_not.push_back(why);
    all.notes.push_back(std::move(why));
  };
  std::vector<std::pair<std::string, MachineIdentity>> identities;  // which machine each file names
  // Files are read and imported on a few threads at once (each importer is a pure function of
  // its text), in batches, and merged in name order: the report is the same as one at a time.
  const std::size_t threads =
      std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, kMaxImportThreads);
  for (std::size_t first = 0; first < files.size(); first += threads) {
    const std::size_t n = std::min(threads, files.size() - first);
    std::vector<FileOutcome> outcomes(n);
    std::vector<std::thread> workers;
    for (std::size_t k = 1; k < n; ++k)
      workers.emplace_back([&, k] { outcomes[k] = read_one(files[first + k], options); });
    outcomes[0] = read_one(files[first], options);
    for (auto& w : workers) w.join();
    for (auto& o : outcomes) {
      if (!o.skipped.empty()) {
        skip(std::move(o.skipped), o.permission);
        continue;
      }
      if (!o.refused.empty()) return Status::invalid_input(o.refused);
      ++readable;
      identities.emplace_back(o.name, identity_of(o.facts));
      merge_facts(all, std::move(o.facts), o.name);
      all.notes.insert(all.notes.end(), o.notes.begin(), o.notes.end());
    }
  }
  if (readable == 0) {
    // Say why, in the words of the first few failures: "over the limit" is not "unreadable".
    std::string reasons;
    for (std::size_t i = 0; i < why_not.size() && i < 3; ++i)
      reasons += (i ? "; " : "") + why_not[i];
    if (why_not.size() > 3) reasons += fmt::format("; {} more", why_not.size() - 3);
    if (files.size() == 1)
      reasons = why_not.empty() ? path + ": not read" : why_not.front();
    else
      reasons = path + ": no file could be read (" + reasons + ")";
    return denied ? Status::permission_denied(reasons) : Status::invalid_input(reasons);
  }
  // Files of several machines merged would be one imaginary box ("13× mixed GPUs"): refused,
  // naming the machines and their files, rather than split into reports nobody asked for.
  // A gpuvet capture bundle (its manifest.json at the top) is one machine by construction.
  const bool bundle = fs::is_directory(status) && fs::exists(fs::path(path) / "manifest.json", ec);
  if (const MachineSplit split = group_by_machine(identities); !bundle && split.machines.size() > 1)
    return Status::invalid_input(several_machines_message(split, path));
  if (all.gpus.empty()) {
    all.gpu_facts_unavailable = true;
    all.notes.push_back(
        "no input describes a GPU (no nvidia-smi, topo or gpuvet output among the files)");
  }
  return all;
}

}  // namespace gpuvet

namespace gpuvet {

Result<Facts> import_paths(const std::vector<std::string>& paths, const ImportOptions& options) {
  if (paths.empty()) return Status::invalid_input("no input given");
  if (paths.size() == 1) return import_path(paths.front(), options);
  Facts all;
  bool any_gpu = false;
  for (const auto& path : paths) {
    auto one = import_path(path, options);
    if (!one.is_ok()) return one.status();
    Facts f = std::move(one).value();
    any_gpu = any_gpu || !f.gpu_facts_unavailable;
    auto notes = std::move(f.notes);
    f.notes.clear();
    import::merge_facts(all, std::move(f), path);
    all.notes.insert(all.notes.end(), notes.begin(), notes.end());
  }
  all.gpu_facts_unavailable = !any_gpu;
  return all;
}

}  // namespace gpuvet
