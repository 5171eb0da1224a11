#include "import/lspci.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/util.h"
#include "import/importer.h"

namespace gpuvet::import {
namespace {

constexpr std::size_t npos = std::string_view::npos;
// A machine has hundreds of PCI functions, not tens of thousands: past this, garbage.
constexpr std::size_t kMaxDevices = 4096;
constexpr std::size_t kMaxFlags = 32;
constexpr std::size_t kMaxTextBytes = 160;
constexpr std::size_t kMaxTreeColumns = 1024;
constexpr int kMaxChain = 32;

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}
bool all_hex(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_hex); }
std::optional<int> hex_int(std::string_view s) {
  if (!all_hex(s) || s.size() > 6) return std::nullopt;
  int v = 0;
  for (char c : s) v = v * 16 + hex_value(c);
  return v;
}

// Printable ASCII/UTF-8 only, cut: names end up in JSON and terminals.
std::string clean(std::string_view s, std::size_t max = kMaxTextBytes) {
  std::string out;
  for (char c : s.substr(0, max)) {
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u < 0x20 || u == 0x7f ? ' ' : c);
  }
  // Do not end in the middle of a UTF-8 sequence.
  while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xc0) == 0x80) out.pop_back();
  if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0x80)) out.pop_back();
  return std::string(trim(out));
}

struct Bdf {
  int domain = 0, bus = 0, dev = 0, fn = 0;
  std::string str() const { return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, dev, fn); }
};

// "17:00.0" or "0000:17:00.0" at the start of `s`; `len` is what it took.
std::optional<Bdf> read_bdf(std::string_view s, std::size_t& len) {
  Bdf b;
  std::size_t i = 0;
  if (s.size() >= 12 && all_hex(s.substr(0, 4)) && s[4] == ':') {
    b.domain = *hex_int(s.substr(0, 4));
    i = 5;
  }
  if (s.size() < i + 7) return std::nullopt;
  if (!is_hex(s[i]) || !is_hex(s[i + 1]) || s[i + 2] != ':' || !is_hex(s[i + 3]) ||
      !is_hex(s[i + 4]) || s[i + 5] != '.' || s[i + 6] < '0' || s[i + 6] > '7')
    return std::nullopt;
  b.bus = *hex_int(s.substr(i, 2));
  b.dev = *hex_int(s.substr(i + 3, 2));
  b.fn = s[i + 6] - '0';
  if (b.dev > 0x1f) return std::nullopt;
  len = i + 7;
  return b;
}

// A device line: "17:00.0 3D controller: NVIDIA …", "0000:17:00.0 0302: 10de:2330 (rev a1)".
bool is_header(std::string_view line) {
  std::size_t len = 0;
  if (!read_bdf(line, len) || len >= line.size() || line[len] != ' ') return false;
  const std::size_t colon = line.find(": ", len);
  return colon != npos && colon > len + 1 && colon - len < 96;
}

// A line of `lspci -t`: "-[0000:00]-+-00.0", " +-01.0-[01]----00.0  NVIDIA …", "|  \-…".
bool is_tree_line(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '|')) ++i;
  if (i >= line.size()) return false;
  if (line[i] == '-') {
    std::size_t j = i;
    while (j < line.size() && line[j] == '-') ++j;
    if (j < line.size() && line[j] == '+') ++j;
    while (j < line.size() && line[j] == '-') ++j;
    return j + 9 <= line.size() && line[j] == '[' && all_hex(line.substr(j + 1, 4)) &&
           line[j + 5] == ':';
  }
  if ((line[i] == '+' || line[i] == '\\') && i + 1 < line.size() && line[i + 1] == '-') {
    const std::string_view rest = line.substr(i + 2);
    if (rest.size() >= 4 && is_hex(rest[0]) && is_hex(rest[1]) && rest[2] == '.' &&
        rest[3] >= '0' && rest[3] <= '7')
      return true;
    return rest.size() >= 9 && rest[0] == '[' && all_hex(rest.substr(1, 4)) && rest[5] == ':';
  }
  return false;
}

