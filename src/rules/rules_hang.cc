// rules/rules_hang.cc — a distributed job's hang: which rank did not arrive, and why.
//
// analyse_hang() joins Facts::collective_ranks by rank within each process group (a rank's
// PyTorch log, its flight-recorder dump and NCCL's lines about it are one rank), reads the
// signatures of docs/culprit.md and names the culprit ranks with what the inputs know of them
// (host, pid, GPU, their own error lines, the kernel log's Xids on their GPU).
// check_collectives() turns that into the findings collective-hang-culprit,
// collective-hang-frozen-process, collective-hang-transport and collective-hang.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/util.h"
#include "rules/rule.h"

namespace gpuvet {

bool HangAnalysis::any_hang() const {
  return std::any_of(groups.begin(), groups.end(), [](const HangGroup& g) { return g.hang; });
}

namespace {

using rules::join;

constexpr std::size_t kMaxNamed = 8;  // ranks listed one by one in evidence

std::string rank_list(const std::vector<int>& ranks) {
  // "3", "3, 5", "0-2, 4-7"
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j > i + 1 ? fmt::format("{}-{}", ranks[i], ranks[j])
           : j == i  ? std::to_string(ranks[i])
                     : fmt::format("{}, {}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string seq_text(const std::optional<std::int64_t>& v) {
  return v ? std::to_string(*v) : std::string("?");
}

// Who a rank is, from every record that names it (NCCL init lines, RAS), for any group.
struct Identity {
  std::optional<std::string> host;
  std::optional<int> pid;
  std::optional<int> cuda_dev;
  std::optional<std::string> uuid;
  std::optional<std::string> bus;
  std::optional<int> world_size;
  std::vector<std::string> errors;
  std::vector<std::string> sources;
  bool host_is_name = false;  // a host name (NCCL lines), not a RAS IP address
};

template <class T>
void fill(std::optional<T>& into, const std::optional<T>& from) {
  if (!into && from) into = from;
}

void add_unique(std::vector<std::string>& v, const std::string& s, std::size_t max = 8) {
  if (v.size() < max && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

// The Xid lines of the kernel log on a bus id (and the GPU-lost lines).
std::vector<std::string> kernel_lines(const Facts& f, const std::string& bus) {
  std::vector<std::string> out;
  auto same = [&](const std::optional<std::string>& b) {
    if (!b) return false;
    auto n = normalize_pci_bus_id(*b);
    return n && *n == bus;
  };
  for (const auto& x : f.kernel_log.xids)
    if (same(x.pci_bus_id))
      add_unique(out,
                 fmt::format("Xid {} on {}{}: {}", x.code, bus,
                             x.uptime_s ? fmt::format(" at {:.0f} s after boot", *x.uptime_s)
                                        : std::string(),
                             x.message.substr(0, 120)),
                 4);
  for (const auto& x : f.kernel_log.fallen_off_bus_events)
    if (same(x.pci_bus_id)) add_unique(out, "GPU fell off the bus: " + x.message.substr(0, 120), 4);
  return out;
}

struct RankState {
  std::optional<std::int64_t> enq, started, done, timeout_seq, timeout_ms;
  std::optional<std::string> op;
  bool timed_out = false;
  bool stuck = false;
  bool progress = false;  // a line or dump said where its collectives stood
  std::vector<std::string> errors;
  std::vector<std::string> sources;
  std::optional<std::string> pg_name;
  std::optional<std::string> activity;  // its last line about something else (a progress bar)
};

void max_into(std::optional<std::int64_t>& into, const std::optional<std::int64_t>& v) {
  if (v && (!into || *v > *into)) into = v;
}

std::string place_of(const std::string& signature) {
  if (signature == "did-not-arrive") return "did-not-arrive";
  if (signature == "stuck-inside") return "stuck-inside";
  if (signature == "ran-ahead") return "ran-ahead";
  if (signature == "desync") return "desync";
  if (signature == "rank-failed") return "failed";
  if (signature == "job-exited") return "failed";
  if (signature == "rank-error") return "own-error";
  return "unknown";
}

// A rank's own fatal error, as opposed to what the watchdog prints on every rank when the
// collective times out: a CUDA error of its kernels, an out-of-memory, an assert.
bool own_fatal_error(const std::string& e) {
  auto has = [&](const char* w) { return e.find(w) != std::string::npos; };
  // What the watchdog prints on every rank when a collective times out is not a rank's own
  // error; its thread dying of a CUDA error is ("Process group watchdog thread terminated with
  // exception: CUDA error: an illegal memory access was encountered").
  if (has("Watchdog caught") || has("timed out") || has("Timeout") || has("timing out") ||
      has("DistBackendError") || has("NCCL WARN") || has("NCCL error"))
    return false;
  return has("illegal memory access") || has("device-side assert") || has("CUDA out of memory") ||
         has("OutOfMemoryError") || has("uncorrectable ECC") || has("misaligned address") ||
         has("unspecified launch failure") || has("illegal instruction") ||
         has("Segmentation fault");
}

// The ranks holding the one operation that fewer ranks run than any other, among ranks at the
// same collective number doing different operations; empty when none is alone in the minority.
std::vector<int> minority_op(const std::map<std::string, std::vector<int>>& by_op) {
  if (by_op.size() < 2) return {};
  std::size_t least = SIZE_MAX, count_least = 0;
  for (const auto& [op, ranks] : by_op) least = std::min(least, ranks.size());
  std::vector<int> out;
  for (const auto& [op, ranks] : by_op)
    if (ranks.size() == least) {
      ++count_least;
      out = ranks;
    }
  if (count_least != 1) return {};
  return out;
}

// "ALLREDUCE on ranks 0-2, BROADCAST on rank 3": who runs what at one collective number.
std::string ops_text(const std::map<std::string, std::vector<int>>& by_op) {
  std::vector<std::string> said;
  for (const auto& [op, rs] : by_op)
    said.push_back(fmt::format("{} on rank{} {}", op, rs.size() > 1 ? "s" : "", rank_list(rs)));
  return join(said, ", ");
}

// A PyTorch watchdog timeout line, with or without its SeqNum (older PyTorch prints none).
bool watchdog_timed_out(const CollectiveRank& r) {
  return r.source == "pytorch-log" && (r.timeout_seq || r.timeout_op || r.ran_ms);
}

// The hang group a report without a PG speaks of: the one that hangs (the first), else a new
// one.
HangGroup& group_for_report(HangAnalysis& a) {
  for (auto& g : a.groups)
    if (g.hang) return g;
  HangGroup g;
  g.pg = "?";
  g.hang = true;
  a.groups.push_back(std::move(g));
  return a.groups.back();
}

template <class MakeRank>
void name_culprits(HangGroup& g, const std::vector<int>& culprits, const std::string& place,
                   MakeRank& make_rank) {
  g.culprits = culprits;
  for (int r : culprits) {
    auto it = std::find_if(g.ranks.begin(), g.ranks.end(),
                           [&](const HangRank& h) { return h.rank == r; });
    if (it == g.ranks.end()) {
      g.ranks.push_back(make_rank(r, nullptr));
      it = g.ranks.end() - 1;
    }
    it->place = place;
  }
  std::sort(g.ranks.begin(), g.ranks.end(),
            [](const HangRank& x, const HangRank& y) { return x.rank < y.rank; });
}

// PyTorch's desync report reads every rank's last collective from the store, so it sees what
// the pasted logs may not: its verdict names the culprits (TraceUtils.h semantics).
template <class MakeRank>
void apply_desync_report(const Facts& f, HangAnalysis& a, MakeRank& make_rank) {
  std::vector<int> never, joined, finished, fr_missing;
  std::optional<std::int64_t> lag_seq, fr_seq;
  std::optional<std::string> fr_op;
  std::map<std::int64_t, std::map<std::string, std::vector<int>>> snapshot;
  std::set<int> seen;
  for (const auto& r : f.collective_ranks) {
    if (r.source != "desync-report" || !r.rank || !r.desync_state) continue;
    seen.insert(*r.rank);
    const std::string& st = *r.desync_state;
    if (st == "never-joined") never.push_back(*r.rank);
    if (st == "missing") {
      fr_missing.push_back(*r.rank);
      fr_seq = r.desync_seq;
      if (r.last_op) fr_op = r.last_op;
    }
    if (st == "joined-not-finished") joined.push_back(*r.rank);
    if (st == "finished-not-joined") finished.push_back(*r.rank);
    if ((st == "joined-not-finished" || st == "finished-not-joined") && r.desync_seq)
      lag_seq = r.desync_seq;
    if ((st == "started" || st == "finished") && r.desync_seq && r.last_op)
      snapshot[*r.desync_seq][*r.last_op].push_back(*r.rank);
  }
  if (seen.empty()) return;
  HangGroup& g = group_for_report(a);
  g.hang = true;
  int world = g.world_size.value_or(0);
  for (const auto& r : f.collective_ranks)
    if (r.world_size && r.source != "nccl-ras") world = std::max(world, *r.world_size);
  const std::size_t lagging = joined.size() + finished.size();
  if (!fr_missing.empty()) {
    g.signature = "did-not-arrive";
    g.seq = fr_seq;
    if (fr_op) g.op = fr_op;
    name_culprits(g, fr_missing, "did-not-arrive", make_rank);
    g.summary = fmt::format(
        "the flight recorder's analysis: {} never joined collective {}{} that the others "
        "scheduled",
        fr_missing.size() == 1 ? "that rank" : "those ranks", seq_text(fr_seq),
        fr_op ? " (" + *fr_op + ")" : std::string());
    return;
  }
  if (!never.empty()) {
    g.signature = "did-not-arrive";
    name_culprits(g, never, "did-not-arrive", make_rank);
    g.summary = "PyTorch's desync report: these ranks never joined any collective";
    return;
  }
  if (!finished.empty() && (joined.empty() || finished.size() < joined.size())) {
    g.signature = "did-not-arrive";
    g.seq = lag_seq ? std::optional<std::int64_t>(*lag_seq + 1) : std::nullopt;
    name_culprits(g, finished, "did-not-arrive", make_rank);
    g.summary = fmt::format(
        "PyTorch's desync report: {} finished collective #{} and never joined the next one "
        "that the others wait in",
        finished.size() == 1 ? "that rank" : "those ranks", seq_text(lag_seq));
    return;
  }
  // Every rank joined the lagging collective and none finished: no rank is behind.
  const bool everyone = world > 0 ? static_cast<int>(joined.size()) >= world
                                  : lagging == seen.size() && finished.empty();
  if (!joined.empty() && !everyone) {
    g.signature = "stuck-inside";
    g.seq = lag_seq;
    name_culprits(g, joined, "stuck-inside", make_rank);
    g.summary = fmt::format(
        "PyTorch's desync report: {} joined collective #{} and never finished it while the "
        "others moved on",
        joined.size() == 1 ? "that rank" : "those ranks", seq_text(lag_seq));
    return;
  }
  for (const auto& [seq, by_op] : snapshot) {
    if (by_op.size() < 2) continue;
    const std::vector<int> odd = minority_op(by_op);
    if (odd.empty()) {
      // As many ranks on each side (two ranks, say): a desync, but which side left the common
      // path is the job's code to tell.
      g.culprits.clear();
      g.signature = "desync";
      g.seq = seq;
      g.summary = fmt::format(
          "the ranks run different operations at the same collective number {} ({}): a "
          "desynchronised code path; as many ranks are on each side, so the inputs do not say "
          "which side left the common path (look for a branch taken by some ranks only, such as "
          "work done on rank 0 alone)",
          seq, ops_text(by_op));
      continue;
    }
    g.signature = "desync";
    g.seq = seq;
    name_culprits(g, odd, "desync", make_rank);
    g.summary = fmt::format(
        "PyTorch's desync report: at collective #{} the ranks run different operations; the odd "
        "one out is named",
        seq);
    return;
  }
  if (!joined.empty()) {
    g.culprits.clear();
    for (auto& h : g.ranks)
      if (h.place != "missing" && h.place != "silent") h.place = "waiting";
    g.signature = "all-stuck";
    g.seq = lag_seq;
    g.summary = fmt::format(
        "PyTorch's desync report: every rank joined collective #{} and none finished it, so no "
        "rank is behind: the transport or fabric under that collective stalled",
        seq_text(lag_seq));
  }
}

// How the job ended, from its launcher (torchrun's failure summary, mp.spawn, mpirun, the
// elastic agent stopping its workers). With a hang in the inputs, the first failed rank is the
// culprit when it did not time out itself (a rank that crashed, or that the OOM killer took,
// while the others waited); a rank whose watchdog fired first is only the first victim. With
// no hang in the inputs, the job did not hang: it exited, and that is said (no hang finding).
template <class MakeRank>
void apply_launcher_reports(const Facts& f, HangAnalysis& a, MakeRank& make_rank) {
  std::vector<int> root;
  std::map<int, std::string> why;  // rank → what its exit code says
  std::vector<std::string> stopped;
  for (const auto& r : f.collective_ranks) {
    if (r.source != "torchrun") continue;
    if (!r.rank) {
      for (const auto& e : r.errors) add_unique(stopped, e, 2);
      continue;
    }
    if (!r.root_cause) continue;
    root.push_back(*r.rank);
    if (r.exit_code)
      why[*r.rank] = fmt::format("rank {} exited with {}{}", *r.rank, *r.exit_code,
                                 *r.exit_code == -9
                                     ? " (SIGKILL: usually the kernel's OOM killer; check dmesg)"
                                 : *r.exit_code < 0 ? " (killed by a signal)"
                                                    : "");
  }
  // The exit code says more than the traceback line: it goes first in the rank's errors.
  auto exit_first = [&](HangRank& h) {
    auto w = why.find(h.rank);
    if (w != why.end() && std::find(h.errors.begin(), h.errors.end(), w->second) == h.errors.end())
      h.errors.insert(h.errors.begin(), w->second);
  };
  std::vector<std::string> said;
  for (const auto& [rank, text] : why) said.push_back(text);
  if (root.empty() && stopped.empty()) return;
  if (a.any_hang()) {
    for (const auto& g : a.groups)
      if (g.hang && !g.culprits.empty()) return;  // a named culprit keeps its reading
    std::set<int> timed_out;
    for (const auto& r : f.collective_ranks)
      if (r.rank && watchdog_timed_out(r)) timed_out.insert(*r.rank);
    std::vector<int> named;
    for (int r : root)
      if (!timed_out.count(r)) named.push_back(r);
    if (named.empty()) return;
    HangGroup& g = group_for_report(a);
    g.hang = true;
    if (g.signature == "desync") {
      // A desync with as many ranks on each side: the side that failed first is named.
      name_culprits(g, named, "desync", make_rank);
      g.summary += fmt::format("; the launcher names rank{} {} as the first to fail",
                               named.size() > 1 ? "s" : "", rank_list(named));
      return;
    }
    g.signature = "rank-failed";
    name_culprits(g, named, "failed", make_rank);
    for (auto& h : g.ranks) exit_first(h);
    g.summary =
        "the launcher names this rank as the first failure: it exited while the others "
        "waited in their collective" +
        (said.empty() ? std::string() : "; " + join(said, "; "));
    return;
  }
  HangGroup g;
  g.pg = "job";
  g.hang = false;
  g.signature = "job-exited";
  for (int r : root) {
    HangRank h = make_rank(r, nullptr);
    h.place = "failed";
    exit_first(h);
    g.ranks.push_back(std::move(h));
  }
  g.summary = root.empty()
                  ? "the job ended (\"" + stopped.front() +
                        "\"): a process failed or the launcher was stopped, it did not hang"
                  : "the job did not hang: it exited, and its launcher names rank" +
                        std::string(root.size() > 1 ? "s " : " ") + rank_list(root) +
                        " as the first failure" +
                        (said.empty() ? "" : " (" + join(said, "; ") + ")");
  a.groups.push_back(std::move(g));
}

}  // namespace

HangAnalysis analyse_hang(const Facts& f) {
  using rules::join;
  HangAnalysis a;
  const bool stalled_test = std::any_of(f.nccl_events.begin(), f.nccl_events.end(),
                                        [](const NcclEvent& e) { return e.kind == "stalled"; });
  const bool test_rows = std::any_of(f.measurements.begin(), f.measurements.end(),
                                     [](const Measurement& m) { return m.tool == "nccl-tests"; });
  a.any_collective_state =
      !f.collective_ranks.empty() || !f.ras_communicators.empty() || stalled_test || test_rows;
  if (!a.any_collective_state) return a;

  // Who each rank is.
  std::map<int, Identity> who;
  int world = 0;
  for (const auto& r : f.collective_ranks) {
    if (!r.rank) continue;
    Identity& id = who[*r.rank];
    const bool named = r.source != "nccl-ras";
    if (r.host && (!id.host || (named && !id.host_is_name))) {
      id.host = r.host;
      id.host_is_name = named;
      if (r.pid) id.pid = r.pid;
      if (r.cuda_dev) id.cuda_dev = r.cuda_dev;
    }
    fill(id.pid, r.pid);
    fill(id.cuda_dev, r.cuda_dev);
    fill(id.uuid, r.gpu_uuid);
    fill(id.bus, r.pci_bus_id);
    if (r.world_size && r.source != "nccl-ras") world = std::max(world, *r.world_size);
    for (const auto& e : r.errors) add_unique(id.errors, e, 6);
    if (r.origin) add_unique(id.sources, *r.origin, 4);
  }
  // Bus ids repeat from node to node, and neither a kernel log nor a GPU listing says which
  // node it is from: they are matched to a rank by bus id only when the job's ranks all run on
  // one host (or no input names a host).
  std::set<std::string> hosts;
  for (const auto& [rank, id] : who)
    if (id.host) hosts.insert(*id.host);
  const bool one_node = hosts.size() <= 1;
  // A bus id known and the node's GPUs listed: the UUID of that GPU.
  for (auto& [rank, id] : who)
    if (one_node && id.bus && !id.uuid)
      for (const auto& g : f.gpus)
        if (g.pci_bus_id == id.bus && g.uuid) id.uuid = g.uuid;

  // Progress per PG and rank (PyTorch logs and flight-recorder dumps).
  std::map<std::string, std::map<int, RankState>> groups;
  std::set<std::string> pgs_named;
  for (const auto& r : f.collective_ranks)
    if ((r.source == "pytorch-log" || r.source == "flight-recorder") && r.pg)
      pgs_named.insert(*r.pg);
  for (const auto& r : f.collective_ranks) {
    if (r.source != "pytorch-log" && r.source != "flight-recorder") continue;
    if (!r.rank) continue;
    // A watchdog line without its PG: the job's only PG when there is one.
    std::string pg = r.pg ? *r.pg : pgs_named.size() == 1 ? *pgs_named.begin() : "?";
    RankState& s = groups[pg][*r.rank];
    max_into(s.enq, r.last_enqueued);
    max_into(s.started, r.last_started);
    max_into(s.done, r.last_completed);
    if (r.last_enqueued || r.last_completed || r.watchdog_stuck) s.progress = true;
    if (watchdog_timed_out(r)) {
      s.timed_out = true;
      s.progress = true;
      s.timeout_seq = r.timeout_seq;
    }
    if (r.timeout_seq && !s.timeout_seq) s.timeout_seq = r.timeout_seq;
    if (r.timeout_op && (!s.op || r.source == "pytorch-log")) s.op = r.timeout_op;
    fill(s.timeout_ms, r.timeout_ms);
    s.stuck = s.stuck || r.watchdog_stuck;
    fill(s.pg_name, r.pg_name);
    fill(s.activity, r.last_activity);
    for (const auto& e : r.errors) add_unique(s.errors, e, 6);
    if (r.origin) add_unique(s.sources, *r.origin, 4);
  }

  auto make_rank = [&](int rank, const RankState* s) {
    HangRank h;
    h.rank = rank;
    if (auto it = who.find(rank); it != who.end()) {
      const Identity& id = it->second;
      h.host = id.host;
      h.pid = id.pid;
      h.cuda_dev = id.cuda_dev;
      h.gpu_uuid = id.uuid;
      h.pci_bus_id = id.bus;
      h.errors = id.errors;
      h.sources = id.sources;
      if (id.bus && one_node) h.kernel = kernel_lines(f, *id.bus);
    }
    if (s) {
      if (s->activity && !s->timed_out && !s->progress)
        add_unique(h.errors, "its last line: " + s->activity->substr(0, 120), 6);
      h.last_enqueued = s->enq;
      h.last_started = s->started;
      h.last_completed = s->done;
      h.timed_out = s->timed_out;
      for (const auto& e : s->errors) add_unique(h.errors, e, 6);
      for (const auto& o : s->sources) add_unique(h.sources, o, 4);
    }
    return h;
  };

  for (auto& group_entry : groups) {
    // Plain names, not structured bindings: lambdas below capture them (clang 14 cannot
    // capture a binding).
    const std::string& pg = group_entry.first;
    std::map<int, RankState>& ranks = group_entry.second;
    HangGroup g;
    g.pg = pg;
    int n = world;
    for (const auto& r : f.collective_ranks)
      if (r.pg == pg && r.world_size && r.source != "nccl-ras") n = std::max(n, *r.world_size);
    if (n > 0) g.world_size = n;
    for (const auto& [rank, s] : ranks) {
      fill(g.pg_name, s.pg_name);
      if (s.timed_out || s.stuck) g.hang = true;
      fill(g.timeout_ms, s.timeout_ms);
    }
    // The ranks with progress known, and the collective the others wait in.
    std::vector<int> known, stuck;
    std::optional<std::int64_t> top;
    for (const auto& [rank, s] : ranks) {
      if (s.stuck) stuck.push_back(rank);
      if (!s.enq) continue;
      known.push_back(rank);
      max_into(top, s.enq);
    }
    // A flight-recorder dump alone (no watchdog line): ranks that disagree mean a hang too.
    if (!g.hang && known.size() >= 2) {
      std::set<std::int64_t> seen;
      for (int r : known) seen.insert(*ranks[r].enq);
      bool pending = false;
      for (int r : known) pending = pending || ranks[r].done.value_or(-1) < *ranks[r].enq;
      if (seen.size() > 1 && pending) g.hang = true;
    }
    // Every rank of the job that no input shows in this group: missing, or silent (its NCCL
    // lines name it, nothing says where it stood).
    std::vector<int> missing, silent;
    // Without a world size, ranks are still numbered from 0: a rank below the highest one that
    // timed out, with nothing in the inputs, is missing from them.
    int span = g.world_size.value_or(0);
    int timed = 0;
    for (const auto& [rank, s] : ranks)
      if (s.timed_out) {
        ++timed;
        if (!g.world_size) span = std::max(span, rank + 1);
      }
    if (span > 0 && span <= (1 << 20))
      for (int r = 0; r < span; ++r) {
        if (ranks.count(r) && (ranks[r].progress || ranks[r].activity)) continue;
        (who.count(r) ? silent : missing).push_back(r);
      }
    // Inferred from the numbering alone, more than one rank left out is more likely a paste
    // cut short than ranks that did not come: they are not listed.
    if (!g.world_size && missing.size() + silent.size() > 1) {
      missing.clear();
      silent.clear();
    }
    // Ranks seen busy with something else (their last line is not about collectives) while
    // others time out: they are where the job is, not in the collective.
    std::vector<int> busy;
    for (const auto& [rank, s] : ranks)
      if (s.activity && !s.timed_out && !s.progress && !s.stuck) busy.push_back(rank);
    // Ranks that left nothing are culprits only when the inputs show most of the job: a
    // minority missing while the majority timed out. One rank's log alone names no one.
    // (Without the job's size at most one rank is left in `missing` above.)
    std::size_t seen = 0;
    for (const auto& [rank, s] : ranks) seen += s.progress ? 1 : 0;
    const bool missing_named = seen >= 2 && missing.size() + silent.size() < seen;
    // The culprits of missing-ranks: the ranks with no state, when they may be named.
    auto missing_culprits = [&]() {
      std::vector<int> c;
      if (!missing_named) return c;
      c = missing;
      c.insert(c.end(), silent.begin(), silent.end());
      std::sort(c.begin(), c.end());
      return c;
    };
    for (const auto& [rank, s] : ranks) {
      HangRank h = make_rank(rank, &s);
      h.place = "waiting";
      g.ranks.push_back(std::move(h));
    }
    for (int r : silent)
      if (!ranks.count(r)) {
        HangRank h = make_rank(r, nullptr);
        h.place = "silent";
        g.ranks.push_back(std::move(h));
      }
    for (int r : missing)
      if (!ranks.count(r)) {
        HangRank h = make_rank(r, nullptr);
        h.place = "missing";
        g.ranks.push_back(std::move(h));
      }
    std::sort(g.ranks.begin(), g.ranks.end(),
              [](const HangRank& x, const HangRank& y) { return x.rank < y.rank; });
    // g.ranks is sorted by rank and holds each rank once: a binary search, not a scan per call
    // (a scan was quadratic when thousands of ranks are behind).
    auto set_place = [&](int rank, const std::string& place) {
      auto h = std::lower_bound(g.ranks.begin(), g.ranks.end(), rank,
                                [](const HangRank& x, int r) { return x.rank < r; });
      if (h != g.ranks.end() && h->rank == rank) h->place = place;
    };
    g.seq = top;
    for (const auto& [rank, s] : ranks)
      if (s.op && (s.timeout_seq == top || !g.op)) g.op = s.op;

    // Ranks that timed out at the same collective number in different operations
    // (REDUCE on one, ALLGATHER on the others): a desync; the odd one out is named.
    std::map<std::int64_t, std::map<std::string, std::vector<int>>> ops_at;
    for (const auto& [rank, s] : ranks)
      if (s.timed_out && s.timeout_seq && s.op) ops_at[*s.timeout_seq][*s.op].push_back(rank);
    for (const auto& [seq, by_op] : ops_at) {
      const std::vector<int> odd = minority_op(by_op);
      if (odd.empty()) continue;
      g.signature = "desync";
      g.culprits = odd;
      g.seq = seq;
      g.summary = fmt::format(
          "the ranks are in different collectives at the same number {} ({}): a desynchronised "
          "code path; the odd one out is named",
          seq, ops_text(by_op));
      break;
    }

    // A rank whose process group died of its own CUDA error (the watchdog thread terminated
    // with it): that rank is gone, and its peers wait in their next collective with it.
    if (!g.hang) {
      std::vector<int> dead;
      for (const auto& [rank, st] : ranks)
        if (std::any_of(st.errors.begin(), st.errors.end(), [](const std::string& e) {
              return e.find("watchdog thread terminated with exception") != std::string::npos &&
                     own_fatal_error(e);
            }))
          dead.push_back(rank);
      if (!dead.empty()) {
        g.hang = true;
        g.signature = "rank-error";
        g.culprits = dead;
        g.summary =
            "its process group's watchdog died of the rank's own CUDA error: the rank "
            "is gone and its peers wait for it in their next collective";
      }
    }
    if (!g.hang) {
      g.signature = "no-hang";
      for (auto& h : g.ranks)
        if (h.place == "waiting") h.place = "done";
      g.summary = "no watchdog timeout and no rank behind its peers";
      a.groups.push_back(std::move(g));
      continue;
    }

    const bool all_minus_one =
        !known.empty() && std::all_of(known.begin(), known.end(), [&](int r) {
          return *ranks[r].enq < 0 && ranks[r].done.value_or(-1) < 0;
        });
    std::vector<int> behind, at_top, incomplete, complete;
    for (int r : known) {
      (*ranks[r].enq < *top ? behind : at_top).push_back(r);
      if (*ranks[r].enq == *top)
        (ranks[r].done.value_or(-1) < *top ? incomplete : complete).push_back(r);
    }
    // A rank whose GPU has an Xid in the kernel log, among those inside the collective.
    std::vector<int> with_xid;
    for (const auto& h : g.ranks)
      if (!h.kernel.empty()) with_xid.push_back(h.rank);

    if (!g.signature.empty()) {  // decided above: a desync, or a rank's own fatal error
      for (int r : g.culprits) set_place(r, place_of(g.signature));
    } else if (known.empty() && stuck.empty()) {
      // Only watchdog lines (older PyTorch): every rank shown timed out, how far each queue got
      // is not printed.
      for (const auto& [rank, s] : ranks)
        if (s.timeout_seq && (!g.seq || *s.timeout_seq < *g.seq)) {
          g.seq = s.timeout_seq;
          g.op = s.op;
        }
      if (!busy.empty() && timed > 0) {
        g.signature = "did-not-arrive";
        g.culprits = busy;
        for (int r : busy) set_place(r, "did-not-arrive");
        g.summary = fmt::format(
            "{} busy with something else (its last line is not about collectives) while the "
            "others timed out in collective {}",
            busy.size() == 1 ? "that rank was" : "those ranks were", seq_text(g.seq));
      } else if (!missing.empty() || !silent.empty()) {
        g.signature = "missing-ranks";
        g.culprits = missing_culprits();
        g.summary =
            missing_named
                ? "every rank that left a log timed out in the same collective; the ranks that "
                  "left none are the first suspects"
                : "the ranks that left a log timed out in the same collective; the others left "
                  "nothing among the inputs, too many to single one out: give their logs";
      } else {
        g.signature = "all-stuck";
        g.summary = fmt::format(
            "every rank in these inputs timed out in collective {}; their logs do not say how "
            "far each rank got (no \"last enqueued\" line){}",
            seq_text(g.seq),
            g.world_size ? ""
                         : ", nor how many ranks the job has (ranks that left nothing "
                           "cannot be told)");
      }
    } else if (!stuck.empty() && (all_minus_one || stuck.size() == ranks.size())) {
      g.signature = "frozen-process";  // every rank: no single culprit
      for (int r : stuck) set_place(r, "frozen");
      g.summary =
          "the watchdog of every rank stopped (or no rank ever enqueued a collective): "
          "the processes are frozen, not waiting on the network";
    } else if (all_minus_one) {
      g.signature = "frozen-process";
      g.summary =
          "no rank enqueued any collective (last enqueued -1 everywhere) yet the "
          "watchdog fired: the processes are frozen (I/O, a lock, the GIL), not comms";
    } else if (!stuck.empty()) {
      g.signature = "did-not-arrive";
      g.culprits = stuck;
      for (int r : stuck) set_place(r, "frozen");
      g.summary = "its watchdog stopped: that process itself is frozen while its peers wait";
    } else if (!behind.empty() && at_top.size() < behind.size() &&
               std::all_of(behind.begin(), behind.end(), [&](int r) {
                 return *ranks[r].enq == *top - 1 && ranks[r].done.value_or(-1) >= *ranks[r].enq;
               })) {
      g.signature = "ran-ahead";
      g.culprits = at_top;
      for (int r : at_top) set_place(r, "ran-ahead");
      for (int r : behind) set_place(r, "done");
      g.summary = fmt::format(
          "{} enqueued collective {} that no other rank issued: a desynchronised code path "
          "(a branch, a condition or a data-dependent loop taken by some ranks only)",
          at_top.size() == 1 ? "one rank" : "a few ranks", *top);
    } else if (!behind.empty()) {
      // Behind and idle (completed what it enqueued): it never came; behind and inside an
      // earlier collective: stuck inside that one.
      bool all_inside = true;
      for (int r : behind) {
        const bool inside = ranks[r].done.value_or(-1) < *ranks[r].enq;
        set_place(r, inside ? "stuck-inside" : "did-not-arrive");
        all_inside = all_inside && inside;
      }
      g.signature = all_inside ? "stuck-inside" : "did-not-arrive";
      g.culprits = behind;
      g.summary = all_inside
                      ? fmt::format(
                            "{} still inside an earlier collective and never reached collective "
                            "{} that the others wait in",
                            behind.size() == 1 ? "that rank is" : "those ranks are", *top)
                      : fmt::format("{} never enqueued collective {} that the others wait in",
                                    behind.size() == 1 ? "that rank" : "those ranks", *top);
    } else if (!incomplete.empty() && !complete.empty()) {
      g.signature = "stuck-inside";
      g.culprits = incomplete;
      for (int r : incomplete) set_place(r, "stuck-inside");
      for (int r : complete) set_place(r, "done");
      g.summary =
          fmt::format("entered collective {} and never completed it while its peers did", *top);
    } else if (!incomplete.empty()) {
      // Every rank is inside: the collective they wait in is the first one none completed
      // (the watchdog's SeqNum), not the last one enqueued behind it.
      std::optional<std::int64_t> first;
      for (int r : known) {
        const std::int64_t next = ranks[r].done.value_or(-1) + 1;
        if (!first || next < *first) first = next;
      }
      for (const auto& [rank, s] : ranks)
        if (s.timed_out && s.timeout_seq && (!first || *s.timeout_seq >= *first)) {
          first = s.timeout_seq;
          break;
        }
      if (first && *first >= 0) {
        top = first;
        g.seq = first;
        g.op.reset();
        for (const auto& [rank, s] : ranks)
          if (s.op && s.timeout_seq == first) g.op = s.op;
      }
    }
    if (!g.signature.empty()) {
      // decided above
    } else if (!incomplete.empty() && std::all_of(known.begin(), known.end(), [&](int r) {
                 return ranks[r].done.value_or(-1) < 0;
               })) {
      g.signature = "transport-never-worked";
      g.summary =
          "no rank ever completed a collective: the first one never finished anywhere, "
          "so the transport between the GPUs or nodes never worked";
    } else if (!incomplete.empty()) {
      // Every rank inside the same collective: the logs alone single none out.
      if (!with_xid.empty()) {
        g.signature = "stuck-inside";
        g.culprits = with_xid;
        for (int r : with_xid) set_place(r, "stuck-inside");
        g.summary = fmt::format(
            "every rank is inside collective {}, and the kernel log shows an Xid on this rank's "
            "GPU: its GPU stopped, the others wait for it",
            *top);
      } else if (!missing.empty() || !silent.empty()) {
        g.signature = "missing-ranks";
        g.culprits = missing_culprits();
        g.summary = fmt::format(
            fmt::runtime(missing_named
                             ? "every rank that left its state is inside collective {}; the ranks "
                               "that left none are the first suspects"
                             : "the ranks that left their state are inside collective {}; the "
                               "others left nothing among the inputs, too many to single one out: "
                               "give their logs"),
            *top);
      } else {
        g.signature = "all-stuck";
        g.summary = fmt::format(
            "every rank is inside collective {} and none completed it: nothing in these "
            "inputs singles out a rank (a network or NVLink fault mid-run, a GPU that hung "
            "without an Xid in the inputs){}",
            *top,
            g.world_size ? ""
                         : "; the inputs do not say how many ranks the job has, so ranks "
                           "that left nothing cannot be told");
      }
    } else {
      g.signature = "all-stuck";
      g.summary = "a watchdog timed out, but every rank completed what it enqueued";
    }
    // No rank singled out by progress: a rank whose own log holds a fatal CUDA error or an
    // out-of-memory while the others only time out is the one they wait for.
    if (g.culprits.empty() && (g.signature == "all-stuck" || g.signature == "missing-ranks")) {
      std::vector<int> own;
      for (const auto& [rank, st] : ranks)
        if (std::any_of(st.errors.begin(), st.errors.end(), own_fatal_error)) own.push_back(rank);
      if (!own.empty() && own.size() < ranks.size()) {
        g.signature = "rank-error";
        g.culprits = own;
        for (int r : own) set_place(r, "own-error");
        g.summary =
            "its own log shows a fatal error (a CUDA error or out of memory) while the "
            "other ranks only time out waiting for it";
      }
    }
    // Missing ranks are suspects beside any culprit found.
    if (g.signature != "missing-ranks") {
      std::vector<int> named = g.culprits;
      std::sort(named.begin(), named.end());
      for (auto& h : g.ranks)
        if (h.place == "waiting" && std::binary_search(named.begin(), named.end(), h.rank))
          h.place = place_of(g.signature);
    }
    a.groups.push_back(std::move(g));
  }

  apply_desync_report(f, a, make_rank);
  apply_launcher_reports(f, a, make_rank);
  // nccl-tests that printed its result rows: a run that completed, not a hang.
  if (!a.any_hang() && !stalled_test) {
    int rows = 0;
    for (const auto& m : f.measurements) rows += m.tool == "nccl-tests" ? 1 : 0;
    if (rows > 0) {
      HangGroup g;
      g.pg = "nccl-tests";
      g.signature = "no-hang";
      g.summary = fmt::format(
          "nccl-tests printed {} result row{}: its collectives completed, the run did not hang",
          rows, rows == 1 ? "" : "s");
      a.groups.push_back(std::move(g));
    }
  }
  // nccl-tests that stopped after its table header: its first collective never completed.
  if (stalled_test && !a.any_hang()) {
    HangGroup g;
    g.pg = "nccl-tests";
    g.hang = true;
    g.signature = "transport-never-worked";
    g.summary =
        "nccl-tests printed no result row, so its first collective (or NCCL's init) never "
        "completed on any rank, if the run stopped where the output ends: the transport between "
        "the GPUs or nodes never worked (P2P through ACS or the IOMMU, the network, the fabric)";
    a.groups.push_back(std::move(g));
  }

  // NCCL RAS: communicators with trouble.
  std::vector<HangGroup> ras;
  for (const auto& c : f.ras_communicators) {
    HangGroup g;
    g.pg = c.id;
    g.hang = true;
    g.world_size = c.size;
    std::set<int> named;
    for (const auto& r : f.collective_ranks) {
      if (r.source != "nccl-ras" || !r.rank || !r.ras_status || *r.ras_status == "ok") continue;
      if (r.pg && *r.pg != c.id) continue;
      if (!named.insert(*r.rank).second) continue;
      HangRank h = make_rank(*r.rank, nullptr);
      if (r.host && !h.host) h.host = r.host;
      if (r.pid && !h.pid) h.pid = r.pid;
      if (r.cuda_dev && !h.cuda_dev) h.cuda_dev = r.cuda_dev;
      h.place = *r.ras_status == "outlier" ? "ras-outlier"
                : *r.ras_status == "dead"  ? "ras-dead"
                                           : "ras-missing";
      for (const auto& [op, n] : r.op_counts)
        add_unique(h.errors, fmt::format("NCCL RAS: {} count {}", op, n));
      g.ranks.push_back(std::move(h));
    }
    for (int r : c.missing_ranks)
      if (named.insert(r).second) {
        HangRank h = make_rank(r, nullptr);
        h.place = std::find(c.dead_ranks.begin(), c.dead_ranks.end(), r) != c.dead_ranks.end()
                      ? "ras-dead"
                      : "ras-missing";
        g.ranks.push_back(std::move(h));
      }
    std::sort(g.ranks.begin(), g.ranks.end(),
              [](const HangRank& x, const HangRank& y) { return x.rank < y.rank; });
    const auto has = [&](const char* e) {
      return std::find(c.errors.begin(), c.errors.end(), e) != c.errors.end();
    };
    const bool lost = has("INCOMPLETE") || has("DEAD") ||
                      std::any_of(g.ranks.begin(), g.ranks.end(), [](const HangRank& h) {
                        return h.place == "ras-missing" || h.place == "ras-dead";
                      });
    // A count mismatch names its outliers. Those that launched MORE operations than the
    // others ran ahead: they wait in a collective the rest have not launched, so they are not
    // the ones the job waits for. Outliers behind the others are.
    std::optional<std::int64_t> majority;  // the operation number most ranks launched up to
    int majority_ranks = 0;
    for (const auto& [op, n] : c.launched)
      if (auto v = parse_int(op); v && n > majority_ranks) {
        majority = v;
        majority_ranks = n;
      }
    std::vector<int> ahead;
    for (const auto& r : f.collective_ranks)
      if (r.source == "nccl-ras" && r.rank && r.pg && *r.pg == c.id && majority)
        for (const auto& [op, n] : r.op_counts)
          if (n > *majority && std::find(ahead.begin(), ahead.end(), *r.rank) == ahead.end())
            ahead.push_back(*r.rank);
    std::sort(ahead.begin(), ahead.end());
    for (const auto& h : g.ranks) {
      if (lost ? h.place == "ras-outlier" : false) continue;
      if (!lost && std::binary_search(ahead.begin(), ahead.end(), h.rank)) continue;
      g.culprits.push_back(h.rank);
    }
    for (auto& h : g.ranks)
      if (std::binary_search(ahead.begin(), ahead.end(), h.rank)) h.place = "ras-ahead";
    g.signature = lost ? "ras-missing" : "ras-mismatch";
    const std::string errors = c.errors.empty() ? std::string("an error") : join(c.errors, ", ");
    const std::string detail =
        c.details.empty() ? std::string() : " (" + join(c.details, "; ") + ")";
    g.summary = lost ? fmt::format(
                           "NCCL RAS reports {}: it could not reach {} of this "
                           "communicator{}",
                           errors, g.culprits.size() == 1 ? "one rank" : "some ranks", detail)
                     : fmt::format(
                           "NCCL RAS reports {}: ranks of this communicator have "
                           "different collective counts{}",
                           errors, detail);
    if (!lost && !ahead.empty() && majority)
      g.summary += fmt::format(
          "; rank{} {} launched more operations than the other {} (up to {}): {} ahead and "
          "wait{} for the others, so {} not the culprit{}; the ranks behind have not launched "
          "that collective, and one query does not show which of them holds it up",
          ahead.size() > 1 ? "s" : "", rank_list(ahead), majority_ranks, *majority,
          ahead.size() > 1 ? "they ran" : "it ran", ahead.size() > 1 ? "" : "s",
          ahead.size() > 1 ? "they are" : "it is", ahead.size() > 1 ? "s" : "");
    ras.push_back(std::move(g));
  }
  // A job-level entry ("Process 60004 … managing GPU 0") says again what a communicator's
  // entry names by rank: kept only when nothing names a rank.
  const bool any_named =
      std::any_of(ras.begin(), ras.end(), [](const HangGroup& g) { return !g.culprits.empty(); });
  for (auto& g : ras)
    if (!any_named || !g.culprits.empty() || g.signature == "ras-mismatch")
      a.groups.push_back(std::move(g));

  std::stable_sort(a.groups.begin(), a.groups.end(),
                   [](const HangGroup& x, const HangGroup& y) { return x.hang > y.hang; });
  return a;
}

namespace rules {
namespace {

std::string who_text(const HangRank& h) {
  std::vector<std::string> parts;
  if (h.host) parts.push_back("host " + *h.host);
  if (h.pid) parts.push_back(fmt::format("pid {}", *h.pid));
  std::string gpu;
  if (h.cuda_dev) gpu = fmt::format("GPU {}", *h.cuda_dev);
  std::vector<std::string> ids;
  if (h.pci_bus_id) ids.push_back(*h.pci_bus_id);
  if (h.gpu_uuid) ids.push_back(*h.gpu_uuid);
  if (!ids.empty()) gpu += (gpu.empty() ? "GPU " : " ") + ("(" + join(ids, ", ") + ")");
  if (!gpu.empty()) parts.push_back(gpu);
  return parts.empty() ? std::string() : " (" + join(parts, ", ") + ")";
}

std::string state_text(const HangRank& h) {
  if (!h.last_enqueued && !h.last_completed) return "";
  std::string s = fmt::format("enqueued {}", seq_text(h.last_enqueued));
  if (h.last_started && *h.last_started >= 0) s += fmt::format(", started {}", *h.last_started);
  s += fmt::format(", completed {}", seq_text(h.last_completed));
  return s;
}

std::string group_name(const HangGroup& g) {
  if (g.signature == "ras-missing" || g.signature == "ras-mismatch")
    return "NCCL communicator " + g.pg;
  std::string s = g.pg == "?" ? std::string("process group (not printed)") : "PG " + g.pg;
  if (g.pg_name) s += " (" + *g.pg_name + ")";
  return s;
}

std::string op_text(const HangGroup& g) {
  std::string s = g.op ? *g.op + " " : std::string();
  return s + "seq " + seq_text(g.seq);
}

const HangRank* rank_of(const HangGroup& g, int r) {
  for (const auto& h : g.ranks)
    if (h.rank == r) return &h;
  return nullptr;
}

// "ranks 0-2, 4-7 wait in ALLREDUCE seq 1580 (enqueued 1580, completed 1579)"
std::string waiting_text(const HangGroup& g) {
  std::vector<int> waiting;
  const HangRank* sample = nullptr;
  for (const auto& h : g.ranks)
    if (h.place == "waiting" || h.place == "done") {
      waiting.push_back(h.rank);
      if (!sample && h.place == "waiting") sample = &h;
    }
  if (waiting.empty()) return {};
  if (!sample) sample = rank_of(g, waiting.front());
  return fmt::format("rank{} {} {} {}", waiting.size() > 1 ? "s" : "", rank_list(waiting),
                     g.signature == "ran-ahead" ? "never issued" : "wait in", op_text(g)) +
         (sample && !state_text(*sample).empty() ? " (" + state_text(*sample) + ")" : "");
}

void emit_group(const HangGroup& g, Emitter& e) {
  if (!g.hang) return;
  std::vector<std::string> subjects;
  for (int r : g.culprits) subjects.push_back(fmt::format("rank {}", r));
  std::string ev = group_name(g) + ": ";
  const std::string waiting = waiting_text(g);
  if (g.signature == "frozen-process" || g.signature == "transport-never-worked" ||
      g.signature == "all-stuck") {
    std::vector<int> all;
    for (const auto& h : g.ranks)
      if (h.last_enqueued || h.place == "frozen") all.push_back(h.rank);
    if (all.empty()) {
      ev += g.summary;
    } else {
      ev += fmt::format("{} (ranks {}", g.summary, rank_list(all));
      if (!g.ranks.empty() && !state_text(g.ranks.front()).empty())
        ev += ": " + state_text(g.ranks.front());
      ev += ")";
    }
    std::vector<int> missing;
    for (const auto& h : g.ranks)
      if (h.place == "missing" || h.place == "silent") missing.push_back(h.rank);
    if (!missing.empty())
      ev += fmt::format("; no state from rank{} {}", missing.size() > 1 ? "s" : "",
                        rank_list(missing));
    if (subjects.empty())
      for (int r : all) subjects.push_back(fmt::format("rank {}", r));
    if (subjects.size() > 3) subjects = {fmt::format("ranks {}", rank_list(all))};
    if (subjects.empty()) subjects = {g.pg};
    if (g.signature == "frozen-process")
      e.add("collective-hang-frozen-process", subjects, ev);
    else if (g.signature == "transport-never-worked" && g.pg == "nccl-tests")
      // Only the end of a paste says it: a warning, since a paste cut short reads the same.
      e.add("collective-hang-transport", Severity::kWarning, subjects, ev);
    else if (g.signature == "transport-never-worked")
      e.add("collective-hang-transport", subjects, ev);
    else
      e.add("collective-hang", subjects, ev);
    return;
  }
  if (g.culprits.empty()) {
    // Trouble said without a rank to name (a RAS table row, a job-level RAS entry).
    Severity sev = g.signature == "ras-mismatch" ? Severity::kWarning : Severity::kCritical;
    Finding& fd = e.add("collective-hang", sev, {g.pg}, ev + g.summary);
    if (g.signature == "ras-mismatch")
      fd.decision_note =
          "NCCL RAS lists only the smaller groups of a count mismatch: the ranks ahead are "
          "named, the ranks behind (where the culprit is) are not. Take every rank's watchdog "
          "line or flight-recorder dump (TORCH_NCCL_DUMP_ON_TIMEOUT=1) and run `gpuvet culprit` "
          "on them; query `ncclras` twice 5 s or more apart: only counts that stay the same are "
          "stuck.";
    return;
  }
  if (g.signature == "ras-mismatch") {
    ev += g.summary;
    std::vector<std::string> who;
    for (const auto& h : g.ranks)
      who.push_back(fmt::format("rank {}{}{}", h.rank, who_text(h),
                                h.errors.empty() ? "" : ": " + join(h.errors, ", ")));
    if (!who.empty()) ev += "; outliers: " + join(who, "; ");
    ev +=
        "; one query cannot tell a stuck rank from one still in flight: query again after 5 s "
        "or more, and only counts that stay the same mean stuck";
    e.add("collective-hang", Severity::kWarning, subjects, ev);
    return;
  }
  // A named culprit.
  std::vector<std::string> parts;
  bool application = g.signature == "ran-ahead" || g.signature == "desync" ||
                     g.signature == "rank-failed" || g.signature == "rank-error";
  bool hardware = false;
  for (int r : g.culprits) {
    const HangRank* h = rank_of(g, r);
    if (!h) continue;
    std::string what;
    if (h->place == "did-not-arrive")
      what = fmt::format("did not arrive: its last enqueued work is {} (completed {})",
                         seq_text(h->last_enqueued), seq_text(h->last_completed));
    else if (h->place == "stuck-inside")
      what = h->last_enqueued && g.seq && *h->last_enqueued < *g.seq
                 ? fmt::format("is stuck inside collective {} and never reached {} ({})",
                               *h->last_enqueued, *g.seq, state_text(*h))
                 : fmt::format("is stuck inside it ({})", state_text(*h));
    else if (h->place == "ran-ahead")
      what = fmt::format("ran ahead: it enqueued {} while the others stopped at {}",
                         seq_text(h->last_enqueued), *g.seq - 1);
    else if (h->place == "frozen")
      what = "froze: its watchdog stopped making progress (heartbeat monitor)";
    else if (h->place == "missing")
      what = "left no log, dump or status among the inputs";
    else if (h->place == "silent")
      what = "its NCCL lines name it, but nothing says where its collectives stood";
    else if (h->place == "desync")
      what =
          "is in another operation than the others at the same collective number: its code "
          "path went another way";
    else if (h->place == "failed")
      what = "exited first: torchrun names it the root cause";
    else if (h->place == "own-error")
      what = "hit a fatal error of its own";
    else if (h->place == "ras-dead")
      what = "is considered dead by NCCL RAS (unreachable for 60 s or more)";
    else if (h->place == "ras-missing")
      what = "is missing from NCCL RAS's view of the communicator";
    else
      what = h->place;
    std::string one = fmt::format("rank {}{} {}", r, who_text(*h), what);
    if (!h->errors.empty()) {
      one += fmt::format("; its log: \"{}\"", h->errors.front().substr(0, 200));
      for (const auto& err : h->errors) {
        auto has = [&](const char* w) { return err.find(w) != std::string::npos; };
        if (has("out of memory") || has("OutOfMemory") || has("Traceback") ||
            (has("Error:") && !has("NCCL") && !has("CUDA")))
          application = true;
      }
    }
    if (!h->kernel.empty()) {
      std::string k = h->kernel.front();
      while (!k.empty() && (k.back() == '.' || k.back() == ' ')) k.pop_back();
      one += "; kernel log: " + k;
      hardware = true;
    }
    parts.push_back(std::move(one));
    if (parts.size() >= kMaxNamed) break;
  }
  ev += join(parts, "; ");
  if (g.culprits.size() > kMaxNamed)
    ev += fmt::format("; and {} more", g.culprits.size() - kMaxNamed);
  if (!waiting.empty()) ev += "; " + waiting;
  if (g.signature == "missing-ranks") ev += " — " + g.summary;
  if (g.timeout_ms) ev += fmt::format("; timeout {} ms", *g.timeout_ms);
  std::vector<int> others;
  for (const auto& h : g.ranks)
    if ((h.place == "missing" || h.place == "silent") &&
        std::find(g.culprits.begin(), g.culprits.end(), h.rank) == g.culprits.end())
      others.push_back(h.rank);
  if (!others.empty())
    ev += fmt::format("; no state from rank{} {} either", others.size() > 1 ? "s" : "",
                      rank_list(others));
  Finding& fd = e.add("collective-hang-culprit", subjects, ev);
  if (hardware) {
    fd.action = Action::kDrain;
    fd.decision_note =
        "The kernel log shows an Xid on this rank's GPU: drain its node and follow the xid-error "
        "finding; the job will hang again on that GPU.";
  } else if (application) {
    fd.action = Action::kFixApplication;
    fd.decision_note =
        g.signature == "ran-ahead" || g.signature == "desync"
            ? "A rank out of step with the others (one collective ahead, or another operation at "
              "the same number) is the job's own code path: find the "
              "branch that issues that collective on some ranks only (compare the ranks' last "
              "operations in the flight recorder) and make every rank take it."
            : "The culprit's own log shows why it left: fix that error (out of memory, an "
              "exception) and make a failing rank abort the whole job instead of leaving its "
              "peers waiting until the timeout.";
  }
}

}  // namespace

void check_collectives(const Context& c, Emitter& e) {
  const HangAnalysis a = analyse_hang(c.facts);
  for (const auto& g : a.groups) emit_group(g, e);
}

}  // namespace rules
}  // namespace gpuvet
