// Tests of the rules over a time series (rules_time.cc): each rule fires on a series built to
// show it, with its subject and severity, and the benign series beside it stay quiet: idle
// GPUs, a job that ends half-way, steady load at the power cap, a warm-up that settles, a
// one-window dip, idle GPUs next to a busy one. Each test says which plausible bug it catches.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "rules/rule_test_util.h"

namespace gpuvet::rules {
namespace {

using testing::dump;
using testing::has;
using testing::Out;
using testing::run_group;
using testing::with_id;

constexpr std::uint64_t kIdle = 0x1;
constexpr std::uint64_t kPowerCap = 0x4;
constexpr std::uint64_t kHwSlowdown = 0x8;
constexpr std::uint64_t kSwThermal = 0x20;
constexpr std::uint64_t kHwThermal = 0x40;

const std::set<std::string> kOverTimeIds = {"clocks-degrade-over-time", "gpu-lags-peers",
                                            "thermal-margin-shrinking",
                                            "throttle-appears-over-time", "errors-during-watch"};

GpuFacts h200(int index) {
  GpuFacts g;
  g.index = index;
  g.name = "NVIDIA H200";
  g.clocks.sm_max_mhz = 1980;
  g.power.limit_w = 700;
  g.power.enforced_limit_w = 700;
  g.thermal.slowdown_c = 90;
  return g;
}

Facts node(int gpus) {
  Facts f;
  for (int i = 0; i < gpus; ++i) f.gpus.push_back(h200(i));
  return f;
}

// A busy, healthy sample at 1980 MHz, 60 °C (T.Limit margin 27), 650 of 700 W, no limit.
GpuSample busy_sample(int gpu, double t) {
  GpuSample s;
  s.gpu = gpu;
  s.t_s = t;
  s.sm_mhz = 1980;
  s.util_pct = 100;
  s.gpu_c = 60;
  s.margin_c = 27;
  s.power_w = 650;
  s.power_limit_w = 700;
  s.clock_event_mask = 0;
  return s;
}

// `n` samples of `gpu`, `step` seconds apart, each busy_sample() changed by `shape(i, s)`.
void add_series(Facts& f, int gpu, int n, double step,
                const std::function<void(int, GpuSample&)>& shape = {}) {
  for (int i = 0; i < n; ++i) {
    GpuSample s = busy_sample(gpu, i * step);
    if (shape) shape(i, s);
    f.samples.push_back(s);
  }
}

Out over_time(const Facts& f, const Thresholds& t = {}) { return run_group(check_over_time, f, t); }

std::vector<Finding> over_time_findings(const Out& o) {
  std::vector<Finding> v;
  for (const auto& f : o.findings)
    if (kOverTimeIds.count(f.id)) v.push_back(f);
  return v;
}

// ---------------------------------------------------------------- clocks-degrade-over-time

// Catches: the reason behind the fall dropped from the evidence, a wrong subject, the warning
// demoted, the observed/expected numbers not recorded.
TEST(OverTimeRules, ClocksFallWithAThermalReasonIsAWarningNamingTheReason) {
  Facts f = node(2);
  add_series(f, 0, 60, 10);  // GPU1 stays healthy beside it
  add_series(f, 1, 60, 10, [](int i, GpuSample& s) {
    if (i < 20) return;
    s.sm_mhz = 1600;
    s.gpu_c = 86;
    s.margin_c = 1;
    s.clock_event_mask = kSwThermal;
  });
  const Out o = over_time(f);
  const auto d = with_id(o, "clocks-degrade-over-time");
  ASSERT_EQ(d.size(), 1u) << dump(o);
  EXPECT_EQ(d[0].subjects, std::vector<std::string>{"GPU1"});
  EXPECT_EQ(d[0].severity, Severity::kWarning);
  EXPECT_TRUE(has(d[0].evidence, "from a median 1980 MHz over the first")) << d[0].evidence;
  EXPECT_TRUE(has(d[0].evidence, "to 1600 MHz")) << d[0].evidence;
  EXPECT_TRUE(has(d[0].evidence, "(−19 %)")) << d[0].evidence;
  EXPECT_TRUE(has(d[0].evidence, "temperature 60 → 86 °C (T.Limit margin 27 → 1 °C)"))
      << d[0].evidence;
  EXPECT_TRUE(has(d[0].evidence, "sw_thermal_slowdown active in 100 % of those samples"))
      << d[0].evidence;
  ASSERT_TRUE(d[0].observed && d[0].expected);
  EXPECT_EQ(d[0].observed->value, 1600);
  EXPECT_NEAR(d[0].expected->value, 1782, 0.5);  // 0.9 × 1980
  EXPECT_EQ(d[0].expected->bound, Bound::kAtLeast);
}

// Catches: idle samples judged with the busy ones (the clock "falls" to 345 MHz when the job
// stops), also when utilisation is unknown and only the power shows the GPU stopped working.
TEST(OverTimeRules, AJobThatEndsHalfWayIsNotADegradation) {
  Facts f = node(2);
  add_series(f, 0, 60, 10, [](int i, GpuSample& s) {
    if (i < 30) return;
    s.util_pct = 0;
    s.sm_mhz = 345;
    s.gpu_c = 40;
    s.margin_c = 47;
    s.power_w = 80;
    s.clock_event_mask = kIdle;
  });
  add_series(f, 1, 60, 10, [](int i, GpuSample& s) {
    s.util_pct.reset();  // a series without utilisation: the power says busy or not
    if (i < 30) return;
    s.sm_mhz = 345;
    s.power_w = 90;
    s.clock_event_mask = kIdle;
  });
  const Out o = over_time(f);
  EXPECT_TRUE(over_time_findings(o).empty()) << dump(o);
}

// Catches: sw_power_cap counted as a limit that "appeared", the sample-to-sample wobble of a
// power-capped clock taken for a drift, a warm-up that settles taken for a shrinking margin.
TEST(OverTimeRules, SteadyLoadAtThePowerCapStaysQuiet) {
  Facts f = node(1);
  add_series(f, 0, 48, 10, [](int i, GpuSample& s) {
    static const int wobble[] = {0, -120, 60, -200, 90, -40};
    s.sm_mhz = 1780 + wobble[i % 6];
    s.power_w = 697 + i % 3;
    s.clock_event_mask = kPowerCap;
    // Warms from 50 to 70 °C over the first two minutes, then holds.
    s.gpu_c = i < 12 ? 50 + 20 * i / 12 : 70;
    s.margin_c = 87 - *s.gpu_c;
  });
  const Out o = over_time(f);
  EXPECT_TRUE(over_time_findings(o).empty()) << dump(o);
}

// Catches: a power-capped fall raised as a warning. Nothing hotter than sw_power_cap before or
// after: info, action none, and the note says why.
TEST(OverTimeRules, AClockFallWithOnlyThePowerCapActiveIsInfo) {
  Facts f = node(1);
  add_series(f, 0, 48, 10, [](int i, GpuSample& s) {
    s.sm_mhz = i < 16 ? 1900 : 1650;
    s.power_w = 699;
    s.clock_event_mask = kPowerCap;
  });
  const Out o = over_time(f);
  const auto d = with_id(o, "clocks-degrade-over-time");
  ASSERT_EQ(d.size(), 1u) << dump(o);
  EXPECT_EQ(d[0].severity, Severity::kInfo);
  EXPECT_EQ(finding_action(d[0]), Action::kNone);
  EXPECT_TRUE(d[0].decision_note && has(*d[0].decision_note, "power limit")) << dump(o);
  EXPECT_TRUE(has(d[0].evidence, "sw_power_cap active in 100 %")) << d[0].evidence;

  // The same fall with a thermal slowdown beside the cap is a warning again.
  for (auto& s : f.samples)
    if (s.sm_mhz == 1650) s.clock_event_mask = kPowerCap | kSwThermal;
  const auto hot = with_id(over_time(f), "clocks-degrade-over-time");
  ASSERT_EQ(hot.size(), 1u);
  EXPECT_EQ(hot[0].severity, Severity::kWarning);
}

// Catches: k = 1 (one slow window is a dip, not a trend) and, the other way, a k that can never
// be reached. 48 samples make 12 windows of 4 and k = 3.
TEST(OverTimeRules, ADipOfOneWindowIsQuietAndKWindowsFire) {
  Facts one = node(1);
  add_series(one, 0, 48, 10, [](int i, GpuSample& s) {
    if (i >= 20 && i < 24) s.sm_mhz = 1500;
  });
  EXPECT_TRUE(with_id(over_time(one), "clocks-degrade-over-time").empty()) << dump(over_time(one));

  Facts two = node(1);  // two windows: still under k
  add_series(two, 0, 48, 10, [](int i, GpuSample& s) {
    if (i >= 20 && i < 28) s.sm_mhz = 1500;
  });
  EXPECT_TRUE(with_id(over_time(two), "clocks-degrade-over-time").empty()) << dump(over_time(two));

  Facts three = node(1);
  add_series(three, 0, 48, 10, [](int i, GpuSample& s) {
    if (i >= 20 && i < 32) s.sm_mhz = 1500;
  });
  const auto d = with_id(over_time(three), "clocks-degrade-over-time");
  ASSERT_EQ(d.size(), 1u) << dump(over_time(three));
  EXPECT_TRUE(has(d[0].evidence, "over 3 consecutive windows")) << d[0].evidence;
  EXPECT_TRUE(has(d[0].evidence, "no clock-event reason was active then")) << d[0].evidence;
}

// Catches: k = max(1, windows / 4), which equals k = 2 only from 8 windows up: 16 samples make
// 5 windows, one of them slow is a dip; two consecutive slow ones are the drift.
TEST(OverTimeRules, WithFewWindowsOneSlowWindowIsStillADip) {
  Facts one = node(1);
  add_series(one, 0, 16, 5, [](int i, GpuSample& s) {
    if (i >= 6 && i < 9) s.sm_mhz = 1500;
  });
  EXPECT_TRUE(with_id(over_time(one), "clocks-degrade-over-time").empty()) << dump(over_time(one));
  Facts two = node(1);
  add_series(two, 0, 16, 5, [](int i, GpuSample& s) {
    if (i >= 6 && i < 12) s.sm_mhz = 1500;
  });
  EXPECT_EQ(with_id(over_time(two), "clocks-degrade-over-time").size(), 1u) << dump(over_time(two));
}

// Catches: series_min_span_s not read (a 30 s series is too short by default, enough when the
// threshold says so), and fewer than 8 samples judged.
TEST(OverTimeRules, TheMinimumSpanComesFromTheThresholds) {
  Facts f = node(1);
  add_series(f, 0, 30, 1, [](int i, GpuSample& s) {
    if (i >= 10) s.sm_mhz = 1500;
  });
  EXPECT_TRUE(with_id(over_time(f), "clocks-degrade-over-time").empty());
  Thresholds t;
  t.series_min_span_s = 10;
  EXPECT_EQ(with_id(over_time(f, t), "clocks-degrade-over-time").size(), 1u);
  Facts few = node(1);
  add_series(few, 0, 7, 20, [](int i, GpuSample& s) {
    if (i >= 2) s.sm_mhz = 1500;
  });
  EXPECT_TRUE(with_id(over_time(few, t), "clocks-degrade-over-time").empty());
}

// scale --duration's own throughput, one value per interval.
void add_throughput(Facts& f, int gpus, int n, double step,
                    const std::function<double(int)>& items_per_s) {
  for (int i = 0; i < n; ++i)
    f.throughput_samples.push_back({i * step, items_per_s(i), "llm-7b-layer", gpus});
}

// Catches: the node's throughput ignored (only clocks judged), the fall found but its reason
// not taken from the GPUs' samples over the same minutes, the wrong subjects, the numbers not
// recorded. Clocks fall less than 10 % here: only the throughput shows it.
TEST(OverTimeRules, ScaleThroughputFallingIsADegradationWithTheGpusReason) {
  Facts f = node(2);
  add_series(f, 0, 48, 10);
  add_series(f, 1, 48, 10, [](int i, GpuSample& s) {
    if (i < 24) return;
    s.sm_mhz = 1880;  // −5 %: under the clock rule's line
    s.clock_event_mask = kHwSlowdown;
  });
  add_throughput(f, 2, 48, 10, [](int i) { return i < 24 ? 4000.0 : 3000.0; });
  const Out o = over_time(f);
  const auto d = with_id(o, "clocks-degrade-over-time");
  ASSERT_EQ(d.size(), 1u) << dump(o);
  EXPECT_EQ(d[0].severity, Severity::kWarning);
  EXPECT_EQ(d[0].subjects, (std::vector<std::string>{"GPU0", "GPU1"}));
  EXPECT_TRUE(has(d[0].evidence, "llm-7b-layer on 2 GPU(s): throughput fell from a median 4000/s"))
      << d[0].evidence;
  EXPECT_TRUE(has(d[0].evidence, "to 3000/s")) << d[0].evidence;
  EXPECT_TRUE(has(d[0].evidence, "(−25 %)")) << d[0].evidence;
  EXPECT_TRUE(has(d[0].evidence, "hw_slowdown active on GPU1 in 100 %")) << d[0].evidence;
  ASSERT_TRUE(d[0].observed && d[0].expected);
  EXPECT_EQ(d[0].observed->quantity, "throughput");
  EXPECT_EQ(d[0].observed->value, 3000);
  EXPECT_NEAR(d[0].expected->value, 3600, 0.5);  // 0.9 × 4000
}

// Catches: a steady throughput's wobble, a short dip or a short series taken for a trend, and a
// fall at the power cap alone raised as a warning.
TEST(OverTimeRules, SteadyOrShortThroughputStaysQuietAndThePowerCapAloneIsInfo) {
  Facts steady = node(1);
  add_series(steady, 0, 48, 10);
  add_throughput(steady, 1, 48, 10, [](int i) { return 4000.0 + (i % 3) * 150 - 150; });
  EXPECT_TRUE(over_time_findings(over_time(steady)).empty()) << dump(over_time(steady));

  Facts dip = node(1);
  add_throughput(dip, 1, 48, 10, [](int i) { return i >= 20 && i < 24 ? 2000.0 : 4000.0; });
  EXPECT_TRUE(over_time_findings(over_time(dip)).empty()) << dump(over_time(dip));

  Facts short_run = node(1);  // 30 s: under series_min_span_s
  add_throughput(short_run, 1, 30, 1, [](int i) { return i < 10 ? 4000.0 : 2000.0; });
  EXPECT_TRUE(over_time_findings(over_time(short_run)).empty());

  Facts capped = node(1);
  add_series(capped, 0, 48, 10, [](int, GpuSample& s) {
    s.power_w = 699;
    s.clock_event_mask = kPowerCap;
  });
  add_throughput(capped, 1, 48, 10, [](int i) { return i < 16 ? 4000.0 : 3400.0; });
  const auto d = with_id(over_time(capped), "clocks-degrade-over-time");
  ASSERT_EQ(d.size(), 1u) << dump(over_time(capped));
  EXPECT_EQ(d[0].severity, Severity::kInfo);
  EXPECT_EQ(finding_action(d[0]), Action::kNone);
}

// ---------------------------------------------------------------- gpu-lags-peers

// Catches: the lagging GPU counted among its own peers, every GPU flagged because one pulls
// the median, the clock compared in MHz when the maxima are known (shares), missing evidence.
TEST(OverTimeRules, OneGpuLaggingInAnEightGpuNodeNamesOnlyThatGpu) {
  Facts f = node(8);
  for (int g = 0; g < 8; ++g)
    add_series(f, g, 20, 0.5, [g](int i, GpuSample& s) {
      s.sm_mhz = 1980 - (i % 2) * 20;
      if (g != 3) return;
      s.sm_mhz = 1500;
      s.gpu_c = 84;
      s.power_w = 540;
      s.clock_event_mask = kHwSlowdown | kHwThermal;
    });
  const Out o = over_time(f);
  const auto d = with_id(o, "gpu-lags-peers");
  ASSERT_EQ(d.size(), 1u) << dump(o);
  EXPECT_EQ(d[0].subjects, std::vector<std::string>{"GPU3"});
  EXPECT_EQ(d[0].severity, Severity::kWarning);
  EXPECT_TRUE(has(d[0].evidence,
                  "GPU3 ran at a median 1500 MHz while busy against 1970 MHz for "
                  "its 7 busy peers (76 % of their pace"))
      << d[0].evidence;
  EXPECT_TRUE(has(d[0].evidence, "power 540 W against 650 W")) << d[0].evidence;
  EXPECT_TRUE(has(d[0].evidence, "84 °C against 60 °C")) << d[0].evidence;
  EXPECT_TRUE(has(d[0].evidence, "active in 100 % of its samples")) << d[0].evidence;
  // Short series (10 s) are enough: the comparison is between GPUs, not over time.
  EXPECT_TRUE(with_id(o, "clocks-degrade-over-time").empty()) << dump(o);
}

// Catches: the peers' pace compared with a threshold other than gpu_lags_peers_fraction (0.9):
// a GPU at 85 % of its busy peers is the one they wait for.
TEST(OverTimeRules, AGpuAtEightyFivePercentOfItsPeersLags) {
  Facts f = node(4);
  for (int g = 0; g < 4; ++g)
    add_series(f, g, 20, 0.5, [g](int, GpuSample& s) {
      if (g == 2) s.sm_mhz = 1683;  // 0.85 × 1980
    });
  const auto d = with_id(over_time(f), "gpu-lags-peers");
  ASSERT_EQ(d.size(), 1u) << dump(over_time(f));
  EXPECT_EQ(d[0].subjects, std::vector<std::string>{"GPU2"});
}

// Catches: an idle GPU taken as a peer (the busy one "lags" nothing, the idle one is not busy),
// and a small spread (93 % of the peers) flagged.
TEST(OverTimeRules, IdleGpusAreNotPeersAndASmallSpreadIsQuiet) {
  Facts f = node(2);
  add_series(f, 0, 20, 0.5);
  add_series(f, 1, 20, 0.5, [](int, GpuSample& s) {
    s.util_pct = 0;
    s.sm_mhz = 345;
    s.clock_event_mask = kIdle;
    s.power_w = 75;
  });
  EXPECT_TRUE(over_time_findings(over_time(f)).empty()) << dump(over_time(f));

  Facts close = node(3);
  for (int g = 0; g < 3; ++g)
    add_series(close, g, 20, 0.5, [g](int, GpuSample& s) {
      if (g == 2) s.sm_mhz = 1845;
    });
  EXPECT_TRUE(with_id(over_time(close), "gpu-lags-peers").empty()) << dump(over_time(close));
}

// Catches: different models compared (heterogeneous-gpus says that), and the single-reading
// fallback lost or judging idle GPUs.
TEST(OverTimeRules, OneReadingPerGpuIsComparedTooButNotAcrossModels) {
  Facts f = node(4);
  for (auto& g : f.gpus) {
    g.utilization.gpu_pct = 100;
    g.clocks.sm_mhz = 1980;
  }
  f.gpus[1].clocks.sm_mhz = 1410;
  f.gpus[1].clock_events.active = {"sw_thermal_slowdown"};
  f.gpus[3].utilization.gpu_pct = 0;  // idle and downclocked: not a peer, not judged
  f.gpus[3].clocks.sm_mhz = 345;
  const Out o = over_time(f);
  const auto d = with_id(o, "gpu-lags-peers");
  ASSERT_EQ(d.size(), 1u) << dump(o);
  EXPECT_EQ(d[0].subjects, std::vector<std::string>{"GPU1"});
  EXPECT_TRUE(has(d[0].evidence, "in one reading")) << d[0].evidence;
  EXPECT_TRUE(has(d[0].evidence, "sw_thermal_slowdown")) << d[0].evidence;

  f.gpus[2].name = "NVIDIA H100 80GB HBM3";
  EXPECT_TRUE(with_id(over_time(f), "gpu-lags-peers").empty()) << dump(over_time(f));
}

// ---------------------------------------------------------------- thermal-margin-shrinking

// Catches: the rule silent without NVML's margin (it falls back to the slowdown temperature),
// or quiet on a margin still falling towards the slowdown point.
TEST(OverTimeRules, AMarginStillShrinkingTowardsSlowdownIsAWarning) {
  Facts f = node(2);
  add_series(f, 0, 60, 10, [](int i, GpuSample& s) {
    s.margin_c = 30 - 22 * i / 59;  // 30 → 8 °C over ten minutes
    s.gpu_c = 87 - *s.margin_c;
  });
  add_series(f, 1, 60, 10, [](int i, GpuSample& s) {
    s.margin_c.reset();  // no T.Limit: slowdown (90 °C) − temperature
    s.gpu_c = 60 + 23 * i / 59;
  });
  const Out o = over_time(f);
  const auto d = with_id(o, "thermal-margin-shrinking");
  ASSERT_EQ(d.size(), 2u) << dump(o);
  EXPECT_EQ(d[0].subjects, std::vector<std::string>{"GPU0"});
  EXPECT_EQ(d[0].severity, Severity::kWarning);
  EXPECT_TRUE(has(d[0].evidence, "thermal margin fell from 30 °C to 9 °C")) << d[0].evidence;
  EXPECT_TRUE(has(d[0].evidence, "reaches the 5 °C slowdown margin in")) << d[0].evidence;
  EXPECT_EQ(d[1].subjects, std::vector<std::string>{"GPU1"});
  EXPECT_TRUE(has(d[1].evidence, "slowdown temperature − GPU temperature")) << d[1].evidence;
}

// Catches: a normal warm-up (a big fall that has stopped) or a fall that ends far from the
// slowdown point flagged.
TEST(OverTimeRules, AWarmUpThatSettlesOrEndsFarFromSlowdownIsQuiet) {
  Facts f = node(2);
  add_series(f, 0, 60, 10, [](int i, GpuSample& s) {
    s.margin_c = i < 12 ? 40 - 28 * i / 12 : 12;  // settles at 12 °C after two minutes
  });
  add_series(f, 1, 60, 10, [](int i, GpuSample& s) {
    s.margin_c = 50 - 25 * i / 59;  // still falling, but ends 25 °C from the limit
  });
  const Out o = over_time(f);
  EXPECT_TRUE(with_id(o, "thermal-margin-shrinking").empty()) << dump(o);
}

// ---------------------------------------------------------------- throttle-appears-over-time

// Catches: two findings for one GPU (hw_slowdown and hw_thermal_slowdown come together), a
// late hardware slowdown not a warning, a late power cap not info.
TEST(OverTimeRules, ALimitThatAppearsAfterMinutesIsNamedWithWhenItCame) {
  Facts f = node(2);
  add_series(f, 0, 60, 10, [](int i, GpuSample& s) {
    if (i >= 30) s.clock_event_mask = kHwSlowdown | kHwThermal;
  });
  add_series(f, 1, 60, 10, [](int i, GpuSample& s) {
    if (i >= 30) s.clock_event_mask = kPowerCap;
  });
  const Out o = over_time(f);
  const auto d = with_id(o, "throttle-appears-over-time");
  ASSERT_EQ(d.size(), 2u) << dump(o);
  EXPECT_EQ(d[0].subjects, std::vector<std::string>{"GPU0"});
  EXPECT_EQ(d[0].severity, Severity::kWarning);
  EXPECT_TRUE(has(d[0].evidence, "hw_slowdown first appeared after 5 min")) << d[0].evidence;
  EXPECT_TRUE(has(d[0].evidence, "hw_thermal_slowdown first appeared after 5 min"))
      << d[0].evidence;
  EXPECT_EQ(d[1].subjects, std::vector<std::string>{"GPU1"});
  EXPECT_EQ(d[1].severity, Severity::kInfo);
  EXPECT_EQ(finding_action(d[1]), Action::kNone);
}

// Catches: a limit active from the start (already judged by thermal-throttle on the snapshot)
// or one that came and went reported as appearing.
TEST(OverTimeRules, ALimitThereFromTheStartOrGoneAtTheEndIsNotLate) {
  Facts f = node(2);
  add_series(f, 0, 60, 10, [](int, GpuSample& s) { s.clock_event_mask = kSwThermal; });
  add_series(f, 1, 60, 10, [](int i, GpuSample& s) {
    if (i >= 20 && i < 30) s.clock_event_mask = kSwThermal;
  });
  const Out o = over_time(f);
  EXPECT_TRUE(with_id(o, "throttle-appears-over-time").empty()) << dump(o);
}

// ---------------------------------------------------------------- errors-during-watch

// Catches: a wrong severity per counter (uncorrected ECC and a lost NVLink critical with drain,
// a replay storm a warning, a few corrected errors info), counters that never moved or were
// reset (driver reload) reported.
TEST(OverTimeRules, CountersThatRiseWhileWatchedBySeverity) {
  Facts f = node(6);
  auto counters = [](int, GpuSample& s) {
    s.pcie_replays = 7;
    s.ecc_corrected = 3;
    s.ecc_uncorrected = 0;
    s.nvlinks_up = 18;
  };
  add_series(f, 0, 10, 1, [&](int i, GpuSample& s) {
    counters(i, s);
    s.pcie_replays = 7 + 15 * i;  // 135 replays in 9 s
  });
  add_series(f, 1, 10, 1, [&](int i, GpuSample& s) {
    counters(i, s);
    if (i >= 5) s.ecc_uncorrected = 1;
  });
  add_series(f, 2, 10, 1, [&](int i, GpuSample& s) {
    counters(i, s);
    s.ecc_corrected = 3 + (i >= 5 ? 2 : 0);
  });
  add_series(f, 3, 10, 1, [&](int i, GpuSample& s) {
    counters(i, s);
    if (i >= 5) s.nvlinks_up = 16;
  });
  add_series(f, 4, 10, 1, counters);  // nothing moved
  add_series(f, 5, 10, 1, [&](int i, GpuSample& s) {
    counters(i, s);
    s.pcie_replays = i < 5 ? 400 : 0;  // reset, not errors
  });
  const Out o = over_time(f);
  const auto d = with_id(o, "errors-during-watch");
  ASSERT_EQ(d.size(), 4u) << dump(o);
  EXPECT_EQ(d[0].subjects, std::vector<std::string>{"GPU0"});
  EXPECT_EQ(d[0].severity, Severity::kWarning);
  EXPECT_TRUE(has(d[0].evidence, "135 PCIe replays between 0 s and 9 s")) << d[0].evidence;
  EXPECT_EQ(d[1].subjects, std::vector<std::string>{"GPU1"});
  EXPECT_EQ(d[1].severity, Severity::kCritical);
  EXPECT_EQ(finding_action(d[1]), Action::kDrain);
  EXPECT_TRUE(has(d[1].evidence, "1 uncorrected ECC error")) << d[1].evidence;
  EXPECT_EQ(d[2].subjects, std::vector<std::string>{"GPU2"});
  EXPECT_EQ(d[2].severity, Severity::kInfo);
  EXPECT_TRUE(has(d[2].evidence, "2 corrected ECC errors")) << d[2].evidence;
  EXPECT_EQ(d[3].subjects, std::vector<std::string>{"GPU3"});
  EXPECT_EQ(d[3].severity, Severity::kCritical);
  EXPECT_TRUE(has(d[3].evidence, "2 NVLinks went down (18 → 16 up)")) << d[3].evidence;
}

// ---------------------------------------------------------------- the whole group

// Catches: any rule firing on idle GPUs or on a healthy busy node (the quiet baseline every
// recording of a healthy machine must give).
TEST(OverTimeRules, IdleAndHealthyBusyNodesGiveNothing) {
  Facts idle = node(4);
  for (int g = 0; g < 4; ++g)
    add_series(idle, g, 60, 10, [](int, GpuSample& s) {
      s.util_pct = 0;
      s.sm_mhz = 345;
      s.gpu_c = 35;
      s.margin_c = 52;
      s.power_w = 75;
      s.clock_event_mask = kIdle;
    });
  EXPECT_TRUE(over_time_findings(over_time(idle)).empty()) << dump(over_time(idle));
  Facts healthy = node(8);
  for (int g = 0; g < 8; ++g)
    add_series(healthy, g, 60, 10, [g](int i, GpuSample& s) {
      s.sm_mhz = 1980 - ((i + g) % 4) * 15;
      s.gpu_c = 60 + (i + g) % 3;
    });
  EXPECT_TRUE(over_time_findings(over_time(healthy)).empty()) << dump(over_time(healthy));
}

}  // namespace
}  // namespace gpuvet::rules
