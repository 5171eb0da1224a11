#include "import/nvsmi_text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "core/text_scan.h"
#include "core/util.h"
#include "import/nvsmi_table.h"

namespace gpuvet::import {

// ================================================================== shared value helpers

namespace nvsmi {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

bool icontains(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i)
    if (iequals(hay.substr(i, needle.size()), needle)) return true;
  return false;
}

// The numeric head of a value and the unit word after it ("81.64 W" → "81.64", "W").
std::pair<std::string_view, std::string_view> split_unit(std::string_view v) {
  v = trim(v);
  std::size_t i = 0;
  if (i < v.size() && (v[i] == '-' || v[i] == '+')) ++i;
  while (i < v.size() && (std::isdigit(static_cast<unsigned char>(v[i])) || v[i] == '.')) ++i;
  return {v.substr(0, i), trim(v.substr(i))};
}

struct ReasonName {
  std::uint64_t bit;
  const char* name;
};
// NVML's nvmlClocksEventReason* bits, in bit order (as the live probe decodes them).
constexpr ReasonName kReasons[] = {
    {0x1, "idle"},
    {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},
    {0x100, "display_clock_setting"},
};
constexpr std::uint64_t kAllReasons = 0x1ff;

// Lower-case, spaces and '-' to '_': "HW Power Brake Slowdown" → "hw_power_brake_slowdown".
std::string canon(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : trim(s)) {
    if (c == ' ' || c == '-' || c == '\t')
      out.push_back('_');
    else
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

}  // namespace

bool is_missing(std::string_view value) {
  std::string_view v = trim(value);
  if (v.empty()) return true;
  if (v.front() == '[' && v.back() == ']') v = trim(v.substr(1, v.size() - 2));
  static constexpr std::string_view kMissing[] = {"N/A",
                                                  "NA",
                                                  "Not Supported",
                                                  "Unknown Error",
                                                  "Unknown",
                                                  "Insufficient Permissions",
                                                  "Requested functionality has been deprecated",
                                                  "Not available in WDDM driver model",
                                                  "GPU requires reset",
                                                  "GPU is lost",
                                                  "Not Found",
                                                  "No data"};
  for (auto m : kMissing)
    if (iequals(v, m)) return true;
  return icontains(v, "deprecated") || icontains(v, "not available") ||
         icontains(v, "not supported");
}

std::optional<std::string> text(std::string_view value) {
  std::string_view v = trim(value);
  // Newer drivers annotate values: "610.62 [Deprecated; will be removed in CUDA 14]".
  if (auto b = v.find(" ["); b != std::string_view::npos && b > 0) v = trim(v.substr(0, b));
  if (is_missing(v)) return std::nullopt;
  return std::string(v);
}

std::optional<double> number(std::string_view value) {
  if (is_missing(value)) return std::nullopt;
  auto [num, unit] = split_unit(value);
  (void)unit;
  auto d = parse_double(num);
  if (!d || !std::isfinite(*d)) return std::nullopt;
  return d;
}

std::optional<std::int64_t> integer(std::string_view value) {
  if (is_missing(value)) return std::nullopt;
  auto [num, unit] = split_unit(value);
  (void)unit;
  return parse_int(num);
}

// PCIe generation or width as nvidia-smi prints it ("4", "16x") or as people retype
// it ("Gen4", "x8").
std::optional<std::int64_t> link_number(std::string_view value) {
  value = trim(value);
  if (starts_with(value, "Gen") || starts_with(value, "gen")) value.remove_prefix(3);
  if (!value.empty() && (value.front() == 'x' || value.front() == 'X')) value.remove_prefix(1);
  if (!value.empty() && (value.back() == 'x' || value.back() == 'X')) value.remove_suffix(1);
  return integer(value);
}

std::optional<std::uint64_t> count(std::string_view value) {
  if (is_missing(value)) return std::nullopt;
  auto [num, unit] = split_unit(value);
  (void)unit;
  if (!num.empty() && num.front() == '+') num.remove_prefix(1);
  return parse_uint(num);
}

std::optional<std::uint64_t> mib_bytes(std::string_view value) {
  if (is_missing(value)) return std::nullopt;
  auto [num, unit] = split_unit(value);
  auto d = parse_double(num);
  if (!d || *d < 0 || !std::isfinite(*d)) return std::nullopt;
  double scale = 1024.0 * 1024.0;
  if (iequals(unit, "GiB")) scale *= 1024.0;
  if (iequals(unit, "KiB")) scale = 1024.0;
  if (iequals(unit, "B") || iequals(unit, "bytes")) scale = 1.0;
  double bytes = *d * scale;
  if (bytes >= 1.8e19) return std::nullopt;
  return static_cast<std::uint64_t>(std::llround(bytes));
}

std::optional<std::uint64_t> duration_ns(std::string_view value) {
  if (is_missing(value)) return std::nullopt;
  auto [num, unit] = split_unit(value);
  auto n = parse_uint(num);
  if (!n) return std::nullopt;
  std::uint64_t scale = 1000;  // nvidia-smi prints these counters in µs
  if (iequals(unit, "ns")) scale = 1;
  if (iequals(unit, "ms")) scale = 1000000;
  if (iequals(unit, "s")) scale = 1000000000;
  if (*n > std::numeric_limits<std::uint64_t>::max() / scale) return std::nullopt;
  return *n * scale;
}

std::optional<bool> active(std::string_view value) {
  auto v = trim(value);
  if (iequals(v, "Active")) return true;
  if (iequals(v, "Not Active") || iequals(v, "Inactive")) return false;
  return std::nullopt;
}

std::optional<bool> enabled(std::string_view value) {
  auto v = trim(value);
  if (iequals(v, "Enabled") || iequals(v, "Enable") || iequals(v, "On")) return true;
  if (iequals(v, "Disabled") || iequals(v, "Disable") || iequals(v, "Off")) return false;
  return std::nullopt;
}

std::optional<bool> yes_no(std::string_view value) {
  auto v = trim(value);
  if (iequals(v, "Yes") || iequals(v, "True")) return true;
  if (iequals(v, "No") || iequals(v, "False")) return false;
  return std::nullopt;
}

std::optional<int> pstate(std::string_view value) {
  auto v = trim(value);
  if (v.size() < 2 || (v[0] != 'P' && v[0] != 'p')) return std::nullopt;
  auto n = parse_int(v.substr(1));
  if (!n || *n < 0 || *n > 15) return std::nullopt;
  return static_cast<int>(*n);
}

std::optional<std::uint64_t> hex_mask(std::string_view value) {
  auto v = trim(value);
  if (v.size() < 3 || v[0] != '0' || (v[1] != 'x' && v[1] != 'X') || v.size() > 18)
    return std::nullopt;
  std::uint64_t m = 0;
  for (char c : v.substr(2)) {
    int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
            : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
            : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                        : -1;
    if (d < 0) return std::nullopt;
    m = (m << 4) | static_cast<std::uint64_t>(d);
  }
  return m;
}

std::uint64_t clock_event_bit(std::string_view name) {
  for (const auto& r : kReasons)
    if (name == r.name) return r.bit;
  return 0;
}

std::optional<std::string> clock_event_name(std::string_view spelling) {
  std::string c = canon(spelling);
  if (c == "gpu_idle" || c == "idle") return "idle";
  if (c == "display_clocks_setting" || c == "display_clock_setting") return "display_clock_setting";
  if (c == "applications_clocks_setting" || c == "application_clocks_setting")
    return "applications_clocks_setting";
  for (const auto& r : kReasons)
    if (c == r.name) return std::string(r.name);
  return std::nullopt;
}

std::optional<std::string> clock_counter_key(std::string_view spelling) {
  std::string c = canon(spelling);
  if (c == "sw_power_cap" || c == "sw_power_capping") return "power";
  if (c == "sync_boost") return "sync_boost";
  if (c == "sw_therm_slowdown" || c == "sw_thermal_slowdown") return "thermal";
  if (c == "hw_therm_slowdown" || c == "hw_thermal_slowdown") return "hw_thermal";
  if (c == "hw_power_brake" || c == "hw_power_brake_slowdown" || c == "hw_power_braking")
    return "hw_power_brake";
  return std::nullopt;
}

void apply_clock_event_flags(const ClockEventFlags& flags, ClockEventReasons& ce) {
  if (!flags.seen) return;
  ce.active.clear();
  for (const auto& r : kReasons)
    if (flags.active & r.bit) ce.active.emplace_back(r.name);
  if ((flags.seen & kAllReasons) == kAllReasons) ce.active_mask = flags.active;
}

void apply_clock_event_mask(std::uint64_t mask, ClockEventReasons& ce) {
  ce.active_mask = mask;
  ce.active.clear();
  for (const auto& r : kReasons)
    if (mask & r.bit) ce.active.emplace_back(r.name);
  if (mask & ~kAllReasons) ce.active.push_back(fmt::format("other_0x{:x}", mask & ~kAllReasons));
}

std::optional<std::string> fabric_state(std::string_view value) {
  if (is_missing(value)) return std::nullopt;
  return canon(value);  // "completed", "in_progress", "not_started", "not_supported"
}

std::optional<std::string> fabric_status(std::string_view value) {
  if (is_missing(value)) return std::nullopt;
  std::string c = canon(value);
  for (auto& ch : c) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return c;
}

void read_timestamp(std::string_view value, Facts& out) {
  if (out.host.collected_unix) return;
  out.host.collected_unix = parse_ctime(value);
}

}  // namespace nvsmi

