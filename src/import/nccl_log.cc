#include "import/nccl_log.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include <pugixml.hpp>

#include "core/text_scan.h"
#include "core/util.h"
#include "import/collective_log.h"
#include "import/importer.h"
#include "import/nccl_messages.h"

namespace gpuvet::import {
namespace {

constexpr std::size_t npos = std::string_view::npos;
// Distinct events kept per input: a 50 MB log of channel lines must not become 50 MB of facts.
constexpr std::size_t kMaxEvents = 4000;
// Longest detail kept per event.
constexpr std::size_t kMaxDetail = 512;
// Lines longer than this are only looked at up to here (NCCL lines are short; a megabyte line
// is garbage).
constexpr std::size_t kMaxLine = 16 << 10;

using text_scan::contains;
using text_scan::find;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Printable ASCII only, bounded: details end up in JSON, terminals and HTML.
std::string clean(std::string_view s, std::size_t max = kMaxDetail) {
  return text_scan::printable(s, max);
}

std::optional<int> small_int(std::string_view s) {
  auto v = parse_int(s);
  if (!v || *v < 0 || *v > 1000000000) return std::nullopt;
  return static_cast<int>(*v);
}

// What precedes "NCCL INFO": "host:pid:tid [dev] " (and, on WARN lines, "file.c:line ").
struct Prefix {
  std::optional<std::string> host;
  std::optional<int> pid;
  std::optional<int> tid;
  std::optional<int> dev;
};

Prefix parse_prefix(std::string_view p) {
  Prefix out;
  std::size_t q = 0;
  while ((q = find(p, " [", q)) != npos) {
    std::size_t j = q + 2;
    while (j < p.size() && is_digit(p[j]) && j - q < 10) ++j;
    if (j == q + 2 || j >= p.size() || p[j] != ']') {
      ++q;
      continue;
    }
    std::size_t start = q;
    while (start > 0 && !is_space(p[start - 1])) --start;
    std::string_view token = p.substr(start, q - start);  // "…host:pid:tid"
    std::size_t c2 = token.rfind(':');
    std::size_t c1 = c2 == npos || c2 == 0 ? npos : token.rfind(':', c2 - 1);
    if (c1 != npos) {
      auto tid = small_int(token.substr(c2 + 1));
      auto pid = small_int(token.substr(c1 + 1, c2 - c1 - 1));
      std::string_view host = token.substr(0, c1);
      // A launcher label may still be glued in front ("2023[1,5]<stdout>:host").
      std::size_t cut = host.find_last_of(":>");
      if (cut != npos) host = host.substr(cut + 1);
      if (tid && pid && !host.empty()) {
        out.host = clean(host, 128);
        out.pid = pid;
        out.tid = tid;
        out.dev = small_int(p.substr(q + 2, j - q - 2));
        return out;
      }
    }
    ++q;
  }
  return out;
}

class EventSink {
 public:
  EventSink(std::vector<NcclEvent>& events, std::vector<std::string>* notes)
      : events_(events), notes_(notes) {}

  void add(NcclEvent ev) {
    std::string key = ev.kind;
    key += '\x1f';
    key += ev.host.value_or("");
    key += '\x1f';
    key += ev.rank ? std::to_string(*ev.rank) : std::string();
    key += '\x1f';
    key += ev.pci_bus_id.value_or("");
    key += '\x1f';
    key += ev.detail;
    auto it = index_.find(key);
    if (it != index_.end()) {
      ++counts_[it->second];
      return;
    }
    if (index_.size() >= kMaxEvents) {
      ++dropped_;
      return;
    }
    index_.emplace(std::move(key), events_.size());
    counts_.push_back(1);
    events_.push_back(std::move(ev));
  }

  void finish() {
    const std::size_t base = events_.size() - counts_.size();
    for (std::size_t i = 0; i < counts_.size(); ++i)
      if (counts_[i] > 1)
        events_[base + i].detail += " (seen " + std::to_string(counts_[i]) + " times)";
    if (dropped_ > 0 && notes_)
      notes_->push_back("nccl log: " + std::to_string(dropped_) + " events beyond the first " +
                        std::to_string(kMaxEvents) + " distinct ones were dropped");
  }

