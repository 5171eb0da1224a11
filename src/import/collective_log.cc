#include "import/collective_log.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "core/text_scan.h"
#include "core/util.h"
#include "import/nccl_log.h"

namespace gpuvet::import {
namespace {

constexpr std::size_t npos = std::string_view::npos;
constexpr std::size_t kMaxLine = 16 << 10;
constexpr std::size_t kMaxErrorsPerRank = 6;
constexpr std::size_t kMaxErrorText = 300;
constexpr std::size_t kMaxRecords = kMaxCollectiveRecords;

using text_scan::contains;
using text_scan::find;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The integer right after `key` in `line` ("SeqNum=" → 1580; "-1" allowed), else nullopt.
std::optional<std::int64_t> int_after(std::string_view line, std::string_view key) {
  const std::size_t p = find(line, key);
  if (p == npos) return std::nullopt;
  std::size_t b = p + key.size();
  while (b < line.size() && line[b] == ' ') ++b;
  std::size_t e = b;
  if (e < line.size() && line[e] == '-') ++e;
  while (e < line.size() && is_digit(line[e]) && e - b < 19) ++e;
  auto v = parse_int(line.substr(b, e - b));
  if (!v || *v < -1) return std::nullopt;
  return v;
}

std::optional<int> small_int_after(std::string_view line, std::string_view key) {
  auto v = int_after(line, key);
  if (!v || *v < 0 || *v > 100000000) return std::nullopt;
  return static_cast<int>(*v);
}

// The word right after `key` up to one of `stops`.
std::string_view word_after(std::string_view line, std::string_view key, std::string_view stops) {
  const std::size_t p = find(line, key);
  if (p == npos) return {};
  const std::size_t b = p + key.size();
  std::size_t e = b;
  while (e < line.size() && stops.find(line[e]) == npos && e - b < 64) ++e;
  return line.substr(b, e - b);
}

// "[default3]" (torchrun --tee's role and local rank) or "[rank3]" at line[p]: the rank and
// the position just after its ']'.
std::optional<std::pair<int, std::size_t>> bracket_rank_at(std::string_view line, std::size_t p) {
  if (p >= line.size() || line[p] != '[') return std::nullopt;
  std::size_t d = p + 1;
  if (line.compare(d, 7, "default") == 0)
    d += 7;
  else if (line.compare(d, 4, "rank") == 0)
    d += 4;
  else
    return std::nullopt;
  std::size_t e = d;
  while (e < line.size() && is_digit(line[e]) && e - d < 9) ++e;
  if (e == d || e >= line.size() || line[e] != ']') return std::nullopt;
  const auto v = parse_int(line.substr(d, e - d));
  if (!v || *v > 100000000) return std::nullopt;
  return std::pair<int, std::size_t>{static_cast<int>(*v), e + 1};
}

// What the line's prefixes say of its rank and process group.
struct Where {
  std::optional<int> rank;
  std::optional<std::string> pg;
  std::optional<std::string> pg_name;
};

// "[PG ID 0 PG GUID 0(default_pg) Rank 3]", "[PG 1 Rank 0]", "[PG 0 (default_pg) Rank 7]",
// "[PG ID 2 PG GUID 9 Rank 4]", "[Rank 7]", then torchrun's "[rank7]:".
Where where_of(std::string_view line) {
  Where w;
  std::size_t p = find(line, "[PG ");
  if (p != npos) {
    const std::size_t close = line.find(']', p);
    if (close != npos && close - p < 200) {
      std::string_view in = line.substr(p + 4, close - p - 4);
      if (starts_with(in, "ID ")) in.remove_prefix(3);
      std::size_t e = 0;
      while (e < in.size() && is_digit(in[e]) && e < 9) ++e;
      if (e > 0) w.pg = std::string(in.substr(0, e));
      const std::size_t open = in.find('(');
      const std::size_t shut = open == npos ? npos : in.find(')', open);
      if (shut != npos && shut - open > 1 && shut - open < 80)
        w.pg_name = text_scan::printable(in.substr(open + 1, shut - open - 1), 80);
      const std::size_t r = find(in, "Rank ");
      if (r != npos)
        if (auto rank = small_int_after(in.substr(r), "Rank ")) w.rank = rank;
    }
  }
  if (!w.rank) {
    p = find(line, "[Rank ");
    if (p != npos) w.rank = small_int_after(line.substr(p), "[Rank ");
  }
  if (!w.rank) {
    // torchrun --tee / --log-dir prefix: "[default3]:" (role "default", local rank 3).
    if (const auto b = bracket_rank_at(line, find(line.substr(0, 32), "[default"));
        b && b->second < line.size() && line[b->second] == ':')
      w.rank = b->first;
  }
  if (!w.rank)
    if (const auto b = bracket_rank_at(line, find(line, "[rank"))) w.rank = b->first;
  return w;
}

// glog's "[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607]": "1206 18:44:12.715298746".
std::optional<std::string> glog_time(std::string_view line) {
  for (std::size_t p = 0; (p = line.find('[', p)) != npos && p < 160; ++p) {
    if (p + 8 >= line.size()) break;
    const char sev = line[p + 1];
    if (sev != 'E' && sev != 'W' && sev != 'I' && sev != 'F') continue;
    std::size_t e = p + 2;
    while (e < line.size() && is_digit(line[e])) ++e;
    if (e - (p + 2) < 3 || e - (p + 2) > 4 || e >= line.size() || line[e] != ' ') continue;
    std::size_t t = e + 1;
    while (t < line.size() && (is_digit(line[t]) || line[t] == ':' || line[t] == '.')) ++t;
    if (t - e < 9) continue;
    return std::string(line.substr(p + 2, t - p - 2));
  }
  return std::nullopt;
}

bool is_error_line(std::string_view line) {
  return contains(line, "CUDA out of memory") || contains(line, "OutOfMemoryError") ||
         contains(line, "CUDA error:") || contains(line, "CUDA error ") ||
         contains(line, "illegal memory access") || contains(line, "uncorrectable ECC") ||
         contains(line, "NCCL error") || contains(line, "ncclSystemError") ||
         contains(line, "ncclRemoteError") || contains(line, "ncclUnhandledCudaError") ||
         contains(line, "ncclInternalError") || contains(line, "Segmentation fault") ||
         contains(line, "Killed") || contains(line, "Traceback (most recent call last)") ||
         contains(line, "NCCL WARN");
}

// Who a host:pid is, from its NCCL INFO init lines.
struct Identity {
  std::string host;
  int pid = 0;
  std::optional<int> rank;  // in the largest communicator seen: the global rank
  std::optional<int> nranks;
  std::optional<int> cuda_dev;
  std::optional<int> nvml_dev;
  std::optional<std::string> bus;
  std::vector<std::string> errors;
};

// "[0, 1, 2]" at line[p] (the '['): the ranks, capped; empty when it is not such a list.
std::vector<int> rank_list_at(std::string_view line, std::size_t p) {
  std::vector<int> out;
  if (p >= line.size() || line[p] != '[') return out;
  const std::size_t close = line.find(']', p);
  if (close == npos) return out;
  std::string_view in = line.substr(p + 1, close - p - 1);
  std::size_t i = 0;
  while (i < in.size() && out.size() < kMaxRecords) {
    while (i < in.size() && (in[i] == ' ' || in[i] == ',')) ++i;
    std::size_t e = i;
    while (e < in.size() && is_digit(in[e]) && e - i < 9) ++e;
    if (e == i) return {};  // not a rank list ("[E0515 …]", "[rank0]")
    out.push_back(static_cast<int>(*parse_int(in.substr(i, e - i))));
    i = e;
  }
  return out;
}

// The number after the first '#' from p: "collective #183" → 183.
std::optional<std::int64_t> number_after_hash(std::string_view line, std::size_t p) {
  const std::size_t h = line.find('#', p);
  if (h == npos) return std::nullopt;
  std::size_t e = h + 1;
  while (e < line.size() && is_digit(line[e]) && e - h < 19) ++e;
  return parse_int(line.substr(h + 1, e - h - 1));
}

// Where a launcher's rank prefix ("[default3]:" of torchrun --tee, "[rank3]:") starts in `line`
// at or after `from`; npos when none does.
std::size_t rank_prefix_at(std::string_view line, std::size_t from) {
  for (std::size_t p = line.find('[', from); p != npos; p = line.find('[', p + 1))
    if (const auto b = bracket_rank_at(line, p);
        b && b->second < line.size() && line[b->second] == ':')
      return p;
  return npos;
}

// `line` after a launcher's rank prefix ("[rank0]:", "[default0]:"), trimmed; all of it,
// trimmed, when it has none.
std::string_view after_rank_prefix(std::string_view line) {
  line = trim(line);
  if (rank_prefix_at(line, 0) == 0) line = trim(line.substr(bracket_rank_at(line, 0)->second + 1));
  return line;
}

struct Parser {
  // (rank or -1, pg or "") → record; -1: the line named no rank.
  std::map<std::pair<int, std::string>, CollectiveRank> records;
  // PyTorch's desync report and torchrun's failure summary, by rank.
  std::map<int, CollectiveRank> desync;
  std::map<int, CollectiveRank> torchrun;
  std::optional<std::int64_t> snapshot_seq;  // "#315 started ranks:" sets it for the lines below
  std::string snapshot_state;
  bool in_root_cause = false;  // torchrun: inside "Root Cause (first observed failure):"
  // A watchdog line wrapped before its WorkNCCL(…) part waits for the next line.
  std::string wrapped_watchdog;
  bool as_is = false;  // a held wrapped line read alone: not held again
  // Each prefixed rank's last line about something else than collectives.
  std::map<int, std::string> activity;
  // flight recorder's analyzer (fr_trace): the collective a "Not all ranks joining" block is
  // about.
  std::optional<std::int64_t> fr_seq;
  std::optional<std::string> fr_op;
  std::optional<std::string> failure_host;
  std::optional<int> failure_rank;
  bool any_failure = false;                  // a launcher reported a failed rank already
  bool explicit_root = false;                // torchrun's "Root Cause (first observed failure)"
  std::vector<std::string> workers_stopped;  // "Sending process 4193 closing signal SIGHUP"
  std::map<std::pair<std::string, int>, Identity> identities;  // (host, pid)
  std::vector<std::string> rankless_errors;
  std::size_t lines = 0;
  std::size_t dropped = 0;  // lines of ranks past kMaxRecords

