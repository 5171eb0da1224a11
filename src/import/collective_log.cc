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
constexpr std::size_t kMaxRecords = 4096;

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
    p = find(line, "[rank");
    if (p != npos && p + 5 < line.size() && is_digit(line[p + 5])) {
      std::size_t e = p + 5;
      while (e < line.size() && is_digit(line[e]) && e - p < 14) ++e;
      if (e < line.size() && line[e] == ']')
        if (auto v = parse_int(line.substr(p + 5, e - p - 5)); v && *v <= 100000000)
          w.rank = static_cast<int>(*v);
    }
  }
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

struct Parser {
  // (rank or -1, pg or "") → record; -1: the line named no rank.
  std::map<std::pair<int, std::string>, CollectiveRank> records;
  std::map<std::pair<std::string, int>, Identity> identities;  // (host, pid)
  std::vector<std::string> rankless_errors;
  std::size_t lines = 0;

  CollectiveRank& record(const Where& w) {
    const std::pair<int, std::string> key{w.rank.value_or(-1), w.pg.value_or("")};
    auto it = records.find(key);
    if (it == records.end()) {
      if (records.size() >= kMaxRecords) {
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
    std::string_view line = strip_launcher_label(raw);
    if (line.empty()) return;
    const std::size_t info = find(line, "NCCL INFO");
    const std::size_t warn = info == npos ? find(line, "NCCL WARN") : npos;
    if (info != npos || warn != npos) {
      nccl_line(line, info != npos ? info : warn);
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
    if (is_error_line(line)) {
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

  // The watchdog line names no PG: it joins the PG record of its rank with its sequence
  // number (or the rank's only PG record).
  void join_rank_only_records() {
    for (auto it = records.begin(); it != records.end();) {
      const auto& [key, r] = *it;
      if (!key.second.empty() || key.first < 0) {
        ++it;
        continue;
      }
      CollectiveRank* target = nullptr;
      int candidates = 0;
      for (auto& [k2, r2] : records) {
        if (k2.first != key.first || k2.second.empty()) continue;
        ++candidates;
        if (r.timeout_seq && r2.timeout_seq == r.timeout_seq) target = &r2;
      }
      if (!target && candidates == 1)
        for (auto& [k2, r2] : records)
          if (k2.first == key.first && !k2.second.empty()) target = &r2;
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

std::size_t parse_collective_log(std::string_view text, std::vector<CollectiveRank>& out) {
  Parser p;
  text_scan::LineReader lines(text);
  for (std::string_view line; lines.next(line);) p.line(line.substr(0, kMaxLine));
  p.finish(out);
  return p.lines;
}

bool has_collective_progress_line(std::string_view text) {
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
