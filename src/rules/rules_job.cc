// The job's own time (docs/job.md): what the ranks of the user's job say about their steps, from
// profiler traces (import/kineto_trace.h) and step-time logs, judged across ranks.
//
// check_job() emits job-breakdown (info, the figures), job-input-starved, job-launch-bound,
// job-host-sync and job-comm-exposed (a share of the step over its threshold, median over
// steps, per rank), job-straggler-rank (the rank the others wait for in the collectives) and
// job-step-time-drift; check_host_threads() emits gpu-waits-on-host-thread from the live
// per-thread CPU figures of GPU processes.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/stats.h"
#include "core/util.h"
#include "rules/rule.h"

namespace gpuvet::rules {
namespace {

using Field = std::optional<double> JobStep::*;

// "rank3"; a trace of a job that is not distributed is named by its file.
std::string rank_subject(const JobRank& r) {
  if (r.rank) return fmt::format("rank{}", *r.rank);
  std::string_view o = r.origin.value_or("job");
  if (auto slash = o.find_last_of('/'); slash != std::string_view::npos) o = o.substr(slash + 1);
  return std::string(o);
}

std::string pct(double fraction) { return format_number(fraction * 100, fraction < 0.1 ? 1 : 0); }

// The ranks whose steps the rules read: one record per rank (a rank given twice is said once
// and read once), in rank order.
std::vector<const JobRank*> ranks_with_steps(const Facts& f, Emitter& e) {
  std::vector<const JobRank*> out;
  std::map<std::pair<std::string, int>, const JobRank*> seen;
  for (const auto& r : f.job_ranks) {
    if (r.steps.empty()) continue;
    if (r.rank) {
      auto [it, fresh] = seen.try_emplace({r.source, *r.rank}, &r);
      if (!fresh) {
        e.note(fmt::format("rank {} is given twice ({} and {}): the second is not read", *r.rank,
                           it->second->origin.value_or("?"), r.origin.value_or("?")));
        continue;
      }
    }
    out.push_back(&r);
  }
  std::stable_sort(out.begin(), out.end(), [](const JobRank* a, const JobRank* b) {
    return a->rank.value_or(INT32_MAX) < b->rank.value_or(INT32_MAX);
  });
  return out;
}

// The median over a rank's steps of field / wall time; empty when no step has the field.
std::optional<double> median_share(const JobRank& r, Field field) {
  std::vector<double> v;
  for (const auto& s : r.steps)
    if (s.wall_ms > 0 && (s.*field)) v.push_back(*(s.*field) / s.wall_ms);
  return median(std::move(v));
}

// The median over a rank's steps of one figure (a time, a count); empty when no step has it.
template <class T>
std::optional<double> median_of(const JobRank& r, std::optional<T> JobStep::*field) {
  std::vector<double> v;
  for (const auto& s : r.steps)
    if (s.*field) v.push_back(static_cast<double>(*(s.*field)));
  return median(std::move(v));
}

double median_wall(const JobRank& r) {
  std::vector<double> v;
  for (const auto& s : r.steps)
    if (s.wall_ms > 0) v.push_back(s.wall_ms);
  return median(std::move(v)).value_or(0);
}

// "rank0, rank1" for up to 8 ranks, else "rank0, rank1, … (12 ranks)".
std::string rank_list(const std::vector<const JobRank*>& ranks) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < ranks.size() && i < 8; ++i) names.push_back(rank_subject(*ranks[i]));
  std::string s = join(names, ", ");
  if (ranks.size() > 8) s += fmt::format(", … ({} ranks)", ranks.size());
  return s;
}

// ---- job-breakdown