  CollectiveRank& record(const Where& w) {
    const std::pair<int, std::string> key{w.rank.value_or(-1), w.pg.value_or("")};
    auto it = records.find(key);
    if (it == records.end()) {
      if (records.size() >= kMaxRecords) {
        ++dropped;
        static thread_local CollectiveRank overflow;
        overflow = {};
        return overflow;
      }
      it = records.emplace(key, CollectiveRank{}).first;
      it->second.source = "pytorch-log";
      it->second.rank = w.rank;
      it->second.pg = w.pg;
    }
    if (w.pg_name && !it->second.pg_name) it->second.pg_name = w.pg_name;
    return it->second;
  }

  void add_error(std::vector<std::string>& errors, std::string_view line) {
    if (errors.size() >= kMaxErrorsPerRank) return;
    std::string text = text_scan::printable(line, kMaxErrorText);
    if (std::find(errors.begin(), errors.end(), text) == errors.end())
      errors.push_back(std::move(text));
  }

  void nccl_line(std::string_view line, std::size_t at) {
    // "host:pid:tid [dev] NCCL INFO …" or "… NCCL WARN …"
    std::string_view before = line.substr(0, at);
    std::size_t br = before.rfind(" [");
    if (br == npos) return;
    std::size_t start = before.rfind(' ', br == 0 ? 0 : br - 1);
    start = start == npos ? 0 : start + 1;
    std::string_view token = before.substr(start, br - start);
    // a launcher label glued in front ("[1,0]<stdout>:host:1:2")
    if (std::size_t gt = token.rfind('>'); gt != npos) token = token.substr(gt + 1);
    const std::size_t c2 = token.rfind(':');
    const std::size_t c1 = c2 == npos || c2 == 0 ? npos : token.rfind(':', c2 - 1);
    if (c1 == npos) return;
    auto pid = parse_int(token.substr(c1 + 1, c2 - c1 - 1));
    if (!pid || *pid <= 0 || *pid > 1 << 30) return;
    std::string_view host = token.substr(0, c1);
    if (std::size_t colon = host.rfind(':'); colon != npos) host = host.substr(colon + 1);
    if (host.empty()) return;
    const std::pair<std::string, int> key{text_scan::printable(host, 128), static_cast<int>(*pid)};
    std::string_view msg = line.substr(at);
    const bool warn = starts_with(msg, "NCCL WARN");
    auto it = identities.find(key);
    if (warn) {
      if (it == identities.end())
        it = identities.emplace(key, Identity{key.first, key.second}).first;
      add_error(it->second.errors, msg);
      return;
    }
    // "rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 1b000" or "rank 3 nRanks 8 nNodes 1 …"
    auto rank = small_int_after(msg, " rank ");
    auto nranks = small_int_after(msg, " nranks ");
    if (!nranks) nranks = small_int_after(msg, " nRanks ");
    if (!rank || !nranks || *rank >= *nranks) return;
    if (it == identities.end()) it = identities.emplace(key, Identity{key.first, key.second}).first;
    Identity& id = it->second;
    if (!id.nranks || *nranks > *id.nranks) {
      id.nranks = nranks;
      id.rank = rank;
    }
    if (auto d = small_int_after(msg, " cudaDev ")) id.cuda_dev = d;
    if (auto d = small_int_after(msg, " nvmlDev ")) id.nvml_dev = d;
    if (!id.cuda_dev) {
      const std::size_t close = before.find(']', br);
      if (close != npos)
        if (auto d = parse_int(before.substr(br + 2, close - br - 2)); d && *d >= 0 && *d < 4096)
          id.cuda_dev = static_cast<int>(*d);
    }
    const std::string_view bus = word_after(msg, " busId ", " \t,");
    if (!bus.empty())
      if (auto b = bus_id_from_nccl_hex(bus)) id.bus = b;
  }

