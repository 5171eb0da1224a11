// rules/rules_time.cc — the rules over a time series (gpuvet watch, scale --duration, a
// recorded nvidia-smi dmon or --query-gpu -l): clocks (or scale's own throughput) that fall
// from their best window, one GPU
// that lags its peers, a thermal margin that shrinks, a clock limit that appears only after
// minutes, error counters that rise while watched. Only samples under load are judged: a GPU
// that goes idle, or a job that ends, has lower clocks for a reason.
//
// A GPU's busy samples are cut into windows of (nearly) equal sample counts: n / 3 of them,
// at least 4 and at most 12. A window's value is the median of its samples, so one odd
// reading moves nothing. docs/measurement.md describes the windows, k and what stays benign.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "rules/rule.h"

namespace gpuvet::rules {
namespace {

// A trend needs enough points (and Thresholds::series_min_span_s of time) to be one.
constexpr std::size_t kMinSamples = 8;
// A series is cut into this many windows of equal sample counts (fewer for short series).
constexpr std::size_t kMaxWindows = 12;
constexpr std::size_t kMinWindows = 4;
// The margin must fall this much from the first window to the last, still be falling over
// the second half (a GPU that warmed up and settled is not shrinking), and end this close to
// the slowdown point (above the thermal_margin_c threshold), for thermal-margin-shrinking.
constexpr double kMarginFallC = 8;
constexpr double kMarginStillFallingC = 2;
constexpr double kMarginNearC = 10;
// A reason active in this share of the samples "is there".
constexpr double kReasonShare = 0.5;
// gpu-lags-peers compares a GPU's median over at least this many busy samples.
constexpr std::size_t kMinPaceSamples = 3;

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
  // NVML's own "idle" reason says the GPU had nothing to run.
  if (s.clock_event_mask && (*s.clock_event_mask & 0x1)) return false;
  if (s.power_w && s.power_limit_w && *s.power_limit_w > 0)
    return *s.power_w / *s.power_limit_w >= c.t.busy_power_fraction;
  return true;  // a series without utilisation (a scale run) is taken under load
}

using Series = std::vector<const GpuSample*>;

// Busy samples with an SM clock, per GPU, in time order.
std::map<int, Series> busy_series(const Context& c) {
  std::map<int, Series> by_gpu;
  for (const auto& s : c.facts.samples)
    if (s.sm_mhz && busy(c, s)) by_gpu[s.gpu].push_back(&s);
  for (auto& entry : by_gpu)
    std::stable_sort(entry.second.begin(), entry.second.end(),
                     [](const GpuSample* a, const GpuSample* b) { return a->t_s < b->t_s; });
  return by_gpu;
}

bool long_enough(const Context& c, const Series& v) {
  return v.size() >= kMinSamples && v.back()->t_s - v.front()->t_s >= c.t.series_min_span_s;
}

using Range = std::pair<std::size_t, std::size_t>;  // [begin, end) sample indices

// Consecutive windows of (nearly) equal sample counts.
std::vector<Range> windows(std::size_t n) {
  const std::size_t w = std::clamp<std::size_t>(n / 3, kMinWindows, kMaxWindows);
  std::vector<Range> out;
  for (std::size_t i = 0; i < w; ++i) out.emplace_back(i * n / w, (i + 1) * n / w);
  return out;
}

template <class F>
std::optional<double> window_median(const Series& v, Range w, F field) {
  std::vector<double> xs;
  for (std::size_t i = w.first; i < w.second; ++i)
    if (auto x = field(*v[i])) xs.push_back(static_cast<double>(*x));
  return median_of(std::move(xs));
}

double duration_s(const Series& v, Range w) { return v[w.second - 1]->t_s - v[w.first]->t_s; }

// The reasons that limit clocks (idle and settings are no limit).
bool limiting(const std::string& reason) {
  return reason != "idle" && reason != "display_clock_setting" && reason != "sync_boost" &&
         reason != "applications_clocks_setting";
}

bool has_reason(const GpuSample& s, const std::string& reason) {
  if (!s.clock_event_mask) return false;
  const auto names = clock_event_names(*s.clock_event_mask);
  return std::find(names.begin(), names.end(), reason) != names.end();
}

// Share of the samples in `w` with a mask that have `reason` set; nullopt without masks.
std::optional<double> reason_share(const Series& v, Range w, const std::string& reason) {
  int masks = 0, with = 0;
  for (std::size_t i = w.first; i < w.second; ++i) {
    if (!v[i]->clock_event_mask) continue;
    ++masks;
    if (has_reason(*v[i], reason)) ++with;
  }
  if (masks == 0) return std::nullopt;
  return static_cast<double>(with) / masks;
}

bool thermal_or_hardware(const std::string& reason) {
  return reason.find("thermal") != std::string::npos || reason.rfind("hw_", 0) == 0;
}

struct Reason {
  std::string name;
  double share = 0;
};

// The most frequent limiting reason in `w`, with its share of the samples that had a mask.
// `masked` says whether any sample had one (no reason at all is then a fact, not a gap).
std::optional<Reason> main_reason(const Series& v, Range w, bool* masked = nullptr) {
  std::map<std::string, int> count;
  int with_mask = 0;
  for (std::size_t i = w.first; i < w.second; ++i) {
    if (!v[i]->clock_event_mask) continue;
    ++with_mask;
    for (const auto& r : clock_event_names(*v[i]->clock_event_mask))
      if (limiting(r)) ++count[r];
  }
  if (masked) *masked = with_mask > 0;
  if (count.empty()) return std::nullopt;
  // On a tie a thermal or hardware reason explains more than the power cap beside it.
  auto best = std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second < b.second;
    return !thermal_or_hardware(a.first) && thermal_or_hardware(b.first);
  });
  return Reason{best->first, static_cast<double>(best->second) / with_mask};
}