void breakdown(const Context& c, const std::vector<const JobRank*>& ranks, Emitter& e) {
  std::vector<double> walls;
  std::size_t steps = 0;
  for (const auto* r : ranks) {
    for (const auto& s : r->steps)
      if (s.wall_ms > 0) walls.push_back(s.wall_ms);  // a log may give throughput only
    steps = std::max(steps, r->steps.size());
  }
  const double p50 = quantile(walls, 0.5).value_or(0);
  const double p95 = quantile(walls, 0.95).value_or(0);
  const double p99 = quantile(walls, 0.99).value_or(0);
  std::string ev = fmt::format(
      "{} rank(s), up to {} steps each; step p50 {} ms, p95 {} ms, p99 {} ms", ranks.size(), steps,
      format_number(p50, 2), format_number(p95, 2), format_number(p99, 2));
  if (p50 > 0 && p99 >= c.t.tail_p99_ratio * p50)
    ev += fmt::format(" (p99 is {}× p50: a jerky job)", format_number(p99 / p50, 1));
  // The GPU figures: each rank's median share, then the median over ranks.
  auto over_ranks = [&](Field field) {
    std::vector<double> v;
    for (const auto* r : ranks)
      if (auto m = median_share(*r, field)) v.push_back(*m);
    return median(std::move(v));
  };
  if (auto compute = over_ranks(&JobStep::compute_ms)) {
    const double exposed = over_ranks(&JobStep::comm_exposed_ms).value_or(0);
    const double copy = over_ranks(&JobStep::copy_ms).value_or(0);
    const double idle = over_ranks(&JobStep::idle_ms).value_or(0);
    const double input = over_ranks(&JobStep::idle_input_ms).value_or(0);
    const double sync = over_ranks(&JobStep::idle_sync_ms).value_or(0);
    const double launch = over_ranks(&JobStep::idle_launch_ms).value_or(0);
    ev += fmt::format(
        "; GPU time (median over steps and ranks): compute {} %, exposed communication {} %, "
        "copies {} %, idle {} % (waiting for input {} %, after host syncs {} %, launch gaps {} %, "
        "other {} %)",
        pct(*compute), pct(exposed), pct(copy), pct(idle), pct(input), pct(sync), pct(launch),
        pct(std::max(0.0, idle - input - sync - launch)));
    std::vector<double> overlap;
    for (const auto* r : ranks)
      for (const auto& s : r->steps)
        if (s.comm_ms && *s.comm_ms > 0 && s.comm_exposed_ms)
          overlap.push_back(1.0 - *s.comm_exposed_ms / *s.comm_ms);
    if (auto o = median(overlap))
      ev += fmt::format("; communication overlapped with compute {} %", pct(*o));
    std::vector<double> kernels;
    for (const auto* r : ranks)
      for (const auto& s : r->steps)
        if (s.kernels) kernels.push_back(*s.kernels);
    if (auto k = median(kernels)) {
      ev += fmt::format("; {} kernels per step", format_number(*k, 0));
      std::vector<double> kus;
      for (const auto* r : ranks)
        if (r->median_kernel_us) kus.push_back(*r->median_kernel_us);
      if (auto m = median(kus)) ev += fmt::format(", median kernel {} µs", format_number(*m, 1));
    }
  } else {
    std::vector<double> coll;
    for (const auto* r : ranks)
      if (auto m = median_share(*r, &JobStep::collective_ms)) coll.push_back(*m);
    if (auto m = median(coll)) ev += fmt::format("; in collectives {} % of the step", pct(*m));
  }
  std::vector<double> tput;
  for (const auto* r : ranks)
    if (auto t = median_of(*r, &JobStep::items_per_s)) tput.push_back(*t);
  if (!tput.empty()) {
    double sum = 0;
    for (double t : tput) sum += t;
    ev += fmt::format("; throughput {} items/s ({} rank(s) summed)", format_number(sum, 1),
                      tput.size());
  }
  Finding& f = e.add(FindingId("job-breakdown"), {"job"}, ev);
  measure(f, "step_time_p50", "ms", p50, p50, Bound::kExactly);
}

// ---- one share over its threshold, per rank

struct ShareRule {
  FindingId id;
  Field field;
  double threshold;
  const char* what;  // "the GPU idle waiting for input"
};