// The label of an indented capability line: "LnkSta" of "\t\tLnkSta:\tSpeed …".
std::string_view label_of(std::string_view trimmed) {
  const std::size_t colon = trimmed.find(':');
  if (colon == npos || colon == 0 || colon > 40) return {};
  const std::string_view label = trimmed.substr(0, colon);
  // "Kernel driver in use" has spaces; a flag line ("ECRC- UnsupReq+ …") is no label.
  for (char c : label)
    if (c == '+' || c == '=' || c == '\t' || c == '[' || c == '<') return {};
  return label;
}

constexpr std::string_view kBareLabels[] = {"ACSCap", "ACSCtl", "LnkCap", "LnkSta", "UESta",
                                            "UEMsk",  "UESvrt", "CESta",  "CEMsk"};

bool is_bare_capability_line(std::string_view trimmed) {
  const auto label = label_of(trimmed);
  return std::find(std::begin(kBareLabels), std::end(kBareLabels), label) != std::end(kBareLabels);
}

// A command line pasted above the output: "$ sudo lspci -vvv", "lspci -tv".
bool is_command_line(std::string_view trimmed) {
  for (std::string_view p : {"$ ", "# "})
    if (starts_with(trimmed, p)) trimmed = trim(trimmed.substr(p.size()));
  if (starts_with(trimmed, "sudo ")) trimmed = trim(trimmed.substr(5));
  if (const auto sp = trimmed.find(' '); sp != npos)
    if (const auto slash = trimmed.substr(0, sp).rfind('/'); slash != npos)
      trimmed = trimmed.substr(slash + 1);
  return trimmed == "lspci" || starts_with(trimmed, "lspci ");
}

// "Flag+ Flag- …": the flags set.
void read_flags(std::string_view s, std::vector<std::string>& set) {
  for (auto word : split(s, ' ')) {
    for (auto w : split(word, '\t')) {
      w = trim(w);
      if (w.size() < 2 || w.size() > 40) continue;
      if (w.back() == '+' && set.size() < kMaxFlags) {
        std::string name = clean(w.substr(0, w.size() - 1), 40);
        if (!name.empty() && std::find(set.begin(), set.end(), name) == set.end())
          set.push_back(std::move(name));
      }
    }
  }
}

// "Speed 16GT/s (downgraded), Width x8 (downgraded)" of LnkCap/LnkSta.
void read_link(std::string_view s, std::optional<int>& gen, std::optional<int>& width) {
  if (const auto p = s.find("Speed "); p != npos) {
    std::string_view v = s.substr(p + 6);
    v = v.substr(0, v.find_first_of(", ("));
    gen = pcie_gen_from_gts(v);
  }
  if (const auto p = s.find("Width x"); p != npos) {
    std::string_view v = s.substr(p + 7);
    std::size_t n = 0;
    while (n < v.size() && n < 3 && v[n] >= '0' && v[n] <= '9') ++n;
    if (auto w = parse_int(v.substr(0, n)); w && *w > 0 && *w <= 32) width = static_cast<int>(*w);
  }
}

struct Dev {
  Bdf bdf;
  PciDevice d;
  bool caps_denied = false;
  bool caps_seen = false;
  bool acs_header = false;  // "Capabilities: [xxx] Access Control Services"
  bool acs_ctl_seen = false;
  bool bridge = false;  // has a bus range (Bus: line or a tree bracket)
  std::vector<std::string> ue_sta, ue_msk, ue_svrt, ce_sta, ce_msk;
};

class Parser {
 public:
  void line(std::string_view raw) {
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    const std::string_view t = trim(raw);
    if (t.empty()) {
      field_ = nullptr;
      return;
    }
    if (is_tree_line(raw)) {
      tree_line(raw);
      current_ = npos;
      return;
    }
    if (raw.front() != ' ' && raw.front() != '\t' && is_header(raw)) {
      header(raw);
      return;
    }
    if (is_command_line(t)) return;
    if (current_ != npos) {
      device_line(devs_[current_], t);
    } else if (is_bare_capability_line(t)) {
      bare_line(t);
    }
  }