// ---------------------------------------------------------------- clocks fall from their best

// A series' fall from its best window: the windows, the best one and its median, and the first
// run of k = max(2, windows / 4) consecutive windows after it at or under (1 − fraction) × best
// (extended while it stays low).
struct Drift {
  std::vector<Range> ws;
  std::size_t best = 0;
  double best_median = 0;
  double floor = 0;
  Range low;
  std::size_t low_windows = 0;
};

std::optional<Drift> find_drift(const std::vector<std::optional<double>>& xs, double fraction) {
  Drift d;
  d.ws = windows(xs.size());
  std::vector<double> med;
  for (const auto& w : d.ws) {
    std::vector<double> in;
    for (std::size_t i = w.first; i < w.second; ++i)
      if (xs[i]) in.push_back(*xs[i]);
    med.push_back(median_of(std::move(in)).value_or(0));
  }
  const std::size_t k = std::max<std::size_t>(2, d.ws.size() / 4);
  d.best = static_cast<std::size_t>(std::max_element(med.begin(), med.end()) - med.begin());
  d.best_median = med[d.best];
  if (d.best_median <= 0) return std::nullopt;
  d.floor = (1 - fraction) * d.best_median;
  for (std::size_t i = d.best + 1; i < d.ws.size(); ++i) {
    std::size_t j = i;
    while (j < d.ws.size() && med[j] <= d.floor) ++j;
    if (j - i >= k) {
      d.low = {d.ws[i].first, d.ws[j - 1].second};
      d.low_windows = j - i;
      return d;
    }
  }
  return std::nullopt;
}

