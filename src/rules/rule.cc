#include "rules/rule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include <fmt/format.h>

#include "core/util.h"

namespace gpuvet::rules {

Finding& Emitter::add(FindingId id, std::vector<std::string> subjects, std::string evidence) {
  const CatalogEntry* entry = find_catalog_entry(id.str());
  return add(id, entry ? entry->default_severity : Severity::kWarning, std::move(subjects),
             std::move(evidence));
}

Finding& Emitter::add(FindingId id, Severity severity, std::vector<std::string> subjects,
                      std::string evidence) {
  Finding f;
  f.severity = severity;
  f.subjects = std::move(subjects);
  f.evidence = std::move(evidence);
  return add(id, std::move(f));
}

Finding& Emitter::add(FindingId id, Finding finding) {
  finding.id = std::string(id.str());
  findings_.push_back(std::move(finding));
  return findings_.back();
}

Finding& measure(Finding& f, std::string quantity, std::string unit, double observed,
                 double expected, Bound bound) {
  f.observed = FindingValue{quantity, observed, unit, Bound::kExactly};
  f.expected = FindingValue{std::move(quantity), expected, std::move(unit), bound};
  return f;
}

void Emitter::note(std::string text) {
  if (std::find(notes_.begin(), notes_.end(), text) == notes_.end())
    notes_.push_back(std::move(text));
}

std::string gpu_subject(int index) { return "GPU" + std::to_string(index); }

std::string pair_subject(int a, int b) {
  if (b < a) std::swap(a, b);
  return gpu_subject(a) + "-" + gpu_subject(b);
}

std::string gpu_set_subject(const std::set<int>& gpus) {
  std::string out = "GPU";
  for (auto it = gpus.begin(); it != gpus.end();) {
    const int first = *it;
    int last = first;
    for (++it; it != gpus.end() && *it == last + 1; ++it) last = *it;
    if (out.size() > 3) out += ',';
    out += last == first ? fmt::format("{}", first) : fmt::format("{}–{}", first, last);
  }
  return out;
}

std::vector<std::string> PairSet::subjects() const {
  if (pairs.size() > kListed) return {compact()};
  std::vector<std::string> out;
  out.reserve(pairs.size());
  for (const auto& [a, b] : pairs) out.push_back(pair_subject(a, b));
  return out;
}

namespace {

// A set of distinct pairs in words, and whether the words give its count.
struct PairSetWords {
  std::string text;
  bool counted = false;
};

PairSetWords describe(const std::vector<std::pair<int, int>>& pairs) {
  std::set<int> first, second;
  for (const auto& [a, b] : pairs) {
    first.insert(a);
    second.insert(b);
  }
  std::set<int> all = first;
  all.insert(second.begin(), second.end());
  const std::size_t n = all.size();
  // Pairs are distinct (one per GpuPair): |first| × |second| of them over disjoint sides are
  // every pair across the sides, and n(n-1)/2 every pair of the set.
  if (all.size() == first.size() + second.size() && pairs.size() == first.size() * second.size())
    return {gpu_set_subject(first) + " × " + gpu_set_subject(second), false};
  if (pairs.size() == n * (n - 1) / 2)
    return {fmt::format("all {} pairs of {}", pairs.size(), gpu_set_subject(all)), true};
  return {fmt::format("{} pairs among {}", pairs.size(), gpu_set_subject(all)), true};
}

}  // namespace

std::string PairSet::compact() const { return describe(pairs).text; }

std::string PairSet::phrase() const {
  if (pairs.size() == 1) return pair_subject(pairs[0].first, pairs[0].second);
  const PairSetWords words = describe(pairs);
  return words.counted ? words.text : fmt::format("{} pairs ({})", pairs.size(), words.text);
}

std::optional<double> power_fraction(const GpuFacts& g) {
  const auto& p = g.power;
  const std::optional<double> limit = p.enforced_limit_w ? p.enforced_limit_w : p.limit_w;
  if (!p.draw_w || !limit || *limit <= 0) return std::nullopt;
  return *p.draw_w / *limit;
}

std::optional<double> memory_fraction(const GpuFacts& g) {
  if (!g.memory.total_bytes || !g.memory.used_bytes || *g.memory.total_bytes == 0)
    return std::nullopt;
  return static_cast<double>(*g.memory.used_bytes) / static_cast<double>(*g.memory.total_bytes);
}

namespace {

bool has_process(const Facts& f, int gpu) {
  return std::any_of(f.processes.begin(), f.processes.end(),
                     [&](const ProcessFacts& p) { return p.gpu == gpu; });
}

}  // namespace

bool is_busy(const Facts&, const GpuFacts& g, const Thresholds& t) {
  if (g.utilization.gpu_pct) return *g.utilization.gpu_pct >= t.busy_util_pct;
  if (const auto pf = power_fraction(g)) return *pf >= t.busy_power_fraction;
  return false;
}

bool is_idle(const Facts& f, const GpuFacts& g, const Thresholds& t) {
  if (has_process(f, g.index)) return false;
  if (g.utilization.gpu_pct) return *g.utilization.gpu_pct <= t.idle_util_pct;
  const auto& active = g.clock_events.active;
  return active.size() == 1 && active[0] == "idle";
}

std::string load_phrase(const GpuFacts& g) {
  std::vector<std::string> parts;
  if (g.utilization.gpu_pct) parts.push_back(fmt::format("util {} %", *g.utilization.gpu_pct));
  if (g.power.draw_w) {
    const auto limit = g.power.enforced_limit_w ? g.power.enforced_limit_w : g.power.limit_w;
    if (limit)
      parts.push_back(
          fmt::format("{}/{} W", format_number(*g.power.draw_w, 0), format_number(*limit, 0)));
    else
      parts.push_back(fmt::format("{} W", format_number(*g.power.draw_w, 0)));
  }
  if (g.pstate) parts.push_back(fmt::format("P{}", *g.pstate));
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string s;
  for (const auto& p : parts) {
    if (!s.empty()) s += sep;
    s += p;
  }
  return s;
}

}  // namespace gpuvet::rules