  std::vector<Dev>& devices() { return devs_; }
  int bare_acs_lines() const { return bare_acs_; }
  const std::vector<std::string>& bare_redirects() const { return bare_redirects_; }
  int bare_lines() const { return bare_lines_; }
  bool tree_seen() const { return tree_seen_; }
  bool capped() const { return capped_; }

 private:
  Dev* find_or_add(const Bdf& b) {
    const std::string key = b.str();
    if (auto it = by_bdf_.find(key); it != by_bdf_.end()) return &devs_[it->second];
    if (devs_.size() >= kMaxDevices) {
      capped_ = true;
      return nullptr;
    }
    by_bdf_.emplace(key, devs_.size());
    devs_.push_back({});
    devs_.back().bdf = b;
    devs_.back().d.bdf = key;
    return &devs_.back();
  }

  void header(std::string_view line) {
    std::size_t len = 0;
    const Bdf b = *read_bdf(line, len);
    Dev* dev = find_or_add(b);
    field_ = nullptr;
    if (!dev) {
      current_ = npos;
      return;
    }
    current_ = static_cast<std::size_t>(dev - devs_.data());
    std::string_view rest = line.substr(len + 1);
    const std::size_t colon = rest.find(": ");
    std::string_view cls = trim(rest.substr(0, colon));
    std::string_view name = trim(rest.substr(colon + 2));
    // -nn: "3D controller [0302]"; -n: "0302".
    if (cls.size() == 4 && all_hex(cls)) {
      dev->d.class_code = to_lower(cls);
      cls = {};
    } else if (cls.size() > 7 && cls.back() == ']' && cls[cls.size() - 6] == '[' &&
               all_hex(cls.substr(cls.size() - 5, 4))) {
      dev->d.class_code = to_lower(cls.substr(cls.size() - 5, 4));
      cls = trim(cls.substr(0, cls.size() - 6));
    }
    if (!cls.empty()) dev->d.class_name = clean(cls);
    if (const auto p = name.find(" (prog-if "); p != npos) name = name.substr(0, p);
    if (const auto p = name.find(" (rev "); p != npos) {
      const std::string_view rev = name.substr(p + 6, 2);
      if (rev.size() == 2 && all_hex(rev) && name.substr(p + 8, 1) == ")")
        dev->d.revision = to_lower(rev);
      name = name.substr(0, p);
    }
    name = trim(name);
    auto vendor_device = [](std::string_view s) {
      return s.size() == 9 && s[4] == ':' && all_hex(s.substr(0, 4)) && all_hex(s.substr(5, 4));
    };
    if (vendor_device(name)) {
      dev->d.vendor_device = to_lower(name);
      name = {};
    } else if (name.size() > 12 && name.back() == ']' && name[name.size() - 11] == '[' &&
               vendor_device(name.substr(name.size() - 10, 9))) {
      dev->d.vendor_device = to_lower(name.substr(name.size() - 10, 9));
      name = trim(name.substr(0, name.size() - 11));
    }
    if (!name.empty()) dev->d.name = clean(name);
  }