// ================================================================== nvidia-smi -q

namespace {

using namespace nvsmi;

constexpr std::size_t kSniffLines = 400;
constexpr std::size_t kSniffBytes = 256u << 10;  // 400 lines of -q are about 20 kB
// Far above any one node (NVL72 trays hold 4); bounds what garbage can make us allocate.
constexpr std::size_t kMaxGpus = 1024;
constexpr int kMaxWalkDepth = 6;  // known sections nest 3-4 deep; garbage must not recurse far

// One "Key : value" line (or a section title) and the lines indented under it.
struct Node {
  std::string_view key;
  std::string_view value;
  bool has_value = false;
  std::vector<std::size_t> children;
};

struct Tree {
  std::vector<Node> nodes;  // nodes[0] is the root
  const Node& root() const { return nodes[0]; }
  const Node& at(std::size_t i) const { return nodes[i]; }
};

bool is_elision(std::string_view s) { return s == "[...]" || s == "..." || s == "[…]"; }

// `grep -A/-B/-C` prints "--" between groups of context lines.
bool is_grep_separator(std::string_view s) { return s == "--"; }

// A shell prompt with its command pasted above the output: "$ nvidia-smi -q | grep …",
// "user@host:~$ …", "[root@node ~]# …". A "Key : value" line is never one.
bool is_command_line(std::string_view line) {
  // The cheap tests first: every line of a -q goes through here.
  bool prompt =
      line.size() >= 2 && line[1] == ' ' && (line[0] == '$' || line[0] == '#' || line[0] == '>');
  if (!prompt) {
    const auto at = line.substr(0, 65).find('@');
    if (at == std::string_view::npos) return false;
    const auto end = line.find_first_of("$#", at);
    prompt = end != std::string_view::npos && end + 1 < line.size() && line[end + 1] == ' ' &&
             end - at < 128;
  }
  return prompt && line.find(" : ") == std::string_view::npos;
}

// The command of the first prompt line in the first lines of `text`, or empty.
std::string_view pasted_command(std::string_view text) {
  std::size_t lines = 0;
  for (std::size_t pos = 0; pos < text.size() && lines < 8; ++lines) {
    auto nl = text.find('\n', pos);
    auto line = trim(text.substr(pos, nl == std::string_view::npos ? text.size() - pos : nl - pos));
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    if (!line.empty() && is_command_line(line)) return line;
  }
  return {};
}

// True when `command` runs `nvidia-smi -q` (also -a, --query, -q -d …), maybe piped to grep.
bool runs_nvsmi_query(std::string_view command) {
  const auto at = command.find("nvidia-smi");
  if (at == std::string_view::npos) return false;
  auto rest = command.substr(at + 10);
  rest = rest.substr(0, rest.find('|'));
  for (auto word : split(rest, ' ')) {
    word = trim(word);
    if (word == "-q" || word == "-a" || word == "--query" || word == "-qa" || word == "-aq" ||
        starts_with(word, "-qd") || word == "-q=" || word == "--query=")
      return true;
  }
  return false;
}

// Splits "Key   : value" at the first ':' that is next to a blank (or ends the line); a bus id
// "GPU 00000000:00:06.0" or "C:\path" has none and stays one key.
bool split_key_value(std::string_view line, std::string_view& key, std::string_view& value) {
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] != ':') continue;
    bool before = i > 0 && (line[i - 1] == ' ' || line[i - 1] == '\t');
    bool after = i + 1 == line.size() || line[i + 1] == ' ' || line[i + 1] == '\t';
    if (before || after) {
      key = trim(line.substr(0, i));
      value = trim(line.substr(i + 1));
      return true;
    }
  }
  key = trim(line);
  value = {};
  return false;
}