template <class Extra>
void share_rule(const ShareRule& rule, const std::vector<const JobRank*>& ranks, Extra extra,
                Emitter& e) {
  std::vector<const JobRank*> over;
  std::vector<double> shares;
  const JobRank* worst = nullptr;
  double worst_share = 0;
  for (const auto* r : ranks) {
    auto m = median_share(*r, rule.field);
    if (!m || *m < rule.threshold) continue;
    over.push_back(r);
    shares.push_back(*m);
    if (!worst || *m > worst_share) {
      worst = r;
      worst_share = *m;
    }
  }
  if (!worst) return;
  std::vector<std::string> subjects;
  for (const auto* r : over) subjects.push_back(rank_subject(*r));
  std::string ev = fmt::format("{}: {} % of the step (median over {} steps of {})", rule.what,
                               pct(worst_share), worst->steps.size(), rank_subject(*worst));
  if (over.size() > 1)
    ev += fmt::format("; {} of {} ranks over {} % (median {} %): {}", over.size(), ranks.size(),
                      pct(rule.threshold), pct(*median(shares)), rank_list(over));
  ev += fmt::format("; step {} ms", format_number(median_wall(*worst), 2));
  const std::string more = extra(*worst);
  if (!more.empty()) ev += "; " + more;
  Finding& f = e.add(rule.id, std::move(subjects), std::move(ev));
  measure(f, "share_of_step", "fraction", worst_share, rule.threshold, Bound::kAtMost);
}

std::string per_step(double total, std::size_t steps) {
  return steps ? format_number(total / static_cast<double>(steps), 1) : "?";
}

// ---- job-straggler-rank

struct StepOfRank {
  const JobRank* rank;
  const JobStep* step;
};

// The rank → GPU join: the node's GPU a rank ran on (by bus id, else CUDA device = GPU index
// when the input does not say otherwise) and the findings already raised on it.
std::string gpu_of_rank(const Context& c, const JobRank& r, const Emitter& e) {
  const GpuFacts* g = nullptr;
  std::string how;
  if (r.pci_bus_id) {
    g = find_gpu_by_bus(c.facts, *r.pci_bus_id);
    how = "by bus id";
  } else if (r.cuda_device && !c.facts.gpus.empty()) {
    g = find_gpu(c.facts, *r.cuda_device);
    how = fmt::format("CUDA device {}, taken as GPU{}: every GPU visible, in PCI order",
                      *r.cuda_device, *r.cuda_device);
  }
  if (!g) {
    if (r.cuda_device)
      return fmt::format("{} ran on CUDA device {}", rank_subject(r), *r.cuda_device);
    return {};
  }
  std::vector<std::string> found;
  const std::string subject = gpu_subject(g->index);
  for (const auto& f : e.findings()) {
    if (f.severity == Severity::kInfo || starts_with(f.id, "job-")) continue;
    if (std::find(f.subjects.begin(), f.subjects.end(), subject) != f.subjects.end())
      found.push_back(f.id);
  }
  std::string s = fmt::format("{} ran on {} ({})", rank_subject(r), subject, how);
  s += found.empty() ? ", which has no warning of its own here"
                     : fmt::format("; {} findings: {}", subject, join(found, ", "));
  return s;
}

