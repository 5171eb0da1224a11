#include "rules/node_wide.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace gpuvet::rules {
namespace {

std::string count_range(const std::vector<ReplayFinding>& found) {
  std::uint64_t lo = found.front().count, hi = lo;
  for (const auto& r : found) {
    lo = std::min(lo, r.count);
    hi = std::max(hi, r.count);
  }
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + "–" + std::to_string(hi);
}

// What every GPU reporting the same Xid at once points at, by where the code comes from.
struct NodeReading {
  std::string meaning;   // appended to the evidence
  std::string decision;  // before the code's own notes
};

NodeReading node_reading(const XidFinding& x) {
  const hw::XidOrigin origin = x.judged ? x.judged->origin : hw::XidOrigin::kUnknown;
  if (origin == hw::XidOrigin::kApplication) {
    NodeReading r;
    r.meaning =
        x.code == 45 && !x.cause
            ? " — the driver cleaning up after one job's processes stopped on every GPU at once "
              "(a cancelled or killed job, an OOM kill, a collective abort): the job's event, "
              "not a fault of the GPUs"
            : " — one job's fault on every GPU at once (the program running across all of "
              "them), not a fault of the GPUs";
    r.decision =
        "Node-level, about the job: look at what ran on all GPUs then (its log, the "
        "scheduler's record, the OOM killer in the kernel log); no GPU needs action for this "
        "alone.";
    return r;
  }
  if (origin == hw::XidOrigin::kNvlink)
    return {
        " — every GPU at once points at the NVLink fabric they share (NVSwitches, the fabric "
        "manager), not at the GPUs one by one",
        "Node-level: check the fabric manager's log and state (nvidia-smi -q, Fabric), the "
        "NVSwitches and the kernel log around the event before any single GPU."};
  return {
      " — the same fault on every GPU at once points at what they share: the host's PCIe "
      "(root complex, switches, retimers, backplane), the node's power delivery, or the "
      "driver and its firmware, rather than every board failing together",
      "Node-level: check the kernel log for PCIe AER errors and power events before it, the "
      "BMC event log (ipmitool sel list) and the PSUs, and the driver/firmware version "
      "before replacing any GPU."};
}

// The spread of the groups' latest events, in seconds, when every group's time is known on
// one clock; nullopt when no group has a time; -1 when the times cannot be compared.
std::optional<double> spread_s(const std::vector<const XidFinding*>& xs) {
  const bool all_unix = std::all_of(xs.begin(), xs.end(), [](auto* x) { return x->last_unix; });
  const bool all_up = std::all_of(xs.begin(), xs.end(), [](auto* x) { return x->last_uptime_s; });
  const bool none =
      std::none_of(xs.begin(), xs.end(), [](auto* x) { return x->last_unix || x->last_uptime_s; });
  if (none) return std::nullopt;
  double lo = 0, hi = 0;
  bool first = true;
  for (const XidFinding* x : xs) {
    double t;
    if (all_unix)
      t = static_cast<double>(*x->last_unix);
    else if (all_up)
      t = *x->last_uptime_s;
    else
      return -1.0;
    lo = first ? t : std::min(lo, t);
    hi = first ? t : std::max(hi, t);
    first = false;
  }
  return hi - lo;
}

}  // namespace

std::string gpu_span(const std::vector<int>& gpus) {
  std::vector<int> v = gpus;
  std::sort(v.begin(), v.end());
  bool contiguous = v.size() > 2;
  for (std::size_t i = 1; i < v.size() && contiguous; ++i) contiguous = v[i] == v[i - 1] + 1;
  if (contiguous) return gpu_subject(v.front()) + "–" + gpu_subject(v.back());
  std::vector<std::string> names;
  for (int i : v) names.push_back(gpu_subject(i));
  return join(names, ", ");
}

bool every_gpu(const Facts& f, const std::vector<int>& gpus) {
  if (f.gpus.size() < 2) return false;
  std::set<int> all, seen(gpus.begin(), gpus.end());
  for (const auto& g : f.gpus) all.insert(g.index);
  return seen.size() == gpus.size() && seen == all;
}

