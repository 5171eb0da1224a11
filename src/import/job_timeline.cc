#include "import/job_timeline.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

namespace gpuvet::import {
namespace {

// A boundary of the sweep: a span starting or ending, or a step starting or ending.
enum class Edge : std::uint8_t {
  kStepEnd,  // first at equal times: a step ends before the next starts, and before spans change
  kEnd,
  kStart,
  kStepStart,
};

enum class What : std::uint8_t {
  kCompute,
  kComm,
  kCopy,
  kLoader,
  kSync,
  kHostCollective,
  kLaunch,
  kStep
};

struct Boundary {
  double t = 0;
  Edge edge = Edge::kStart;
  What what = What::kCompute;
  std::uint32_t step = 0;  // index into the steps, for step boundaries
};

What what_of(GpuWork w) {
  switch (w) {
    case GpuWork::kCompute:
      return What::kCompute;
    case GpuWork::kComm:
      return What::kComm;
    case GpuWork::kCopy:
      return What::kCopy;
  }
  return What::kCompute;
}

What what_of(HostWork w) {
  switch (w) {
    case HostWork::kDataLoader:
      return What::kLoader;
    case HostWork::kSync:
      return What::kSync;
    case HostWork::kCollective:
      return What::kHostCollective;
    case HostWork::kLaunch:
      return What::kLaunch;
    case HostWork::kStep:
      return What::kStep;
  }
  return What::kStep;
}

struct StepSpan {
  double start = 0;
  double end = 0;
  std::int64_t number = 0;
};

// The steps: sorted, cut where they overlap, at most max_steps.
std::vector<StepSpan> steps_of(const Timeline& t, std::size_t max_steps,
                               std::vector<std::string>& notes) {
  std::vector<StepSpan> steps;
  for (const auto& h : t.host)
    if (h.work == HostWork::kStep && h.end_us > h.start_us)
      steps.push_back({h.start_us, h.end_us, h.step});
  std::sort(steps.begin(), steps.end(),
            [](const StepSpan& a, const StepSpan& b) { return a.start < b.start; });
  std::size_t overlapping = 0;
  for (std::size_t i = 0; i + 1 < steps.size(); ++i)
    if (steps[i].end > steps[i + 1].start) {
      steps[i].end = std::max(steps[i].start, steps[i + 1].start);
      ++overlapping;
    }
  if (overlapping > 0)
    notes.push_back(fmt::format("{} step span(s) overlapped the next one and were cut at its start",
                                overlapping));
  if (steps.size() > max_steps) {
    notes.push_back(fmt::format("{} steps: only the first {} were read", steps.size(), max_steps));
    steps.resize(max_steps);
  }
  return steps;
}

// The sweep's counters: how many spans of each kind are open.
struct Open {
  int compute = 0, comm = 0, copy = 0, loader = 0, sync = 0, host_collective = 0, launch = 0;
  int& operator[](What w) {
    switch (w) {
      case What::kCompute:
        return compute;
      case What::kComm:
        return comm;
      case What::kCopy:
        return copy;
      case What::kLoader:
        return loader;
      case What::kSync:
        return sync;
      case What::kHostCollective:
        return host_collective;
      case What::kLaunch:
        return launch;
      case What::kStep:
        break;
    }
    static int unused = 0;
    return unused;
  }
  bool gpu_busy() const { return compute > 0 || comm > 0 || copy > 0; }
  bool in_collective() const { return comm > 0 || host_collective > 0; }
};

// The figures of the step being swept, with its current idle gap.
struct StepSums {
  double compute = 0, exposed = 0, copy = 0, idle = 0, comm = 0, collective = 0;
  double input = 0, sync = 0, launch = 0;
  std::optional<double> first_collective;
  int kernels = 0, syncs = 0;
  // The idle gap in progress: its time outside the data loader, and whether a host
  // synchronisation ended in it (the host waited for the GPU to drain, then had to refill it).
  double gap = 0;
  bool gap_open = false;
  bool gap_after_sync = false;
  bool gap_launching = false;  // the host launched a kernel during the gap