  void device_line(Dev& dev, std::string_view t) {
    const std::string_view label = label_of(t);
    if (label.empty()) {
      // A continuation of the flag lines above it (UESta spans three lines).
      if (field_) read_flags(t, *field_);
      return;
    }
    field_ = nullptr;
    const std::string_view v = trim(t.substr(label.size() + 1));
    if (label == "Bus") {
      // "primary=00, secondary=01, subordinate=01, sec-latency=0"
      auto num = [&](std::string_view key) -> std::optional<int> {
        const auto p = v.find(key);
        if (p == npos) return std::nullopt;
        std::string_view x = v.substr(p + key.size());
        return hex_int(x.substr(0, x.find_first_of(", ")));
      };
      dev.d.secondary_bus = num("secondary=");
      dev.d.subordinate_bus = num("subordinate=");
      dev.bridge = dev.d.secondary_bus.has_value();
    } else if (label == "Capabilities") {
      if (starts_with(v, "<access denied>")) {
        dev.caps_denied = true;
        return;
      }
      dev.caps_seen = true;
      if (v.find("Access Control Services") != npos) dev.acs_header = true;
      if (const auto p = v.find("Express ("); p != npos) {
        std::string_view x = v.substr(p + 9);
        const auto close = x.find(") ");
        if (close != npos && close < 6) {
          x = x.substr(close + 2);
          x = x.substr(0, std::min(x.find(" ("), x.find(',')));
          if (!x.empty()) dev.d.port_type = clean(x, 48);
        }
      }
    } else if (label == "Kernel driver in use") {
      dev.d.driver = clean(v, 48);
    } else if (label == "LnkCap") {
      dev.caps_seen = true;
      read_link(v, dev.d.gen_cap, dev.d.width_cap);
    } else if (label == "LnkSta") {
      dev.caps_seen = true;
      read_link(v, dev.d.gen_sta, dev.d.width_sta);
    } else if (label == "ACSCtl") {
      dev.acs_ctl_seen = true;
      dev.caps_seen = true;
      field_ = &dev.d.acs_ctl;
      read_flags(v, *field_);
    } else if (label == "UESta" || label == "UEMsk" || label == "UESvrt" || label == "CESta" ||
               label == "CEMsk") {
      field_ = label == "UESta"    ? &dev.ue_sta
               : label == "UEMsk"  ? &dev.ue_msk
               : label == "UESvrt" ? &dev.ue_svrt
               : label == "CESta"  ? &dev.ce_sta
                                   : &dev.ce_msk;
      read_flags(v, *field_);
    }
  }

  // `lspci -vvv | grep ACSCtl` and the like: capability lines without their device.
  void bare_line(std::string_view t) {
    ++bare_lines_;
    if (label_of(t) != "ACSCtl") return;
    ++bare_acs_;
    std::vector<std::string> flags;
    read_flags(t.substr(7), flags);
    const bool rr = std::find(flags.begin(), flags.end(), "ReqRedir") != flags.end();
    const bool cr = std::find(flags.begin(), flags.end(), "CmpltRedir") != flags.end();
    if ((rr || cr) && bare_redirects_.size() < 64)
      bare_redirects_.push_back(fmt::format("ACSCtl line {} ({})", bare_acs_,
                                            rr && cr ? "RR,CR"
                                            : rr     ? "RR"
                                                     : "CR"));
  }

  struct BusCtx {
    int domain = 0;
    int bus = 0;
    std::string parent;  // bdf of the bridge above this bus; empty for a root bus
  };

