// src/baseline/baseline_file.cc — the baseline file: written from a node's print with comments
// that say where each value came from, read back strictly (an unknown key or a wrong type is
// an error naming it: a typo must never turn a check off silently).
#include "core/toml_document.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "core/small_file.h"
#include "gpuvet/baseline.h"

namespace gpuvet {
namespace {

constexpr std::size_t kMaxBaselineBytes = std::size_t{1} << 20;
constexpr const char* kSchema = "gpuvet.baseline/1";

std::string toml_quoted(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\u{:04X}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string number(double v) {
  std::string s = fmt::format("{:.2f}", v);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (s.back() == '.') s += '0';
  return s;
}

// "key = value   # comment", the comments aligned.
void line(std::string& out, std::string_view key, std::string_view value,
          std::string_view comment = {}) {
  std::string kv = fmt::format("{} = {}", key, value);
  if (comment.empty()) {
    out += kv + "\n";
  } else {
    out += fmt::format("{:<34} # {}\n", kv, comment);
  }
}

const char* compare_name(Expect e) { return e == Expect::kAtLeast ? "at_least" : "equal"; }

}  // namespace

std::string baseline_toml(const NodePrint& print, const std::vector<Floor>& floors,
                          std::string_view provenance, std::string_view now) {
  std::string out;
  out += "# gpuvet baseline: what every healthy node of one server model must show.\n";
  out += fmt::format("# Captured {} on {} by gpuvet {}.\n", provenance, now, GPUVET_VERSION);
  out +=
      "# `gpuvet gate --baseline THIS_FILE` compares a node with it. Edit freely: delete a line\n"
      "# to stop checking that value; unknown keys are refused, so a typo cannot switch a check\n"
      "# off. Reference: docs/baseline.md.\n";
  line(out, "schema", toml_quoted(kSchema));
  const std::string name =
      fmt::format("{} x {}", print.gpu_count, print.gpu_model.value_or("unknown GPU"));
  line(out, "name", toml_quoted(name), "a name for the server model");
  out += "\n[node]\n";
  line(out, "gpu_count", fmt::format("{}", print.gpu_count), "GPUs NVML lists");
  if (print.gpu_model) line(out, "gpu_model", toml_quoted(*print.gpu_model), "NVML device name");
  if (print.driver_version)
    line(out, "driver", toml_quoted(*print.driver_version), "NVIDIA kernel driver");

  for (const auto& g : print.gpus) {
    out += fmt::format("\n[[gpu]]{}\n", &g == &print.gpus.front()
                                            ? "                            # one table per GPU, "
                                              "by NVML index"
                                            : "");
    line(out, "index", fmt::format("{}", g.index));
    if (g.pci_bus_id) line(out, "pci_bus_id", toml_quoted(*g.pci_bus_id), "the slot");
    if (g.pcie_gen_max)
      line(out, "pcie_gen_max", fmt::format("{}", *g.pcie_gen_max),
           "max PCIe generation of GPU and slot (NVML)");
    if (g.pcie_width_max)
      line(out, "pcie_width_max", fmt::format("{}", *g.pcie_width_max),
           "max lanes; the current width must reach it");
    if (g.numa_node) line(out, "numa_node", fmt::format("{}", *g.numa_node), "sysfs numa_node");
    if (g.nvlinks_up)
      line(out, "nvlinks_up", fmt::format("{}", *g.nvlinks_up), "active NVLink links (NVML)");
    if (g.fabric) line(out, "fabric", toml_quoted(*g.fabric), "NVSwitch fabric state (NVML)");
    if (g.vbios) line(out, "vbios", toml_quoted(*g.vbios), "VBIOS version");
    if (g.ecc_enabled) line(out, "ecc", *g.ecc_enabled ? "true" : "false", "ECC mode");
    if (g.power_limit_w)
      line(out, "power_limit_w", number(*g.power_limit_w), "power limit in force (NVML)");
  }

  if (!print.pairs.empty()) {
    out += "\n[paths]  # nvidia-smi topo -m: NV# (bonded NVLinks), PIX, PXB, PHB, NODE, SYS\n";
    for (const auto& p : print.pairs)
      if (p.path != "?") line(out, toml_quoted(pair_label(p.a, p.b)), toml_quoted(p.path));
    out += "\n[p2p]  # read P2P status (nvidia-smi topo -p2p r): OK, NS, CNS, GNS, TNS, DR\n";
    for (const auto& p : print.pairs)
      if (p.p2p && *p.p2p != "U") line(out, toml_quoted(pair_label(p.a, p.b)), toml_quoted(*p.p2p));
  }

  out += "\n[compare]  # how configuration values compare: \"equal\" or \"at_least\"\n";
  line(out, "driver", toml_quoted(compare_name(Expect::kEqual)));
  line(out, "vbios", toml_quoted(compare_name(Expect::kEqual)));
  line(out, "power_limit_w", toml_quoted(compare_name(Expect::kEqual)));

  if (!floors.empty())
    out += "\n# Bandwidth floors (GB/s), checked by `gpuvet gate --profile full`.\n";
  for (const auto& f : floors) {
    out += "[[floor]]\n";
    line(out, "key", toml_quoted(f.value.key), "h2d, d2h, peer or allreduce_busbw");
    line(out, "subject", toml_quoted(f.value.subject));
    if (f.value.size_bytes) line(out, "size_bytes", fmt::format("{}", *f.value.size_bytes));
    line(out, "gbps", number(f.value.gbps));
    line(out, "source", toml_quoted(f.source));
  }
  out += "\n# Written last: gate refuses a baseline without it (a file cut short).\n[end]\n";
  return out;
}

namespace {

// Strict reading: every table knows its keys; each accessor says which key was wrong.
class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  Status error(const std::string& what) const {
    return Status::invalid_input(fmt::format("{}: {}", origin_, what));
  }