std::size_t indent_of(std::string_view line) {
  std::size_t n = 0;
  for (char c : line) {
    if (c == ' ')
      ++n;
    else if (c == '\t')
      n = (n / 8 + 1) * 8;
    else
      break;
  }
  return n;
}

Tree build_tree(std::string_view text) {
  Tree t;
  t.nodes.emplace_back();
  std::vector<std::pair<std::size_t, std::size_t>> stack;  // (indent, node)
  for (std::string_view raw : split_lines(text)) {
    std::string_view line = trim(raw);
    if (line.empty() || is_elision(line) || is_grep_separator(line) || is_command_line(line))
      continue;
    if (line.find("NVSMI LOG") != std::string_view::npos) continue;
    Node n;
    n.has_value = split_key_value(line, n.key, n.value);
    if (n.key.empty()) continue;
    std::size_t indent = indent_of(raw);
    while (!stack.empty() && stack.back().first >= indent) stack.pop_back();
    std::size_t parent = stack.empty() ? 0 : stack.back().second;
    t.nodes.push_back(n);
    std::size_t id = t.nodes.size() - 1;
    t.nodes[parent].children.push_back(id);
    stack.emplace_back(indent, id);
  }
  return t;
}

// First child of `n` whose key is one of `keys` (case-insensitive), or nullptr.
const Node* child(const Tree& t, const Node& n, std::initializer_list<std::string_view> keys) {
  for (std::size_t c : n.children) {
    const Node& k = t.at(c);
    for (auto key : keys)
      if (iequals(k.key, key)) return &k;
  }
  return nullptr;
}

// Value of a child, or an empty view (which every helper reads as missing).
std::string_view value(const Tree& t, const Node* n, std::initializer_list<std::string_view> keys) {
  if (!n) return {};
  const Node* c = child(t, *n, keys);
  return c && c->has_value ? c->value : std::string_view{};
}

template <typename T>
void set(std::optional<T>& field, std::optional<T> v) {
  if (v) field = std::move(v);
}

std::optional<int> as_int(std::optional<std::int64_t> v) {
  if (!v || *v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max())
    return std::nullopt;
  return static_cast<int>(*v);
}

// "GPU 00000000:00:06.0" → normalised bus id.
std::optional<std::string> gpu_header_bus_id(const Node& n) {
  if (n.has_value || !starts_with(n.key, "GPU ")) return std::nullopt;
  return normalize_pci_bus_id(trim(n.key.substr(4)));
}

void read_clock_reasons(const Tree& t, const Node& n, int depth, ClockEventFlags& flags) {
  if (depth > kMaxWalkDepth) return;
  for (std::size_t c : n.children) {
    const Node& k = t.at(c);
    if (k.has_value) {
      auto name = clock_event_name(k.key);
      auto on = active(k.value);
      if (name && on) {
        std::uint64_t bit = clock_event_bit(*name);
        flags.seen |= bit;
        if (*on) flags.active |= bit;
      }
    }
    // HW Thermal / HW Power Brake Slowdown sit indented under HW Slowdown.
    read_clock_reasons(t, k, depth + 1, flags);
  }
}