 private:
  std::vector<NcclEvent>& events_;
  std::vector<std::string>* notes_;
  std::unordered_map<std::string, std::size_t> index_;
  std::vector<std::size_t> counts_;
  std::size_t dropped_ = 0;
};

// "0[0] -> 1[1] [send] via NET/IB/0/GDRDMA": the source rank and, in old logs, its bus id.
void parse_channel(std::string_view rest, NcclEvent& ev) {
  std::size_t i = 0;
  while (i < rest.size() && is_digit(rest[i]) && i < 9) ++i;
  if (i == 0) return;
  ev.rank = small_int(rest.substr(0, i));
  if (i < rest.size() && rest[i] == '[') {
    std::size_t close = rest.find(']', i);
    if (close != npos && close - i <= 14) {
      std::string_view inside = rest.substr(i + 1, close - i - 1);
      // Newer NCCL prints the CUDA device ("0[3]"); before 2.12 the bus id ("7[e3000]").
      if (inside.size() >= 4) ev.pci_bus_id = bus_id_from_nccl_hex(inside);
    }
  }
}

// The value of `name="…"` in an XML-ish line.
std::string_view xml_attr(std::string_view s, std::string_view name) {
  std::string pat(name);
  pat += "=\"";
  std::size_t p = 0;
  while ((p = find(s, pat, p)) != npos) {
    if (p == 0 || is_space(s[p - 1])) {
      std::size_t b = p + pat.size();
      std::size_t e = s.find('"', b);
      if (e == npos) return {};
      return s.substr(b, e - b);
    }
    p += pat.size();
  }
  return {};
}

std::optional<int> rank_from_torch(std::string_view line) {
  // "[Rank 3]" (ProcessGroupNCCL) or "[rank3]:" (torchrun's per-rank prefix).
  std::size_t p = find(line, "[Rank ");
  std::size_t skip = 6;
  if (p == npos) {
    p = find(line, "[rank");
    skip = 5;
  }
  if (p == npos) return std::nullopt;
  std::size_t b = p + skip;
  std::size_t e = b;
  while (e < line.size() && is_digit(line[e]) && e - b < 9) ++e;
  if (e == b || e >= line.size() || line[e] != ']') return std::nullopt;
  return small_int(line.substr(b, e - b));
}

bool is_error_text(std::string_view s) {
  return contains(s, "NCCL error") || contains(s, "unhandled system error") ||
         contains(s, "unhandled cuda error") || contains(s, "remote process exited") ||
         contains(s, "ncclSystemError") || contains(s, "ncclInternalError") ||
         contains(s, "ncclRemoteError") || contains(s, "ncclUnhandledCudaError") ||
         contains(s, "NCCL communicator was aborted") ||
         contains(s, "watchdog thread terminated with exception") ||
         // nccl-tests' own failure lines: "Test CUDA failure common.cu:941 '…'", "Test NCCL
         // failure common.cu:…", " .. test pid 54340: Test failure common.cu:891"
         contains(s, "Test CUDA failure") || contains(s, "Test NCCL failure") ||
         contains(s, ": Test failure ");
}

void add_version(std::string_view line, const Prefix& pre, EventSink& sink) {
  std::size_t p = find(line, "NCCL version ");
  if (p == npos) return;
  std::size_t b = p + 13;
  std::size_t e = b;
  while (e < line.size() && !is_space(line[e]) && line[e] != ',' && e - b < 48) ++e;
  if (e == b || !is_digit(line[b])) return;
  NcclEvent ev;
  ev.kind = "version";
  ev.host = pre.host;
  ev.detail = clean(line.substr(b, e - b));
  sink.add(std::move(ev));
}

struct LogState {
  // Rank of each host:pid, learned from "comm 0x… rank R nranks N … - Init" lines.
  std::unordered_map<std::string, int> rank_by_pid;
  // The last "via P2P" channel each host:pid:tid set up: a peer-access failure that thread
  // logs next is about that connection.
  std::unordered_map<std::string, std::string> p2p_channel_by_thread;
  std::size_t nccl_lines = 0;
};

std::string thread_key(const Prefix& pre) {
  if (!pre.host || !pre.pid) return {};
  return *pre.host + ":" + std::to_string(*pre.pid) + ":" +
         (pre.tid ? std::to_string(*pre.tid) : std::string());
}

// NCCL could not map a peer GPU's memory: cudaIpcOpenMemHandle or cudaDeviceEnablePeerAccess
// refused ("failed to open CUDA IPC handle : 217 peer access is not supported between these
// two devices", "Cuda failure 'peer access is not supported between these two devices'").
bool is_peer_failure(std::string_view msg) {
  return contains(msg, "failed to open CUDA IPC handle") ||
         contains(msg, "peer access is not supported") ||
         contains(msg, "cudaErrorPeerAccessUnsupported");
}

std::optional<int> known_rank(const LogState& st, const Prefix& pre) {
  if (!pre.host || !pre.pid) return std::nullopt;
  auto it = st.rank_by_pid.find(*pre.host + ":" + std::to_string(*pre.pid));
  if (it == st.rank_by_pid.end()) return std::nullopt;
  return it->second;
}

void handle_info(std::string_view msg, const Prefix& pre, LogState& st, EventSink& sink) {
  NcclEvent ev;
  ev.host = pre.host;
  ev.rank = known_rank(st, pre);

  if (starts_with(msg, "comm 0x") && contains(msg, " nranks ")) {
    std::size_t r = find(msg, " rank ");
    if (r != npos && pre.host && pre.pid) {
      std::size_t b = r + 6;
      std::size_t e = b;
      while (e < msg.size() && is_digit(msg[e]) && e - b < 9) ++e;
      if (auto rank = small_int(msg.substr(b, e - b)))
        st.rank_by_pid[*pre.host + ":" + std::to_string(*pre.pid)] = *rank;
    }
    return;
  }
  if (starts_with(msg, "Channel ") && contains(msg, " via ")) {
    std::size_t colon = find(msg, " : ");
    if (colon == npos) return;
    std::string_view rest = trim(msg.substr(colon + 3));
    ev.kind = "transport";
    ev.rank.reset();
    parse_channel(rest, ev);
    ev.detail = clean(rest);
    if (contains(rest, "via P2P"))
      if (std::string key = thread_key(pre); !key.empty())
        st.p2p_channel_by_thread[key] = ev.detail;
    sink.add(std::move(ev));
    return;
  }
  if (starts_with(msg, "NET/")) {
    if (contains(msg, "No device found")) {
      ev.kind = "fallback";
    } else if (contains(msg, "Using")) {
      ev.kind = "net";
    } else {
      return;
    }
    ev.detail = clean(msg);
    sink.add(std::move(ev));
    return;
  }
  if (starts_with(msg, "Using network ")) {
    ev.kind = "net";
    ev.detail = clean(msg);
    sink.add(std::move(ev));
    return;
  }
  if (contains(msg, " coll channels")) {
    ev.kind = "channels";
    ev.detail = clean(msg);
    sink.add(std::move(ev));
    return;
  }
  if (contains(msg, "NVLS") || contains(msg, "NVLink SHARP")) {
    ev.kind = "nvls";
    // "NVLS comm 0x7f19… headRank 3 …": the pointer differs per process; drop it so that
    // identical settings dedupe.
    if (starts_with(msg, "NVLS comm 0x")) {
      std::size_t sp = msg.find(' ', 10);
      ev.detail = "NVLS" + (sp == npos ? std::string() : " " + clean(msg.substr(sp)));
    } else {
      ev.detail = clean(msg);
    }
    sink.add(std::move(ev));
    return;
  }
  if (starts_with(msg, "Trees ") || starts_with(msg, "Connected all trees")) {
    ev.kind = "tree";
    ev.detail = clean(msg);
    sink.add(std::move(ev));
    return;
  }
  if (starts_with(msg, "=== System : ")) {
    ev.kind = "link";
    ev.detail = clean(msg);
    sink.add(std::move(ev));
    return;
  }
  // Topology print: "+ PCI[24.0] - GPU/A1000 (0)", "+ PCI[12.0] - NIC/C2000".
  if (msg.size() > 2 && msg[0] == '+' && contains(msg, "PCI[")) {
    std::size_t dash = find(msg, "] - ");
    if (dash == npos) return;
    std::string_view target = msg.substr(dash + 4);
    if (!starts_with(target, "GPU/") && !starts_with(target, "NIC/")) return;
    std::size_t e = 4;
    while (e < target.size() && is_hex(target[e])) ++e;
    ev.kind = "link";
    ev.pci_bus_id = bus_id_from_nccl_hex(target.substr(4, e - 4));
    ev.detail = clean(msg.substr(1));
    sink.add(std::move(ev));
    return;
  }
  // The XML topology, printed line by line with NCCL_DEBUG_SUBSYS=GRAPH.
  if (contains(msg, "<pci ") && contains(msg, "link_width=")) {
    std::string_view cls = xml_attr(msg, "class");
    // GPUs (0x03…) and NICs (0x02…); bridges are context, not subjects.
    if (!starts_with(cls, "0x03") && !starts_with(cls, "0x02")) return;
    ev.kind = "link";
    if (auto bus = xml_attr(msg, "busid"); !bus.empty()) ev.pci_bus_id = normalize_pci_bus_id(bus);
    ev.detail = clean(std::string(starts_with(cls, "0x03") ? "GPU" : "NIC") + " pci " +
                      std::string(xml_attr(msg, "busid")) + " link_speed " +
                      std::string(xml_attr(msg, "link_speed")) + " link_width " +
                      std::string(xml_attr(msg, "link_width")));
    sink.add(std::move(ev));
    return;
  }
  // "CUDA Dev 0 [0] PCIe/Gen4 x8": the link NCCL sees for a GPU (the article's task 12).
  if (starts_with(msg, "CUDA Dev ") && contains(msg, "PCIe/")) {
    ev.kind = "link";
    ev.detail = clean(msg);
    sink.add(std::move(ev));
    return;
  }
  if (contains(msg, "GT/s") && (contains(msg, "width") || contains(msg, " x"))) {
    ev.kind = "link";
    ev.detail = clean(msg);
    sink.add(std::move(ev));
    return;
  }
  // "NCCL_IB_DISABLE set by environment to 1": a transport switched off by hand.
  if (starts_with(msg, "NCCL_") && contains(msg, "_DISABLE set by environment to ") &&
      !contains(msg, "to 0")) {
    ev.kind = "fallback";
    ev.detail = clean(msg);
    sink.add(std::move(ev));
    return;
  }
}

// NCCL 2.3 and older print no "NCCL" before the level: "host:1:1 [0] misc/ibvwrap.cu:61 WARN
// Failed to open libibverbs.so[.1]". The position of "WARN" when the word before it is a
// source file and line and a "[dev]" comes before that; npos otherwise.
std::size_t old_warn_at(std::string_view line) {
  const std::size_t w = find(line.substr(0, 256), " WARN ");
  if (w == npos || w == 0) return npos;
  const std::size_t sp = line.rfind(' ', w - 1);
  const std::size_t b = sp == npos ? 0 : sp + 1;
  const std::string_view file = line.substr(b, w - b);
  const std::size_t colon = file.rfind(':');
  if (colon == npos || colon + 1 >= file.size()) return npos;
  for (char c : file.substr(colon + 1))
    if (!is_digit(c)) return npos;
  if (!contains(file, ".cu:") && !contains(file, ".cc:") && !contains(file, ".h:")) return npos;
  if (sp == npos || find(line.substr(0, sp), " [") == npos) return npos;
  return w + 1;
}

void handle_line(std::string_view raw, LogState& st, EventSink& sink) {
  std::string_view line = strip_launcher_label(raw);
  if (line.empty()) return;

  std::size_t info = find(line, "NCCL INFO");
  std::size_t warn = info == npos ? find(line, "NCCL WARN") : npos;
  std::size_t warn_len = 9;  // "NCCL WARN"
  if (info == npos && warn == npos) {
    warn = old_warn_at(line);
    warn_len = 4;  // "WARN"
  }
  const std::size_t at = info != npos ? info : warn;
  Prefix pre;
  if (at != npos) {
    ++st.nccl_lines;
    pre = parse_prefix(line.substr(0, at));
  }

  if (contains(line, "NCCL version ")) add_version(line, pre, sink);

  if (contains(line, "Watchdog caught collective operation timeout")) {
    NcclEvent ev;
    ev.kind = "timeout";
    ev.rank = rank_from_torch(line);
    ev.detail = clean(line.substr(find(line, "Watchdog caught")));
    sink.add(std::move(ev));
    return;
  }

  if (warn != npos) {
    std::string_view msg = trim(line.substr(warn + warn_len));
    NcclEvent ev;
    ev.host = pre.host;
    ev.rank = known_rank(st, pre);
    // NCCL's WARN is its error level; the few forms that are not failures are listed in
    // nccl_messages.cc, read off NCCL's source.
    switch (classify_nccl_warn(msg)) {
      case NcclWarnClass::kError:
        ev.kind = "error";
        break;
      case NcclWarnClass::kDegradation:
        ev.kind = "degraded";
        break;
      case NcclWarnClass::kBenign:
        ev.kind = "warn";
        break;
    }
    ev.detail = clean(msg);
    if (is_peer_failure(msg)) {
      ev.kind = "p2p";
      auto it = st.p2p_channel_by_thread.find(thread_key(pre));
      if (it != st.p2p_channel_by_thread.end())
        ev.detail = clean(std::string(msg) + " [channel " + it->second + "]");
    }
    sink.add(std::move(ev));
    return;
  }
  if (info != npos) {
    handle_info(trim(line.substr(info + 9)), pre, st, sink);
    return;
  }
  if (is_error_text(line)) {
    NcclEvent ev;
    ev.kind = "error";
    ev.rank = rank_from_torch(line);
    ev.detail = clean(line);
    sink.add(std::move(ev));
  }
}

// A nccl-tests *_perf table header: those inputs belong to the nccl-tests importer.
// Line by line: a search from each "algbw" back to its line start would cost the square of a
// long line's length.
bool has_nccl_tests_table(std::string_view text) {
  text_scan::LineReader lines(text);
  for (std::string_view line; lines.next(line);)
    if (contains(line, "algbw") && contains(line, "busbw") && contains(line, "size") &&
        contains(line, "time"))
      return true;
  return false;
}

// The watchdog line, not a quote of it in prose or a Markdown table.
bool has_watchdog_line(std::string_view text) {
  std::size_t w = find(text, "Watchdog caught collective operation timeout");
  if (w == npos) return false;
  std::size_t ls = text.rfind('\n', w);
  ls = ls == npos ? 0 : ls + 1;
  std::string_view prefix = text.substr(ls, w - ls);
  return prefix.size() <= 200 && prefix.find('|') == std::string_view::npos &&
         prefix.find('"') == std::string_view::npos;
}

}  // namespace

// NCCL prints bus ids as the int64 it packs them into ("%lx"): "a1000" is 0000:a1:00.0,
// "31000" 0000:31:00.0, "1b000" 0000:1b:00.0 (domain, bus, device, then one digit of function).
std::optional<std::string> bus_id_from_nccl_hex(std::string_view s) {
  s = trim(s);
  if (s.empty() || s.size() > 12) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (!is_hex(c)) return std::nullopt;
    v = v * 16 + static_cast<std::uint64_t>(is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  const unsigned function = v & 0xf;
  const unsigned device = (v >> 4) & 0xff;
  const unsigned bus = (v >> 12) & 0xff;
  const std::uint64_t domain = v >> 20;
  if (function > 7 || device > 0x1f || domain > 0xffff) return std::nullopt;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", static_cast<unsigned>(domain), bus, device,
                function);
  return std::string(buf);
}

std::string_view strip_launcher_label(std::string_view line) {
  for (int round = 0; round < 3; ++round) {
    while (!line.empty() && is_space(line.front())) line.remove_prefix(1);
    // mpirun --tag-output: "[1,0]<stdout>:", maybe after a --timestamp-output date.
    std::string_view head = line.substr(0, 96);
    std::size_t tag = find(head, "]<stdout>:");
    if (tag == npos) tag = find(head, "]<stderr>:");
    if (tag != npos) {
      line.remove_prefix(tag + 10);
      continue;
    }
    // srun --label: "12: ".
    std::size_t i = 0;
    while (i < line.size() && i < 6 && is_digit(line[i])) ++i;
    if (i > 0 && i + 1 < line.size() && line[i] == ':' && line[i + 1] == ' ') {
      line.remove_prefix(i + 2);
      continue;
    }
    break;
  }
  return line;
}

std::size_t parse_nccl_log_events(std::string_view text, std::vector<NcclEvent>& events,
                                  std::vector<std::string>* notes) {
  LogState st;
  EventSink sink(events, notes);
  text_scan::LineReader lines(text);
  for (std::string_view line; lines.next(line);) {
    // Cut at kMaxLine; only trailing '\r' and ' ' go (a trailing tab is kept).
    line = line.substr(0, kMaxLine);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    handle_line(line, st, sink);
  }
  sink.finish();
  return st.nccl_lines;
}

int sniff_nccl_log(std::string_view whole) {
  // The start of a run (NCCL INFO lines at init) and, for a long log, its end: a watchdog
  // timeout is the last thing a hung job prints.
  std::string_view text = sniff_head(whole);
  const std::string_view tail = sniff_tail(whole);
  if (text.empty() || has_nccl_tests_table(text) || has_nccl_tests_table(tail)) return 0;
  // nccl-tests' own banner ("# nThread 1 nGpus 4 minBytes …"): that importer reads the NCCL
  // lines inside too, and knows a run that printed no result row.
  if (contains(text, "nThread ") && contains(text, " nGpus ") && contains(text, "minBytes"))
    return 0;
  int best = 0;
  if (has_watchdog_line(text) || has_watchdog_line(tail)) best = 95;
  std::size_t p = find(text, "NCCL INFO");
  if (p == npos) p = find(text, "NCCL WARN");
  if (p == npos && !tail.empty()) {
    p = find(tail, "NCCL INFO");
    if (p == npos) p = find(tail, "NCCL WARN");
    if (p != npos) text = tail;
  }
  if (p == npos) {
    // NCCL 2.3 and older: "host:pid:tid [0] misc/ibvwrap.cu:61 WARN …".
    text_scan::LineReader lines(text);
    int n = 0;
    for (std::string_view line; lines.next(line) && ++n < 2000;)
      if (old_warn_at(strip_launcher_label(line)) != npos) {
        best = std::max(best, 90);
        break;
      }
  }
  if (p != npos) {
    // "host:pid:tid [dev] NCCL INFO" is NCCL's own prefix; a bare "NCCL INFO" line (a user
    // pasted the message only) is still NCCL's.
    std::size_t ls = text.rfind('\n', p);
    ls = ls == npos ? 0 : ls + 1;
    std::string_view prefix = strip_launcher_label(text.substr(ls, p - ls));
    if (parse_prefix(prefix).host)
      best = std::max(best, 100);
    else if (trim(prefix).empty())
      best = std::max(best, 90);
    else if (prefix.size() <= 64)
      best = std::max(best, 60);  // a log framework's own prefix (time, rank label)
    else
      best = std::max(best, 10);  // "NCCL INFO" quoted inside prose (a README, a ticket text)
  }
  // "[PG 1 Rank 3] … last enqueued NCCL work: 7755, last completed NCCL work: 7752" (ranks
  // that did not time out themselves print only these).
  if (has_collective_progress_line(sniff_head(whole)) || has_collective_progress_line(tail))
    best = std::max(best, 90);
  if (best == 0 &&
      (contains(sniff_head(whole), "ProcessGroupNCCL") || contains(tail, "ProcessGroupNCCL")))
    best = 60;
  if (best == 0 && is_error_text(sniff_head(whole))) best = 40;
  return best;
}

Status import_nccl_log(std::string_view text, Facts& out) {
  std::size_t before = out.nccl_events.size();
  parse_nccl_log_events(text, out.nccl_events, &out.notes);
  // The same lines say where each rank's collectives stood (a hang's watchdog lines) and who
  // the rank is (host, pid, GPU): the hang rules read those.
  const std::size_t ranks_before = out.collective_ranks.size();
  parse_collective_log(text, out.collective_ranks, &out.notes);
  if (out.nccl_events.size() == before && out.collective_ranks.size() == ranks_before) {
    out.notes.push_back("nccl log: no NCCL version, transport, network, warning or timeout line");
    return Status::invalid_input("no NCCL events in the text");
  }
  return Status::ok();
}

// ------------------------------------------------------------------ topology XML

int sniff_nccl_topo_xml(std::string_view text) {
  std::string_view head = text.substr(0, 64 << 10);
  if (contains(head, "NCCL INFO")) return 0;  // a log that embeds the dump: the log importer
  std::size_t sys = find(head, "<system");
  if (sys == npos || !contains(head, "version=")) return 0;
  if (contains(head, "<cpu ") || contains(head, "<pci ") || contains(head, "<gpu ")) return 100;
  return 40;
}

namespace {

struct Frame {
  pugi::xml_node node;
  std::optional<int> min_width;  // narrowest PCIe link from the CPU down to here
  std::string min_width_bus;
  pugi::xml_node pci;  // the nearest enclosing <pci>
};

std::string pci_summary(const pugi::xml_node& pci) {
  if (!pci) return "no PCI parent";
  std::string s = "PCI link ";
  std::string speed = pci.attribute("link_speed").as_string();
  std::string width = pci.attribute("link_width").as_string();
  s += speed.empty() ? "speed ?" : speed;
  s += width.empty() ? " width ?" : " x" + width;
  return s;
}

void add_upstream(std::string& detail, const Frame& f) {
  if (!f.min_width) return;
  detail += "; narrowest link on the path x" + std::to_string(*f.min_width);
  if (!f.min_width_bus.empty()) detail += " at " + f.min_width_bus;
}

}  // namespace

Status import_nccl_topo_xml(std::string_view text, Facts& out) {
  pugi::xml_document doc;
  pugi::xml_parse_result res =
      doc.load_buffer(text.data(), text.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!res) {
    out.notes.push_back(std::string("nccl topology xml: not well-formed: ") + res.description() +
                        " at byte " + std::to_string(res.offset));
    // A truncated dump still holds what came before the cut; pugixml keeps it in the tree.
  }
  pugi::xml_node system = doc.child("system");
  if (!system) {
    if (res) out.notes.push_back("nccl topology xml: no <system> element");
    return Status::invalid_input("no NCCL topology <system> element");
  }
  std::size_t before = out.nccl_events.size();
  std::vector<Frame> stack;
  for (auto child = system.last_child(); child; child = child.previous_sibling())
    stack.push_back({child, std::nullopt, {}, {}});
  std::size_t visited = 0;
  while (!stack.empty() && visited < 200000) {
    ++visited;
    Frame f = stack.back();
    stack.pop_back();
    std::string_view name = f.node.name();
    if (name == "pci") {
      int width = f.node.attribute("link_width").as_int(-1);
      if (width > 0 && (!f.min_width || width < *f.min_width)) {
        f.min_width = width;
        f.min_width_bus = f.node.attribute("busid").as_string();
      }
      f.pci = f.node;
    } else if (name == "gpu" && out.nccl_events.size() - before < kMaxEvents) {
      NcclEvent ev;
      ev.kind = "link";
      if (f.pci) ev.pci_bus_id = normalize_pci_bus_id(f.pci.attribute("busid").as_string());
      if (auto rank = f.node.attribute("rank"); !rank.empty()) ev.rank = rank.as_int();
      std::string detail = "GPU dev " + std::string(f.node.attribute("dev").as_string("?"));
      if (auto sm = f.node.attribute("sm"); !sm.empty()) detail += " sm " + std::string(sm.value());
      detail += ": " + pci_summary(f.pci);
      add_upstream(detail, f);
      int links = 0;
      std::string targets;
      for (auto nv : f.node.children("nvlink")) {
        int count = nv.attribute("count").as_int(0);
        links += count;
        if (targets.size() < 300) {
          targets += targets.empty() ? "" : ", ";
          targets += nv.attribute("target").as_string("?");
          if (std::string_view(nv.attribute("tclass").as_string()) == "0x068000")
            targets += " (NVSwitch)";
          targets += " x" + std::to_string(count);
        }
      }
      if (links > 0) detail += "; nvlink " + std::to_string(links) + " links: " + targets;
      ev.detail = clean(detail);
      out.nccl_events.push_back(std::move(ev));
      continue;
    } else if (name == "net" && out.nccl_events.size() - before < kMaxEvents) {
      NcclEvent ev;
      ev.kind = "link";
      if (f.pci) ev.pci_bus_id = normalize_pci_bus_id(f.pci.attribute("busid").as_string());
      std::string detail = "NIC " + std::string(f.node.attribute("name").as_string("?"));
      if (auto port = f.node.attribute("port"); !port.empty())
        detail += " port " + std::string(port.value());
      if (auto speed = f.node.attribute("speed"); !speed.empty())
        detail += " speed " + std::string(speed.value()) + " Mb/s";
      if (auto gdr = f.node.attribute("gdr"); !gdr.empty())
        detail += " gdr " + std::string(gdr.value());
      detail += ": " + pci_summary(f.pci);
      add_upstream(detail, f);
      ev.detail = clean(detail);
      out.nccl_events.push_back(std::move(ev));
      continue;
    }
    for (auto child = f.node.last_child(); child; child = child.previous_sibling())
      if (child.type() == pugi::node_element)
        stack.push_back({child, f.min_width, f.min_width_bus, f.pci});
  }
  if (out.nccl_events.size() == before) {
    out.notes.push_back("nccl topology xml: no <gpu> or <net> element");
    return Status::invalid_input("no GPU or NIC in the NCCL topology");
  }
  return Status::ok();
}

}  // namespace gpuvet::import
