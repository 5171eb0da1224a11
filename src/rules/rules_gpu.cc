// rules/rules_gpu.cc — the GPU rule groups.
//
// check_inventory: is every GPU there (task 1), answering (task 7), alike (symptom 7), and
// is the driver itself answering in reasonable time. check_gpu_health: thermal, power and
// clocks (task 5), ECC (task 6), Xid events (task 7), utilisation that lies (symptom 1) and
// clocks that sag over minutes of load (symptom 3).
//
// Rules only say what they saw; meaning and decision come from the catalog.
#include <algorithm>
#include <cstdint>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/util.h"
#include "hw/xid_table.h"
#include "rules/node_wide.h"
#include "rules/rule.h"

namespace gpuvet::rules {
namespace {

// Fixed parts of the rule definitions (not operator tunables, hence not in Thresholds).
// "Utilisation" this high is the GPU claiming to be fully busy (utilization-misleading).
constexpr int kMisleadingUtilPct = 90;
// An SM clock under half its max while "100 % busy" is a GPU that is waiting, not computing.
constexpr double kMisleadingClockFraction = 0.5;
// Power limits that differ by less than this are the same setting read with rounding.
constexpr double kPowerLimitSpread = 0.05;
// Kernel log lines quoted in evidence are cut here: evidence is a sentence, not a log.
constexpr std::size_t kMaxQuotedChars = 160;

// ---------------------------------------------------------------- small text helpers

std::string watts(double w) { return format_number(w, 2); }
std::string percent(double fraction) { return format_number(fraction * 100, 0); }

// "850 ms", "4.2 s".
std::string ms_text(double ms) {
  if (ms < 1000) return format_number(ms, 0) + " ms";
  return format_number(ms / 1000, 1) + " s";
}

// An age or a duration in the unit a reader thinks in.
std::string age_text(double s) {
  if (s < 120) return format_number(s, 0) + " s";
  if (s < 2 * 3600) return format_number(s / 60, 0) + " min";
  if (s < 48 * 3600) return format_number(s / 3600, 1) + " h";
  return format_number(s / 86400, 0) + " days";
}

std::string utc_text(std::int64_t t) { return format_utc(t, "%Y-%m-%d %H:%M:%S UTC"); }

std::string quote(std::string_view s) {
  s = trim(s);
  if (s.size() <= kMaxQuotedChars) return std::string(s);
  return std::string(s.substr(0, kMaxQuotedChars)) + "…";
}

// " (util 97 %, 147/150 W)" or "" when nothing about the load is known.
std::string load_suffix(const GpuFacts& g) {
  const std::string load = load_phrase(g);
  return load.empty() ? "" : " (" + load + ")";
}

bool has_reason(const GpuFacts& g, std::string_view name) {
  const auto& a = g.clock_events.active;
  return std::find(a.begin(), a.end(), name) != a.end();
}

bool is_hex(char ch) {
  return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

// The first PCI bus id in a kernel log line ("0000:65:00.0", "PCI:0000:65:00"), normalised.
// A domain of at least four hex digits is required so that a wall-clock time such as
// "09:41:02" in the line's timestamp is never read as a bus id.
std::optional<std::string> bus_id_in(std::string_view line) {
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (!is_hex(line[i]) || (i > 0 && is_hex(line[i - 1]))) continue;
    std::size_t j = i;
    while (j < line.size() && is_hex(line[j])) ++j;
    if (j - i < 4 || j - i > 8 || j >= line.size() || line[j] != ':') continue;
    std::size_t k = i;
    while (k < line.size() && (is_hex(line[k]) || line[k] == ':' || line[k] == '.')) ++k;
    std::string_view token = line.substr(i, k - i);
    while (!token.empty() && (token.back() == ':' || token.back() == '.')) token.remove_suffix(1);
    if (auto id = normalize_pci_bus_id(token)) return id;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------- inventory

const SourceInfo* find_source(const Facts& f, std::string_view name) {
  for (const auto& s : f.sources)
    if (s.name == name) return &s;
  return nullptr;
}

// Why the driver gave no GPU facts: the failed NVML source says it best; otherwise a note
// that names NVML, else the latest one that names the driver (the host notes — procfs,
// sysfs — come first and are seldom the reason).
std::string driver_failure(const Facts& f) {
  if (const SourceInfo* s = find_source(f, "nvml"); s && !s->ok && !s->detail.empty())
    return s->detail;
  for (const auto& n : f.notes)
    if (to_lower(n).find("nvml") != std::string::npos) return n;
  for (auto it = f.notes.rbegin(); it != f.notes.rend(); ++it)
    if (to_lower(*it).find("driver") != std::string::npos) return *it;
  if (!f.notes.empty()) return f.notes.back();
  return "no reason recorded";
}

std::string gpu_list(const Facts& f) {
  std::vector<std::string> parts;
  for (const auto& g : f.gpus)
    parts.push_back(g.name ? gpu_subject(g.index) + " " + *g.name : gpu_subject(g.index));
  return join(parts, ", ");
}

void check_gpu_count(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  const SourceInfo* nvml = find_source(f, "nvml");
  const bool nvml_failed = nvml && !nvml->ok;
  // Offline files that describe no GPU at all (a dmesg, an iostat) say nothing about the
  // GPUs: that is a gap in the input, not a missing GPU. (The directory loader also marks
  // such input gpu_facts_unavailable, hence the check on a failed NVML source.)
  if (f.gpus.empty() && !f.imported.empty() && !nvml_failed) {
    e.note("no GPU inventory in the input: GPU checks skipped");
    return;
  }
  const std::size_t seen = f.gpus.size();
  if (f.gpu_facts_unavailable) {
    std::string evidence;
    if (c.options.expect_gpus)
      evidence = fmt::format("{} of {} expected GPUs visible; ", seen, *c.options.expect_gpus);
    const std::string why = driver_failure(f);
    evidence += "the driver/NVML gave no GPU facts: " + quote(why);
    Finding& fd = e.add("gpu-missing", Severity::kCritical, {"host"}, std::move(evidence));
    if (c.options.expect_gpus)
      measure(fd, "gpu_count", "count", static_cast<double>(seen), *c.options.expect_gpus,
              Bound::kAtLeast);
    // No driver library at all: install or load the driver, not a hardware fault.
    if (to_lower(why).find("not found") != std::string::npos) {
      fd.action = Action::kFixConfig;
      fd.decision_note =
          "No NVIDIA driver library here: install or load the driver (lsmod | grep nvidia; the "
          "driver package matching the kernel), and in a container check that the runtime "
          "mounts it (nvidia-container-toolkit, --gpus).";
    }
    return;
  }
  if (c.options.expect_gpus) {
    const auto expected = static_cast<std::size_t>(std::max(0, *c.options.expect_gpus));
    if (seen < expected) {
      std::string evidence = fmt::format("{} of {} expected GPUs visible", seen, expected);
      if (seen > 0) evidence += " (" + gpu_list(f) + ")";
      measure(e.add("gpu-missing", Severity::kCritical, {"host"}, std::move(evidence)), "gpu_count",
              "count", static_cast<double>(seen), static_cast<double>(expected), Bound::kAtLeast);
    } else if (seen > expected) {
      e.note(fmt::format("{} GPUs visible, more than the {} expected (--expect-gpus)", seen,
                         expected));
    }
    return;
  }
  // Live: NVML answered yet lists nothing. A GPU server whose driver sees no GPU is the
  // article's first stop, not an empty report.
  if (seen == 0 && nvml && nvml->ok)
    measure(e.add("gpu-missing", Severity::kCritical, {"host"},
                  "the driver answered but reports 0 GPUs visible to this process"),
            "gpu_count", "count", 0, 1, Bound::kAtLeast);
}

// One compared property: per-GPU text values, grouped by value in first-seen order.
struct Field {
  std::string label;
  std::vector<std::pair<std::string, std::vector<int>>> groups;  // value → GPU indices
  void add(const std::string& value, int gpu) {
    for (auto& [v, gpus] : groups)
      if (v == value) {
        gpus.push_back(gpu);
        return;
      }
    groups.push_back({value, {gpu}});
  }
  std::string text() const {
    std::vector<std::string> parts;
    for (const auto& [v, gpus] : groups) {
      std::vector<std::string> names;
      for (int i : gpus) names.push_back(gpu_subject(i));
      parts.push_back(v + " (" + join(names, ", ") + ")");
    }
    return label + ": " + join(parts, " vs ");
  }
};

void check_heterogeneous(const Context& c, Emitter& e) {
  // Unresponsive GPUs hold partial facts: comparing them would report what was not read.
  std::vector<const GpuFacts*> gpus;
  for (const auto& g : c.facts.gpus)
    if (!g.unresponsive) gpus.push_back(&g);
  if (gpus.size() < 2) return;

  // A field is compared only when every GPU reports it: one unknown value proves nothing.
  auto all = [&](auto has) { return std::all_of(gpus.begin(), gpus.end(), has); };
  std::vector<Field> differ;
  auto compare_text = [&](const std::string& label, auto value) {
    Field field{label, {}};
    for (const GpuFacts* g : gpus) field.add(value(*g), g->index);
    if (field.groups.size() > 1) differ.push_back(std::move(field));
  };
  if (all([](const GpuFacts* g) { return g->name.has_value(); }))
    compare_text("model", [](const GpuFacts& g) { return *g.name; });
  if (all([](const GpuFacts* g) { return g->vbios.has_value(); }))
    compare_text("VBIOS", [](const GpuFacts& g) { return *g.vbios; });
  // The default limit is the board's; the current one is what an operator set. Compare the
  // default when known everywhere, the limit in force otherwise.
  const bool defaults = all([](const GpuFacts* g) { return g->power.default_limit_w.has_value(); });
  const bool limits = all([](const GpuFacts* g) { return g->power.limit_w.has_value(); });
  if (defaults || limits) {
    auto limit_of = [&](const GpuFacts& g) {
      return defaults ? *g.power.default_limit_w : *g.power.limit_w;
    };
    double lo = limit_of(*gpus.front()), hi = lo;
    for (const GpuFacts* g : gpus) {
      lo = std::min(lo, limit_of(*g));
      hi = std::max(hi, limit_of(*g));
    }
    if (hi > 0 && (hi - lo) / hi > kPowerLimitSpread)
      compare_text(defaults ? "default power limit" : "power limit",
                   [&](const GpuFacts& g) { return format_number(limit_of(g), 0) + " W"; });
  }
  if (all([](const GpuFacts* g) { return g->ecc.enabled.has_value(); }))
    compare_text("ECC mode", [](const GpuFacts& g) { return *g.ecc.enabled ? "on" : "off"; });
  if (all([](const GpuFacts* g) { return g->clocks.sm_max_mhz.has_value(); }))
    compare_text("max SM clock",
                 [](const GpuFacts& g) { return std::to_string(*g.clocks.sm_max_mhz) + " MHz"; });
  if (differ.empty()) return;

  std::vector<std::string> parts;
  for (const auto& field : differ) parts.push_back(field.text());
  std::vector<std::string> subjects;
  for (const GpuFacts* g : gpus) subjects.push_back(gpu_subject(g->index));
  e.add("heterogeneous-gpus", Severity::kWarning, std::move(subjects),
        fmt::format("GPUs of this box differ — {}", join(parts, "; ")));
}

void check_driver_slow(const Context& c, Emitter& e) {
  for (const auto& s : c.facts.sources) {
    std::vector<std::string> slow;
    for (const auto& [call, ms] : s.timings_ms)
      if (ms >= c.t.driver_call_slow_ms) slow.push_back(call + " took " + ms_text(ms));
    if (slow.empty()) continue;
    e.add("driver-slow", Severity::kWarning, {s.name},
          fmt::format("{} ({} source, {} in all; slow means at or over {})", join(slow, "; "),
                      s.name, ms_text(s.duration_ms), ms_text(c.t.driver_call_slow_ms)));
  }
}

// ---------------------------------------------------------------- health, per GPU

// Emits thermal-throttle when the GPU is (or was) limited by temperature. Returns true when
// a current thermal limit was reported (so clocks-below-target can name its cause).
bool check_thermal(const Context& c, const GpuFacts& g, Emitter& e) {
  const Thermal& th = g.thermal;
  std::vector<std::string> parts;
  std::vector<std::string> active;
  for (const char* r : {"hw_thermal_slowdown", "sw_thermal_slowdown"})
    if (has_reason(g, r)) active.emplace_back(r);
  if (!active.empty()) {
    std::string p = join(active, ", ") + " active";
    if (has_reason(g, "hw_slowdown")) p += " (with hw_slowdown)";
    if (th.gpu_c) p += fmt::format(" at {} °C", *th.gpu_c);
    parts.push_back(std::move(p));
  }
  if (th.margin_c && *th.margin_c <= c.t.thermal_margin_c)
    parts.push_back(fmt::format("T.Limit margin {} °C (at or under {} °C)", *th.margin_c,
                                c.t.thermal_margin_c));
  if (th.gpu_c && th.slowdown_c && *th.gpu_c >= *th.slowdown_c - c.t.slowdown_headroom_c)
    parts.push_back(fmt::format("{} °C, within {} °C of the slowdown temperature {} °C", *th.gpu_c,
                                c.t.slowdown_headroom_c, *th.slowdown_c));
  // The maximum operating temperature (nvidia-smi "GPU Max Operating Temp") is where the GPU
  // starts slowing itself down to stay under it; a platform can set it far below slowdown.
  if (th.gpu_c && th.gpu_max_operating_c && *th.gpu_max_operating_c > 0 &&
      (!th.slowdown_c || *th.gpu_max_operating_c < *th.slowdown_c) &&
      *th.gpu_c >= *th.gpu_max_operating_c - c.t.slowdown_headroom_c)
    parts.push_back(fmt::format(
        "{} °C, within {} °C of its maximum operating temperature {} °C (above it the GPU slows "
        "down to stay under it)",
        *th.gpu_c, c.t.slowdown_headroom_c, *th.gpu_max_operating_c));
  if (th.gpu_c && !th.margin_c && !th.slowdown_c && *th.gpu_c >= c.t.hot_temp_c)
    parts.push_back(fmt::format(
        "{} °C, at or above {} °C; the GPU reports no thermal limit (NVIDIA boards usually "
        "target about 83 °C)",
        *th.gpu_c, c.t.hot_temp_c));
  if (!parts.empty()) {
    Finding& fd = e.add("thermal-throttle", Severity::kWarning, {gpu_subject(g.index)},
                        gpu_subject(g.index) + " " + join(parts, "; ") + load_suffix(g));
    if (th.gpu_c && th.slowdown_c)
      measure(fd, "temperature", "C", *th.gpu_c, *th.slowdown_c - c.t.slowdown_headroom_c,
              Bound::kAtMost);
    else if (th.margin_c)
      measure(fd, "thermal_margin", "C", *th.margin_c, c.t.thermal_margin_c, Bound::kAtLeast);
    else if (th.gpu_c && *th.gpu_c >= c.t.hot_temp_c)
      measure(fd, "temperature", "C", *th.gpu_c, c.t.hot_temp_c, Bound::kAtMost);
    return true;
  }
  // Nothing now, but the driver counted time spent thermally limited since it loaded: history
  // worth knowing (a hot spell during the last job), not a current problem.
  std::vector<std::string> history;
  for (const auto& [key, ns] : g.clock_events.accumulated_ns)
    if (ns > 0 && key.find("thermal") != std::string::npos)
      history.push_back(fmt::format("{} {} s", key, format_number(static_cast<double>(ns) / 1e9)));
  if (!history.empty())
    e.add("thermal-throttle", Severity::kInfo, {gpu_subject(g.index)},
          fmt::format("{} spent time thermally limited since the driver loaded ({}); no thermal "
                      "limit is active now",
                      gpu_subject(g.index), join(history, ", ")))
        .action = Action::kWatch;
  return false;
}

// What check_power found: nothing, a GPU running at its rated (default) power limit under
// load — how a healthy GPU behaves on heavy kernels —, at a lower limit an administrator set on
// purpose, or a real power problem.
enum class PowerState { kNone, kAtRatedLimit, kAdminLimit, kProblem };

// One GPU's power-throttle finding before it is emitted: GPUs that all report the same
// signal (every GPU's power brake at once) become one node-level finding.
struct PowerFinding {
  int gpu = 0;
  Severity severity = Severity::kInfo;
  std::string evidence;
  // What is wrong, without the GPU's own numbers: "hw_power_brake_slowdown", "outside-cap
  // 450/700", "admin-limit 200/350". Equal keys on every GPU make a node-level fault.
  std::string key;
  std::string signal;  // the key in words, for the node-level evidence
  // The limit compared (JSON observed/expected), and the action when not the catalog's.
  std::optional<FindingValue> observed, expected;
  std::optional<Action> action;
};

struct PowerResult {
  PowerState state = PowerState::kNone;
  std::optional<PowerFinding> finding;
};

// power-throttle: a warning for a hardware slowdown, a cap enforced below the requested limit
// (from outside the GPU's own setting: BMC/IPMI, a datacenter power policy) busy or not, a
// limit below the default whose origin is unknown, or a cap whose default is unknown; info for
// a busy GPU capping at its rated default limit, and for a limit an administrator set below
// the default (requested and enforced agree: nvidia-smi -pl, a deliberate choice).
PowerResult check_power(const Context& c, const GpuFacts& g, bool busy) {
  const Power& p = g.power;
  std::vector<std::string> parts;
  std::vector<std::string> keys;
  std::vector<std::string> signals;
  bool problem = false;
  bool admin = false;
  // The software cap only matters under load: an idle GPU sitting under its cap is fine.
  if (busy && has_reason(g, "sw_power_cap")) {
    parts.push_back("sw_power_cap active while busy");
    keys.push_back("sw_power_cap");
    signals.push_back("sw_power_cap active while busy");
  }
  // Hardware slowdowns are external signals (power brake from the PSU/board, or an
  // over-temperature line): notable even on an idle GPU.
  if (has_reason(g, "hw_power_brake_slowdown")) {
    parts.push_back("hw_power_brake_slowdown active (external power-brake signal)");
    keys.push_back("hw_power_brake_slowdown");
    signals.push_back("hw_power_brake_slowdown active (external power-brake signal)");
    problem = true;
  }
  if (has_reason(g, "hw_slowdown") && !has_reason(g, "hw_thermal_slowdown") &&
      !has_reason(g, "hw_power_brake_slowdown")) {
    parts.push_back("hw_slowdown active (hardware slowdown: power brake or over-temperature)");
    keys.push_back("hw_slowdown");
    signals.push_back("hw_slowdown active (hardware slowdown: power brake or over-temperature)");
    problem = true;
  }
  const std::optional<double> requested = p.limit_w;
  const std::optional<double> enforced = p.enforced_limit_w;
  const std::optional<double> limit = enforced ? enforced : requested;
  const bool at_limit =
      busy && p.draw_w && limit && *limit > 0 && *p.draw_w >= c.t.power_at_limit_fraction * *limit;
  if (at_limit)
    parts.push_back(fmt::format("drawing {}/{} W ({} %) while busy: at its power limit",
                                watts(*p.draw_w), watts(*limit), percent(*p.draw_w / *limit)));
  const double below = c.t.power_limit_below_default_fraction;
  const std::string default_text =
      p.default_limit_w ? fmt::format(", default {} W", watts(*p.default_limit_w)) : "";
  if (requested && enforced && *enforced < below * *requested) {
    // The driver enforces less than was asked of it: another limiter (the BMC over IPMI or
    // Redfish, a rack or datacenter power policy, the board) holds the GPU down.
    std::string what = fmt::format(
        "enforced power limit {} W below the requested {} W{}: a cap set from outside the GPU's "
        "own setting (BMC/IPMI power capping, a datacenter power policy)",
        watts(*enforced), watts(*requested), default_text);
    parts.push_back(what);
    keys.push_back(fmt::format("outside-cap {}/{}", watts(*enforced), watts(*requested)));
    signals.push_back(std::move(what));
    problem = true;
  } else if (p.default_limit_w) {
    const std::optional<double> set = requested ? requested : enforced;
    if (set && *set < below * *p.default_limit_w) {
      if (requested) {
        // Requested (and, when known, enforced) below the default: what an operator chose.
        std::string what = fmt::format(
            "power limit {} W set below the default {} W{} — an administrator's setting "
            "(nvidia-smi -pl); the GPU caps at {} W under load",
            watts(*set), watts(*p.default_limit_w),
            enforced ? " (requested and enforced limits agree)" : "", watts(*set));
        parts.push_back(what);
        keys.push_back(fmt::format("admin-limit {}/{}", watts(*set), watts(*p.default_limit_w)));
        signals.push_back(std::move(what));
        admin = true;
      } else {
        std::string what = fmt::format("power limit {} W below the default {} W", watts(*set),
                                       watts(*p.default_limit_w));
        parts.push_back(what);
        keys.push_back(fmt::format("below-default {}/{}", watts(*set), watts(*p.default_limit_w)));
        signals.push_back(std::move(what));
        problem = true;
      }
    }
  }
  if (parts.empty()) return {};
  // Capping at the default limit is the GPU's design envelope, and a limit an administrator
  // lowered is a choice: say it, as info. With the default unknown (a CSV without
  // power.default_limit), a cap cannot be told apart from a lowered one, so it stays a warning.
  const bool informational = !problem && p.default_limit_w && (requested || enforced);
  const bool rated = informational && !admin;
  std::string evidence =
      gpu_subject(g.index) + " " + join(parts, "; ") + (at_limit ? "" : load_suffix(g));
  if (rated)
    evidence += fmt::format(" — the limit is the rated default ({} W): normal on heavy kernels",
                            watts(*p.default_limit_w));
  PowerFinding pf;
  pf.gpu = g.index;
  pf.severity = informational ? Severity::kInfo : Severity::kWarning;
  {
    Finding values;
    if (requested && enforced && *enforced < below * *requested)
      measure(values, "power_limit", "W", *enforced, *requested, Bound::kAtLeast);
    else if (p.default_limit_w && (requested || enforced) &&
             *(requested ? requested : enforced) < below * *p.default_limit_w)
      measure(values, "power_limit", "W", *(requested ? requested : enforced), *p.default_limit_w,
              Bound::kAtLeast);
    else if (at_limit)
      measure(values, "power_draw", "W", *p.draw_w, c.t.power_at_limit_fraction * *limit,
              Bound::kAtMost);
    pf.observed = values.observed;
    pf.expected = values.expected;
  }
  // A limit that is the design or an administrator's choice needs nothing; a power brake is
  // the node's power delivery (PSU, board), a hardware matter.
  if (informational)
    pf.action = Action::kNone;
  else if (has_reason(g, "hw_power_brake_slowdown") || has_reason(g, "hw_slowdown"))
    pf.action = Action::kReseatOrRma;
  pf.evidence = std::move(evidence);
  if (at_limit) keys.push_back("at-limit");
  pf.key = join(keys, "|");
  pf.signal = join(signals, "; ");
  const PowerState state = problem ? PowerState::kProblem
                           : admin ? PowerState::kAdminLimit
                           : rated ? PowerState::kAtRatedLimit
                                   : PowerState::kProblem;
  return {state, std::move(pf)};
}

// "68–72 W" (or "70 W") over the GPUs' draw; empty when none is known.
std::string draw_range(const Facts& f, const std::vector<int>& gpus) {
  std::optional<double> lo, hi;
  for (int i : gpus)
    if (const GpuFacts* g = find_gpu(f, i); g && g->power.draw_w) {
      lo = lo ? std::min(*lo, *g->power.draw_w) : *g->power.draw_w;
      hi = hi ? std::max(*hi, *g->power.draw_w) : *g->power.draw_w;
    }
  if (!lo) return {};
  if (format_number(*lo, 0) == format_number(*hi, 0)) return format_number(*lo, 0) + " W";
  return format_number(*lo, 0) + "–" + format_number(*hi, 0) + " W";
}

// Emits the power findings: one per GPU, or one for the node when every GPU of the box (two
// or more) reports the same problem — a power brake or an outside cap on all of them at once
// comes from the node's power delivery or its BMC, not from eight boards.
void emit_power(const Context& c, const std::vector<PowerFinding>& found, std::size_t gpus,
                Emitter& e) {
  const bool node_level =
      found.size() >= 2 && found.size() == gpus &&
      std::all_of(found.begin(), found.end(),
                  [&](const PowerFinding& pf) {
                    return pf.key == found.front().key && pf.severity == found.front().severity;
                  }) &&
      found.front().severity >= Severity::kWarning;
  if (!node_level) {
    for (const auto& pf : found) {
      Finding& fd = e.add("power-throttle", pf.severity, {gpu_subject(pf.gpu)}, pf.evidence);
      fd.observed = pf.observed;
      fd.expected = pf.expected;
      fd.action = pf.action;
    }
    return;
  }
  std::vector<int> idx;
  std::vector<std::string> subjects;
  for (const auto& pf : found) {
    idx.push_back(pf.gpu);
    subjects.push_back(gpu_subject(pf.gpu));
  }
  const bool all_idle = std::all_of(idx.begin(), idx.end(), [&](int i) {
    const GpuFacts* g = find_gpu(c.facts, i);
    return g && is_idle(c.facts, *g, c.t);
  });
  const std::string draw = draw_range(c.facts, idx);
  std::string load;
  if (all_idle && !draw.empty())
    load = " at idle (" + draw + ")";
  else if (all_idle)
    load = " at idle";
  else if (!draw.empty())
    load = " (drawing " + draw + ")";
  const std::string key = found.front().key;
  const bool brake = key.find("hw_power_brake") != std::string::npos ||
                     key.find("hw_slowdown") != std::string::npos;
  Finding fd;
  fd.severity = found.front().severity;
  fd.subjects = std::move(subjects);
  // One key on every GPU: the same limits (a draw differs per GPU; the first GPU's is shown).
  fd.observed = found.front().observed;
  fd.expected = found.front().expected;
  // The node, not a GPU: a brake is its power delivery (out of service until the PSUs and
  // the BMC are checked), a cap on every GPU its power policy.
  fd.action = brake ? Action::kDrain : Action::kFixConfig;
  fd.evidence = fmt::format("all {} GPUs of the node ({}) report the same: {}{}", found.size(),
                            gpu_span(idx), found.front().signal, load);
  if (brake) {
    fd.evidence +=
        " — one signal on every GPU at once: the node's power delivery (a PSU failed, missing or "
        "under-fed, the power distribution) or the BMC asserting the brake, not the GPUs";
    fd.decision_note =
        "Node-level: check the PSUs (all present, all fed, none failed), the BMC event log "
        "(ipmitool sel list) and its power-capping/brake policy before touching any GPU.";
  } else {
    fd.evidence += " — the same cap on every GPU: a node or datacenter power policy";
    fd.decision_note =
        "Node-level: check the BMC's power capping (ipmitool dcmi power get_limit, Redfish "
        "PowerControl) and the rack/datacenter power policy before any GPU setting.";
  }
  e.add("power-throttle", std::move(fd));
}

// utilization-misleading: "100 %" only says a kernel was resident, not that it computed.
bool check_misleading(const Context& c, const GpuFacts& g, Emitter& e) {
  if (!g.utilization.gpu_pct || *g.utilization.gpu_pct < kMisleadingUtilPct) return false;
  const auto pf = power_fraction(g);
  const bool low_power = pf && *pf < c.t.misleading_power_fraction;
  const bool low_clock = g.clocks.sm_mhz && g.clocks.sm_max_mhz && *g.clocks.sm_max_mhz > 0 &&
                         *g.clocks.sm_mhz < kMisleadingClockFraction * *g.clocks.sm_max_mhz;
  if (!low_power && !low_clock) return false;
  // No job on it: the process list is known (another GPU has one), none is on this GPU and its
  // memory is unused. A utilisation reading there describes no program; nothing waits.
  const auto& procs = c.facts.processes;
  const bool listed = std::any_of(procs.begin(), procs.end(),
                                  [&](const ProcessFacts& p) { return p.gpu == g.index; });
  const auto used = memory_fraction(g);
  if (!procs.empty() && !listed && used && *used < 0.01) return false;
  std::vector<std::string> how;
  if (g.power.draw_w && pf) {
    const double limit = *g.power.draw_w / *pf;
    how.push_back(
        fmt::format("draws {}/{} W ({} %)", watts(*g.power.draw_w), watts(limit), percent(*pf)));
  }
  if (g.clocks.sm_mhz) {
    std::string clock = fmt::format("at {} MHz", *g.clocks.sm_mhz);
    if (g.clocks.sm_max_mhz) clock += fmt::format(" of max {} MHz", *g.clocks.sm_max_mhz);
    how.push_back(std::move(clock));
  }
  Finding& fd =
      e.add("utilization-misleading", Severity::kWarning, {gpu_subject(g.index)},
            fmt::format("{} reports {} % utilisation but {}: it is waiting (e.g. spinning in a "
                        "collective), not computing",
                        gpu_subject(g.index), *g.utilization.gpu_pct, join(how, " ")));
  if (low_power)
    measure(fd, "power_fraction", "fraction", *pf, c.t.misleading_power_fraction, Bound::kAtLeast);
  else
    measure(fd, "sm_clock", "MHz", *g.clocks.sm_mhz,
            kMisleadingClockFraction * *g.clocks.sm_max_mhz, Bound::kAtLeast);
  return true;
}

void check_clocks(const Context& c, const GpuFacts& g, bool busy, bool thermal, PowerState power,
                  Emitter& e) {
  const Clocks& k = g.clocks;
  // Idle GPUs downclock on purpose; an unknown max gives nothing to compare with.
  if (!busy || is_idle(c.facts, g, c.t) || !k.sm_mhz || !k.sm_max_mhz || *k.sm_max_mhz <= 0) return;
  const auto& active = g.clock_events.active;
  if (active.size() == 1 && active[0] == "idle") return;
  const double fraction = static_cast<double>(*k.sm_mhz) / *k.sm_max_mhz;
  if (fraction >= c.t.clocks_below_fraction) return;
  std::string why;
  std::vector<std::string> explained;
  if (thermal) explained.emplace_back("thermal-throttle");
  if (power != PowerState::kNone)
    explained.emplace_back(power == PowerState::kAtRatedLimit ? "running at the rated power limit"
                           : power == PowerState::kAdminLimit
                               ? "running at the lower power limit an administrator set"
                               : "power-throttle");
  if (!explained.empty())
    why = "; explained by " + join(explained, " and ");
  else if (!active.empty())
    why = "; active reasons: " + join(active, ", ");
  else
    why = "; no clock-event reason reported";
  const std::string load = load_phrase(g);
  // A busy GPU holding its rated power limit trades clocks for watts by design.
  const Severity severity =
      !thermal && (power == PowerState::kAtRatedLimit || power == PowerState::kAdminLimit)
          ? Severity::kInfo
          : Severity::kWarning;
  Finding& fd = e.add("clocks-below-target", severity, {gpu_subject(g.index)},
                      fmt::format("{} SM clock {} MHz of max {} MHz ({} %) while busy{}{}",
                                  gpu_subject(g.index), *k.sm_mhz, *k.sm_max_mhz, percent(fraction),
                                  load.empty() ? "" : " (" + load + ")", why));
  measure(fd, "sm_clock", "MHz", *k.sm_mhz, c.t.clocks_below_fraction * *k.sm_max_mhz,
          Bound::kAtLeast);
  if (severity == Severity::kInfo) fd.action = Action::kNone;
}

void check_ecc(const GpuFacts& g, Emitter& e) {
  const Ecc& ecc = g.ecc;
  // ECC off (or a consumer card without it): the counters mean nothing. Only say when it is
  // about to change, since that changes the memory size and speed after the next reset.
  if (ecc.enabled && !*ecc.enabled) {
    if (ecc.pending_enabled && *ecc.pending_enabled)
      e.note(gpu_subject(g.index) + ": ECC is off now and will be on after the next GPU reset");
    return;
  }
  Severity sev = Severity::kOk;
  std::vector<std::string> parts;
  auto raise = [&](Severity s) { sev = std::max(sev, s); };
  const auto& vol = ecc.volatile_counts;
  const auto& agg = ecc.aggregate_counts;
  if (vol.uncorrected && *vol.uncorrected > 0) {
    raise(Severity::kCritical);
    parts.push_back(fmt::format("{} uncorrectable errors since the driver loaded (volatile)",
                                *vol.uncorrected));
  }
  if (agg.uncorrected && *agg.uncorrected > 0) {
    raise(Severity::kCritical);
    parts.push_back(fmt::format("{} uncorrectable errors lifetime (aggregate)", *agg.uncorrected));
  }
  if (ecc.remapping_failed && *ecc.remapping_failed) {
    raise(Severity::kCritical);
    parts.push_back("row remapping failed");
  }
  if (ecc.retired_pages_dbe && *ecc.retired_pages_dbe > 0) {
    raise(Severity::kCritical);
    parts.push_back(fmt::format("{} pages retired for double-bit errors", *ecc.retired_pages_dbe));
  }
  if (ecc.remapping_pending && *ecc.remapping_pending) {
    raise(Severity::kWarning);
    parts.push_back("row remapping pending (reset the GPU to apply)");
  }
  if (ecc.retired_pages_pending && *ecc.retired_pages_pending) {
    raise(Severity::kWarning);
    parts.push_back("page retirement pending (reset the GPU to apply)");
  }
  // Corrected errors: whether they are recent (volatile) or old (aggregate only) is the
  // difference between "marginal now" and "had a bad day once".
  const bool vol_corr = vol.corrected && *vol.corrected > 0;
  const bool agg_corr = agg.corrected && *agg.corrected > 0;
  if (vol_corr || agg_corr) {
    raise(Severity::kWarning);
    std::vector<std::string> corr;
    if (agg.corrected) corr.push_back(fmt::format("{} lifetime (aggregate)", *agg.corrected));
    if (vol.corrected)
      corr.push_back(fmt::format("{} since the driver loaded (volatile)", *vol.corrected));
    parts.push_back("corrected (single-bit) errors: " + join(corr, ", "));
  }
  if (sev == Severity::kOk) return;
  std::vector<std::string> context;
  if (ecc.retired_pages_sbe && *ecc.retired_pages_sbe > 0)
    context.push_back(
        fmt::format("{} pages retired for single-bit errors", *ecc.retired_pages_sbe));
  if (ecc.remapped_rows_correctable || ecc.remapped_rows_uncorrectable)
    context.push_back(fmt::format("remapped rows: {} correctable, {} uncorrectable",
                                  ecc.remapped_rows_correctable.value_or(0),
                                  ecc.remapped_rows_uncorrectable.value_or(0)));
  std::string evidence = gpu_subject(g.index) + " ECC: " + join(parts, "; ");
  if (!context.empty()) evidence += " (" + join(context, "; ") + ")";
  Finding& fd = e.add("ecc-errors", sev, {gpu_subject(g.index)}, std::move(evidence));
  // The count that decided, against none: uncorrectable first, else corrected.
  const std::optional<std::uint64_t> uncorrected =
      vol.uncorrected && *vol.uncorrected > 0   ? vol.uncorrected
      : agg.uncorrected && *agg.uncorrected > 0 ? agg.uncorrected
                                                : std::nullopt;
  const std::optional<std::uint64_t> corrected = vol_corr   ? vol.corrected
                                                 : agg_corr ? agg.corrected
                                                            : std::nullopt;
  if (uncorrected)
    measure(fd, "ecc_uncorrected", "count", static_cast<double>(*uncorrected), 0, Bound::kAtMost);
  else if (corrected)
    measure(fd, "ecc_corrected", "count", static_cast<double>(*corrected), 0, Bound::kAtMost);
  // A failed remap is an RMA; uncorrectable errors or a pending remap/retirement need the
  // GPU out of service (and reset); corrected errors alone are watched (the catalog's).
  if (ecc.remapping_failed && *ecc.remapping_failed)
    fd.action = Action::kReseatOrRma;
  else if (sev == Severity::kCritical || (ecc.remapping_pending && *ecc.remapping_pending) ||
           (ecc.retired_pages_pending && *ecc.retired_pages_pending))
    fd.action = Action::kDrain;
}

// ---------------------------------------------------------------- Xid events

// "Now" for Xid ages, one clock at a time: the caller's, else the capture's, else the latest
// event's (an offline paste with no clock of its own is judged against itself).
struct XidClock {
  std::optional<std::int64_t> unix_now;
  std::string unix_label;
  bool unix_from_events = false;
  std::optional<double> uptime_now;
  std::string uptime_label;
  bool uptime_from_events = false;
};

XidClock xid_clock(const Context& c) {
  const Facts& f = c.facts;
  XidClock k;
  if (c.options.now_unix) {
    k.unix_now = c.options.now_unix;
    k.unix_label = "before now";
  } else if (f.host.collected_unix) {
    k.unix_now = f.host.collected_unix;
    k.unix_label = "before the capture";
  } else {
    for (const auto& x : f.kernel_log.xids)
      if (x.unix_time && (!k.unix_now || *x.unix_time > *k.unix_now)) k.unix_now = x.unix_time;
    k.unix_label = "before the latest Xid in the log";
    k.unix_from_events = true;
  }
  if (c.options.now_uptime_s) {
    k.uptime_now = c.options.now_uptime_s;
    k.uptime_label = "before now";
  } else if (f.host.uptime_s) {
    k.uptime_now = f.host.uptime_s;
    k.uptime_label = "before the capture";
  } else {
    for (const auto& x : f.kernel_log.xids)
      if (x.uptime_s && (!k.uptime_now || *x.uptime_s > *k.uptime_now)) k.uptime_now = x.uptime_s;
    k.uptime_label = "before the latest Xid in the log";
    k.uptime_from_events = true;
  }
  return k;
}

enum class When { kRecent, kHistory, kEarlierBoot, kUnknown };

struct Placed {
  When when = When::kUnknown;
  std::string stamp;  // "2026-01-13 09:41:02 UTC", "uptime 3000 s"
  std::string age;    // "5 min before the capture"; empty when it would say nothing
};

Placed place(const XidEvent& x, const XidClock& k, double window_s) {
  Placed p;
  // An age measured against the event itself ("0 s before the latest Xid") says nothing.
  auto age_phrase = [](double age, bool self_clock, const std::string& label) {
    return self_clock && age <= 0 ? std::string() : age_text(age) + " " + label;
  };
  if (x.unix_time && k.unix_now) {
    const double age = std::max<double>(0, static_cast<double>(*k.unix_now - *x.unix_time));
    p.when = age > window_s ? When::kHistory : When::kRecent;
    p.stamp = utc_text(*x.unix_time);
    p.age = age_phrase(age, k.unix_from_events, k.unix_label);
    return p;
  }
  if (x.uptime_s && k.uptime_now) {
    p.stamp = fmt::format("uptime {} s", format_number(*x.uptime_s, 0));
    // Uptime restarts at each boot: an event "later" than now happened before the last boot.
    if (*x.uptime_s > *k.uptime_now + 1) {
      p.when = When::kEarlierBoot;
      p.age = "from an earlier boot";
      return p;
    }
    const double age = std::max(0.0, *k.uptime_now - *x.uptime_s);
    p.when = age > window_s ? When::kHistory : When::kRecent;
    p.age = age_phrase(age, k.uptime_from_events, k.uptime_label);
    return p;
  }
  return p;
}

const char* origin_phrase(const hw::XidInfo* info) {
  if (!info) return "unknown code";
  if (info->origin == hw::XidOrigin::kApplication) return "usually the application";
  return hw::xid_origin_name(info->origin);
}

// The bottleneck class an Xid points at, from where it comes from: an application fault is
// the job's, not a class of the machine (kNone keeps it out of the bottleneck verdict).
std::optional<Bottleneck> xid_bottleneck(const hw::XidInfo* info) {
  if (!info) return std::nullopt;
  switch (info->origin) {
    case hw::XidOrigin::kApplication:
      return Bottleneck::kNone;
    case hw::XidOrigin::kHardware:
    case hw::XidOrigin::kDriver:
    case hw::XidOrigin::kMemory:
      return Bottleneck::kHardware;
    case hw::XidOrigin::kThermalPower:
      return Bottleneck::kThermal;
    case hw::XidOrigin::kNvlink:
      return Bottleneck::kComms;
    case hw::XidOrigin::kUnknown:
      break;
  }
  return Bottleneck::kUnknown;
}

// A follow-up code (43, 45, 154) and its cause within this many seconds on the same GPU are
// one fault: the driver logs the aftermath right behind the fault.
constexpr double kXidChainWindowS = 60;

std::string xid_subject(const Facts& f, const XidEvent& x) {
  const GpuFacts* g = x.gpu ? find_gpu(f, *x.gpu) : nullptr;
  if (!g && x.pci_bus_id) g = find_gpu_by_bus(f, *x.pci_bus_id);
  return x.gpu          ? gpu_subject(*x.gpu)
         : g            ? gpu_subject(g->index)
         : x.pci_bus_id ? *x.pci_bus_id
                        : std::string("kernel log");
}

// Whether y was logged within kXidChainWindowS before x (or, when the log gives no times,
// before it at all); empty when one has a time and the other none.
std::optional<bool> within_chain_window(const XidEvent& x, const XidEvent& y) {
  if (x.unix_time && y.unix_time) return *x.unix_time - *y.unix_time <= kXidChainWindowS;
  if (x.uptime_s && y.uptime_s) return *x.uptime_s - *y.uptime_s <= kXidChainWindowS;
  if (x.unix_time || x.uptime_s || y.unix_time || y.uptime_s) return std::nullopt;
  return true;
}

// The application fault whose channel a later Xid names: the driver tears down a faulted
// context's channel, and what it logs for that channel a moment later (Xid 32 "Channel ID
// 00000052" after Xid 13 "ChID 0052") is that fault's aftermath, not a fault of its own. Only
// for codes the Xid table does not hold critical on their own.
// How many earlier events of the same GPU a follow-up looks back through for its cause: a storm
// of thousands of events in one second (or a paste repeating one log) made the scans quadratic;
// a cause is the event just before, never hundreds back.
constexpr std::size_t kXidCauseLookBack = 256;

std::optional<int> xid_channel_cause(const Facts& f, std::size_t at,
                                     const std::vector<std::string>& subjects) {
  const auto& xids = f.kernel_log.xids;
  const XidEvent& x = xids[at];
  const hw::XidInfo* info = hw::find_xid(x.code);
  const auto channel = hw::xid_channel(x.message);
  if (!channel || (info && info->severity >= Severity::kCritical)) return std::nullopt;
  std::size_t looked = 0;
  for (std::size_t i = at; i-- > 0;) {
    const XidEvent& y = xids[i];
    if (subjects[i] != subjects[at]) continue;
    if (++looked > kXidCauseLookBack) return std::nullopt;
    const auto near = within_chain_window(x, y);
    if (!near || !*near) return std::nullopt;
    const hw::XidInfo* cause = hw::find_xid(y.code);
    if (cause && cause->origin == hw::XidOrigin::kApplication && y.code != x.code &&
        hw::xid_channel(y.message) == channel)
      return y.code;
  }
  return std::nullopt;
}

// The Xid a follow-up event reports the consequence of: the one its message names ("caused by
// previous Xid 149"), else the latest earlier fault (not itself a follow-up) on the same GPU
// logged within kXidChainWindowS (or, when the log gives no times, right before it); for any
// other code, the application fault on the same channel just before it (xid_channel_cause).
std::optional<int> xid_cause(const Facts& f, std::size_t at,
                             const std::vector<std::string>& subjects) {
  const auto& xids = f.kernel_log.xids;
  const XidEvent& x = xids[at];
  if (!hw::xid_is_consequence(x.code)) return xid_channel_cause(f, at, subjects);
  if (auto named = hw::xid_named_cause(x.message)) return named;
  std::size_t looked = 0;
  for (std::size_t i = at; i-- > 0;) {
    const XidEvent& y = xids[i];
    if (subjects[i] != subjects[at]) continue;
    if (++looked > kXidCauseLookBack) return std::nullopt;
    if (hw::xid_is_consequence(y.code)) continue;
    const auto near = within_chain_window(x, y);
    return near && *near ? std::optional<int>(y.code) : std::nullopt;
  }
  return std::nullopt;
}

// What an Xid calls for: history is watched; a critical one (fallen off the bus, a reset or
// reboot required) drains the node; else by where it comes from — the application's own
// fault, the board or its links, the driver's configuration.
Action xid_action(const hw::XidInfo* judged, Severity sev, bool current) {
  if (!current) return Action::kWatch;
  // NVIDIA's RESTART_APP bucket for the program's own faults: info for the node, an action
  // for the job.
  if (judged && judged->origin == hw::XidOrigin::kApplication && sev <= Severity::kWarning)
    return Action::kFixApplication;
  if (sev <= Severity::kInfo) return Action::kWatch;
  if (sev >= Severity::kCritical) return Action::kDrain;
  if (!judged) return Action::kWatch;
  switch (judged->origin) {
    case hw::XidOrigin::kApplication:
      return Action::kFixApplication;
    case hw::XidOrigin::kHardware:
    case hw::XidOrigin::kThermalPower:
    case hw::XidOrigin::kNvlink:
      return Action::kReseatOrRma;
    case hw::XidOrigin::kDriver:
      return Action::kFixConfig;
    case hw::XidOrigin::kMemory:
    case hw::XidOrigin::kUnknown:
      return Action::kWatch;
  }
  return Action::kWatch;
}

// A burst of an Xid that usually only reports a channel torn down (43, 45) — five or more
// within ten minutes on one subject — followed by the kernel's hung-task reports is a context
// stuck in the driver: the processes cannot be killed and the GPU stays wedged until a reset,
// however old the lines are (as long as it is the same boot). Empty when it is not that.
// The times are the events' seconds since boot, or their wall clock where the log gives that
// instead (dmesg -T, journalctl); check_xids gathers both as it groups.
struct BurstTimes {
  std::vector<double> uptime, wall;
};

std::string stuck_context(const Facts& f, int code, const BurstTimes& times) {
  if ((code != 43 && code != 45) || f.kernel_log.hung_tasks.empty()) return {};
  for (const bool wall : {false, true}) {
    std::vector<double> at = wall ? times.wall : times.uptime;
    std::sort(at.begin(), at.end());
    std::size_t best = 0, first = 0;
    for (std::size_t i = 0, j = 0; i < at.size(); ++i) {
      while (at[i] - at[j] > 600) ++j;
      if (i - j + 1 > best) {
        best = i - j + 1;
        first = j;
      }
    }
    if (best < 5) continue;
    for (const auto& t : f.kernel_log.hung_tasks) {
      const std::optional<double> when =
          wall ? (t.unix_time ? std::optional<double>(static_cast<double>(*t.unix_time))
                              : std::nullopt)
               : t.uptime_s;
      if (when && *when >= at[first])
        return fmt::format(
            "a burst of {} Xid {} within 10 min, then the kernel's hung-task report "
            "\"{}\": a context stuck in the driver, not history",
            best, code, t.message.substr(0, 120));
    }
  }
  return {};
}

void check_xids(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  if (f.kernel_log.xids.empty()) return;
  const XidClock clock = xid_clock(c);
  const double window_s = c.t.xid_window_h * 3600;

  struct Group {
    int code = 0;
    std::string subject;
    std::optional<int> cause;  // the Xid this one follows from, when it is a follow-up
    std::optional<std::string> bus;
    std::optional<int> gpu;  // the GPU the subject names
    int recent = 0, history = 0, earlier_boot = 0, unknown = 0;
    const XidEvent* last = nullptr;  // the latest placed one, else the last seen
    Placed last_placed;
    std::optional<hw::XidRecoveryAction> action;  // Xid 154: the most severe action named
  };
  std::vector<Group> groups;  // first-seen order
  // Uptimes of Xid 43/45 per (code, subject), whatever their cause: stuck_context reads them.
  std::map<std::pair<int, std::string>, BurstTimes> burst_times;
  // Each event's subject once: the cause scans compare them.
  std::vector<std::string> subjects;
  subjects.reserve(f.kernel_log.xids.size());
  for (const auto& x : f.kernel_log.xids) subjects.push_back(xid_subject(f, x));
  for (std::size_t i = 0; i < f.kernel_log.xids.size(); ++i) {
    const XidEvent& x = f.kernel_log.xids[i];
    const GpuFacts* g = x.gpu ? find_gpu(f, *x.gpu) : nullptr;
    if (!g && x.pci_bus_id) g = find_gpu_by_bus(f, *x.pci_bus_id);
    const std::string& subject = subjects[i];
    if (x.code == 43 || x.code == 45) {
      BurstTimes& bt = burst_times[{x.code, subject}];
      if (x.uptime_s) bt.uptime.push_back(*x.uptime_s);
      if (x.unix_time) bt.wall.push_back(static_cast<double>(*x.unix_time));
    }
    const std::optional<int> cause = xid_cause(f, i, subjects);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& gr) {
      return gr.code == x.code && gr.subject == subject && gr.cause == cause;
    });
    if (it == groups.end()) {
      groups.push_back({});
      it = groups.end() - 1;
      it->code = x.code;
      it->subject = subject;
      it->cause = cause;
    }
    Group& gr = *it;
    if (x.code == 154)
      if (auto a = hw::xid_recovery_action(x.message);
          a && (!gr.action || a->severity > gr.action->severity))
        gr.action = std::move(a);
    if (!gr.bus) gr.bus = x.pci_bus_id ? x.pci_bus_id : g ? g->pci_bus_id : std::nullopt;
    if (!gr.gpu) gr.gpu = x.gpu ? x.gpu : g ? std::optional<int>(g->index) : std::nullopt;
    const Placed p = place(x, clock, window_s);
    switch (p.when) {
      case When::kRecent:
        ++gr.recent;
        break;
      case When::kHistory:
        ++gr.history;
        break;
      case When::kEarlierBoot:
        ++gr.earlier_boot;
        break;
      case When::kUnknown:
        ++gr.unknown;
        break;
    }
    // Keep the newest placed event as "last": a later unplaced line must not hide its age.
    auto newer = [&](const XidEvent& a, const XidEvent& b) {
      if (a.unix_time && b.unix_time) return *a.unix_time >= *b.unix_time;
      if (a.uptime_s && b.uptime_s) return *a.uptime_s >= *b.uptime_s;
      return true;  // log order
    };
    if (!gr.last || (p.when != When::kUnknown &&
                     (gr.last_placed.when == When::kUnknown || newer(x, *gr.last)))) {
      gr.last = &x;
      gr.last_placed = p;
    }
  }

  std::vector<XidFinding> found;
  for (const auto& gr : groups) {
    const hw::XidInfo* info = hw::find_xid(gr.code);
    // A follow-up takes the category and severity of the fault it follows: an Xid 45 "caused
    // by previous Xid 149" is an NVLink fault, not an application's.
    const hw::XidInfo* cause = gr.cause ? hw::find_xid(*gr.cause) : nullptr;
    const hw::XidInfo* judged = cause ? cause : info;
    Severity table = judged ? judged->severity : Severity::kWarning;
    if (gr.action) table = cause ? std::max(table, gr.action->severity) : gr.action->severity;
    // An application's Xid on a GPU the log also shows lost (off the bus, a driver failure) is
    // not the program's alone: it came with the GPU's failure.
    bool with_loss = false;
    if (judged && judged->origin == hw::XidOrigin::kApplication && gr.bus) {
      for (const auto& line : c.facts.kernel_log.fallen_off_bus)
        if (auto b = bus_id_in(line); b && *b == *gr.bus) with_loss = true;
      for (const auto& d : c.facts.kernel_log.driver_failures)
        if (d.pci_bus_id && *d.pci_bus_id == *gr.bus) with_loss = true;
      if (with_loss) table = std::max(table, Severity::kWarning);
    }
    // Old events and events of an earlier boot are history: they explain, they do not alarm.
    // A stuck context is not history while the node runs the same boot.
    const auto times = burst_times.find({gr.code, gr.subject});
    const std::string stuck =
        times == burst_times.end() ? std::string() : stuck_context(f, gr.code, times->second);
    if (!stuck.empty()) table = Severity::kCritical;
    const bool current = gr.recent + gr.unknown > 0 || (!stuck.empty() && gr.history > 0);
    const Severity sev = current ? table : Severity::kInfo;
    const int n = gr.recent + gr.history + gr.earlier_boot + gr.unknown;

    std::string evidence = fmt::format("Xid {} ×{} on {}", gr.code, n, gr.subject);
    if (gr.bus && *gr.bus != gr.subject) evidence += " (" + *gr.bus + ")";
    const std::size_t detail_at = evidence.size();
    evidence += " — " + std::string(info ? info->name : "unknown Xid code");
    if (gr.cause)
      evidence += fmt::format(", following Xid {} ({}; {})", *gr.cause,
                              cause ? cause->name : "unknown Xid code", origin_phrase(cause));
    else
      evidence += fmt::format(" ({})", origin_phrase(info));
    if (gr.action) evidence += "; recovery action now: " + gr.action->text;
    if (with_loss) evidence += "; the same GPU was lost from the bus in this log";
    if (!stuck.empty()) evidence += "; " + stuck;
    const Placed& last = gr.last_placed;
    if (last.when == When::kUnknown) {
      evidence += "; time unknown";
    } else if (!current) {
      evidence +=
          "; history: " + (last.age.empty() ? "older" : last.age) + " (last at " + last.stamp + ")";
    } else {
      evidence += "; last at " + last.stamp + (last.age.empty() ? "" : ", " + last.age);
    }
    if (n > 1 &&
        (gr.recent > 0) + (gr.history > 0) + (gr.earlier_boot > 0) + (gr.unknown > 0) > 1) {
      std::vector<std::string> split_counts;
      if (gr.recent)
        split_counts.push_back(
            fmt::format("{} within {} h", gr.recent, format_number(c.t.xid_window_h, 0)));
      if (gr.history) split_counts.push_back(fmt::format("{} older", gr.history));
      if (gr.earlier_boot)
        split_counts.push_back(fmt::format("{} from an earlier boot", gr.earlier_boot));
      if (gr.unknown) split_counts.push_back(fmt::format("{} with unknown time", gr.unknown));
      evidence += " (" + join(split_counts, ", ") + ")";
    }
    if (gr.last && !gr.last->message.empty()) evidence += ": \"" + quote(gr.last->message) + "\"";

    XidFinding xf;
    xf.gpu = gr.gpu;
    xf.code = gr.code;
    xf.cause = gr.cause;
    xf.judged = judged;
    xf.count = n;
    xf.current = current;
    if (gr.last && gr.last_placed.when != When::kUnknown) {
      xf.last_unix = gr.last->unix_time;
      xf.last_uptime_s = gr.last->uptime_s;
    }
    xf.detail = evidence.substr(detail_at);
    Finding finding;
    finding.severity = sev;
    finding.subjects = {gr.subject};
    finding.evidence = std::move(evidence);
    finding.bottleneck = xid_bottleneck(judged);
    std::vector<std::string> notes;
    if (cause)
      notes.push_back(fmt::format(
          "Xid {} reports the aftermath of Xid {} ({}): act on that one. {} NVIDIA's action: {}.",
          gr.code, *gr.cause, cause->mnemonic, cause->meaning, cause->action));
    if (info)
      notes.push_back(fmt::format("Xid {} ({}): {} NVIDIA's action: {}.", gr.code, info->mnemonic,
                                  info->meaning, info->action));
    if (!notes.empty()) finding.decision_note = join(notes, " ");
    finding.action = xid_action(judged, sev, current);
    finding.fault = fmt::format("xid-{}", gr.code);
    xf.finding = std::move(finding);
    found.push_back(std::move(xf));
  }
  // One code on every GPU at once is one finding of the node (rules/node_wide.h).
  emit_xids(c, std::move(found), e);
}

// gpu-unresponsive: a GPU that does not answer now is critical. A kernel-log line saying it
// fell off the bus is dated like an Xid (xid_clock, place): recent or of unknown time is
// critical, older than xid_window_h or from an earlier boot is history (info).
void check_unresponsive(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  const XidClock clock = xid_clock(c);
  const double window_s = c.t.xid_window_h * 3600;
  struct Lost {
    std::string subject;
    std::optional<std::string> unresponsive;
    std::optional<std::string> bus;
    std::vector<std::string> lines;
    int current = 0;     // lines recent or of unknown time
    Placed last_placed;  // the newest dated line
    const XidEvent* last = nullptr;
  };
  std::vector<Lost> lost;  // first-seen order keeps the output stable
  auto entry = [&](const std::string& subject) -> Lost& {
    for (auto& l : lost)
      if (l.subject == subject) return l;
    lost.push_back({subject, {}, {}, {}});
    return lost.back();
  };
  for (const auto& g : f.gpus) {
    if (!g.unresponsive) continue;
    Lost& l = entry(gpu_subject(g.index));
    l.unresponsive = g.unresponsive;
    l.bus = g.pci_bus_id;
  }
  const auto& lines = f.kernel_log.fallen_off_bus;
  // The lines' times, one per line (an older JSON report has the lines only).
  const auto& when = f.kernel_log.fallen_off_bus_events;
  const bool dated = when.size() == lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& line = lines[i];
    const auto bus = bus_id_in(line);
    const GpuFacts* g = bus ? find_gpu_by_bus(f, *bus) : nullptr;
    Lost& l = entry(g ? gpu_subject(g->index) : bus ? *bus : "kernel log");
    if (!l.bus) l.bus = g && g->pci_bus_id ? g->pci_bus_id : bus;
    l.lines.push_back(line);
    const Placed p = dated ? place(when[i], clock, window_s) : Placed{};
    if (p.when == When::kRecent || p.when == When::kUnknown) ++l.current;
    if (p.when != When::kUnknown) {
      const bool newer = !l.last || (when[i].unix_time && l.last->unix_time
                                         ? *when[i].unix_time >= *l.last->unix_time
                                         : true);
      if (newer) {
        l.last = &when[i];
        l.last_placed = p;
      }
    }
  }
  for (const auto& l : lost) {
    std::vector<std::string> parts;
    if (l.unresponsive) parts.push_back("did not answer: " + quote(*l.unresponsive));
    const bool history = !l.unresponsive && !l.lines.empty() && l.current == 0;
    if (!l.lines.empty()) {
      std::string when_text;
      if (history)
        when_text = ", history: " + (l.last_placed.age.empty() ? "older" : l.last_placed.age) +
                    " (last at " + l.last_placed.stamp + ")";
      else if (l.last)
        when_text = ", last at " + l.last_placed.stamp +
                    (l.last_placed.age.empty() ? "" : ", " + l.last_placed.age);
      parts.push_back(fmt::format("kernel log: fell off the bus ({} line{}){}, last: \"{}\"",
                                  l.lines.size(), l.lines.size() == 1 ? "" : "s", when_text,
                                  quote(l.lines.back())));
    }
    std::string who = l.subject;
    if (l.bus && *l.bus != l.subject) who += " (" + *l.bus + ")";
    if (!history) {
      e.add("gpu-unresponsive", Severity::kCritical, {l.subject}, who + " " + join(parts, "; "));
      continue;
    }
    Finding fd;
    fd.severity = Severity::kInfo;
    fd.subjects = {l.subject};
    fd.evidence = who + " " + join(parts, "; ");
    fd.decision_note =
        "History, not the state now: the GPU was lost then, and the node has been up since (or "
        "rebooted). If it answers now, watch for a repeat: a second fall from the bus is a "
        "hardware case (reseat, riser, PSU, RMA).";
    e.add("gpu-unresponsive", std::move(fd));
  }
}

// The driver's own failure strings (kernel_log.driver_failures) and lspci's "rev ff": a GPU
// the driver could not bring up or lost is unresponsive; GPUs it never took (another driver
// owns them, an unsupported GPU, no adapter found) are missing. Dated like an Xid: older than
// xid_window_h or from an earlier boot is history (info).
void check_driver_failures(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  const XidClock clock = xid_clock(c);
  const double window_s = c.t.xid_window_h * 3600;
  for (const auto& r : f.kernel_log.driver_failures) {
    const bool missing =
        r.kind == "not-probed" || r.kind == "no-adapter" || r.kind == "unsupported";
    const GpuFacts* g = r.pci_bus_id ? find_gpu_by_bus(f, *r.pci_bus_id) : nullptr;
    std::string subject = g ? gpu_subject(g->index) : r.pci_bus_id.value_or("host");
    XidEvent when;
    when.uptime_s = r.last_uptime_s;
    when.unix_time = r.last_unix_time;
    const Placed p = place(when, clock, window_s);
    const bool history = p.when == When::kHistory || p.when == When::kEarlierBoot;
    const char* what = r.kind == "init-failed"      ? "the driver could not initialise it"
                       : r.kind == "reset-required" ? "the driver says it needs a reset"
                       : r.kind == "lost"           ? "the driver lost it from the bus"
                       : r.kind == "no-power"       ? "its auxiliary power cables are not connected"
                       : r.kind == "bar-invalid"    ? "its PCI memory region is invalid (BIOS/BAR)"
                       : r.kind == "unsupported"    ? "this driver does not support it"
                       : r.kind == "not-probed"     ? "another driver owns the NVIDIA device(s)"
                                                    : "the driver found no NVIDIA GPU";
    std::string evidence =
        fmt::format("{}{}: {} (kernel log, {} line{}{}): \"{}\"", subject,
                    r.pci_bus_id && subject != *r.pci_bus_id ? " (" + *r.pci_bus_id + ")" : "",
                    what, r.count, r.count == 1 ? "" : "s",
                    p.stamp.empty() ? "" : ", last at " + p.stamp, quote(r.last_message));
    Finding fd;
    fd.severity = history ? Severity::kInfo : Severity::kCritical;
    fd.subjects = {subject};
    fd.evidence = std::move(evidence);
    if (history)
      fd.decision_note = "History, not the state now: the node has been up since (" + p.age +
                         "). If the GPU answers now, watch for a repeat.";
    else if (r.kind == "no-power" || r.kind == "bar-invalid")
      fd.action = Action::kReseatOrRma;
    else if (missing)
      fd.action = Action::kFixConfig;
    if (missing)
      e.add("gpu-missing", std::move(fd));
    else
      e.add("gpu-unresponsive", std::move(fd));
  }
  // The driver's own verdict on what the GPU needs (nvidia-smi -q "GPU Recovery Action"):
  // anything but None is a GPU that cannot serve jobs until then.
  for (const auto& g : f.gpus) {
    if (!g.recovery_action) continue;
    const std::string a = to_lower(*g.recovery_action);
    if (a == "none" || a == "n/a" || a == "not supported" || a.empty()) continue;
    const bool p2p_only =
        a.find("p2p") != std::string::npos && a.find("reset") == std::string::npos;
    Finding fd;
    fd.severity = p2p_only ? Severity::kWarning : Severity::kCritical;
    fd.subjects = {gpu_subject(g.index)};
    fd.evidence = fmt::format(
        "{}{}: the driver's recovery action is \"{}\" (GPU Recovery Action, NVML field 230): {}",
        gpu_subject(g.index), g.pci_bus_id ? " (" + *g.pci_bus_id + ")" : std::string(),
        *g.recovery_action,
        p2p_only ? "drain its peer-to-peer traffic" : "it needs that before it can run jobs again");
    fd.action = Action::kDrain;
    e.add("gpu-unresponsive", std::move(fd));
  }
  for (const auto& d : f.pci_devices) {
    const bool nvidia = (d.vendor_device && starts_with(*d.vendor_device, "10de:")) ||
                        (d.name && d.name->find("NVIDIA") != std::string::npos);
    if (!nvidia || d.revision != "ff") continue;
    const GpuFacts* g = find_gpu_by_bus(f, d.bdf);
    e.add("gpu-unresponsive", Severity::kCritical, {g ? gpu_subject(g->index) : d.bdf},
          fmt::format("{}: lspci shows revision ff: its PCI configuration space reads all ones, "
                      "the device no longer answers on the bus",
                      d.bdf));
  }
}

// ---------------------------------------------------------------- DCGM verdicts

// Subjects of a DCGM result: its GPU, else every GPU the facts know, else the node.
std::vector<std::string> dcgm_subjects(const Facts& f, const HealthCheck& h) {
  if (h.gpu) return {gpu_subject(*h.gpu)};
  if (h.entity) return {*h.entity};
  std::vector<std::string> all;
  for (const auto& g : f.gpus) all.push_back(gpu_subject(g.index));
  if (all.empty()) all.push_back("node");
  return all;
}

std::string dcgm_where(const HealthCheck& h) {
  if (h.gpu) return gpu_subject(*h.gpu);
  if (h.entity) return *h.entity;
  return "all GPUs";
}

// `dcgmi diag` failures and `dcgmi health -c` incidents: each is NVIDIA's own verdict, so it
// is reported as such; a health incident of a subsystem gpuvet has a finding for fires that
// finding (PCIe replays, ECC, thermal, power).
void check_dcgm(const Context& c, Emitter& e) {
  const Facts& f = c.facts;
  for (const auto& h : f.health_checks) {
    if (h.result != "fail" && h.result != "warn") continue;
    const bool fail = h.result == "fail";
    const std::string said = h.message.empty() ? "" : ": \"" + quote(h.message) + "\"";
    if (h.tool == "dcgmi diag") {
      // Deployment checks of the software setup are fixable settings, not broken hardware.
      const std::string t = to_lower(h.test);
      const bool setup = h.category == "Deployment" &&
                         t.find("page retirement") == std::string::npos &&
                         t.find("inforom") == std::string::npos;
      const Severity sev = fail && !setup ? Severity::kCritical : Severity::kWarning;
      Finding& fd = e.add("dcgm-diag-failed", sev, dcgm_subjects(f, h),
                          fmt::format("dcgmi diag {}{}test \"{}\": {} on {}{}", h.category,
                                      h.category.empty() ? "" : " ", h.test, fail ? "Fail" : "Warn",
                                      dcgm_where(h), said));
      // A failed deployment check names a setting; a hardware test's warning is watched.
      if (setup)
        fd.action = Action::kFixConfig;
      else if (!fail)
        fd.action = Action::kWatch;
      continue;
    }
    const Severity sev = fail ? Severity::kCritical : Severity::kWarning;
    const std::string t = to_lower(h.test);
    const std::string m = to_lower(h.message);
    const std::string evidence = fmt::format("dcgmi health -c: {} {} on {}{}", h.test,
                                             fail ? "Failure" : "Warning", dcgm_where(h), said);
    auto has = [&](const char* w) { return m.find(w) != std::string::npos; };
    Finding* fd = nullptr;
    if (t.rfind("pcie", 0) == 0 && has("replay"))
      fd = &e.add("pcie-replay-errors", sev, dcgm_subjects(f, h), evidence);
    else if (t.rfind("memory", 0) == 0 && (has("ecc") || has("dbe") || has("sbe") ||
                                           has("uncorrectable") || has("retire") || has("remap")))
      fd = &e.add("ecc-errors", sev, dcgm_subjects(f, h), evidence);
    else if (t.rfind("thermal", 0) == 0)
      fd = &e.add("thermal-throttle", sev, dcgm_subjects(f, h), evidence);
    else if (t.rfind("power", 0) == 0)
      fd = &e.add("power-throttle", sev, dcgm_subjects(f, h), evidence);
    else
      fd = &e.add("dcgm-health-incident", sev, dcgm_subjects(f, h), evidence);
    // DCGM's own rule: a Failure drains the node, a Warning is watched.
    fd->action = fail ? Action::kDrain : Action::kWatch;
  }
}

}  // namespace