// Sums the numeric children of an old-style "Single Bit"/"Double Bit" block, preferring Total.
std::optional<std::uint64_t> bit_block_total(const Tree& t, const Node* block) {
  if (!block) return std::nullopt;
  if (const Node* total = child(t, *block, {"Total"}); total && total->has_value)
    if (auto v = count(total->value)) return v;
  std::optional<std::uint64_t> sum;
  for (std::size_t c : block->children) {
    const Node& k = t.at(c);
    if (!k.has_value || iequals(k.key, "Total")) continue;
    if (auto v = count(k.value)) sum = sum.value_or(0) + *v;
  }
  return sum;
}

void read_ecc_counts(const Tree& t, const Node* n, EccCounts& out) {
  if (!n) return;
  const Node* sbe = child(t, *n, {"Single Bit"});
  const Node* dbe = child(t, *n, {"Double Bit"});
  if (sbe || dbe) {
    set(out.corrected, bit_block_total(t, sbe));
    set(out.uncorrected, bit_block_total(t, dbe));
    return;
  }
  std::optional<std::uint64_t> corr, unc;
  bool sram_unc_plain = child(t, *n, {"SRAM Uncorrectable"}) != nullptr;
  for (std::size_t c : n->children) {
    const Node& k = t.at(c);
    if (!k.has_value) continue;
    std::string key = to_lower(k.key);
    if (key.find("threshold") != std::string::npos) continue;
    auto v = count(k.value);
    if (!v) continue;
    if (key == "total corrected" || key == "corrected total") {
      corr = v;
      continue;
    }
    if (key.find("uncorrectable") != std::string::npos) {
      // Newer drivers split SRAM Uncorrectable into Parity and SEC-DED; count one or the other.
      if (sram_unc_plain && key != "sram uncorrectable" && starts_with(key, "sram")) continue;
      unc = unc.value_or(0) + *v;
    } else if (key.find("correctable") != std::string::npos) {
      corr = corr.value_or(0) + *v;
    }
  }
  set(out.corrected, corr);
  set(out.uncorrected, unc);
}

