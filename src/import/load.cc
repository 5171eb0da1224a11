#include "import/load.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <system_error>

#include "core/facts_fields.h"
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

// The GPU of `into` that `s` describes, or nullptr for a GPU not seen yet.
GpuFacts* find_gpu(std::vector<GpuFacts>& into, const GpuFacts& s) {
  if (s.pci_bus_id)
    for (auto& g : into)
      if (g.pci_bus_id == s.pci_bus_id) return &g;
  if (s.uuid)
    for (auto& g : into)
      if (g.uuid == s.uuid) return &g;
  // By index only when neither side names the GPU differently.
  for (auto& g : into)
    if (g.index == s.index && (!s.pci_bus_id || !g.pci_bus_id) && (!s.uuid || !g.uuid)) return &g;
  return nullptr;
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
    for (auto& g : s) {
      if (GpuFacts* same = find_gpu(d, g)) {
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
    for (const auto& p : s) {
      auto it = std::find_if(d.begin(), d.end(),
                             [&](const GpuPair& q) { return q.a == p.a && q.b == p.b; });
      if (it == d.end()) {
        d.push_back(p);
      } else {
        Merger("", origin_, notes_).merge(*it, p);
      }
    }
    std::sort(d.begin(), d.end(), [](const GpuPair& x, const GpuPair& y) {
      return std::tie(x.a, x.b) < std::tie(y.a, y.b);
    });
  }
  // Two kernel logs of one node (dmesg and journalctl -k) become one, named by both sources.
  void operator()(std::string_view, KernelLog& d, KernelLog& s) {
    if (s.source.empty() && s.xids.empty()) return;
    if (d.source.empty()) {
      d = std::move(s);
      return;
    }
    if (d.source.find(s.source) == std::string::npos) d.source += ", " + s.source;
    d.readable = d.readable || s.readable;
    Merger("kernel_log.", origin_, notes_).merge(d, s);
  }
  // A process seen on the same GPU with the same host pid is the same process.
  void operator()(std::string_view, std::vector<ProcessFacts>& d, std::vector<ProcessFacts>& s) {
    for (auto& p : s) {
      const bool seen = std::any_of(d.begin(), d.end(), [&](const ProcessFacts& q) {
        return q.gpu == p.gpu && q.host_pid == p.host_pid;
      });
      if (!seen) d.push_back(std::move(p));
    }
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
  FactsMerger merger(origin, into.notes);
  fields(merger, into, from);
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