// The best window's median SM clock against the windows after it (find_drift with
// clock_drift_fraction), reported with the reason active in the low run. A fall at the
// power cap with nothing but sw_power_cap active before and after is the limit doing its job
// (clocks trade against temperature at a fixed power): info.
void check_drift(const Context& c, const Series& v, int gpu, Emitter& e) {
  if (!long_enough(c, v)) return;
  auto sm = [](const GpuSample& s) { return s.sm_mhz; };
  std::vector<std::optional<double>> xs;
  for (const auto* s : v)
    xs.push_back(s->sm_mhz ? std::optional<double>(*s->sm_mhz) : std::nullopt);
  const auto drift = find_drift(xs, c.t.clock_drift_fraction);
  if (!drift) return;
  const auto& ws = drift->ws;
  const std::size_t best = drift->best;
  const Range low = drift->low;
  const double floor = drift->floor;
  const auto low_sm = window_median(v, low, sm);
  if (!low_sm) return;
  const double fall = (drift->best_median - *low_sm) / drift->best_median;
  const double span = v.back()->t_s - v.front()->t_s;
  std::string evidence = fmt::format(
      "{} SM clock fell from a median {} MHz over {} {} min to {} MHz over {} consecutive "
      "windows ({} min) after it (−{} %) across {} min of load ({} busy samples)",
      gpu_subject(gpu), format_number(drift->best_median, 0), best == 0 ? "the first" : "its best",
      format_number(duration_s(v, ws[best]) / 60), format_number(*low_sm, 0), drift->low_windows,
      format_number(duration_s(v, low) / 60), pct(fall), format_number(span / 60), v.size());
  auto temp = [](const GpuSample& s) { return s.gpu_c; };
  auto power = [](const GpuSample& s) { return s.power_w; };
  auto margin = [](const GpuSample& s) { return s.margin_c; };
  const auto t0 = window_median(v, ws[best], temp), t1 = window_median(v, low, temp);
  if (t0 && t1)
    evidence +=
        fmt::format("; temperature {} → {} °C", format_number(*t0, 0), format_number(*t1, 0));
  const auto m0 = window_median(v, ws[best], margin), m1 = window_median(v, low, margin);
  if (m0 && m1)
    evidence +=
        fmt::format(" (T.Limit margin {} → {} °C)", format_number(*m0, 0), format_number(*m1, 0));
  const auto p0 = window_median(v, ws[best], power), p1 = window_median(v, low, power);
  if (p0 && p1)
    evidence += fmt::format("; power {} → {} W", format_number(*p0, 0), format_number(*p1, 0));
  bool masked = false;
  const auto reason = main_reason(v, low, &masked);
  if (reason)
    evidence +=
        fmt::format("; {} active in {} % of those samples", reason->name, pct(reason->share));
  else if (masked)
    evidence += "; no clock-event reason was active then";
  // At the power cap before and after, nothing hotter or harder behind it.
  const auto capped_before = reason_share(v, ws[best], "sw_power_cap");
  const bool at_cap =
      reason && reason->name == "sw_power_cap" && capped_before && *capped_before >= kReasonShare;
  bool other_limit = false;
  for (std::size_t i = low.first; i < low.second && at_cap; ++i)
    if (v[i]->clock_event_mask)
      for (const auto& r : clock_event_names(*v[i]->clock_event_mask))
        other_limit = other_limit || thermal_or_hardware(r);
  Finding f;
  f.subjects = {gpu_subject(gpu)};
  f.evidence = std::move(evidence);
  f.severity = Severity::kWarning;
  if (at_cap && !other_limit) {
    f.severity = Severity::kInfo;
    f.action = Action::kNone;
    f.decision_note =
        "At its power limit the whole time (sw_power_cap before and after): as the chip warms it "
        "draws more power per clock, so the same limit buys fewer MHz. That is the limit doing "
        "its job; raise it only if the board and the PSU allow, or measure after the warm-up.";
  }
  measure(e.add("clocks-degrade-over-time", std::move(f)), "sm_clock", "MHz", *low_sm, floor,
          Bound::kAtLeast);
}