// `fragment`: `g` is a pasted excerpt without its "GPU <bus id>" line (a section alone, or
// `nvidia-smi -q | grep …` lines): keys whose section line was left out are read where they
// are, for the keys that only one section has.
void read_gpu(const Tree& t, const Node& g, GpuFacts& gpu, Facts& out, bool fragment = false) {
  auto v = [&](const Node* n, std::initializer_list<std::string_view> keys) {
    return value(t, n, keys);
  };
  // The section `keys` names, else (in a fragment whose section line is missing) the GPU node
  // itself when it holds one of the `telling` keys only that section has.
  auto section = [&](std::initializer_list<std::string_view> keys,
                     std::initializer_list<std::string_view> telling) -> const Node* {
    if (const Node* n = child(t, g, keys)) return n;
    if (fragment && child(t, g, telling)) return &g;
    return nullptr;
  };
  const Node* self = &g;
  set(gpu.name, text(v(self, {"Product Name"})));
  set(gpu.uuid, text(v(self, {"GPU UUID", "UUID"})));
  set(gpu.serial, text(v(self, {"Serial Number"})));
  set(gpu.vbios, text(v(self, {"VBIOS Version"})));
  if (auto pm = enabled(v(self, {"Persistence Mode"})))
    gpu.persistence_mode = *pm ? "enabled" : "disabled";
  set(gpu.pstate, pstate(v(self, {"Performance State"})));
  set(gpu.recovery_action, text(v(self, {"GPU Recovery Action"})));
  if (const Node* mig = child(t, g, {"MIG Mode"}))
    set(gpu.mig_enabled, enabled(v(mig, {"Current"})));

  // "PCIe Generation" / "Link Width" under PCI > GPU Link Info (whole -q), or straight
  // under the GPU or PCI node in excerpts (`-q -d PCI | sed …`, as the article shows).
  auto read_link = [&](const Node& link) {
    if (const Node* gen = child(t, link, {"PCIe Generation"})) {
      set(gpu.pcie.gen_max, as_int(link_number(v(gen, {"Max"}))));
      set(gpu.pcie.gen_current, as_int(link_number(v(gen, {"Current"}))));
      set(gpu.pcie.gen_device_max, as_int(link_number(v(gen, {"Device Max"}))));
    }
    if (const Node* w = child(t, link, {"Link Width"})) {
      set(gpu.pcie.width_max, as_int(link_number(v(w, {"Max"}))));
      set(gpu.pcie.width_current, as_int(link_number(v(w, {"Current"}))));
    }
  };
  if (const Node* pci = section({"PCI"}, {"Bus Id", "Replays Since Reset"})) {
    if (auto id = text(v(pci, {"Bus Id"}))) set(gpu.pci_bus_id, normalize_pci_bus_id(*id));
    set(gpu.pcie.replay_counter, count(v(pci, {"Replays Since Reset"})));
    if (const Node* link = child(t, *pci, {"GPU Link Info"})) read_link(*link);
    read_link(*pci);
  }
  read_link(g);

  if (const Node* r = section({"Clocks Event Reasons", "Clocks Throttle Reasons"},
                              {"Idle", "Applications Clocks Setting", "SW Power Cap", "HW Slowdown",
                               "HW Thermal Slowdown", "HW Power Brake Slowdown", "Sync Boost",
                               "SW Thermal Slowdown", "Display Clock Setting"})) {
    // A fragment's reasons sit beside the counters (same names, values in µs): only the
    // Active / Not Active lines are read as reasons.
    ClockEventFlags flags;
    read_clock_reasons(t, *r, r == &g ? kMaxWalkDepth - 1 : 0, flags);
    apply_clock_event_flags(flags, gpu.clock_events);
  }
  if (const Node* c = section(
          {"Clocks Event Reasons Counters", "Clocks Throttle Reasons Counters"},
          {"SW Power Capping", "HW Power Braking", "SW Thermal Slowdown", "HW Thermal Slowdown"})) {
    for (std::size_t i : c->children) {
      const Node& k = t.at(i);
      auto key = clock_counter_key(k.key);
      auto ns = k.has_value ? duration_ns(k.value) : std::nullopt;
      if (key && ns) gpu.clock_events.accumulated_ns[*key] = *ns;
    }
  }

  if (const Node* fb = child(t, g, {"FB Memory Usage"})) {
    set(gpu.memory.total_bytes, mib_bytes(v(fb, {"Total"})));
    set(gpu.memory.used_bytes, mib_bytes(v(fb, {"Used"})));
  }
  if (const Node* u = child(t, g, {"Utilization"})) {
    set(gpu.utilization.gpu_pct, as_int(integer(v(u, {"Gpu", "GPU"}))));
    set(gpu.utilization.memory_pct, as_int(integer(v(u, {"Memory"}))));
  }

  if (const Node* m = child(t, g, {"ECC Mode", "Ecc Mode"})) {
    set(gpu.ecc.enabled, enabled(v(m, {"Current", "Current ECC"})));
    set(gpu.ecc.pending_enabled, enabled(v(m, {"Pending", "Pending ECC"})));
  }
  if (const Node* e = section({"ECC Errors"}, {"Volatile", "Aggregate"})) {
    read_ecc_counts(t, child(t, *e, {"Volatile"}), gpu.ecc.volatile_counts);
    read_ecc_counts(t, child(t, *e, {"Aggregate"}), gpu.ecc.aggregate_counts);
  }
  if (const Node* rp = child(t, g, {"Retired Pages"})) {
    set(gpu.ecc.retired_pages_sbe, as_int(integer(v(rp, {"Single Bit ECC"}))));
    set(gpu.ecc.retired_pages_dbe, as_int(integer(v(rp, {"Double Bit ECC"}))));
    set(gpu.ecc.retired_pages_pending, yes_no(v(rp, {"Pending Page Blacklist", "Pending"})));
  }
  if (const Node* rr =
          section({"Remapped Rows"}, {"Remapping Failure Occurred", "Uncorrectable Error"})) {
    set(gpu.ecc.remapped_rows_correctable, as_int(integer(v(rr, {"Correctable Error"}))));
    set(gpu.ecc.remapped_rows_uncorrectable, as_int(integer(v(rr, {"Uncorrectable Error"}))));
    set(gpu.ecc.remapping_pending, yes_no(v(rr, {"Pending"})));
    set(gpu.ecc.remapping_failed, yes_no(v(rr, {"Remapping Failure Occurred"})));
  }

  if (const Node* th = section({"Temperature"}, {"GPU Current Temp", "GPU T.Limit Temp",
                                                 "GPU Shutdown Temp", "GPU Slowdown Temp"})) {
    set(gpu.thermal.gpu_c, as_int(integer(v(th, {"GPU Current Temp"}))));
    set(gpu.thermal.margin_c,
        as_int(integer(v(th, {"GPU T.Limit Temp", "GPU Current T.Limit Temp"}))));
    // Only the absolute thresholds: the "… T.Limit Temp" ones are relative to T.Limit.
    set(gpu.thermal.shutdown_c, as_int(integer(v(th, {"GPU Shutdown Temp"}))));
    set(gpu.thermal.slowdown_c, as_int(integer(v(th, {"GPU Slowdown Temp"}))));
    set(gpu.thermal.gpu_max_operating_c, as_int(integer(v(th, {"GPU Max Operating Temp"}))));
    set(gpu.thermal.memory_max_c, as_int(integer(v(th, {"Memory Max Operating Temp"}))));
    set(gpu.thermal.memory_c, as_int(integer(v(th, {"Memory Current Temp"}))));
  }
  if (const Node* p = section(
          {"GPU Power Readings", "Power Readings"},
          {"Power Draw", "Current Power Limit", "Enforced Power Limit", "Default Power Limit"})) {
    set(gpu.power.draw_w,
        number(v(p, {"Power Draw", "Average Power Draw", "Instantaneous Power Draw"})));
    if (!gpu.power.draw_w)
      set(gpu.power.draw_w, number(v(p, {"Average Power Draw", "Instantaneous Power Draw"})));
    if (!gpu.power.draw_w) set(gpu.power.draw_w, number(v(p, {"Instantaneous Power Draw"})));
    // Old drivers: "Power Limit" (management) and "Enforced Power Limit"; newer ones:
    // "Requested Power Limit" (management) and "Current Power Limit" (enforced).
    set(gpu.power.limit_w, number(v(p, {"Power Limit", "Requested Power Limit"})));
    set(gpu.power.enforced_limit_w, number(v(p, {"Enforced Power Limit", "Current Power Limit"})));
    if (!gpu.power.limit_w) set(gpu.power.limit_w, gpu.power.enforced_limit_w);
    set(gpu.power.default_limit_w, number(v(p, {"Default Power Limit"})));
  }
  if (const Node* c = child(t, g, {"Clocks"})) {
    set(gpu.clocks.sm_mhz, as_int(integer(v(c, {"SM"}))));
    set(gpu.clocks.mem_mhz, as_int(integer(v(c, {"Memory"}))));
  }
  if (const Node* c = child(t, g, {"Max Clocks"})) {
    set(gpu.clocks.sm_max_mhz, as_int(integer(v(c, {"SM"}))));
    set(gpu.clocks.mem_max_mhz, as_int(integer(v(c, {"Memory"}))));
  }
  if (const Node* f = child(t, g, {"Fabric"})) {
    set(gpu.fabric.state, fabric_state(v(f, {"State"})));
    set(gpu.fabric.status, fabric_status(v(f, {"Status"})));
    if (auto id = count(v(f, {"CliqueId", "Clique Id"})); id && *id <= 0xffffffffu)
      gpu.fabric.clique_id = static_cast<std::uint32_t>(*id);
    set(gpu.fabric.cluster_uuid, text(v(f, {"ClusterUUID", "Cluster UUID"})));
    if (const Node* h = child(t, *f, {"Health"}))
      set(gpu.fabric.health_summary, text(v(h, {"Summary"})));
  }

  // Processes: "Process ID : N" with Type/Name/Used GPU Memory indented under it (newer) or
  // as its siblings (older drivers).
  if (const Node* ps = child(t, g, {"Processes"})) {
    ProcessFacts* cur = nullptr;
    auto fill = [&](const Node& k) {
      if (!cur || !k.has_value) return;
      if (iequals(k.key, "Name") || iequals(k.key, "Process Name")) set(cur->name, text(k.value));
      if (iequals(k.key, "Used GPU Memory") || iequals(k.key, "Used Memory"))
        set(cur->used_memory_bytes, mib_bytes(k.value));
    };
    for (std::size_t i : ps->children) {
      const Node& k = t.at(i);
      if (iequals(k.key, "Process ID") || iequals(k.key, "PID")) {
        auto pid = as_int(integer(k.value));
        cur = nullptr;
        if (!pid) continue;
        ProcessFacts pf;
        pf.host_pid = *pid;
        pf.gpu = gpu.index;
        out.processes.push_back(std::move(pf));
        cur = &out.processes.back();
        for (std::size_t j : k.children) fill(t.at(j));
      } else {
        fill(k);
      }
    }
  }

  std::size_t migs = 0;
  for (std::size_t i : g.children)
    if (iequals(t.at(i).key, "MIG Device")) ++migs;
  if (migs) out.notes.push_back(fmt::format("GPU{}: {} MIG device(s) listed", gpu.index, migs));
}