  void line(std::string_view raw) {
    // A progress bar ends its updates in '\r', not '\n': another rank's line is glued behind
    // it. Each rank's part is read as its own line.
    if (const std::size_t next = rank_prefix_at(raw, 1); next != npos && !as_is) {
      line(raw.substr(0, next));
      line(raw.substr(next));
      return;
    }
    std::string_view line = strip_launcher_label(raw);
    if (line.empty()) return;
    // "… Watchdog caught collective operation timeout: " / "WorkNCCL(SeqNum=2059, …": one line.
    std::string joined;
    if (!wrapped_watchdog.empty()) {
      joined = std::move(wrapped_watchdog);
      wrapped_watchdog.clear();
      // The continuation, never another rank's own watchdog line.
      if (!contains(line, "Watchdog caught") &&
          (contains(line, "SeqNum=") || contains(line, "WorkNCCL(") ||
           starts_with(trim(line), "collective operation timeout"))) {
        while (!joined.empty() && (joined.back() == ' ' || joined.back() == '\t'))
          joined.pop_back();
        joined += " ";
        joined += trim(line);
        line = joined;
      } else {
        std::string held = std::move(joined);
        as_is = true;
        this->line(held);  // the wrapped line alone, then this one
        as_is = false;
        joined.clear();
      }
    } else if (!as_is && contains(line, "Watchdog caught") && !contains(line, "SeqNum=") &&
               !contains(line, "WorkNCCL(") && line.size() < 2048) {
      wrapped_watchdog = std::string(line);
      return;
    }
    const std::size_t info = find(line, "NCCL INFO");
    const std::size_t warn = info == npos ? find(line, "NCCL WARN") : npos;
    if (info != npos || warn != npos) {
      nccl_line(line, info != npos ? info : warn);
      ++lines;
      return;
    }
    if (desync_line(line) || torchrun_line(line) || ended_line(line)) {
      ++lines;
      return;
    }
    const bool timeout = contains(line, "Watchdog caught collective operation timeout");
    const bool progress = contains(line, "last enqueued") || contains(line, "Last enqueued");
    const bool stuck =
        contains(line, "watchdog got stuck") || contains(line, "Heartbeat monitor timed out");
    if (timeout || progress || stuck) {
      ++lines;
      const Where w = where_of(line);
      CollectiveRank& r = record(w);
      if (stuck) r.watchdog_stuck = true;
      if (timeout) {
        if (auto v = int_after(line, "SeqNum=")) r.timeout_seq = v;
        if (auto op = word_after(line, "OpType=", ", )"); !op.empty())
          r.timeout_op = text_scan::printable(op, 48);
        if (auto v = int_after(line, "Timeout(ms)=")) r.timeout_ms = v;
        if (auto v = int_after(line, "ran for ")) r.ran_ms = v;
        if (auto t = glog_time(line)) r.timeout_time = t;
      }
      if (progress) {
        std::optional<std::int64_t> enq, done, started, at;
        for (const char* k : {"last enqueued NCCL work:", "last enqueued work:",
                              "Last enqueued NCCL work:", "last enqueued NCCL work "})
          if (!enq) enq = int_after(line, k);
        for (const char* k :
             {"last completed NCCL work:", "last completed work:", "Last completed NCCL work:"})
          if (!done) done = int_after(line, k);
        for (const char* k : {"last started NCCL work:", "last started work:"})
          if (!started) started = int_after(line, k);
        for (const char* k :
             {"detected by watchdog at work:", "Timeout at NCCL work:", "at work sequence id:"})
          if (!at) at = int_after(line, k);
        if (enq) r.last_enqueued = enq;
        if (done) r.last_completed = done;
        if (started) r.last_started = started;
        if (at && !r.timeout_seq) r.timeout_seq = at;
        if (at && !r.timeout_time)
          if (auto t = glog_time(line)) r.timeout_time = t;
      }
      return;
    }
    if (!is_error_line(line)) {
      // A prefixed rank doing something else (a progress bar, a log line): kept as its last
      // activity, so a rank busy elsewhere while the others time out can be told.
      const Where w = where_of(line);
      if (w.rank && activity.size() < kMaxRecords)
        if (const std::string_view what = after_rank_prefix(line); !what.empty())
          activity[*w.rank] = text_scan::printable(what, 160);
      return;
    }
    {
      ++lines;
      const Where w = where_of(line);
      if (w.rank) {
        Where rank_only;
        rank_only.rank = w.rank;
        add_error(record(rank_only).errors, line);
      } else {
        add_error(rankless_errors, line);
      }
    }
  }