void straggler(const Context& c, const std::vector<const JobRank*>& ranks, Emitter& e) {
  if (ranks.size() < 2) return;
  std::map<std::int64_t, std::vector<StepOfRank>> by_step;
  for (const auto* r : ranks)
    for (const auto& s : r->steps)
      if (s.collective_ms) by_step[s.number].push_back({r, &s});
  std::map<const JobRank*, std::vector<double>> costs;  // per rank: cost in the steps it was last
  std::map<const JobRank*, std::vector<double>> walls;
  std::size_t common = 0;
  for (auto& [number, v] : by_step) {
    if (v.size() < 2) continue;
    ++common;
    auto last = std::min_element(v.begin(), v.end(), [](const StepOfRank& a, const StepOfRank& b) {
      return *a.step->collective_ms < *b.step->collective_ms;
    });
    std::vector<double> others;
    for (const auto& x : v)
      if (x.rank != last->rank) others.push_back(*x.step->collective_ms);
    costs[last->rank].push_back(*median(others) - *last->step->collective_ms);
    walls[last->rank].push_back(last->step->wall_ms);
  }
  if (common == 0) return;
  for (const auto& [rank, cost] : costs) {
    // Last to arrive in most common steps, and the wait it causes is material.
    if (cost.size() * 10 < common * 6) continue;
    const double med_cost = *median(cost);
    const double wall = *median(walls[rank]);
    if (wall <= 0 || med_cost < c.t.job_straggler_cost_fraction * wall || med_cost < 0.5) continue;
    // Its own figures against the others', over the common steps.
    std::vector<double> own_coll, own_pre, other_coll, other_pre;
    for (auto& [number, v] : by_step) {
      if (v.size() < 2) continue;
      for (const auto& x : v) {
        auto& coll = x.rank == rank ? own_coll : other_coll;
        auto& pre = x.rank == rank ? own_pre : other_pre;
        coll.push_back(*x.step->collective_ms);
        if (x.step->pre_comm_ms) pre.push_back(*x.step->pre_comm_ms);
      }
    }
    std::string ev = fmt::format(
        "{} arrives last at the collectives in {} of {} common steps: the other {} rank(s) wait "
        "for it {} ms per step ({} % of the {} ms step); in collectives {} ms against {} ms for "
        "the others (medians)",
        rank_subject(*rank), cost.size(), common, ranks.size() - 1, format_number(med_cost, 2),
        pct(med_cost / wall), format_number(wall, 2), format_number(*median(own_coll), 2),
        format_number(*median(other_coll), 2));
    if (!own_pre.empty() && !other_pre.empty())
      ev += fmt::format("; its work before the first collective {} ms against {} ms",
                        format_number(*median(own_pre), 2), format_number(*median(other_pre), 2));
    if (rank->backend) ev += fmt::format(" ({})", *rank->backend);
    if (const std::string gpu = gpu_of_rank(c, *rank, e); !gpu.empty()) ev += "; " + gpu;
    Finding& f = e.add(FindingId("job-straggler-rank"), {rank_subject(*rank)}, std::move(ev));
    measure(f, "straggler_cost_share", "fraction", med_cost / wall, c.t.job_straggler_cost_fraction,
            Bound::kAtMost);
  }
}

// ---- job-step-time-drift

void drift(const Context& c, const std::vector<const JobRank*>& ranks, Emitter& e) {
  std::vector<std::string> subjects;
  std::string worst_ev;
  double worst = 0;
  for (const auto* r : ranks) {
    const std::size_t n = r->steps.size();
    if (n < 8) continue;
    std::vector<double> first, last;
    for (std::size_t i = 0; i < n / 4; ++i)
      if (r->steps[i].wall_ms > 0) first.push_back(r->steps[i].wall_ms);
    for (std::size_t i = n - n / 4; i < n; ++i)
      if (r->steps[i].wall_ms > 0) last.push_back(r->steps[i].wall_ms);
    if (first.empty() || last.empty()) continue;
    const double a = *median(first), b = *median(last);
    if (a <= 0 || b < (1 + c.t.job_step_drift_fraction) * a) continue;
    subjects.push_back(rank_subject(*r));
    if (b / a > worst) {
      worst = b / a;
      worst_ev = fmt::format(
          "{}: the median step of the last {} steps is {} ms against {} ms for the first {} "
          "(+{} %)",
          rank_subject(*r), last.size(), format_number(b, 2), format_number(a, 2), first.size(),
          format_number((b / a - 1) * 100, 0));
    }
  }
  if (subjects.empty()) return;
  if (subjects.size() > 1) worst_ev += fmt::format("; {} ranks drift", subjects.size());
  Finding& f = e.add(FindingId("job-step-time-drift"), std::move(subjects), std::move(worst_ev));
  measure(f, "step_time_ratio", "ratio", worst, 1 + c.t.job_step_drift_fraction, Bound::kAtMost);
}

// ---- NCCL Inspector: collectives per type and size, per rank