// Keys that only nvidia-smi -q prints, for sniffing.
constexpr std::string_view kQKeys[] = {"Driver Version",
                                       "PCIe Generation",
                                       "Link Width",
                                       "CUDA Version",
                                       "Attached GPUs",
                                       "Product Name",
                                       "Product Brand",
                                       "Persistence Mode",
                                       "GPU Recovery Action",
                                       "GPU UUID",
                                       "VBIOS Version",
                                       "Performance State",
                                       "Clocks Event Reasons",
                                       "Clocks Throttle Reasons",
                                       "Clocks Event Reasons Counters",
                                       "FB Memory Usage",
                                       "BAR1 Memory Usage",
                                       "ECC Mode",
                                       "ECC Errors",
                                       "Retired Pages",
                                       "Remapped Rows",
                                       "GPU Current Temp",
                                       "GPU T.Limit Temp",
                                       "GPU Shutdown Temp",
                                       "GPU Slowdown Temp",
                                       "GPU Power Readings",
                                       "Power Readings",
                                       "Max Clocks",
                                       "Applications Clocks",
                                       "Replays Since Reset",
                                       "SRAM Correctable",
                                       "SRAM Uncorrectable",
                                       "DRAM Correctable",
                                       "DRAM Uncorrectable",
                                       "Single Bit ECC",
                                       "Double Bit ECC",
                                       "Pending Page Blacklist",
                                       "Remapping Failure Occurred",
                                       "SW Power Cap",
                                       "HW Slowdown",
                                       "HW Power Brake Slowdown",
                                       "SW Thermal Slowdown",
                                       "Applications Clocks Setting",
                                       "Minor Number",
                                       "Compute Mode",
                                       "Sparse Operation Mode",
                                       "Memory Current Temp",
                                       "Fabric",
                                       "CliqueId",
                                       "ClusterUUID",
                                       "Correctable Error",
                                       "Uncorrectable Error",
                                       "Bank Remap Availability Histogram",
                                       "HW Thermal Slowdown",
                                       "HW Power Braking",
                                       "SW Power Capping",
                                       "GPU Link Info"};

bool is_nvsmi_error(std::string_view line) {
  return line.find("Failed to parse --display") != std::string_view::npos ||
         line.find("Invalid combination of input arguments") != std::string_view::npos ||
         (line.find("nvidia-smi -h") != std::string_view::npos &&
          line.find("Please run") != std::string_view::npos);
}

}  // namespace

int sniff_nvsmi_q(std::string_view text) {
  std::size_t known = 0, headers = 0, errors = 0, lines = 0;
  bool banner = false;
  text_scan::LineReader reader(text, kSniffBytes);
  for (std::string_view raw; reader.next(raw);) {
    if (++lines > kSniffLines) break;
    std::string_view line = trim(raw);
    if (line.empty()) continue;
    if (line.find("NVSMI LOG") != std::string_view::npos && starts_with(line, "===="))
      banner = true;
    if (is_nvsmi_error(line)) ++errors;
    std::string_view key, val;
    bool kv = split_key_value(line, key, val);
    if (!kv && starts_with(key, "GPU ") && normalize_pci_bus_id(trim(key.substr(4)))) ++headers;
    for (auto k : kQKeys)
      if (key == k) {
        ++known;
        break;
      }
  }
  if (banner) return 100;
  if (headers && known >= 2) return 90;
  if (known >= 4) return 80;
  if (known >= 2) return 50;
  // `$ nvidia-smi -q | grep …` above a line or two: the command says what they are.
  if (known >= 1 && runs_nvsmi_query(pasted_command(text))) return 60;
  if (errors) return 25;  // an nvidia-smi refusal (e.g. an unknown -d section): noted, not facts
  return 0;
}