  void close_gap() {
    if (gap_open) {
      if (gap_after_sync)
        sync += gap;
      else if (gap <= kLaunchGapUs || gap_launching)
        launch += gap;
    }
    gap = 0;
    gap_open = false;
    gap_after_sync = false;
    gap_launching = false;
  }
};

}  // namespace

std::vector<JobStep> split_steps(Timeline& timeline, bool has_gpu, std::size_t max_steps,
                                 std::vector<std::string>& notes) {
  const std::vector<StepSpan> steps = steps_of(timeline, max_steps, notes);
  std::vector<JobStep> out;
  if (steps.empty()) return out;

  std::vector<Boundary> b;
  b.reserve(2 * (timeline.gpu.size() + timeline.host.size() + steps.size()));
  const double first = steps.front().start;
  const double last = steps.back().end;
  for (const auto& g : timeline.gpu) {
    if (g.end_us <= first || g.start_us >= last) continue;
    b.push_back({g.start_us, Edge::kStart, what_of(g.work), 0});
    b.push_back({g.end_us, Edge::kEnd, what_of(g.work), 0});
  }
  for (const auto& h : timeline.host) {
    if (h.work == HostWork::kStep || h.end_us <= first || h.start_us >= last) continue;
    b.push_back({h.start_us, Edge::kStart, what_of(h.work), 0});
    b.push_back({h.end_us, Edge::kEnd, what_of(h.work), 0});
  }
  for (std::uint32_t i = 0; i < steps.size(); ++i) {
    b.push_back({steps[i].start, Edge::kStepStart, What::kStep, i});
    b.push_back({steps[i].end, Edge::kStepEnd, What::kStep, i});
  }
  std::sort(b.begin(), b.end(), [](const Boundary& x, const Boundary& y) {
    if (x.t != y.t) return x.t < y.t;
    return static_cast<int>(x.edge) < static_cast<int>(y.edge);
  });

  Open open;
  bool in_step = false;        // a step is being swept: steps[current]
  std::uint32_t current = 0;
  StepSums sums;
  double prev = b.front().t;
  for (const auto& e : b) {
    const double d = e.t - prev;
    if (in_step && d > 0) {
      if (open.compute > 0)
        sums.compute += d;
      else if (open.comm > 0)
        sums.exposed += d;
      else if (open.copy > 0)
        sums.copy += d;
      else if (open.host_collective > 0)  // gloo: the ranks exchange on the host
        sums.exposed += d;
      else {
        sums.idle += d;
        if (open.loader > 0) {
          sums.input += d;
        } else {
          sums.gap += d;
          sums.gap_open = true;
        }
      }
      if (open.comm > 0) sums.comm += d;
      if (open.in_collective()) sums.collective += d;
    }
    prev = e.t;
    if (e.edge == Edge::kStepStart) {
      current = e.step;
      in_step = true;
      sums = StepSums{};
      if (open.in_collective()) sums.first_collective = 0;
      continue;
    }
    if (e.edge == Edge::kStepEnd) {
      if (in_step && current == e.step) {
        sums.close_gap();
        const StepSpan& s = steps[e.step];
        JobStep step;
        step.number = s.number;
        step.wall_ms = (s.end - s.start) / 1000.0;
        if (has_gpu) {
          step.compute_ms = sums.compute / 1000.0;
          step.comm_exposed_ms = sums.exposed / 1000.0;
          step.copy_ms = sums.copy / 1000.0;
          step.idle_ms = sums.idle / 1000.0;
          step.comm_ms = sums.comm / 1000.0;
          step.idle_input_ms = sums.input / 1000.0;
          step.idle_sync_ms = sums.sync / 1000.0;
          step.idle_launch_ms = sums.launch / 1000.0;
          step.kernels = sums.kernels;
        }
        step.collective_ms = sums.collective / 1000.0;
        if (sums.first_collective) step.pre_comm_ms = *sums.first_collective / 1000.0;
        step.syncs = sums.syncs;
        out.push_back(step);
      }
      in_step = false;
      continue;
    }
    const bool was_busy = open.gpu_busy();
    const bool was_in_collective = open.in_collective();
    open[e.what] += e.edge == Edge::kStart ? 1 : -1;
    if (open[e.what] < 0) open[e.what] = 0;  // an end without its start (cut at the window)
    if (!in_step) continue;
    if (e.edge == Edge::kStart) {
      if (e.what == What::kCompute || e.what == What::kComm) ++sums.kernels;
      if (e.what == What::kSync && open.sync == 1) ++sums.syncs;  // nested ones count once
      if (!was_in_collective && open.in_collective() && !sums.first_collective)
        sums.first_collective = e.t - steps[current].start;
      if (!was_busy && open.gpu_busy()) sums.close_gap();
      if (e.what == What::kLaunch && !open.gpu_busy()) sums.gap_launching = true;
    } else if (e.what == What::kSync && !open.gpu_busy()) {
      sums.gap_after_sync = true;
      sums.gap_open = true;
    }
  }
  return out;
}

}  // namespace gpuvet::import