  CollectiveRank& desync_record(int rank) {
    auto [it, inserted] = desync.try_emplace(rank);
    if (inserted) {
      it->second.source = "desync-report";
      it->second.rank = rank;
    }
    return it->second;
  }

  // PyTorch's desync report (TORCH_NCCL_DESYNC_DEBUG=1; TraceUtils.h, retrieveDesyncReport):
  //   To our best knowledge, ranks [47] are the lagging ranks that caused this timeout. They
  //     never joined any collectives
  //   [7] joined but didn't finish collective #183 (count from 1)
  //   [0, 1] finished collective #182, but didn't join collective #183 (count from 1)
  //   #315 started ranks:   /   [0, 1, 2] started ALLREDUCE   (the snapshot)
  bool desync_line(std::string_view line) {
    if (desync.size() >= kMaxRecords) return false;
    auto mark = [&](const std::vector<int>& ranks, const char* state,
                    std::optional<std::int64_t> seq, std::optional<std::string> op) {
      for (int r : ranks) {
        CollectiveRank& d = desync_record(r);
        // A lagging verdict outranks the snapshot's started/finished for the same rank.
        const bool verdict =
            std::string_view(state) != "started" && std::string_view(state) != "finished";
        if (d.desync_state && !verdict && *d.desync_state != "started" &&
            *d.desync_state != "finished")
          continue;
        d.desync_state = state;
        d.desync_seq = seq;
        if (op) d.last_op = op;
      }
    };
    // TORCH_DISTRIBUTED_DEBUG=DETAIL (ProcessGroupWrapper): "Detected mismatch between
    // collectives on ranks. Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=
    // 485, OpType=ALLREDUCE, …), but Rank 0 is running collective: CollectiveFingerPrint(…)".
    if (contains(line, "Detected mismatch between collectives on ranks")) {
      for (std::size_t p = find(line, "Rank "); p != npos; p = find(line, "Rank ", p + 5)) {
        const std::size_t run = find(line, " is running collective: ", p);
        if (run == npos || run - p > 16) continue;
        auto r = small_int_after(line.substr(p, run - p), "Rank ");
        const std::string_view fp = line.substr(run);
        auto seq = int_after(fp, "SequenceNumber=");
        const std::string_view op = word_after(fp, "OpType=", ", )");
        if (r && seq && !op.empty()) mark({*r}, "started", seq, text_scan::printable(op, 48));
      }
      return true;
    }
    // The flight recorder's analyzer (fr_trace / torchfrtrace), text: "Not all ranks joining
    // collective: sequence number: 31117", "collective: nccl:all_reduce", "missing ranks: {3, 4}".
    if (std::size_t p = find(line, "Not all ranks joining collective"); p != npos) {
      fr_seq = int_after(line.substr(p), "sequence number:");
      fr_op.reset();
      return true;
    }
    if (fr_seq && starts_with(trim(line), "collective: ")) {
      fr_op = text_scan::printable(trim(trim(line).substr(12)), 48);
      return true;
    }
    if (fr_seq && starts_with(trim(line), "missing ranks: {")) {
      const std::string_view t = trim(line);
      std::string list(t.substr(15));
      if (!list.empty()) list[0] = '[';
      if (const std::size_t close = list.find('}'); close != std::string::npos) list[close] = ']';
      mark(rank_list_at(list, 0), "missing", fr_seq, fr_op);
      return true;
    }
    if (std::size_t p = find(line, "ranks [");
        p != npos && contains(line, "are the lagging ranks that caused this timeout")) {
      mark(rank_list_at(line, p + 6), "never-joined", std::nullopt, std::nullopt);
      return true;
    }
    if (std::size_t p = find(line, "] joined but didn't finish collective #"); p != npos) {
      const std::size_t open = line.rfind('[', p);
      if (open != npos)
        mark(rank_list_at(line, open), "joined-not-finished", number_after_hash(line, p),
             std::nullopt);
      return true;
    }
    if (std::size_t p = find(line, "] finished collective #");
        p != npos && contains(line, "but didn't join collective #")) {
      const std::size_t open = line.rfind('[', p);
      if (open != npos)
        mark(rank_list_at(line, open), "finished-not-joined", number_after_hash(line, p),
             std::nullopt);
      return true;
    }
    // The snapshot: "#315 started ranks:" / "#182 finished ranks:", then "[0, 1] started OP".
    const std::string_view t = after_rank_prefix(line);
    if (!t.empty() && t.front() == '#' &&
        (t.ends_with(" started ranks:") || t.ends_with(" finished ranks:"))) {
      snapshot_seq = number_after_hash(t, 0);
      snapshot_state = t.ends_with(" started ranks:") ? "started" : "finished";
      return true;
    }
    if (snapshot_seq && !t.empty() && t.front() == '[') {
      const std::size_t close = t.find(']');
      const std::string key = "] " + snapshot_state + " ";
      if (close != npos && t.substr(close, key.size()) == key) {
        const std::string op = text_scan::printable(t.substr(close + key.size()), 48);
        mark(rank_list_at(t, 0), snapshot_state.c_str(), snapshot_seq, op);
        return true;
      }
    }
    if (snapshot_seq && !contains(line, "] started ") && !contains(line, "] finished ") &&
        !(t.size() > 0 && t.front() == '#'))
      snapshot_seq.reset();
    return false;
  }