// The node's own throughput (scale --duration) against its best window, as check_drift does for
// clocks: the load is gpuvet's, so it never ends early and a fall is the node slowing down. The
// GPUs' busy samples over the low run tell why (the reason most often active, and on which GPU);
// the power cap alone before and after is info, as for clocks.
void check_throughput_drift(const Context& c, const std::map<int, Series>& gpus, Emitter& e) {
  std::map<std::pair<std::string, int>, std::vector<const ThroughputSample*>> runs;
  for (const auto& s : c.facts.throughput_samples) runs[{s.preset, s.gpus}].push_back(&s);
  for (auto& [key, v] : runs) {
    std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->t_s < b->t_s; });
    if (v.size() < kMinSamples || v.back()->t_s - v.front()->t_s < c.t.series_min_span_s) continue;
    std::vector<std::optional<double>> xs;
    for (const auto* s : v) xs.push_back(s->items_per_s);
    const auto drift = find_drift(xs, c.t.clock_drift_fraction);
    if (!drift) continue;
    std::vector<double> in_low;
    for (std::size_t i = drift->low.first; i < drift->low.second; ++i)
      in_low.push_back(v[i]->items_per_s);
    const double low = *median_of(std::move(in_low));
    const double t0 = v[drift->low.first]->t_s, t1 = v[drift->low.second - 1]->t_s;
    const auto& best_w = drift->ws[drift->best];
    const double b0 = v[best_w.first]->t_s, b1 = v[best_w.second - 1]->t_s;
    std::string evidence = fmt::format(
        "{} on {} GPU(s): throughput fell from a median {}/s over {} {} min to {}/s over {} "
        "consecutive windows ({} min) after it (−{} %) across {} min of load",
        key.first, key.second, format_number(drift->best_median),
        drift->best == 0 ? "the first" : "its best", format_number((b1 - b0) / 60),
        format_number(low), drift->low_windows, format_number((t1 - t0) / 60),
        pct((drift->best_median - low) / drift->best_median),
        format_number((v.back()->t_s - v.front()->t_s) / 60));
    // Why: the reason most often limiting a GPU while the throughput was low.
    std::optional<Reason> why;
    int why_gpu = -1;
    bool capped_before = true, other_limit = false, any_gpu = false;
    auto span_of = [](const Series& s, double from, double to) {
      Range r{s.size(), 0};
      for (std::size_t i = 0; i < s.size(); ++i)
        if (s[i]->t_s >= from && s[i]->t_s <= to) r = {std::min(r.first, i), i + 1};
      return r;
    };
    for (const auto& [gpu, s] : gpus) {
      const Range lr = span_of(s, t0, t1), br = span_of(s, b0, b1);
      if (lr.first >= lr.second) continue;
      any_gpu = true;
      const auto r = main_reason(s, lr);
      if (r && (!why || r->share > why->share)) {
        why = r;
        why_gpu = gpu;
      }
      const auto cap = br.first < br.second ? reason_share(s, br, "sw_power_cap") : std::nullopt;
      capped_before = capped_before && cap && *cap >= kReasonShare;
      for (std::size_t i = lr.first; i < lr.second; ++i)
        if (s[i]->clock_event_mask)
          for (const auto& name : clock_event_names(*s[i]->clock_event_mask))
            other_limit = other_limit || thermal_or_hardware(name);
    }
    if (why)
      evidence += fmt::format("; {} active on {} in {} % of its samples then", why->name,
                              gpu_subject(why_gpu), pct(why->share));
    else if (any_gpu)
      evidence += "; no clock-event reason was active on any GPU then";
    Finding f;
    for (int g = 0; g < key.second; ++g) f.subjects.push_back(gpu_subject(g));
    if (f.subjects.empty()) f.subjects = {"node"};
    f.evidence = std::move(evidence);
    f.severity = Severity::kWarning;
    if (why && why->name == "sw_power_cap" && capped_before && !other_limit) {
      f.severity = Severity::kInfo;
      f.action = Action::kNone;
      f.decision_note =
          "At the power limit the whole time (sw_power_cap before and after): the same limit "
          "buys fewer clocks as the chips warm. Measure after the warm-up, or raise the limit "
          "only if the board and the PSU allow.";
    }
    measure(e.add("clocks-degrade-over-time", std::move(f)), "throughput", "items/s", low,
            drift->floor, Bound::kAtLeast);
  }
}

