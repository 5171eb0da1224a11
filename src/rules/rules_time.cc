// rules/rules_time.cc — the rules over a time series (gpuvet watch, scale --duration, a
// recorded nvidia-smi dmon or --query-gpu -l): clocks that fall from their best window, one GPU
// that lags its peers, a thermal margin that shrinks, a clock limit that appears only after
// minutes, error counters that rise while watched. Only samples under load are judged: a GPU
// that goes idle, or a job that ends, has lower clocks for a reason.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "rules/rule.h"

namespace gpuvet::rules {
namespace {

// A trend needs enough points and enough time to be one and not noise.
constexpr std::size_t kMinSamples = 8;
constexpr double kMinSpanS = 60;
// A series is cut into this many windows of equal sample counts (fewer for short series).
constexpr std::size_t kMaxWindows = 12;
constexpr std::size_t kMinWindows = 4;
// The margin must fall this much, and end this close to the slowdown point (above the
// thermal_margin_c threshold), for thermal-margin-shrinking.
constexpr double kMarginFallC = 8;
constexpr double kMarginNearC = 10;
// A reason active in this share of the last quarter's busy samples "is there".
constexpr double kReasonShare = 0.5;

std::string pct(double fraction) { return format_number(fraction * 100, 0); }

template <class T>
std::optional<double> median_of(std::vector<T> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? static_cast<double>(v[n / 2])
               : (static_cast<double>(v[n / 2 - 1]) + static_cast<double>(v[n / 2])) / 2;
}

bool busy(const Context& c, const GpuSample& s) {
  if (s.util_pct) return *s.util_pct >= c.t.busy_util_pct;
  if (s.power_w && s.power_limit_w && *s.power_limit_w > 0)
    return *s.power_w / *s.power_limit_w >= c.t.busy_power_fraction;
  return true;  // a series without utilisation (a scale run) is taken under load
}

// Busy samples with an SM clock, per GPU, in time order.
std::map<int, std::vector<const GpuSample*>> busy_series(const Context& c) {
  std::map<int, std::vector<const GpuSample*>> by_gpu;
  for (const auto& s : c.facts.samples)
    if (s.sm_mhz && busy(c, s)) by_gpu[s.gpu].push_back(&s);
  for (auto& entry : by_gpu)
    std::stable_sort(entry.second.begin(), entry.second.end(),
                     [](const GpuSample* a, const GpuSample* b) { return a->t_s < b->t_s; });
  return by_gpu;
}

bool long_enough(const std::vector<const GpuSample*>& v) {
  return v.size() >= kMinSamples && v.back()->t_s - v.front()->t_s >= kMinSpanS;
}

// Consecutive windows of (nearly) equal sample counts: [begin, end) index ranges.
std::vector<std::pair<std::size_t, std::size_t>> windows(std::size_t n) {
  const std::size_t w = std::clamp<std::size_t>(n / 3, kMinWindows, kMaxWindows);
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t i = 0; i < w; ++i) out.emplace_back(i * n / w, (i + 1) * n / w);
  return out;
}

template <class F>
std::optional<double> window_median(const std::vector<const GpuSample*>& v,
                                    std::pair<std::size_t, std::size_t> w, F field) {
  std::vector<double> xs;
  for (std::size_t i = w.first; i < w.second; ++i)
    if (auto x = field(*v[i])) xs.push_back(static_cast<double>(*x));
  return median_of(std::move(xs));
}

// The reasons that limit clocks (idle and display settings are no limit).
bool limiting(const std::string& reason) {
  return reason != "idle" && reason != "display_clock_setting" && reason != "sync_boost" &&
         reason != "applications_clocks_setting";
}

// The most frequent limiting reason in samples [from, to), with its share; empty without one.
std::optional<std::pair<std::string, double>> main_reason(const std::vector<const GpuSample*>& v,
                                                          std::size_t from, std::size_t to) {
  std::map<std::string, int> count;
  int with_mask = 0;
  for (std::size_t i = from; i < to; ++i) {
    if (!v[i]->clock_event_mask) continue;
    ++with_mask;
    for (const auto& r : clock_event_names(*v[i]->clock_event_mask))
      if (limiting(r)) ++count[r];
  }
  if (count.empty() || with_mask == 0) return std::nullopt;
  auto best = std::max_element(count.begin(), count.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  return std::pair{best->first, static_cast<double>(best->second) / with_mask};
}

// ---------------------------------------------------------------- clocks fall from their best

// The best window's median SM clock against the windows after it: k consecutive windows at or
// under (1 − clock_drift_fraction) × best is a drift, reported with the lowest such run.
void check_drift(const Context& c, const std::vector<const GpuSample*>& v, int gpu, Emitter& e) {
  if (!long_enough(v)) return;
  const auto ws = windows(v.size());
  auto sm = [](const GpuSample& s) { return s.sm_mhz; };
  std::vector<double> med;
  for (const auto& w : ws) med.push_back(window_median(v, w, sm).value_or(0));
  const std::size_t k = std::max<std::size_t>(2, ws.size() / 4);
  const std::size_t best = static_cast<std::size_t>(
      std::max_element(med.begin(), med.end()) - med.begin());
  if (med[best] <= 0) return;
  const double floor = (1 - c.t.clock_drift_fraction) * med[best];
  // The first run of k low windows after the best one, extended while it stays low.
  std::optional<std::size_t> run_from;
  std::size_t run_to = 0;
  for (std::size_t i = best + 1; i < ws.size(); ++i) {
    std::size_t j = i;
    while (j < ws.size() && med[j] <= floor) ++j;
    if (j - i >= k) {
      run_from = i;
      run_to = j;
      break;
    }
  }
  if (!run_from) return;
  const std::pair low{ws[*run_from].first, ws[run_to - 1].second};
  const auto low_sm = window_median(v, low, sm);
  if (!low_sm) return;
  const double fall = (med[best] - *low_sm) / med[best];
  const double span = v.back()->t_s - v.front()->t_s;
  const double best_s = v[ws[best].second - 1]->t_s - v[ws[best].first]->t_s;
  const double low_s = v[low.second - 1]->t_s - v[low.first]->t_s;
  const bool best_first = best == 0;
  std::string evidence = fmt::format(
      "{} SM clock fell from a median {} MHz over {} {} min to {} MHz over {} consecutive "
      "window(s) ({} min) after it (−{} %) across {} min of load ({} busy samples)",
      gpu_subject(gpu), format_number(med[best], 0), best_first ? "the first" : "its best",
      format_number(best_s / 60), format_number(*low_sm, 0), run_to - *run_from,
      format_number(low_s / 60), pct(fall), format_number(span / 60), v.size());
  auto temp = [](const GpuSample& s) { return s.gpu_c; };
  auto power = [](const GpuSample& s) { return s.power_w; };
  auto margin = [](const GpuSample& s) { return s.margin_c; };
  const auto t0 = window_median(v, ws[best], temp), t1 = window_median(v, low, temp);
  if (t0 && t1)
    evidence +=
        fmt::format("; temperature {} → {} °C", format_number(*t0, 0), format_number(*t1, 0));
  const auto m0 = window_median(v, ws[best], margin), m1 = window_median(v, low, margin);
  if (m0 && m1)
    evidence += fmt::format(" (T.Limit margin {} → {} °C)", format_number(*m0, 0),
                            format_number(*m1, 0));
  const auto p0 = window_median(v, ws[best], power), p1 = window_median(v, low, power);
  if (p0 && p1)
    evidence += fmt::format("; power {} → {} W", format_number(*p0, 0), format_number(*p1, 0));
  if (auto r = main_reason(v, low.first, low.second))
    evidence += fmt::format("; {} active in {} % of those samples", r->first, pct(r->second));
  e.add("clocks-degrade-over-time", Severity::kWarning, {gpu_subject(gpu)}, std::move(evidence));
}

// ---------------------------------------------------------------- the one that makes the others wait

struct Pace {
  int gpu = 0;
  double clock = 0;  // median SM MHz, or share of the max when every GPU's max is known
  double mhz = 0;
  std::optional<double> power_w, temp_c;
  std::optional<std::pair<std::string, double>> reason;
  std::size_t samples = 0;
};

void check_lagging(const Context& c, const std::map<int, std::vector<const GpuSample*>>& series,
                   Emitter& e) {
  std::vector<Pace> paces;
  bool all_max = true;
  std::set<std::string> models;
  auto gpu_facts = [&](int i) { return find_gpu(c.facts, i); };
  if (!c.facts.samples.empty()) {
    for (const auto& [gpu, v] : series) {
      if (v.size() < 3) continue;
      Pace p;
      p.gpu = gpu;
      p.samples = v.size();
      p.mhz = window_median(v, {0, v.size()}, [](const GpuSample& s) { return s.sm_mhz; })
                  .value_or(0);
      p.power_w = window_median(v, {0, v.size()}, [](const GpuSample& s) { return s.power_w; });
      p.temp_c = window_median(v, {0, v.size()}, [](const GpuSample& s) { return s.gpu_c; });
      p.reason = main_reason(v, 0, v.size());
      paces.push_back(p);
    }
  } else {
    // One reading per GPU (nvidia-smi -q of a busy node): the same comparison, once.
    for (const auto& g : c.facts.gpus) {
      if (!g.clocks.sm_mhz || !g.utilization.gpu_pct ||
          *g.utilization.gpu_pct < c.t.busy_util_pct)
        continue;
      Pace p;
      p.gpu = g.index;
      p.samples = 1;
      p.mhz = *g.clocks.sm_mhz;
      p.power_w = g.power.draw_w;
      if (g.thermal.gpu_c) p.temp_c = *g.thermal.gpu_c;
      if (!g.clock_events.active.empty()) {
        for (const auto& r : g.clock_events.active)
          if (limiting(r)) {
            p.reason = std::pair{r, 1.0};
            break;
          }
      }
      paces.push_back(p);
    }
  }
  if (paces.size() < 2) return;
  for (auto& p : paces) {
    const GpuFacts* g = gpu_facts(p.gpu);
    models.insert(g && g->name ? *g->name : "?");
    if (g && g->clocks.sm_max_mhz && *g->clocks.sm_max_mhz > 0)
      p.clock = p.mhz / *g->clocks.sm_max_mhz;
    else
      all_max = false;
  }
  // Different models run at different clocks: heterogeneous-gpus says so.
  if (models.size() > 1) return;
  if (!all_max)
    for (auto& p : paces) p.clock = p.mhz;
  for (const auto& p : paces) {
    std::vector<double> peers, peer_power, peer_temp;
    for (const auto& q : paces) {
      if (q.gpu == p.gpu) continue;
      peers.push_back(q.clock);
      if (q.power_w) peer_power.push_back(*q.power_w);
      if (q.temp_c) peer_temp.push_back(*q.temp_c);
    }
    const auto peer = median_of(peers);
    if (!peer || *peer <= 0 || p.clock >= c.t.gpu_lags_peers_fraction * *peer) continue;
    const double peer_mhz = all_max ? *peer * p.mhz / p.clock : *peer;
    std::string evidence = fmt::format(
        "{} ran at a median {} MHz while busy against {} MHz for its {} busy peer(s) ({} % of "
        "their pace{}){}",
        gpu_subject(p.gpu), format_number(p.mhz, 0), format_number(peer_mhz, 0), peers.size(),
        pct(p.clock / *peer), all_max ? ", as shares of the maximum clock" : "",
        p.samples > 1 ? fmt::format(" over {} samples", p.samples) : " in one reading");
    if (p.power_w && !peer_power.empty())
      evidence += fmt::format("; power {} W against {} W", format_number(*p.power_w, 0),
                              format_number(*median_of(peer_power), 0));
    if (p.temp_c && !peer_temp.empty())
      evidence += fmt::format("; {} °C against {} °C", format_number(*p.temp_c, 0),
                              format_number(*median_of(peer_temp), 0));
    if (p.reason)
      evidence += fmt::format("; {} active in {} % of its samples", p.reason->first,
                              pct(p.reason->second));
    e.add("gpu-lags-peers", Severity::kWarning, {gpu_subject(p.gpu)}, std::move(evidence));
  }
}

// ---------------------------------------------------------------- heat that has not settled

void check_margin(const Context& c, const std::vector<const GpuSample*>& v, int gpu, Emitter& e) {
  if (!long_enough(v)) return;
  const GpuFacts* g = find_gpu(c.facts, gpu);
  const std::optional<int> slowdown = g ? g->thermal.slowdown_c : std::nullopt;
  // The T.Limit margin where NVML gives it, else the distance to the slowdown temperature.
  auto margin = [&](const GpuSample& s) -> std::optional<int> {
    if (s.margin_c) return s.margin_c;
    if (s.gpu_c && slowdown) return *slowdown - *s.gpu_c;
    return std::nullopt;
  };
  const auto ws = windows(v.size());
  const auto m0 = window_median(v, ws.front(), margin);
  const auto m1 = window_median(v, ws.back(), margin);
  if (!m0 || !m1) return;
  if (*m0 - *m1 < kMarginFallC || *m1 > c.t.thermal_margin_c + kMarginNearC) return;
  const double dt_min = (v[ws.back().second - 1]->t_s - v[ws.front().first]->t_s) / 60;
  const double rate = dt_min > 0 ? (*m0 - *m1) / dt_min : 0;
  std::string evidence = fmt::format(
      "{} thermal margin fell from {} °C to {} °C over {} min of load ({} °C/min)", gpu_subject(gpu),
      format_number(*m0, 0), format_number(*m1, 0), format_number(dt_min), format_number(rate));
  if (rate > 0 && *m1 > c.t.thermal_margin_c)
    evidence += fmt::format("; at that pace it reaches the {} °C slowdown margin in {} min",
                            c.t.thermal_margin_c,
                            format_number((*m1 - c.t.thermal_margin_c) / rate));
  e.add("thermal-margin-shrinking", Severity::kWarning, {gpu_subject(gpu)}, std::move(evidence));
}

// ---------------------------------------------------------------- limits that come with time

void check_late_reasons(const Context& c, const std::vector<const GpuSample*>& v, int gpu,
                        Emitter& e) {
  if (!long_enough(v)) return;
  const auto ws = windows(v.size());
  std::set<std::string> early;
  int early_masks = 0;
  for (std::size_t i = ws.front().first; i < ws.front().second; ++i)
    if (v[i]->clock_event_mask) {
      ++early_masks;
      for (const auto& r : clock_event_names(*v[i]->clock_event_mask)) early.insert(r);
    }
  if (early_masks == 0) return;
  const std::size_t from = v.size() - v.size() / 4;
  std::map<std::string, int> late;
  int late_masks = 0;
  double first_seen = -1;
  for (std::size_t i = from; i < v.size(); ++i) {
    if (!v[i]->clock_event_mask) continue;
    ++late_masks;
    for (const auto& r : clock_event_names(*v[i]->clock_event_mask)) ++late[r];
  }
  if (late_masks == 0) return;
  for (const auto& [reason, n] : late) {
    if (!limiting(reason) || early.count(reason)) continue;
    const double share = static_cast<double>(n) / late_masks;
    if (share < kReasonShare) continue;
    for (const auto* s : v)
      if (s->clock_event_mask) {
        const auto names = clock_event_names(*s->clock_event_mask);
        if (std::find(names.begin(), names.end(), reason) != names.end()) {
          first_seen = s->t_s - v.front()->t_s;
          break;
        }
      }
    const Severity sev = reason == "sw_power_cap" ? Severity::kInfo : Severity::kWarning;
    e.add("throttle-appears-over-time", sev, {gpu_subject(gpu)},
          fmt::format("{} {} was not active in the first {} min under load, first appeared after "
                      "{} min and is active in {} % of the last quarter's busy samples",
                      gpu_subject(gpu), reason,
                      format_number((v[ws.front().second - 1]->t_s - v.front()->t_s) / 60),
                      format_number(first_seen / 60), pct(share)));
  }
}

// ---------------------------------------------------------------- counters that move

void check_counters(const Context& c, Emitter& e) {
  std::map<int, std::pair<const GpuSample*, const GpuSample*>> ends;
  for (const auto& s : c.facts.samples) {
    auto& [first, last] = ends[s.gpu];
    if (!first || s.t_s < first->t_s) first = &s;
    if (!last || s.t_s >= last->t_s) last = &s;
  }
  for (const auto& [gpu, fl] : ends) {
    const auto* a = fl.first;
    const auto* b = fl.second;
    if (a == b) continue;
    auto delta = [](const std::optional<std::uint64_t>& x, const std::optional<std::uint64_t>& y)
        -> std::uint64_t { return x && y && *y > *x ? *y - *x : 0; };
    const auto replays = delta(a->pcie_replays, b->pcie_replays);
    const auto ce = delta(a->ecc_corrected, b->ecc_corrected);
    const auto ue = delta(a->ecc_uncorrected, b->ecc_uncorrected);
    const int lost = a->nvlinks_up && b->nvlinks_up && *b->nvlinks_up < *a->nvlinks_up
                         ? *a->nvlinks_up - *b->nvlinks_up
                         : 0;
    if (!replays && !ce && !ue && !lost) continue;
    std::vector<std::string> parts;
    if (ue) parts.push_back(fmt::format("{} uncorrected ECC error(s)", ue));
    if (lost) parts.push_back(fmt::format("{} NVLink(s) went down ({} → {} up)", lost,
                                          *a->nvlinks_up, *b->nvlinks_up));
    if (replays) parts.push_back(fmt::format("{} PCIe replay(s)", replays));
    if (ce) parts.push_back(fmt::format("{} corrected ECC error(s)", ce));
    const Severity sev = ue || lost ? Severity::kCritical
                         : replays >= static_cast<std::uint64_t>(c.t.pcie_replay_warn_count)
                             ? Severity::kWarning
                             : Severity::kInfo;
    std::string joined;
    for (const auto& p : parts) joined += (joined.empty() ? "" : ", ") + p;
    e.add("errors-during-watch", sev, {gpu_subject(gpu)},
          fmt::format("{}: {} between {} s and {} s of the series", gpu_subject(gpu), joined,
                      format_number(a->t_s, 0), format_number(b->t_s, 0)));
  }
}

}  // namespace

void check_over_time(const Context& c, Emitter& e) {
  const auto series = busy_series(c);
  for (const auto& [gpu, v] : series) {
    check_drift(c, v, gpu, e);
    check_margin(c, v, gpu, e);
    check_late_reasons(c, v, gpu, e);
  }
  check_lagging(c, series, e);
  check_counters(c, e);
}

}  // namespace gpuvet::rules