  // How a launcher says the job ended (no hang: a rank or the job exited):
  //   torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal
  //       SIGKILL   (or "… with exit code 1")
  //   mpirun noticed that process rank 3 with PID 1167 on node 10.10.21.2 exited on signal 11
  //       (Segmentation fault).
  //   torch.distributed.elastic…: failed (exitcode: 1) local_rank: 0 (pid: 170581) of binary: …
  //   torch.distributed.elastic…: Sending process 4193 closing signal SIGHUP   (the launcher
  //       stopping its workers: it was told to, or one of them failed)
  // A rank a launcher reports as failed, made on first sight; `inserted` says it was.
  CollectiveRank& launcher_record(int rank, bool* inserted = nullptr) {
    auto [it, made] = torchrun.try_emplace(rank);
    it->second.source = "torchrun";
    it->second.rank = rank;
    if (inserted) *inserted = made;
    return it->second;
  }

  bool ended_line(std::string_view line) {
    auto record = [&](int rank) -> CollectiveRank& {
      bool inserted = false;
      CollectiveRank& c = launcher_record(rank, &inserted);
      if (inserted) {
        c.root_cause = !any_failure;  // the first failure a launcher reports
        any_failure = true;
      }
      return c;
    };
    if (torchrun.size() >= kMaxRecords) return false;
    if (std::size_t p = find(line, "process "); p != npos && contains(line, " terminated with ")) {
      auto r = small_int_after(line.substr(p), "process ");
      if (!r) return false;
      CollectiveRank& c = record(*r);
      if (auto code = int_after(line, "terminated with exit code ")) {
        c.exit_code = static_cast<int>(*code);
      } else if (const std::string_view sig = word_after(line, "terminated with signal ", " ,.");
                 !sig.empty()) {
        c.exit_code = -signal_number(sig);
      }
      add_error(c.errors, trim(line));
      return true;
    }
    if (std::size_t p = find(line, "mpirun noticed that process rank "); p != npos) {
      auto r = small_int_after(line.substr(p), "process rank ");
      if (!r) return false;
      CollectiveRank& c = record(*r);
      if (auto sig = int_after(line, "exited on signal ")) c.exit_code = -static_cast<int>(*sig);
      if (const std::string_view node = word_after(line, " on node ", " "); !node.empty())
        c.host = text_scan::printable(node, 128);
      if (auto pid = small_int_after(line, "with PID ")) c.pid = pid;
      add_error(c.errors, trim(line));
      return true;
    }
    if (std::size_t p = find(line, "failed (exitcode: ");
        p != npos && contains(line, "local_rank: ")) {
      auto r = small_int_after(line.substr(p), "local_rank: ");
      if (!r) return false;
      CollectiveRank& c = record(*r);
      if (auto code = int_after(line, "failed (exitcode: ")) c.exit_code = static_cast<int>(*code);
      if (auto pid = small_int_after(line, "(pid: ")) c.pid = pid;
      add_error(c.errors, trim(line));
      return true;
    }
    // The job ended without a rank to name: the elastic agent stopping its workers, torchrun's
    // ChildFailedError with its summary cut off, a process's crash handler (UCX: "[host:pid:0:
    // tid] Caught signal 7 (Bus error: nonexistent physical address)").
    const bool stopping =
        contains(line, "torch.distributed.elastic") && contains(line, "closing signal ");
    const bool failed = contains(line, "ChildFailedError");
    const bool crashed = contains(line, "] Caught signal ") && contains(line, " (");
    if (stopping || failed || crashed) {
      if (workers_stopped.size() < 4)
        workers_stopped.push_back(text_scan::printable(trim(line), 200));
      return true;
    }
    return false;
  }