  Status keys(const toml::table& t, std::string_view where,
              std::initializer_list<std::string_view> allowed) const {
    for (const auto& [k, v] : t) {
      bool ok = false;
      for (auto a : allowed) ok = ok || k.str() == a;
      if (!ok)
        return error(fmt::format("unknown key '{}'{} (see docs/baseline.md)", k.str(),
                                 where.empty() ? "" : fmt::format(" in {}", where)));
    }
    return Status::ok();
  }

  template <class T>
  Status get(const toml::table& t, std::string_view key, std::string_view where,
             std::optional<T>& out) const {
    const toml::node* n = t.get(key);
    if (!n) return Status::ok();
    const auto where_key = where.empty() ? std::string(key) : fmt::format("{}.{}", where, key);
    if constexpr (std::is_same_v<T, std::string>) {
      if (const auto* v = n->as_string()) {
        out = v->get();
        return Status::ok();
      }
      return error(fmt::format("'{}' must be a string", where_key));
    } else if constexpr (std::is_same_v<T, bool>) {
      if (const auto* v = n->as_boolean()) {
        out = v->get();
        return Status::ok();
      }
      return error(fmt::format("'{}' must be true or false", where_key));
    } else if constexpr (std::is_same_v<T, int>) {
      if (const auto* v = n->as_integer(); v && v->get() >= 0 && v->get() <= 1'000'000) {
        out = static_cast<int>(v->get());
        return Status::ok();
      }
      return error(fmt::format("'{}' must be a whole number from 0 to 1000000", where_key));
    } else {
      std::optional<double> d;
      if (const auto* v = n->as_floating_point()) d = v->get();
      if (const auto* v = n->as_integer()) d = static_cast<double>(v->get());
      if (!d || !std::isfinite(*d) || *d < 0)
        return error(fmt::format("'{}' must be a finite number, not negative", where_key));
      out = *d;
      return Status::ok();
    }
  }