// ---------------------------------------------------------------- the one that makes the others
// wait

struct Pace {
  int gpu = 0;
  double clock = 0;  // median SM MHz, or share of the max when every GPU's max is known
  double mhz = 0;
  std::optional<double> power_w, temp_c;
  std::optional<Reason> reason;
  std::size_t samples = 0;
};

// Each busy GPU's median clock against the median of the other busy GPUs of the same model.
// Idle GPUs are nobody's peers (they have no busy samples), so one busy GPU beside idle ones
// is compared with nothing.
void check_lagging(const Context& c, const std::map<int, Series>& series, Emitter& e) {
  std::vector<Pace> paces;
  if (!c.facts.samples.empty()) {
    for (const auto& entry : series) {
      const Series& v = entry.second;
      if (v.size() < kMinPaceSamples) continue;
      const Range all{0, v.size()};
      Pace p;
      p.gpu = entry.first;
      p.samples = v.size();
      p.mhz = window_median(v, all, [](const GpuSample& s) { return s.sm_mhz; }).value_or(0);
      p.power_w = window_median(v, all, [](const GpuSample& s) { return s.power_w; });
      p.temp_c = window_median(v, all, [](const GpuSample& s) { return s.gpu_c; });
      p.reason = main_reason(v, all);
      paces.push_back(p);
    }
  } else {
    // One reading per GPU (nvidia-smi -q of a busy node): the same comparison, once.
    for (const auto& g : c.facts.gpus) {
      if (!g.clocks.sm_mhz || !g.utilization.gpu_pct || *g.utilization.gpu_pct < c.t.busy_util_pct)
        continue;
      Pace p;
      p.gpu = g.index;
      p.samples = 1;
      p.mhz = *g.clocks.sm_mhz;
      p.power_w = g.power.draw_w;
      if (g.thermal.gpu_c) p.temp_c = *g.thermal.gpu_c;
      for (const auto& r : g.clock_events.active)
        if (limiting(r)) {
          p.reason = Reason{r, 1.0};
          break;
        }
      paces.push_back(p);
    }
  }
  if (paces.size() < 2) return;
  std::set<std::string> models;
  bool all_max = true;
  for (auto& p : paces) {
    const GpuFacts* g = find_gpu(c.facts, p.gpu);
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
    std::vector<double> peers, peer_mhz, peer_power, peer_temp;
    for (const auto& q : paces) {
      if (q.gpu == p.gpu) continue;
      peers.push_back(q.clock);
      peer_mhz.push_back(q.mhz);
      if (q.power_w) peer_power.push_back(*q.power_w);
      if (q.temp_c) peer_temp.push_back(*q.temp_c);
    }
    const auto peer = median_of(peers);
    if (!peer || *peer <= 0 || p.clock >= c.t.gpu_lags_peers_fraction * *peer) continue;
    std::string evidence = fmt::format(
        "{} ran at a median {} MHz while busy against {} MHz for its {} busy peer{} ({} % of "
        "their pace{}){}",
        gpu_subject(p.gpu), format_number(p.mhz, 0), format_number(*median_of(peer_mhz), 0),
        peers.size(), peers.size() == 1 ? "" : "s", pct(p.clock / *peer),
        all_max ? ", as shares of the maximum clock" : "",
        p.samples > 1 ? fmt::format(" over {} samples", p.samples) : " in one reading");
    if (p.power_w && !peer_power.empty())
      evidence += fmt::format("; power {} W against {} W", format_number(*p.power_w, 0),
                              format_number(*median_of(peer_power), 0));
    if (p.temp_c && !peer_temp.empty())
      evidence += fmt::format("; {} °C against {} °C", format_number(*p.temp_c, 0),
                              format_number(*median_of(peer_temp), 0));
    if (p.reason)
      evidence +=
          fmt::format("; {} active in {} % of its samples", p.reason->name, pct(p.reason->share));
    Finding& f =
        e.add("gpu-lags-peers", Severity::kWarning, {gpu_subject(p.gpu)}, std::move(evidence));
    if (all_max)
      measure(f, "sm_clock_share_of_peers", "fraction", p.clock / *peer,
              c.t.gpu_lags_peers_fraction, Bound::kAtLeast);
    else
      measure(f, "sm_clock", "MHz", p.mhz, c.t.gpu_lags_peers_fraction * *peer, Bound::kAtLeast);
  }
}