  static int signal_number(std::string_view name) {
    static constexpr std::pair<std::string_view, int> kSignals[] = {
        {"SIGHUP", 1},   {"SIGINT", 2},   {"SIGQUIT", 3}, {"SIGILL", 4},
        {"SIGABRT", 6},  {"SIGBUS", 7},   {"SIGFPE", 8},  {"SIGKILL", 9},
        {"SIGSEGV", 11}, {"SIGPIPE", 13}, {"SIGTERM", 15}};
    for (const auto& [n, v] : kSignals)
      if (name == n) return v;
    return 0;
  }

  // torchrun's ChildFailedError summary (torch/distributed/elastic/multiprocessing/errors):
  //   Root Cause (first observed failure):
  //   [0]:
  //     host      : node-3
  //     rank      : 5 (local_rank: 5)
  //     exitcode  : -9 (pid: 41235)
  //   Failures: (the others)
  bool torchrun_line(std::string_view line) {
    const std::string_view t = trim(line);
    if (starts_with(t, "Root Cause (first observed failure)")) {
      in_root_cause = true;
      return true;
    }
    if (t == "Failures:") {
      in_root_cause = false;
      return true;
    }
    auto field = [&](std::string_view name) -> std::optional<std::string_view> {
      if (!starts_with(t, name)) return std::nullopt;
      std::size_t i = name.size();
      while (i < t.size() && t[i] == ' ') ++i;
      if (i >= t.size() || t[i] != ':') return std::nullopt;
      return trim(t.substr(i + 1));
    };
    if (auto v = field("host")) {
      failure_host = text_scan::printable(*v, 128);
      failure_rank.reset();
      return true;
    }
    if (auto v = field("rank")) {
      std::size_t e = 0;
      while (e < v->size() && is_digit((*v)[e]) && e < 9) ++e;
      if (e == 0 || torchrun.size() >= kMaxRecords) return false;
      failure_rank = static_cast<int>(*parse_int(v->substr(0, e)));
      CollectiveRank& r = launcher_record(*failure_rank);
      if (failure_host) r.host = failure_host;
      if (in_root_cause) {  // torchrun's own word on the first failure wins over line order
        for (auto& [k, other] : torchrun) other.root_cause = false;
        explicit_root = true;
      }
      r.root_cause = in_root_cause || (!explicit_root && !any_failure);
      any_failure = true;
      return true;
    }
    if (auto v = field("exitcode"); v && failure_rank) {
      std::size_t b = 0, e = 0;
      if (e < v->size() && (*v)[e] == '-') ++e;
      while (e < v->size() && is_digit((*v)[e]) && e - b < 6) ++e;
      CollectiveRank& r = torchrun[*failure_rank];
      if (auto code = parse_int(v->substr(b, e - b))) r.exit_code = static_cast<int>(*code);
      if (auto pid = small_int_after(*v, "pid: ")) r.pid = pid;
      return true;
    }
    if (auto v = field("traceback"); v && failure_rank) {
      if (!v->empty() && !starts_with(*v, "To enable traceback"))
        add_error(torchrun[*failure_rank].errors, *v);
      return true;
    }
    return false;
  }