 private:
  std::string origin_;
};

#define GPUVET_TRY_STATUS(expr)                     \
  do {                                              \
    if (Status s_ = (expr); !s_.is_ok()) return s_; \
  } while (0)

Result<Expect> expect_of(const Reader& r, const toml::table& t, std::string_view key) {
  std::optional<std::string> v;
  GPUVET_TRY_STATUS(r.get(t, key, "compare", v));
  if (!v || *v == "equal") return Expect::kEqual;
  if (*v == "at_least") return Expect::kAtLeast;
  return r.error(
      fmt::format("'compare.{}' must be \"equal\" or \"at_least\", not \"{}\"", key, *v));
}

// Digits only, 1 to `most` of them (fixed formats are scanned by hand: no std::regex, whose
// executor recurses per character and overflows the stack on a long value).
bool all_digits(std::string_view s, std::size_t most) {
  if (s.empty() || s.size() > most) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool known_path(const std::string& p) {
  if (p.rfind("NV", 0) == 0) return p.size() == 2 || all_digits(std::string_view(p).substr(2), 4);
  return p == "PIX" || p == "PXB" || p == "PHB" || p == "NODE" || p == "SYS";
}

// "GPU<a>-GPU<b>", a and b of 1 to 4 digits.
std::optional<std::pair<int, int>> pair_key(std::string_view key) {
  if (key.rfind("GPU", 0) != 0) return std::nullopt;
  const std::size_t dash = key.find("-GPU");
  if (dash == std::string_view::npos) return std::nullopt;
  const std::string_view a = key.substr(3, dash - 3), b = key.substr(dash + 4);
  if (!all_digits(a, 4) || !all_digits(b, 4)) return std::nullopt;
  return std::pair{std::stoi(std::string(a)), std::stoi(std::string(b))};
}

bool known_p2p(const std::string& p) {
  static const std::set<std::string> kCodes = {"OK", "NS", "CNS", "GNS", "TNS", "DR"};
  return kCodes.count(p) > 0;
}

}  // namespace

Result<Baseline> parse_baseline(std::string_view toml_text, std::string_view origin) {
  Baseline b;
  b.origin = std::string(origin);
  b.digest = text_hash(toml_text);
  auto parsed = parse_toml(toml_text, std::string(origin));
  if (!parsed.is_ok()) return parsed.status();
  const Reader r{std::string(origin)};
  const toml::table& root = parsed.value();
  GPUVET_TRY_STATUS(r.keys(
      root, "", {"schema", "name", "node", "gpu", "paths", "p2p", "compare", "floor", "end"}));
  std::optional<std::string> schema;
  GPUVET_TRY_STATUS(r.get(root, "schema", "", schema));
  if (!schema) return r.error(fmt::format("no 'schema' key (expected \"{}\")", kSchema));
  if (*schema != kSchema)
    return r.error(fmt::format("schema \"{}\" is not \"{}\"", *schema, kSchema));
  GPUVET_TRY_STATUS(r.get(root, "name", "", b.name));
  // gpuvet writes [end] last: a file without it was cut short (a full disk, a copy that
  // stopped), and whatever it lost would go unchecked.
  const toml::node* end = root.get("end");
  if (!end)
    return r.error(
        "no [end] table: the file was cut short (gpuvet writes [end] last). A baseline written "
        "by an older gpuvet has none: check that it is whole, then add a last line \"[end]\"");
  if (!end->as_table() || !end->as_table()->empty())
    return r.error("[end] must be an empty table, the file's last line");

  const toml::table* node = root["node"].as_table();
  if (!node) return r.error("no [node] table (gpu_count at least)");
  GPUVET_TRY_STATUS(r.keys(*node, "[node]", {"gpu_count", "gpu_model", "driver"}));
  std::optional<int> count;
  GPUVET_TRY_STATUS(r.get(*node, "gpu_count", "node", count));
  if (!count) return r.error("[node] has no gpu_count");
  b.expect.gpu_count = *count;
  GPUVET_TRY_STATUS(r.get(*node, "gpu_model", "node", b.expect.gpu_model));
  GPUVET_TRY_STATUS(r.get(*node, "driver", "node", b.expect.driver_version));

  if (const toml::node* gpus = root.get("gpu")) {
    const toml::array* arr = gpus->as_array();
    if (!arr || !arr->is_array_of_tables())
      return r.error("'gpu' must be an array of tables ([[gpu]])");
    std::set<int> seen;
    for (const auto& item : *arr) {
      const toml::table& t = *item.as_table();
      GPUVET_TRY_STATUS(
          r.keys(t, "[[gpu]]",
                 {"index", "pci_bus_id", "pcie_gen_max", "pcie_width_max", "numa_node",
                  "nvlinks_up", "fabric", "vbios", "ecc", "power_limit_w"}));
      std::optional<int> index;
      GPUVET_TRY_STATUS(r.get(t, "index", "gpu", index));
      if (!index) return r.error("a [[gpu]] table has no index");
      if (*index >= b.expect.gpu_count)
        return r.error(
            fmt::format("[[gpu]] index {} is outside gpu_count {}", *index, b.expect.gpu_count));
      if (!seen.insert(*index).second)
        return r.error(fmt::format("two [[gpu]] tables have index {}", *index));
      GpuPrint g;
      g.index = *index;
      const std::string where = fmt::format("gpu[{}]", *index);
      GPUVET_TRY_STATUS(r.get(t, "pci_bus_id", where, g.pci_bus_id));
      GPUVET_TRY_STATUS(r.get(t, "pcie_gen_max", where, g.pcie_gen_max));
      GPUVET_TRY_STATUS(r.get(t, "pcie_width_max", where, g.pcie_width_max));
      GPUVET_TRY_STATUS(r.get(t, "numa_node", where, g.numa_node));
      GPUVET_TRY_STATUS(r.get(t, "nvlinks_up", where, g.nvlinks_up));
      GPUVET_TRY_STATUS(r.get(t, "fabric", where, g.fabric));
      GPUVET_TRY_STATUS(r.get(t, "vbios", where, g.vbios));
      GPUVET_TRY_STATUS(r.get(t, "ecc", where, g.ecc_enabled));
      GPUVET_TRY_STATUS(r.get(t, "power_limit_w", where, g.power_limit_w));
      b.expect.gpus.push_back(std::move(g));
    }
    std::sort(b.expect.gpus.begin(), b.expect.gpus.end(),
              [](const GpuPrint& x, const GpuPrint& y) { return x.index < y.index; });
  }

  // [paths] and [p2p]: "GPU<a>-GPU<b>" = value, a < b < gpu_count.
  std::map<std::pair<int, int>, PairPrint> pairs;
  for (const char* table : {"paths", "p2p"}) {
    const toml::node* n = root.get(table);
    if (!n) continue;
    const toml::table* t = n->as_table();
    if (!t) return r.error(fmt::format("'{}' must be a table", table));
    for (const auto& [k, v] : *t) {
      const std::string key(k.str());
      const auto ab = pair_key(key);
      if (!ab)
        return r.error(fmt::format("[{}] key '{}' is not a pair like \"GPU0-GPU1\"", table,
                                   key.substr(0, 80)));
      const auto [a, bb] = *ab;
      if (a >= bb || bb >= b.expect.gpu_count)
        return r.error(fmt::format("[{}] pair '{}' needs GPU<a>-GPU<b> with a < b < gpu_count {}",
                                   table, key, b.expect.gpu_count));
      const auto* s = v.as_string();
      if (!s) return r.error(fmt::format("[{}] '{}' must be a string", table, key));
      const std::string value = s->get();
      const bool paths = std::string_view(table) == "paths";
      if (paths ? !known_path(value) : !known_p2p(value))
        return r.error(
            fmt::format("[{}] '{}' = \"{}\" is not one of {}", table, key, value,
                        paths ? "NV<n>, PIX, PXB, PHB, NODE, SYS" : "OK, NS, CNS, GNS, TNS, DR"));
      PairPrint& p = pairs[{a, bb}];
      p.a = a;
      p.b = bb;
      if (paths)
        p.path = value;
      else
        p.p2p = value;
    }
  }
  for (auto& [k, p] : pairs) b.expect.pairs.push_back(std::move(p));

  if (const toml::node* n = root.get("compare")) {
    const toml::table* t = n->as_table();
    if (!t) return r.error("'compare' must be a table");
    GPUVET_TRY_STATUS(r.keys(*t, "[compare]", {"driver", "vbios", "power_limit_w"}));
    for (auto [key, field] :
         {std::pair{"driver", &Baseline::driver}, std::pair{"vbios", &Baseline::vbios},
          std::pair{"power_limit_w", &Baseline::power_limit}}) {
      auto e = expect_of(r, *t, key);
      if (!e.is_ok()) return e.status();
      b.*field = e.value();
    }
  }

  if (const toml::node* n = root.get("floor")) {
    const toml::array* arr = n->as_array();
    if (!arr || !arr->is_array_of_tables())
      return r.error("'floor' must be an array of tables ([[floor]])");
    static const std::set<std::string> kKeys = {"h2d", "d2h", "peer", "allreduce_busbw"};
    for (const auto& item : *arr) {
      const toml::table& t = *item.as_table();
      GPUVET_TRY_STATUS(r.keys(t, "[[floor]]", {"key", "subject", "size_bytes", "gbps", "source"}));
      std::optional<std::string> key, subject, source;
      std::optional<double> gbps, size;
      GPUVET_TRY_STATUS(r.get(t, "key", "floor", key));
      GPUVET_TRY_STATUS(r.get(t, "subject", "floor", subject));
      GPUVET_TRY_STATUS(r.get(t, "source", "floor", source));
      GPUVET_TRY_STATUS(r.get(t, "gbps", "floor", gbps));
      GPUVET_TRY_STATUS(r.get(t, "size_bytes", "floor", size));
      if (!key || !kKeys.count(*key))
        return r.error("a [[floor]] needs key = \"h2d\", \"d2h\", \"peer\" or \"allreduce_busbw\"");
      if (!subject || !gbps)
        return r.error(fmt::format("the [[floor]] of key \"{}\" needs a subject and gbps", *key));
      Floor f;
      f.value.key = *key;
      f.value.subject = *subject;
      f.value.gbps = *gbps;
      if (size) f.value.size_bytes = static_cast<std::uint64_t>(*size);
      f.source = source.value_or("");
      b.floors.push_back(std::move(f));
    }
  }
  return b;
}

Result<Baseline> read_baseline_file(const std::string& path) {
  auto text = read_small_file(path, kMaxBaselineBytes, "baseline file");
  if (!text.is_ok()) return text.status();
  return parse_baseline(text.value(), path);
}

}  // namespace gpuvet