// ---------------------------------------------------------------- heat that has not settled

void check_margin(const Context& c, const Series& v, int gpu, Emitter& e) {
  if (!long_enough(c, v)) return;
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
  const auto mid = window_median(v, ws[ws.size() / 2], margin);
  const auto m1 = window_median(v, ws.back(), margin);
  if (!m0 || !mid || !m1) return;
  if (*m0 - *m1 < kMarginFallC || *mid - *m1 < kMarginStillFallingC ||
      *m1 > c.t.thermal_margin_c + kMarginNearC)
    return;
  const double dt_min = (v[ws.back().second - 1]->t_s - v[ws.front().first]->t_s) / 60;
  // The pace over the second half: where it is heading now, not the warm-up.
  const double late_min = (v[ws.back().second - 1]->t_s - v[ws[ws.size() / 2].first]->t_s) / 60;
  const double rate = late_min > 0 ? (*mid - *m1) / late_min : 0;
  std::string evidence = fmt::format(
      "{} thermal margin fell from {} °C to {} °C over {} min of load, still {} "
      "°C/min over the second half",
      gpu_subject(gpu), format_number(*m0, 0), format_number(*m1, 0), format_number(dt_min),
      format_number(rate));
  if (!v.back()->margin_c) evidence += " (margin = slowdown temperature − GPU temperature)";
  if (rate > 0 && *m1 > c.t.thermal_margin_c)
    evidence +=
        fmt::format("; at that pace it reaches the {} °C slowdown margin in {} min",
                    c.t.thermal_margin_c, format_number((*m1 - c.t.thermal_margin_c) / rate));
  measure(e.add("thermal-margin-shrinking", Severity::kWarning, {gpu_subject(gpu)},
                std::move(evidence)),
          "thermal_margin", "C", *m1, c.t.thermal_margin_c + kMarginNearC, Bound::kAtLeast);
}

// ---------------------------------------------------------------- limits that come with time

// Reasons absent from the first window and active in at least half of the last quarter's
// samples: one finding per GPU naming each; info when sw_power_cap is the only one.
void check_late_reasons(const Context& c, const Series& v, int gpu, Emitter& e) {
  if (!long_enough(c, v)) return;
  const auto ws = windows(v.size());
  std::set<std::string> early;
  int early_masks = 0;
  for (std::size_t i = ws.front().first; i < ws.front().second; ++i)
    if (v[i]->clock_event_mask) {
      ++early_masks;
      for (const auto& r : clock_event_names(*v[i]->clock_event_mask)) early.insert(r);
    }
  if (early_masks == 0) return;
  const Range last_quarter{v.size() - v.size() / 4, v.size()};
  std::set<std::string> late;
  for (std::size_t i = last_quarter.first; i < last_quarter.second; ++i)
    if (v[i]->clock_event_mask)
      for (const auto& r : clock_event_names(*v[i]->clock_event_mask)) late.insert(r);
  std::vector<std::string> parts;
  bool serious = false;
  for (const auto& reason : late) {
    if (!limiting(reason) || early.count(reason)) continue;
    const auto share = reason_share(v, last_quarter, reason);
    if (!share || *share < kReasonShare) continue;
    double first_seen = 0;
    for (const auto* s : v)
      if (has_reason(*s, reason)) {
        first_seen = s->t_s - v.front()->t_s;
        break;
      }
    serious = serious || reason != "sw_power_cap";
    parts.push_back(
        fmt::format("{} first appeared after {} min and is active in {} % of the "
                    "last quarter's busy samples",
                    reason, format_number(first_seen / 60), pct(*share)));
  }
  if (parts.empty()) return;
  Finding f;
  f.subjects = {gpu_subject(gpu)};
  f.severity = serious ? Severity::kWarning : Severity::kInfo;
  if (!serious) f.action = Action::kNone;
  f.evidence = fmt::format("{}: not active in the first {} min under load; {}", gpu_subject(gpu),
                           format_number(duration_s(v, ws.front()) / 60), join(parts, "; "));
  e.add("throttle-appears-over-time", std::move(f));
}