// The figures, and the rank whose collectives are the shortest while its peers' are long: it
// arrives last, they wait for it inside the collective (its own time excludes the wait).
void inspector(const Facts& f, Emitter& e) {
  std::vector<const JobRank*> ranks;
  std::set<std::pair<std::string, int>> seen;
  for (const auto& r : f.job_ranks)
    if (r.source == "nccl-inspector" && !r.collectives.empty() &&
        seen.insert({r.notes.empty() ? std::string() : r.notes.front(), r.rank.value_or(-1)})
            .second)
      ranks.push_back(&r);
  if (ranks.empty()) return;
  // (op, size) → rank → its median time
  std::map<std::pair<std::string, std::uint64_t>, std::vector<std::pair<const JobRank*, double>>>
      groups;
  std::map<std::pair<std::string, std::uint64_t>, std::pair<std::int64_t, std::vector<double>>>
      totals;
  for (const auto* r : ranks)
    for (const auto& col : r->collectives) {
      const auto key = std::make_pair(col.op, col.size_bytes.value_or(0));
      if (col.median_us) groups[key].push_back({r, *col.median_us});
      totals[key].first += col.count;
      if (col.busbw_gbps) totals[key].second.push_back(*col.busbw_gbps);
    }
  // The figures: the busiest groups first.
  std::vector<std::pair<std::int64_t, std::string>> parts;
  for (const auto& [key, t] : totals) {
    std::vector<double> us;
    for (const auto& [r, m] : groups[key]) us.push_back(m);
    std::string p = fmt::format(
        "{}{} ×{}", key.first,
        key.second ? fmt::format(" {} KiB", format_number(key.second / 1024.0, 0)) : std::string(),
        t.first);
    if (auto m = median(us)) p += fmt::format(", {} µs", format_number(*m, 0));
    if (auto b = median(t.second)) p += fmt::format(", busbw {} GB/s", format_number(*b, 1));
    parts.push_back({t.first, std::move(p)});
  }
  std::sort(parts.begin(), parts.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::vector<std::string> shown;
  for (std::size_t i = 0; i < parts.size() && i < 6; ++i) shown.push_back(parts[i].second);
  e.add(FindingId("job-breakdown"), {"collectives"},
        fmt::format("NCCL Inspector, {} rank(s): {} (count over ranks, median time and bus "
                    "bandwidth per call)",
                    ranks.size(), join(shown, "; ")));
  if (ranks.size() < 2) return;
  std::map<const JobRank*, int> shortest;
  std::map<const JobRank*, std::vector<std::string>> why;
  int compared = 0;
  for (const auto& [key, v] : groups) {
    if (v.size() < 2) continue;
    auto last =
        std::min_element(v.begin(), v.end(), [](auto& a, auto& b) { return a.second < b.second; });
    std::vector<double> others;
    for (const auto& x : v)
      if (x.first != last->first) others.push_back(x.second);
    const double other = *median(others);
    ++compared;
    if (other < 1.5 * last->second || other - last->second < 100) continue;
    ++shortest[last->first];
    if (why[last->first].size() < 3)
      why[last->first].push_back(
          fmt::format("{}{} {} µs against {} µs", key.first,
                      key.second ? fmt::format(" {} KiB", format_number(key.second / 1024.0, 0))
                                 : std::string(),
                      format_number(last->second, 0), format_number(other, 0)));
  }
  for (const auto& [r, n] : shortest) {
    if (n * 10 < compared * 6) continue;
    e.add(
        FindingId("job-straggler-rank"), {rank_subject(*r)},
        fmt::format("NCCL Inspector: {}'s collectives are the shortest in {} of {} kinds compared "
                    "(median per call: {}, the others' median): it arrives last and the other {} "
                    "rank(s) wait for it inside each collective{}",
                    rank_subject(*r), n, compared, join(why[r], "; "), ranks.size() - 1,
                    r->host ? fmt::format(" (host {}, pid {})", *r->host, r->pid.value_or(0))
                            : std::string()));
  }
}

}  // namespace