  // The watchdog line names no PG: it joins the PG record of its rank with its sequence
  // number (or the rank's only PG record).
  void join_rank_only_records() {
    for (auto it = records.begin(); it != records.end();) {
      const auto& [key, r] = *it;
      if (!key.second.empty() || key.first < 0) {
        ++it;
        continue;
      }
      // The map is ordered by rank, then PG: this rank's PG records follow it. (A scan of the
      // whole map per rank was quadratic in the ranks of one log.)
      CollectiveRank* target = nullptr;
      CollectiveRank* only = nullptr;
      int candidates = 0;
      for (auto j = std::next(it); j != records.end() && j->first.first == key.first; ++j) {
        ++candidates;
        only = &j->second;
        if (r.timeout_seq && j->second.timeout_seq == r.timeout_seq) target = &j->second;
      }
      if (!target && candidates == 1) target = only;
      if (!target) {
        ++it;
        continue;
      }
      CollectiveRank& t = *target;
      if (r.timeout_seq) t.timeout_seq = r.timeout_seq;
      if (r.timeout_op) t.timeout_op = r.timeout_op;
      if (r.timeout_ms) t.timeout_ms = r.timeout_ms;
      if (r.ran_ms) t.ran_ms = r.ran_ms;
      if (r.timeout_time) t.timeout_time = r.timeout_time;
      if (!t.last_enqueued) t.last_enqueued = r.last_enqueued;
      if (!t.last_completed) t.last_completed = r.last_completed;
      t.watchdog_stuck = t.watchdog_stuck || r.watchdog_stuck;
      for (const auto& e : r.errors) add_error(t.errors, e);
      it = records.erase(it);
    }
  }