  // One line of `lspci -t[v]`: siblings line up under the '+' of the first one, so the bus a
  // line's devices sit on is the one registered at the column of its leading '+' or '\'.
  void tree_line(std::string_view s) {
    tree_seen_ = true;
    std::optional<BusCtx> ctx;
    std::size_t i = 0;
    while (i < s.size() && (s[i] == ' ' || s[i] == '|')) ++i;
    auto skip_dashes = [&] {
      while (i < s.size() && s[i] == '-') ++i;
    };
    while (i < s.size()) {
      const char c = s[i];
      if (c == '+' || c == '\\') {
        if (i < kMaxTreeColumns) {
          if (ctx) {
            if (branch_.size() <= i) branch_.resize(i + 1);
            branch_[i] = ctx;  // the first child: its siblings follow at this column
          } else if (i < branch_.size() && branch_[i]) {
            ctx = branch_[i];
          }
        }
        ++i;
        skip_dashes();
        continue;
      }
      if (c == '-') {
        skip_dashes();
        continue;
      }
      if (c == '[') {
        // A root bus "[0000:00]".
        if (i + 9 > s.size() || !all_hex(s.substr(i + 1, 4)) || s[i + 5] != ':' ||
            !all_hex(s.substr(i + 6, 2)) || s[i + 8] != ']')
          return;
        ctx = BusCtx{*hex_int(s.substr(i + 1, 4)), *hex_int(s.substr(i + 6, 2)), {}};
        i += 9;
        continue;
      }
      if (i + 4 <= s.size() && is_hex(s[i]) && is_hex(s[i + 1]) && s[i + 2] == '.' &&
          s[i + 3] >= '0' && s[i + 3] <= '7') {
        if (!ctx) return;  // a branch whose bus we never saw: a cut paste
        Bdf b{ctx->domain, ctx->bus, *hex_int(s.substr(i, 2)), s[i + 3] - '0'};
        if (b.dev > 0x1f) return;
        Dev* dev = find_or_add(b);
        if (!dev) return;
        if (!ctx->parent.empty() && !dev->d.upstream) dev->d.upstream = ctx->parent;
        i += 4;
        if (i + 1 < s.size() && s[i] == '-' && s[i + 1] == '[') {
          // A bridge: "-[01]-" or "-[01-02]-".
          const std::size_t close = s.find(']', i + 2);
          if (close == npos || close - i > 9) return;
          const std::string_view range = s.substr(i + 2, close - i - 2);
          const auto dash = range.find('-');
          auto sec = hex_int(range.substr(0, dash));
          auto sub = dash == npos ? sec : hex_int(range.substr(dash + 1));
          if (!sec || !sub) return;
          dev->bridge = true;
          if (!dev->d.secondary_bus) dev->d.secondary_bus = sec;
          if (!dev->d.subordinate_bus) dev->d.subordinate_bus = sub;
          ctx = BusCtx{b.domain, *sec, dev->d.bdf};
          i = close + 1;
          continue;
        }
        const std::string_view rest = trim(s.substr(i));
        if (!rest.empty() && rest.front() != '-' && !dev->d.name) {
          std::string_view name = rest;
          if (name.size() > 12 && name.back() == ']' && name[name.size() - 11] == '[' &&
              name[name.size() - 6] == ':' && all_hex(name.substr(name.size() - 10, 4))) {
            if (!dev->d.vendor_device)
              dev->d.vendor_device = to_lower(name.substr(name.size() - 10, 9));
            name = trim(name.substr(0, name.size() - 11));
          }
          if (!name.empty()) dev->d.name = clean(name);
        }
        return;
      }
      return;
    }
  }

  std::vector<Dev> devs_;
  std::map<std::string, std::size_t> by_bdf_;
  std::size_t current_ = npos;
  std::vector<std::string>* field_ = nullptr;
  std::vector<std::optional<BusCtx>> branch_;
  int bare_lines_ = 0;
  int bare_acs_ = 0;
  std::vector<std::string> bare_redirects_;
  bool tree_seen_ = false;
  bool capped_ = false;
};

bool contains_word(std::string_view s, std::string_view w) { return s.find(w) != npos; }

bool is_nvidia_gpu(const Dev& dev) {
  const PciDevice& d = dev.d;
  const bool nvidia_vendor = d.vendor_device && starts_with(*d.vendor_device, "10de:");
  const bool nvidia_name = d.name && starts_with(*d.name, "NVIDIA");
  const bool nvidia_driver = d.driver && (*d.driver == "nvidia" || *d.driver == "nouveau");
  if (!nvidia_vendor && !nvidia_name && !nvidia_driver) return false;
  if (d.class_code) return *d.class_code == "0300" || *d.class_code == "0302";
  if (d.class_name)
    return *d.class_name == "VGA compatible controller" || *d.class_name == "3D controller";
  // A tree names devices without their class: only a name that says "GPU" and nothing else
  // counts ("NVIDIA Corporation Device 2330" may as well be an NVSwitch).
  if (dev.bridge || dev.bdf.fn != 0 || !d.name) return false;
  for (std::string_view no :
       {"Audio", "USB", "UCSI", "NVSwitch", "ridge", "SMBus", "Ethernet", "Network", "Memory",
        "ISA", "Serial", "Device ", "Co-processor", "Controller", "controller"})
    if (contains_word(*d.name, no)) return false;
  return true;
}