namespace {

// A headerless excerpt cut where its first "Key" line (same key, same indent) comes back.
std::vector<std::string_view> fragment_chunks(std::string_view text) {
  std::vector<std::string_view> chunks;
  std::string_view first_key;
  std::size_t first_indent = 0, chunk_start = 0;
  bool have_first = false;
  for (std::size_t pos = 0; pos < text.size();) {
    auto nl = text.find('\n', pos);
    const std::size_t end = nl == std::string_view::npos ? text.size() : nl;
    const std::string_view raw = text.substr(pos, end - pos);
    const std::string_view line = trim(raw);
    if (!line.empty() && !is_elision(line) && !is_grep_separator(line) && !is_command_line(line) &&
        line.find("NVSMI LOG") == std::string_view::npos) {
      std::string_view key, value;
      split_key_value(line, key, value);
      const std::size_t indent = indent_of(raw);
      if (!have_first) {
        have_first = true;
        first_key = key;
        first_indent = indent;
      } else if (key == first_key && indent == first_indent && chunks.size() + 1 < kMaxGpus) {
        chunks.push_back(text.substr(chunk_start, pos - chunk_start));
        chunk_start = pos;
      }
    }
    pos = end + 1;
  }
  chunks.push_back(text.substr(std::min(chunk_start, text.size())));
  return chunks;
}

Status read_nvsmi_q(std::string_view text, Facts& out) {
  Tree t = build_tree(text);
  const Node& root = t.root();

  set(out.host.driver_version, nvsmi::text(value(t, &root, {"Driver Version"})));
  if (!out.host.driver_version)
    set(out.host.driver_version, nvsmi::text(value(t, &root, {"KMD Version"})));
  set(out.host.cuda_driver_version, nvsmi::text(value(t, &root, {"CUDA Version"})));
  nvsmi::read_timestamp(value(t, &root, {"Timestamp"}), out);
  if (!out.host.cuda_driver_version)
    set(out.host.cuda_driver_version, nvsmi::text(value(t, &root, {"CUDA UMD Version"})));
  auto attached = count(value(t, &root, {"Attached GPUs"}));

  std::vector<const Node*> sections;
  for (std::size_t i : root.children)
    if (gpu_header_bus_id(t.at(i))) sections.push_back(&t.at(i));
  if (sections.size() > kMaxGpus) {
    out.notes.push_back(
        fmt::format("nvidia-smi -q: more than {} GPU sections; the rest ignored", kMaxGpus));
    sections.resize(kMaxGpus);
  }

  if (sections.empty()) {
    // A -d excerpt pasted without its "GPU …" line: read what is there as one GPU.
    bool any_section = false;
    for (std::size_t i : root.children) {
      const Node& k = t.at(i);
      if (!k.children.empty() || iequals(k.key, "Product Name") ||
          iequals(k.key, "Performance State"))
        any_section = true;
      // `-q | grep …` keeps lines, not sections: a line only -q prints is enough.
      for (auto known : kQKeys)
        if (k.key == known) any_section = true;
    }
    if (!any_section) {
      for (std::string_view raw : split_lines(text)) {
        if (is_nvsmi_error(raw)) {
          out.notes.push_back(fmt::format("nvidia-smi refused the command: \"{}\"",
                                          std::string(trim(raw.substr(0, 200)))));
          return Status::ok();
        }
      }
      if (out.host.driver_version) return Status::ok();
      out.notes.push_back("nvidia-smi -q: no GPU section found");
      return Status::invalid_input("nvidia-smi -q: nothing readable");
    }
    // One GPU's excerpt, or several GPUs' (`-q | grep …` prints each GPU's lines in turn): a
    // new GPU begins where the excerpt's first line comes again.
    const auto chunks = fragment_chunks(text);
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      const Tree ct = build_tree(chunks[i]);
      GpuFacts gpu;
      gpu.index = static_cast<int>(i);
      read_gpu(ct, ct.root(), gpu, out, /*fragment=*/true);
      out.gpus.push_back(std::move(gpu));
    }
    if (out.gpus.size() == 1)
      out.notes.push_back(
          "nvidia-smi -q excerpt without a \"GPU <bus id>\" line: read as one GPU (GPU0)");
    else
      out.notes.push_back(fmt::format(
          "nvidia-smi -q excerpt without \"GPU <bus id>\" lines: its first line comes back {} "
          "times, read as GPU0–GPU{} in the order shown",
          out.gpus.size(), out.gpus.size() - 1));
    return Status::ok();
  }