void emit_replays(const Context& c, const std::vector<ReplayFinding>& found, Emitter& e) {
  std::vector<int> idx;
  for (const auto& r : found) idx.push_back(r.gpu);
  if (!every_gpu(c.facts, idx)) {
    for (const auto& r : found) {
      Finding& fd = e.add("pcie-replay-errors", r.severity, {gpu_subject(r.gpu)}, r.evidence);
      measure(fd, "pcie_replays", "count", static_cast<double>(r.count), c.t.pcie_replay_warn_count,
              Bound::kAtMost);
      if (r.severity < Severity::kWarning) fd.action = Action::kWatch;
    }
    return;
  }
  // The worst GPU's severity: 43 and 49 beside six over 50 is still one fault of the node.
  Finding fd;
  for (const auto& r : found) fd.severity = std::max(fd.severity, r.severity);
  std::vector<std::string> each;
  for (const auto& r : found) {
    fd.subjects.push_back(gpu_subject(r.gpu));
    each.push_back(fmt::format("{} {}", gpu_subject(r.gpu), r.count));
  }
  fd.evidence = fmt::format("all {} GPUs of the node ({}) report PCIe replays: counters {}",
                            found.size(), gpu_span(idx), count_range(found));
  if (found.size() <= 8) fd.evidence += " (" + join(each, ", ") + ")";
  if (fd.severity < Severity::kWarning)
    fd.evidence += fmt::format(", each under {}", c.t.pcie_replay_warn_count);
  else if (!std::all_of(found.begin(), found.end(),
                        [](const auto& r) { return r.severity >= Severity::kWarning; }))
    fd.evidence += fmt::format(", some at or above {}", c.t.pcie_replay_warn_count);
  fd.evidence +=
      " — replays on every GPU at once point at what their links share (a PCIe switch or "
      "retimer, the backplane, the CPU's root complex, BIOS PCIe settings, or in a VM the "
      "virtualised link), not at each GPU's riser or slot";
  fd.decision_note =
      "Node-level: look at what the GPUs' links share before reseating GPUs one by one: the "
      "PCIe switch and retimer boards, the backplane, the BIOS PCIe settings and firmware, and "
      "the kernel log for AER errors on the upstream ports (dmesg | grep -i aer). Then, per "
      "GPU:";
  // The observed value is the worst GPU's counter.
  std::uint64_t worst = 0;
  for (const auto& r : found) worst = std::max(worst, r.count);
  measure(fd, "pcie_replays", "count", static_cast<double>(worst), c.t.pcie_replay_warn_count,
          Bound::kAtMost);
  if (fd.severity < Severity::kWarning) fd.action = Action::kWatch;
  e.add("pcie-replay-errors", std::move(fd));
}

void emit_xids(const Context& c, std::vector<XidFinding> found, Emitter& e) {
  std::vector<bool> done(found.size(), false);
  for (std::size_t i = 0; i < found.size(); ++i) {
    if (done[i]) continue;
    const XidFinding& x = found[i];
    std::vector<const XidFinding*> same;
    std::vector<std::size_t> at;
    if (x.gpu)
      for (std::size_t j = i; j < found.size(); ++j) {
        const XidFinding& y = found[j];
        if (!done[j] && y.gpu && y.code == x.code && y.cause == x.cause &&
            y.finding.severity == x.finding.severity && y.current == x.current) {
          same.push_back(&y);
          at.push_back(j);
        }
      }
    std::vector<int> idx;
    for (const XidFinding* y : same) idx.push_back(*y->gpu);
    const auto spread = same.empty() ? std::nullopt : spread_s(same);
    const bool at_once = !spread || (*spread >= 0 && *spread <= kNodeWideXidWindowS);
    if (!every_gpu(c.facts, idx) || !at_once) {
      done[i] = true;
      e.add("xid-error", std::move(found[i].finding));
      continue;
    }
    for (std::size_t j : at) done[j] = true;
    // The latest group speaks for the others (its time, its message).
    const XidFinding* latest = same.front();
    for (const XidFinding* y : same)
      if ((y->last_unix && latest->last_unix && *y->last_unix > *latest->last_unix) ||
          (!y->last_unix && y->last_uptime_s && latest->last_uptime_s &&
           *y->last_uptime_s > *latest->last_uptime_s))
        latest = y;
    int total = 0;
    for (const XidFinding* y : same) total += y->count;
    Finding fd;
    fd.severity = x.finding.severity;
    fd.bottleneck = x.finding.bottleneck;
    for (int g : idx) fd.subjects.push_back(gpu_subject(g));
    std::sort(fd.subjects.begin(), fd.subjects.end(), [](const auto& a, const auto& b) {
      return a.size() != b.size() ? a.size() < b.size() : a < b;
    });
    const NodeReading reading = node_reading(x);
    fd.evidence =
        fmt::format("Xid {} ×{} on all {} GPUs of the node ({}){}{}{}", x.code, total, idx.size(),
                    gpu_span(idx),
                    spread ? fmt::format(" within {} s", format_number(*spread, 0)) : std::string(),
                    latest->detail, reading.meaning);
    fd.decision_note = reading.decision;
    if (x.finding.decision_note) *fd.decision_note += " " + *x.finding.decision_note;
    fd.action = x.finding.action;
    fd.fault = x.finding.fault;
    e.add("xid-error", std::move(fd));
  }
}

}  // namespace gpuvet::rules