// ---------------------------------------------------------------- counters that move

void check_counters(const Context& c, Emitter& e) {
  std::map<int, std::pair<const GpuSample*, const GpuSample*>> ends;
  for (const auto& s : c.facts.samples) {
    auto& fl = ends[s.gpu];
    if (!fl.first || s.t_s < fl.first->t_s) fl.first = &s;
    if (!fl.second || s.t_s >= fl.second->t_s) fl.second = &s;
  }
  for (const auto& entry : ends) {
    const int gpu = entry.first;
    const GpuSample* a = entry.second.first;
    const GpuSample* b = entry.second.second;
    if (a == b) continue;
    // A counter that went down was reset (driver reload): nothing to compare.
    auto delta = [](const std::optional<std::uint64_t>& x,
                    const std::optional<std::uint64_t>& y) -> std::uint64_t {
      return x && y && *y > *x ? *y - *x : 0;
    };
    const auto replays = delta(a->pcie_replays, b->pcie_replays);
    const auto ce = delta(a->ecc_corrected, b->ecc_corrected);
    const auto ue = delta(a->ecc_uncorrected, b->ecc_uncorrected);
    const int lost = a->nvlinks_up && b->nvlinks_up && *b->nvlinks_up < *a->nvlinks_up
                         ? *a->nvlinks_up - *b->nvlinks_up
                         : 0;
    if (!replays && !ce && !ue && !lost) continue;
    std::vector<std::string> parts;
    if (ue) parts.push_back(fmt::format("{} uncorrected ECC error{}", ue, ue == 1 ? "" : "s"));
    if (lost)
      parts.push_back(fmt::format("{} NVLink{} went down ({} → {} up)", lost, lost == 1 ? "" : "s",
                                  *a->nvlinks_up, *b->nvlinks_up));
    if (replays) parts.push_back(fmt::format("{} PCIe replay{}", replays, replays == 1 ? "" : "s"));
    if (ce) parts.push_back(fmt::format("{} corrected ECC error{}", ce, ce == 1 ? "" : "s"));
    Finding f;
    f.subjects = {gpu_subject(gpu)};
    const bool storm = replays >= static_cast<std::uint64_t>(c.t.pcie_replay_warn_count);
    if (ue || lost) {
      f.severity = Severity::kCritical;
      f.action = Action::kDrain;
    } else if (storm) {
      f.severity = Severity::kWarning;
    } else {
      f.severity = Severity::kInfo;
      f.action = Action::kWatch;
    }
    f.evidence = fmt::format("{}: {} between {} s and {} s of the series", gpu_subject(gpu),
                             join(parts, ", "), format_number(a->t_s, 0), format_number(b->t_s, 0));
    Finding& added = e.add("errors-during-watch", std::move(f));
    if (!ue && !lost && replays)
      measure(added, "pcie_replays", "count", static_cast<double>(replays),
              c.t.pcie_replay_warn_count, Bound::kAtMost);
  }
}

}  // namespace

void check_over_time(const Context& c, Emitter& e) {
  const auto series = busy_series(c);
  for (const auto& entry : series) {
    check_drift(c, entry.second, entry.first, e);
    check_margin(c, entry.second, entry.first, e);
    check_late_reasons(c, entry.second, entry.first, e);
  }
  check_throughput_drift(c, series, e);
  check_lagging(c, series, e);
  check_counters(c, e);
}

}  // namespace gpuvet::rules