  // `nvidia-smi -q -l N` repeats the whole report: the same bus ids every `attached` sections.
  // Those are samples of the same GPUs, one GPU each; the last sample is the state at the end.
  std::size_t first = 0;
  if (attached && *attached > 0 && sections.size() > *attached &&
      sections.size() % *attached == 0) {
    bool periodic = true;
    for (std::size_t i = *attached; i < sections.size() && periodic; ++i) {
      const auto a = gpu_header_bus_id(*sections[i]);
      periodic = a && a == gpu_header_bus_id(*sections[i % *attached]);
    }
    if (periodic) {
      first = sections.size() - *attached;
      out.notes.push_back(fmt::format(
          "nvidia-smi -q: {} samples of the same {} GPU(s) (a looped run, -l); the last one read",
          sections.size() / *attached, *attached));
    }
  }
  for (std::size_t i = first; i < sections.size(); ++i) {
    GpuFacts gpu;
    gpu.index = static_cast<int>(i - first);
    gpu.pci_bus_id = gpu_header_bus_id(*sections[i]);
    read_gpu(t, *sections[i], gpu, out);
    out.gpus.push_back(std::move(gpu));
  }
  if (attached && *attached != sections.size() - first)
    out.notes.push_back(fmt::format(
        "Attached GPUs says {} but the output shows {} GPU section(s) (filtered with -i, or cut); "
        "indices here count the sections shown and may not be NVML indices",
        *attached, sections.size()));
  return Status::ok();
}

}  // namespace

// A GPU nvidia-smi cannot reach has no section, only its error line above the others.
Status import_nvsmi_q(std::string_view text, Facts& out) {
  Status st = read_nvsmi_q(text, out);
  if (nvsmi::read_error_lines(text, out) > 0) return Status::ok();
  return st;
}

// ================================================================== nvidia-smi -L

namespace {

struct ListLine {
  bool mig = false;
  std::optional<int> index;
  std::string name;
  std::optional<std::string> uuid;
  std::optional<std::string> serial;
};

// "GPU 0: NAME (UUID: GPU-…)" or "  MIG 1g.10gb     Device  0: (UUID: MIG-…)".
std::optional<ListLine> parse_list_line(std::string_view raw) {
  std::string_view line = trim(raw);
  ListLine l;
  if (starts_with(line, "GPU ")) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    auto idx = parse_int(line.substr(4, colon - 4));
    if (!idx || *idx < 0 || *idx > 100000) return std::nullopt;
    l.index = static_cast<int>(*idx);
    line = trim(line.substr(colon + 1));
  } else if (starts_with(line, "MIG ")) {
    auto dev = line.find("Device");
    auto colon = line.find(':');
    if (dev == std::string_view::npos || colon == std::string_view::npos || colon < dev)
      return std::nullopt;
    l.mig = true;
    line = trim(line.substr(colon + 1));
  } else {
    return std::nullopt;
  }
  // Trailing "(UUID: …)" / "(S/N: …)" groups.
  bool any = false;
  while (!line.empty() && line.back() == ')') {
    auto open = line.rfind('(');
    if (open == std::string_view::npos) break;
    std::string_view group = line.substr(open + 1, line.size() - open - 2);
    std::string_view key, val;
    if (!split_key_value(group, key, val)) break;
    if (key == "UUID") {
      l.uuid = std::string(val);
      any = true;
    } else if (key == "S/N") {
      l.serial = std::string(val);
      any = true;
    } else {
      break;
    }
    line = trim(line.substr(0, open));
  }
  if (!any) return std::nullopt;
  l.name = std::string(line);
  return l;
}

}  // namespace

int sniff_nvsmi_list(std::string_view text) {
  std::size_t gpus = 0, migs = 0, other = 0, lines = 0;
  bool link_words = false;
  text_scan::LineReader reader(text, kSniffBytes);
  for (std::string_view raw; reader.next(raw);) {
    if (++lines > kSniffLines) break;
    if (trim(raw).empty()) continue;
    auto l = parse_list_line(raw);
    if (!l) {
      ++other;
      // `nvidia-smi nvlink -s` prints the same "GPU N: … (UUID: …)" lines before its links.
      if (to_lower(raw).find("link") != std::string::npos) link_words = true;
    } else if (l->mig) {
      ++migs;
    } else {
      ++gpus;
    }
  }
  if (gpus == 0 || link_words) return 0;
  if (other == 0) return 95;
  if (gpus + migs >= other) return 40;
  return 0;
}

Status import_nvsmi_list(std::string_view text, Facts& out) {
  GpuFacts* last = nullptr;
  std::size_t last_migs = 0;
  auto flush = [&] {
    if (last && last_migs)
      out.notes.push_back(fmt::format("GPU{}: {} MIG device(s) listed", last->index, last_migs));
  };
  for (std::string_view raw : split_lines(text)) {
    auto l = parse_list_line(raw);
    if (!l) continue;
    if (l->mig) {
      if (last) {
        last->mig_enabled = true;  // MIG devices exist only in MIG mode
        ++last_migs;
      }
      continue;
    }
    flush();
    if (out.gpus.size() == kMaxGpus) {
      last = nullptr;
      out.notes.push_back(
          fmt::format("nvidia-smi -L: more than {} GPUs; the rest ignored", kMaxGpus));
      break;
    }
    GpuFacts gpu;
    gpu.index = *l->index;
    if (!l->name.empty() && !is_missing(l->name)) gpu.name = l->name;
    gpu.uuid = l->uuid;
    gpu.serial = l->serial;
    out.gpus.push_back(std::move(gpu));
    last = &out.gpus.back();
    last_migs = 0;
  }
  flush();
  if (out.gpus.empty()) {
    out.notes.push_back("nvidia-smi -L: no \"GPU N: … (UUID: …)\" line");
    return Status::invalid_input("nvidia-smi -L: nothing readable");
  }
  return Status::ok();
}

}  // namespace gpuvet::import