std::string redirect_flags(const PciDevice& d) {
  const bool rr = std::find(d.acs_ctl.begin(), d.acs_ctl.end(), "ReqRedir") != d.acs_ctl.end();
  const bool cr = std::find(d.acs_ctl.begin(), d.acs_ctl.end(), "CmpltRedir") != d.acs_ctl.end();
  return rr && cr ? "RR,CR" : rr ? "RR" : cr ? "CR" : "";
}

std::vector<std::string> minus(const std::vector<std::string>& a,
                               const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (const auto& x : a)
    if (std::find(b.begin(), b.end(), x) == b.end()) out.push_back(x);
  return out;
}

std::vector<std::string> both(const std::vector<std::string>& a,
                              const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (const auto& x : a)
    if (std::find(b.begin(), b.end(), x) != b.end()) out.push_back(x);
  return out;
}

}  // namespace

std::optional<int> pcie_gen_from_gts(std::string_view speed) {
  speed = trim(speed);
  static constexpr std::pair<std::string_view, int> kGens[] = {
      {"2.5GT/s", 1}, {"5GT/s", 2}, {"8GT/s", 3}, {"16GT/s", 4}, {"32GT/s", 5}, {"64GT/s", 6}};
  for (auto [text, gen] : kGens)
    if (speed == text) return gen;
  return std::nullopt;
}

int sniff_lspci(std::string_view text) {
  const std::string_view head = sniff_head(text).substr(0, 256 << 10);
  int headers = 0, lines = 0, verbose = 0, tree = 0, bare = 0, other = 0;
  std::size_t i = 0;
  while (i < head.size() && lines < 400) {
    std::size_t end = head.find('\n', i);
    if (end == npos) end = head.size();
    std::string_view line = head.substr(i, end - i);
    i = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string_view t = trim(line);
    if (t.empty() || is_command_line(t)) continue;
    ++lines;
    if (is_tree_line(line)) {
      ++tree;
    } else if (line.front() != ' ' && line.front() != '\t' && is_header(line)) {
      ++headers;
    } else if (is_bare_capability_line(t)) {
      ++bare;
    } else if (line.front() == '\t' || line.front() == ' ') {
      const auto label = label_of(t);
      if (label == "Capabilities" || label == "Kernel driver in use" || label == "Subsystem" ||
          label == "Kernel modules" || label == "Control" || label == "Bus")
        ++verbose;
    } else {
      ++other;
    }
  }
  if (lines == 0) return 0;
  // The first line of a tree is a signature no other output has.
  if (tree >= 1 && tree * 2 >= lines) return 95;
  if (headers >= 1 && verbose >= 1 && headers + verbose + bare >= 2 && other <= headers) return 95;
  if (headers >= 2 && headers * 4 >= lines * 3) return 80;
  if (headers == 0 && bare >= 1 && bare * 4 >= lines * 3) return 70;
  return 0;
}