  void finish(std::vector<CollectiveRank>& out) {
    const std::size_t before = out.size();
    if (!wrapped_watchdog.empty()) {  // the log ends on a wrapped watchdog line
      std::string held = std::move(wrapped_watchdog);
      wrapped_watchdog.clear();
      as_is = true;
      line(held);
      as_is = false;
    }
    join_rank_only_records();
    std::set<int> ranks;
    for (const auto& [key, r] : records)
      if (key.first >= 0) ranks.insert(key.first);
    // Identities by rank (the global one: the largest communicator's).
    std::map<int, const Identity*> by_rank;
    for (const auto& [key, id] : identities)
      if (id.rank) by_rank.emplace(*id.rank, &id);
    const Identity* only_identity = identities.size() == 1 ? &identities.begin()->second : nullptr;
    const std::optional<int> only_rank =
        ranks.size() == 1 ? std::optional<int>(*ranks.begin())
                          : (ranks.empty() && only_identity ? only_identity->rank : std::nullopt);
    std::set<int> covered;
    for (auto& [key, r] : records) {
      if (!r.rank && only_rank) r.rank = only_rank;
      const Identity* id = nullptr;
      if (r.rank)
        if (auto f = by_rank.find(*r.rank); f != by_rank.end()) id = f->second;
      if (!id && only_identity && (!only_identity->rank || only_rank == only_identity->rank))
        id = only_identity;
      if (id) {
        r.host = id->host;
        r.pid = id->pid;
        r.cuda_dev = id->cuda_dev;
        r.nvml_dev = id->nvml_dev;
        r.pci_bus_id = id->bus;
        if (!r.world_size) r.world_size = id->nranks;
        for (const auto& e : id->errors) add_error(r.errors, e);
        covered.insert(id->rank.value_or(-1));
      }
      if (r.rank && only_rank == r.rank)
        for (const auto& e : rankless_errors) add_error(r.errors, e);
      out.push_back(std::move(r));
    }
    for (auto& [rank, r] : desync) out.push_back(std::move(r));
    // Ranks that printed other things but nothing about their collectives: what they did last.
    std::multimap<int, std::size_t> pytorch_records;  // rank → index in out
    for (std::size_t i = before; i < out.size(); ++i)
      if (out[i].rank && out[i].source == "pytorch-log") pytorch_records.emplace(*out[i].rank, i);
    for (const auto& [rank, what] : activity) {
      const auto [from, to] = pytorch_records.equal_range(rank);
      for (auto j = from; j != to; ++j)
        if (!out[j->second].last_activity) out[j->second].last_activity = what;
      if (from != to) continue;
      CollectiveRank r;
      r.source = "pytorch-log";
      r.rank = rank;
      r.last_activity = what;
      out.push_back(std::move(r));
    }
    for (auto& [rank, r] : torchrun) out.push_back(std::move(r));
    if (!workers_stopped.empty()) {  // the launcher stopped its workers: the job ended
      CollectiveRank r;
      r.source = "torchrun";
      r.errors = workers_stopped;
      out.push_back(std::move(r));
    }
    // Ranks the NCCL lines name but no PyTorch line does: who they are, no progress known.
    for (const auto& [key, id] : identities) {
      if (!id.rank || covered.count(*id.rank) || ranks.count(*id.rank)) continue;
      CollectiveRank r;
      r.source = "nccl-log";
      r.rank = id.rank;
      r.world_size = id.nranks;
      r.host = id.host;
      r.pid = id.pid;
      r.cuda_dev = id.cuda_dev;
      r.nvml_dev = id.nvml_dev;
      r.pci_bus_id = id.bus;
      r.errors = id.errors;
      if (identities.size() == 1)
        for (const auto& e : rankless_errors) add_error(r.errors, e);
      out.push_back(std::move(r));
    }
  }
};

}  // namespace

std::size_t parse_collective_log(std::string_view text, std::vector<CollectiveRank>& out,
                                 std::vector<std::string>* notes) {
  Parser p;
  text_scan::LineReader lines(text);
  for (std::string_view line; lines.next(line);) p.line(line.substr(0, kMaxLine));
  p.finish(out);
  if (p.dropped && notes)
    notes->push_back(std::to_string(p.dropped) + " collective lines of ranks past the first " +
                     std::to_string(kMaxRecords) + " (rank, process group) records not kept");
  return p.lines;
}

bool has_collective_progress_line(std::string_view text) {
  // Reports of PyTorch and torchrun about a hang or a failed rank, in their own words.
  if (contains(text, "Detected mismatch between collectives on ranks") ||
      contains(text, "Not all ranks joining collective") ||
      contains(text, "are the lagging ranks that caused this timeout") ||
      contains(text, "] joined but didn't finish collective #") ||
      contains(text, "but didn't join collective #") ||
      contains(text, "Root Cause (first observed failure)") ||
      contains(text, "mpirun noticed that process rank ") ||
      (contains(text, "ProcessExitedException") && contains(text, " terminated with ")) ||
      (contains(text, "torch.distributed.elastic") &&
       (contains(text, "closing signal ") || contains(text, "failed (exitcode: ") ||
        contains(text, "ChildFailedError"))))
    return true;
  // Both kinds of line name one of these: a text with neither needs no line-by-line search
  // (every paste is sniffed by this, most of them large and not PyTorch logs).
  if (!contains(text, "enqueued") && !contains(text, "ProcessGroupNCCL")) return false;
  text_scan::LineReader lines(text);
  for (std::string_view line; lines.next(line);) {
    line = line.substr(0, kMaxLine);
    if ((contains(line, "last enqueued NCCL work") || contains(line, "Last enqueued NCCL work") ||
         contains(line, "last enqueued work:")) &&
        (contains(line, "Rank ") || contains(line, "[rank") || contains(line, "ProcessGroupNCCL")))
      return true;
    if (contains(line, "ProcessGroupNCCL") &&
        (contains(line, "watchdog got stuck") || contains(line, "Heartbeat monitor timed out")))
      return true;
  }
  return false;
}

std::optional<int> rank_from_file_name(std::string_view path) {
  const std::size_t slash = path.find_last_of('/');
  std::string name = to_lower(slash == npos ? path : path.substr(slash + 1));
  std::optional<int> found;
  int hits = 0;
  // "rank3", "rank_3", "rank-3", "rank.3"; then a trailing "_3" of FR dumps ("nccl_trace_rank_3"
  // is caught above; "fr_trace_3", "_dump_3").
  for (std::size_t p = 0; (p = name.find("rank", p)) != npos; p += 4) {
    std::size_t b = p + 4;
    if (b < name.size() && (name[b] == '_' || name[b] == '-' || name[b] == '.')) ++b;
    std::size_t e = b;
    while (e < name.size() && is_digit(name[e]) && e - b < 7) ++e;
    if (e == b) continue;
    if (e < name.size() && is_digit(name[e])) continue;
    ++hits;
    found = static_cast<int>(*parse_int(name.substr(b, e - b)));
  }
  if (hits > 1) return std::nullopt;
  if (found) return found;
  if (contains(name, "trace") || contains(name, "dump")) {
    std::string_view stem = name;
    if (std::size_t dot = stem.find('.'); dot != npos) stem = stem.substr(0, dot);
    std::size_t e = stem.size();
    std::size_t b = e;
    while (b > 0 && is_digit(stem[b - 1]) && e - b < 7) --b;
    if (b < e && b > 0 && (stem[b - 1] == '_' || stem[b - 1] == '-'))
      return static_cast<int>(*parse_int(stem.substr(b, e - b)));
  }
  return std::nullopt;
}

}  // namespace gpuvet::import