void check_inventory(const Context& c, Emitter& e) {
  check_gpu_count(c, e);
  check_unresponsive(c, e);
  check_driver_failures(c, e);
  check_heterogeneous(c, e);
  check_driver_slow(c, e);
}

void check_gpu_health(const Context& c, Emitter& e) {
  std::vector<PowerFinding> power_found;
  for (const auto& g : c.facts.gpus) {
    // A GPU that stopped answering holds whatever was read before: its load and clocks may
    // be stale or zero, so only what stays true of it (temperature seen, ECC counts) is
    // judged; gpu-unresponsive already says the rest.
    if (g.unresponsive) {
      check_thermal(c, g, e);
      check_ecc(g, e);
      continue;
    }
    const bool busy = is_busy(c.facts, g, c.t);
    const bool thermal = check_thermal(c, g, e);
    PowerResult pr = check_power(c, g, busy);
    const PowerState power = pr.state;
    if (pr.finding) power_found.push_back(std::move(*pr.finding));
    // A GPU "100 % busy" at a low clock and low power is waiting, not throttled: the clock is
    // low because it has nothing to compute, so clocks-below-target would send the reader
    // after a cooling or power problem that does not exist.
    const bool waiting = check_misleading(c, g, e);
    if (!waiting) check_clocks(c, g, busy, thermal, power, e);
    check_ecc(g, e);
  }
  emit_power(c, power_found, c.facts.gpus.size(), e);
  check_xids(c, e);
  check_dcgm(c, e);
  check_over_time(c, e);
}

}  // namespace gpuvet::rules