Status import_lspci(std::string_view text, Facts& out) {
  Parser p;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t end = text.find('\n', i);
    if (end == npos) end = text.size();
    p.line(text.substr(i, end - i));
    i = end + 1;
  }
  auto& devs = p.devices();
  if (devs.empty() && p.bare_lines() == 0)
    return Status::invalid_input("no lspci device line, tree or capability line");
  if (p.capped())
    out.notes.push_back(fmt::format("lspci: more than {} devices; the rest skipped", kMaxDevices));

  // The bridge each bus hangs below (by its secondary bus), for devices whose tree line did not
  // say it.
  std::map<std::pair<int, int>, std::size_t> bridge_of_bus;
  for (std::size_t k = 0; k < devs.size(); ++k)
    if (devs[k].d.secondary_bus)
      bridge_of_bus.try_emplace({devs[k].bdf.domain, *devs[k].d.secondary_bus}, k);
  std::map<std::string, std::size_t> index_of;
  for (std::size_t k = 0; k < devs.size(); ++k) index_of.emplace(devs[k].d.bdf, k);
  for (auto& dev : devs) {
    if (dev.d.upstream) continue;
    if (auto it = bridge_of_bus.find({dev.bdf.domain, dev.bdf.bus});
        it != bridge_of_bus.end() && devs[it->second].d.bdf != dev.d.bdf)
      dev.d.upstream = devs[it->second].d.bdf;
  }
  // AER: the bits set and not masked; an uncorrectable one is fatal when UESvrt says so.
  int denied = 0;
  bool verbose = false;  // some device showed its capabilities (lspci -vv and up)
  for (auto& dev : devs) {
    verbose = verbose || dev.caps_seen || dev.caps_denied;
    dev.d.aer_uncorrected = minus(dev.ue_sta, dev.ue_msk);
    dev.d.aer_uncorrected_fatal = both(dev.d.aer_uncorrected, dev.ue_svrt);
    dev.d.aer_corrected = minus(dev.ce_sta, dev.ce_msk);
    denied += dev.caps_denied;
  }
  if (denied > 0)
    out.notes.push_back(fmt::format(
        "lspci ran without root: the capabilities of {} device(s) were not shown (<access "
        "denied>), so their link and ACS state is unknown: run `sudo lspci -vvv`",
        denied));

  // The bridges above a device, nearest first; `complete` when the chain reaches a root port
  // (or the device sits on a root bus with nothing above it).
  auto chain = [&](const Dev& dev, bool& complete) {
    std::vector<const Dev*> up;
    complete = false;
    const Dev* at = &dev;
    for (int depth = 0; depth < kMaxChain; ++depth) {
      if (at->d.port_type && *at->d.port_type == "Root Port") {
        complete = true;
        break;
      }
      if (!at->d.upstream) {
        // Nothing known above: a device on bus 00 (a VM's GPU, a root-complex device) has no
        // bridge; anywhere else the paste lacks it.
        // A tree shows every bridge, so its topmost one is the root port.
        complete = up.empty() ? at->bdf.bus == 0 : (!at->d.port_type && p.tree_seen());
        break;
      }
      auto it = index_of.find(*at->d.upstream);
      if (it == index_of.end()) break;
      at = &devs[it->second];
      if (std::find(up.begin(), up.end(), at) != up.end()) break;  // a loop: garbage
      up.push_back(at);
    }
    return up;
  };

  std::vector<const Dev*> gpus;
  for (const auto& dev : devs)
    if (is_nvidia_gpu(dev)) gpus.push_back(&dev);
  std::sort(gpus.begin(), gpus.end(), [](const Dev* a, const Dev* b) {
    return std::tie(a->bdf.domain, a->bdf.bus, a->bdf.dev, a->bdf.fn) <
           std::tie(b->bdf.domain, b->bdf.bus, b->bdf.dev, b->bdf.fn);
  });
  std::set<std::string> placed;  // bridges above some GPU
  bool some_chain_unknown = false;
  std::vector<std::vector<const Dev*>> chains;  // per GPU, nearest bridge first
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    const Dev& dev = *gpus[k];
    GpuFacts g;
    g.index = static_cast<int>(k);
    g.pci_bus_id = dev.d.bdf;
    g.pcie.gen_current = dev.d.gen_sta;
    g.pcie.width_current = dev.d.width_sta;
    g.pcie.gen_device_max = dev.d.gen_cap;
    bool complete = false;
    const auto up = chain(dev, complete);
    chains.push_back(complete ? up : std::vector<const Dev*>{});
    // Max as NVML reports it: the lower of the GPU and the port above it.
    const Dev* port = up.empty() ? nullptr : up.front();
    auto lower = [](std::optional<int> a, std::optional<int> b) {
      return a && b ? std::optional<int>(std::min(*a, *b)) : a;
    };
    g.pcie.gen_max = port ? lower(dev.d.gen_cap, port->d.gen_cap) : dev.d.gen_cap;
    g.pcie.width_max = port ? lower(dev.d.width_cap, port->d.width_cap) : dev.d.width_cap;

    std::vector<std::string> redirecting;
    std::vector<std::string> unknown;
    for (const Dev* b : up) {
      placed.insert(b->d.bdf);
      if (const auto f = redirect_flags(b->d); !f.empty())
        redirecting.push_back(b->d.bdf + " (" + f + ")");
      else if (b->caps_denied)
        unknown.push_back("capabilities of " + b->d.bdf + " not shown (needs root)");
      else if (!b->caps_seen || (b->acs_header && !b->acs_ctl_seen))
        unknown.push_back("ACS control of " + b->d.bdf + " not shown (needs lspci -vvv)");
    }
    if (!complete) unknown.push_back("the bridges up to the root port are not all in the paste");
    if (!redirecting.empty()) {
      g.acs_redirects_p2p = true;
      g.acs_bridges = std::move(redirecting);
    } else if (unknown.empty()) {
      g.acs_redirects_p2p = false;
    } else if (!verbose) {
      some_chain_unknown = true;
    } else {
      some_chain_unknown = true;
      std::string joined;
      for (std::size_t u = 0; u < unknown.size() && u < 3; ++u)
        joined += (u ? "; " : "") + unknown[u];
      out.notes.push_back(fmt::format("ACS state of the bridges above GPU{} ({}) unknown: {}",
                                      g.index, dev.d.bdf, joined));
    }
    out.gpus.push_back(std::move(g));
  }

  // GPU pairs below one PCIe switch: PIX when their ports hang below the same upstream port (one
  // switch, nvidia-smi's "single PCIe bridge"), PXB when the nearest shared bridge is higher up
  // but below the root port. Pairs that meet at the root port or above (PHB, NODE, SYS) need
  // the host bridges and sockets, which lspci does not show: left to topo -m.
  for (std::size_t a = 0; a < chains.size(); ++a)
    for (std::size_t b = a + 1; b < chains.size(); ++b) {
      const auto& ca = chains[a];
      const auto& cb = chains[b];
      if (ca.size() < 2 || cb.size() < 2) continue;
      std::size_t ia = 0, ib = 0;
      bool met = false;
      for (ia = 0; ia < ca.size() && !met; ++ia)
        for (ib = 0; ib < cb.size(); ++ib)
          if (ca[ia] == cb[ib]) {
            met = true;
            break;
          }
      if (!met) continue;
      --ia;
      const Dev* shared = ca[ia];
      if (shared->d.port_type && *shared->d.port_type == "Root Port") continue;
      if (ia + 1 == ca.size() || ib + 1 == cb.size()) continue;  // the top bridge: root port
      GpuPair pair;
      pair.a = static_cast<int>(a);
      pair.b = static_cast<int>(b);
      pair.path = ia <= 1 && ib <= 1 ? PathType::kPIX : PathType::kPXB;
      out.pairs.push_back(pair);
    }

  // Redirecting bridges that no GPU of the paste is known to sit below: only worth saying when
  // the paste does not place the GPUs (none listed, or some chain unknown).
  if (gpus.empty() || some_chain_unknown) {
    for (const auto& dev : devs)
      if (const auto f = redirect_flags(dev.d);
          !f.empty() && !placed.count(dev.d.bdf) && out.host.acs_redirect_unplaced.size() < 64)
        out.host.acs_redirect_unplaced.push_back(dev.d.bdf + " (" + f + ")");
  }
  for (const auto& r : p.bare_redirects()) out.host.acs_redirect_unplaced.push_back(r);
  if (!gpus.empty() && !verbose)
    out.notes.push_back(
        "lspci without -vvv: link width/speed and ACS state not shown (run `sudo lspci -vvv`)");
  if (p.bare_lines() > 0 && devs.empty())
    out.notes.push_back(fmt::format(
        "lspci: {} capability line(s) without their device lines (a grep of lspci -vvv): "
        "they are not tied to a GPU",
        p.bare_lines()));

  for (auto& dev : devs) out.pci_devices.push_back(std::move(dev.d));
  std::sort(out.pci_devices.begin(), out.pci_devices.end(),
            [](const PciDevice& a, const PciDevice& b) { return a.bdf < b.bdf; });
  return Status::ok();
}

}  // namespace gpuvet::import