void check_job(const Context& c, Emitter& e) {
  const std::vector<const JobRank*> ranks = ranks_with_steps(c.facts, e);
  for (const auto& r : c.facts.job_ranks)
    for (const auto& n : r.notes)
      e.note(fmt::format("{}: {}", r.origin.value_or(rank_subject(r)), n));
  inspector(c.facts, e);
  if (ranks.empty()) return;
  breakdown(c, ranks, e);
  auto nothing = [](const JobRank&) { return std::string(); };
  share_rule({FindingId("job-input-starved"), &JobStep::idle_input_ms, c.t.job_input_idle_fraction,
              "the GPU idle while the host waits on the data loader"},
             ranks, nothing, e);
  share_rule(
      {FindingId("job-launch-bound"), &JobStep::idle_launch_ms, c.t.job_launch_idle_fraction,
       "the GPU idle waiting for the host to launch its next kernel"},
      ranks,
      [](const JobRank& r) {
        std::string s = fmt::format("{} kernels per step",
                                    format_number(median_of(r, &JobStep::kernels).value_or(0), 0));
        if (r.median_kernel_us)
          s += fmt::format(", median kernel {} µs", format_number(*r.median_kernel_us, 1));
        if (r.launch_call_us)
          s += fmt::format(", median launch call {} µs", format_number(*r.launch_call_us, 1));
        return s;
      },
      e);
  share_rule(
      {FindingId("job-host-sync"), &JobStep::idle_sync_ms, c.t.job_sync_idle_fraction,
       "the GPU idle after the host synchronised with it"},
      ranks,
      [](const JobRank& r) {
        std::string s = fmt::format("{} synchronisations per step",
                                    format_number(median_of(r, &JobStep::syncs).value_or(0), 0));
        if (r.pageable_copies)
          s += fmt::format("; {} copies from or to pageable memory ({} ms, synchronous)",
                           *r.pageable_copies, format_number(r.pageable_copy_ms.value_or(0), 2));
        return s;
      },
      e);
  share_rule(
      {FindingId("job-comm-exposed"), &JobStep::comm_exposed_ms, c.t.job_comm_exposed_fraction,
       "communication running with no compute beside it"},
      ranks,
      [](const JobRank& r) {
        std::vector<std::string> parts;
        for (const auto& col : r.collectives) {
          std::string p =
              r.steps.empty()
                  ? fmt::format("{} {}×", col.op, col.count)
                  : fmt::format("{} {} per step", col.op,
                                per_step(static_cast<double>(col.count), r.steps.size()));
          if (col.size_bytes)
            p += fmt::format(" of {} KiB", format_number(*col.size_bytes / 1024.0, 0));
          if (col.median_us) p += fmt::format(", {} µs each", format_number(*col.median_us, 0));
          if (col.size_bytes && *col.size_bytes < (1u << 20) && !r.steps.empty() &&
              static_cast<double>(col.count) / r.steps.size() >= 20)
            p += " (many small collectives: latency-bound)";
          parts.push_back(std::move(p));
          if (parts.size() == 4) break;
        }
        return parts.empty() ? std::string() : "collectives: " + join(parts, "; ");
      },
      e);
  straggler(c, ranks, e);
  drift(c, ranks, e);
}

void check_host_threads(const Context& c, Emitter& e) {
  for (const auto& p : c.facts.processes) {
    const GpuFacts* g = find_gpu(c.facts, p.gpu);
    if (!g || !g->utilization.gpu_pct || *g->utilization.gpu_pct >= c.t.busy_util_pct) continue;
    for (const auto& t : p.busy_threads) {
      if (t.cpu_pct < c.t.cpu_pegged_pct) continue;
      std::string ev = fmt::format("pid {} {} on {}: thread '{}' (tid {}) at {} % of ", p.host_pid,
                                   p.name.value_or("?"), gpu_subject(p.gpu), t.name, t.tid,
                                   format_number(t.cpu_pct, 0));
      ev += t.cpu ? fmt::format("CPU{}", *t.cpu) : std::string("one CPU");
      ev += fmt::format(", {} util {} %", gpu_subject(p.gpu), *g->utilization.gpu_pct);
      Finding& f = e.add(FindingId("gpu-waits-on-host-thread"),
                         {gpu_subject(p.gpu), fmt::format("pid {}", p.host_pid)}, std::move(ev));
      measure(f, "thread_cpu", "%", t.cpu_pct, c.t.cpu_pegged_pct, Bound::kAtMost);
      break;  // the busiest thread of the process is enough
    }
  }
}

}  // namespace gpuvet::rules
