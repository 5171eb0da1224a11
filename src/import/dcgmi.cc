#include "import/dcgmi.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/text_scan.h"
#include "core/util.h"
#include "import/importer.h"

namespace gpuvet::import {
namespace {

constexpr std::size_t kMaxLine = 4096;
constexpr std::size_t kMaxChecks = 4096;  // far above 8 GPUs × 20 tests; bounds garbage
constexpr std::size_t kMaxMessage = 2000;
constexpr int kMaxGpuId = 1023;

// One row of a dcgmi box: "| name | value |" (also "+-----  Stress  ---+---+" section rows).
struct Row {
  std::string_view name;   // trimmed
  std::string_view value;  // the cell as printed, without the one leading blank
  std::size_t value_width = 0;
  bool single = false;  // one cell across the box ("| Health Monitor Report   |")
};

std::optional<Row> parse_row(std::string_view raw) {
  std::string_view l = trim(raw);
  if (l.size() < 3) return std::nullopt;
  const char first = l.front(), last = l.back();
  if ((first != '|' && first != '+') || (last != '|' && last != '+')) return std::nullopt;
  l = l.substr(1, l.size() - 2);
  Row r;
  const auto sep = l.find_first_of("|+");
  if (sep == std::string_view::npos) {
    r.single = true;
    r.name = trim(l);
    return r;
  }
  r.name = trim(l.substr(0, sep));
  std::string_view v = l.substr(sep + 1);
  r.value_width = v.size();
  if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  r.value = v;
  return r;
}

bool is_rule(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(),
                                      [](char c) { return c == '-' || c == '=' || c == '+'; });
}

// "-----  Deployment  --------" → "Deployment".
std::optional<std::string> section_title(std::string_view name) {
  if (!starts_with(name, "---")) return std::nullopt;
  std::string_view t = name;
  while (!t.empty() && t.front() == '-') t.remove_prefix(1);
  while (!t.empty() && t.back() == '-') t.remove_suffix(1);
  t = trim(t);
  if (t.empty() || t.size() > 40) return std::nullopt;
  return std::string(t);
}

std::string lower(std::string_view s) { return to_lower(s); }

bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

// "Pass", "Fail - All", "Warn - GPU: 2", "Skip - GPUs: 1, 3", "GPU0: Fail" → result and GPUs.
struct ResultCell {
  std::string result;     // pass, fail, warn, skip
  std::vector<int> gpus;  // empty: all (or node-wide)
  bool all = false;       // "- All" said so
};

std::optional<std::string> result_word(std::string_view w) {
  const std::string l = lower(trim(w));
  if (l == "pass" || l == "passed") return "pass";
  if (l == "fail" || l == "failed" || l == "failure") return "fail";
  if (l == "warn" || l == "warning") return "warn";
  if (l == "skip" || l == "skipped") return "skip";
  return std::nullopt;
}

std::vector<int> gpu_list(std::string_view s) {
  std::vector<int> gpus;
  for (auto part : split(s, ',')) {
    auto n = parse_int(trim(part));
    if (n && *n >= 0 && *n <= kMaxGpuId) gpus.push_back(static_cast<int>(*n));
  }
  return gpus;
}

std::optional<ResultCell> parse_result(std::string_view v) {
  v = trim(v);
  ResultCell c;
  // "GPU0: Fail" / "GPU 0: Fail" (per-GPU lines of newer DCGM).
  if (starts_with(v, "GPU")) {
    const auto colon = v.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    auto id = parse_int(trim(v.substr(3, colon - 3)));
    auto word = result_word(v.substr(colon + 1));
    if (!id || !word || *id < 0 || *id > kMaxGpuId) return std::nullopt;
    c.result = *word;
    c.gpus.push_back(static_cast<int>(*id));
    return c;
  }
  const auto dash = v.find(" - ");
  auto word = result_word(dash == std::string_view::npos ? v : v.substr(0, dash));
  if (!word) return std::nullopt;
  c.result = *word;
  if (dash == std::string_view::npos) return c;
  std::string_view who = trim(v.substr(dash + 3));
  if (who == "All") {
    c.all = true;
    return c;
  }
  if (!starts_with(who, "GPU")) return std::nullopt;
  const auto colon = who.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  c.gpus = gpu_list(who.substr(colon + 1));
  if (c.gpus.empty()) return std::nullopt;
  return c;
}

// The GPU a DCGM message is about: "GPU 3 has …", "… for GPU 0 …", "GPU3: …".
std::optional<int> named_gpu(std::string_view m) {
  for (std::size_t p = m.find("GPU"); p != std::string_view::npos; p = m.find("GPU", p + 3)) {
    if (p > 0 && std::isalnum(static_cast<unsigned char>(m[p - 1]))) continue;
    std::size_t i = p + 3;
    if (i < m.size() && m[i] == ' ') ++i;
    std::size_t j = i;
    while (j < m.size() && std::isdigit(static_cast<unsigned char>(m[j])) && j - i < 5) ++j;
    if (j == i) continue;
    auto n = parse_int(m.substr(i, j - i));
    if (n && *n >= 0 && *n <= kMaxGpuId) return static_cast<int>(*n);
  }
  return std::nullopt;
}

// Pieces of one message joined: dcgmi diag cuts text every 45 characters, mid-word, so the
// pieces are joined as printed and runs of blanks (its padding) become one.
std::string tidy(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out.push_back(c);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.substr(0, kMaxMessage);
}

void add_check(Facts& out, HealthCheck c) {
  if (out.health_checks.size() < kMaxChecks) out.health_checks.push_back(std::move(c));
}

// The GPUs DCGM named exist: each becomes a GPU of the facts (unnamed, by its id).
void add_named_gpus(Facts& out) {
  for (const auto& h : out.health_checks) {
    if (!h.gpu || out.gpus.size() >= 1024) continue;
    if (std::any_of(out.gpus.begin(), out.gpus.end(),
                    [&](const GpuFacts& g) { return g.index == *h.gpu; }))
      continue;
    GpuFacts g;
    g.index = *h.gpu;
    out.gpus.push_back(std::move(g));
  }
  std::sort(out.gpus.begin(), out.gpus.end(),
            [](const GpuFacts& a, const GpuFacts& b) { return a.index < b.index; });
}

// ------------------------------------------------------------------ diag

struct DiagTest {
  std::string name, category;
  std::vector<ResultCell> results;
  std::vector<std::string> messages;  // "Warning: …", "Error: …" (Info kept apart)
  std::vector<std::string> infos;
};

void flush_test(DiagTest& t, Facts& out) {
  if (t.name.empty() || t.results.empty()) {
    t = DiagTest{};
    return;
  }
  std::vector<HealthCheck> checks;
  for (const auto& r : t.results) {
    HealthCheck c;
    c.tool = "dcgmi diag";
    c.test = t.name;
    c.category = t.category;
    c.result = r.result;
    if (r.gpus.empty()) {
      checks.push_back(c);
    } else {
      for (int g : r.gpus) {
        c.gpu = g;
        checks.push_back(c);
      }
    }
  }
  // A node-wide failure whose messages all name one GPU is that GPU's ("Page Retirement/Row
  // Remap: Fail" with "GPU 3 has uncorrectable memory errors").
  std::vector<int> named;
  for (const auto& m : t.messages)
    if (auto g = named_gpu(m); g && std::find(named.begin(), named.end(), *g) == named.end())
      named.push_back(*g);
  if (checks.size() == 1 && !checks[0].gpu && !t.results[0].all && named.size() == 1 &&
      checks[0].result != "pass")
    checks[0].gpu = named[0];
  for (const auto& m : t.messages) {
    const auto g = named_gpu(m);
    HealthCheck* to = nullptr;
    for (auto& c : checks)
      if (c.gpu && g && *c.gpu == *g) to = &c;
    if (!to)
      for (auto& c : checks)
        if (!c.gpu && c.result != "pass") to = &c;
    if (!to)
      for (auto& c : checks)
        if (c.result != "pass") to = &c;
    if (!to) to = &checks.front();
    if (to->message.size() < kMaxMessage) to->message += (to->message.empty() ? "" : " | ") + m;
  }
  for (auto& c : checks) {
    c.message = c.message.substr(0, kMaxMessage);
    add_check(out, std::move(c));
  }
  t = DiagTest{};
}

}  // namespace

int sniff_dcgmi_diag(std::string_view text) {
  std::string_view head = sniff_head(text).substr(0, 256 << 10);
  int rows = 0, lines = 0;
  bool header = false, sections = false, banner = false;
  text_scan::for_each_line(head, kMaxLine, [&](std::string_view raw) {
    if (++lines > 2000) return false;
    if (contains(raw, "Successfully ran diagnostic for group")) banner = true;
    auto r = parse_row(raw);
    if (!r || r->single) return true;
    if (r->name == "Diagnostic" && trim(r->value) == "Result") header = true;
    if (auto s = section_title(r->name);
        s && (*s == "Deployment" || *s == "Hardware" || *s == "Integration" || *s == "Stress" ||
              *s == "Metadata"))
      sections = true;
    if (!r->name.empty() && parse_result(r->value)) ++rows;
    return true;
  });
  if (header && (sections || rows > 0)) return 100;
  if (sections && rows > 0) return 90;
  if (banner) return 60;
  return 0;
}

Status import_dcgmi_diag(std::string_view text, Facts& out) {
  DiagTest test;
  std::string category;
  std::string* message = nullptr;  // the Warning/Error/Info text being continued
  std::size_t chunk_width = 0;
  bool any_row = false;
  std::optional<std::size_t> gpu_count;

  text_scan::for_each_line(text, kMaxLine, [&](std::string_view raw) {
    const std::string_view line = trim(raw);
    if (starts_with(line, "Error:")) {
      out.notes.push_back("dcgmi diag: " + tidy(line.substr(0, 300)));
      return true;
    }
    auto r = parse_row(raw);
    if (!r || r->single) return true;
    if (is_rule(r->name) && is_rule(trim(r->value))) return true;  // borders
    if (auto s = section_title(r->name)) {
      flush_test(test, out);
      message = nullptr;
      category = *s;
      return true;
    }
    if (r->name == "Diagnostic") return true;  // the header row
    const std::string_view value = trim(r->value);
    if (category == "Metadata") {
      if (r->name == "Driver Version Detected" && !value.empty())
        out.host.driver_version = std::string(value.substr(0, 32));
      if (r->name == "GPU Device IDs Detected" && !value.empty())
        gpu_count = split(value, ',').size();
      return true;
    }
    if (r->name == "Warning" || r->name == "Error" || r->name == "Info" ||
        starts_with(r->name, "Warning:")) {
      auto& list = r->name == "Info" ? test.infos : test.messages;
      list.emplace_back();
      message = &list.back();
      if (starts_with(r->name, "Warning:")) *message = std::string(trim(r->name.substr(8))) + " ";
      chunk_width = r->value_width >= 3 ? r->value_width - 3 : r->value.size();
      *message += std::string(r->value.substr(0, std::min(r->value.size(), chunk_width)));
      return true;
    }
    if (r->name.empty()) {
      if (auto res = parse_result(r->value); res && !test.name.empty()) {
        test.results.push_back(*res);
        message = nullptr;
        return true;
      }
      if (message && message->size() < kMaxMessage) {
        const auto width = r->value_width >= 3 ? r->value_width - 3 : r->value.size();
        *message += std::string(r->value.substr(0, std::min(r->value.size(), width)));
      }
      return true;
    }
    // A new test row.
    flush_test(test, out);
    message = nullptr;
    auto res = parse_result(r->value);
    if (!res) return true;
    test.name = std::string(r->name.substr(0, 64));
    test.category = category;
    test.results.push_back(*res);
    any_row = true;
    return true;
  });
  flush_test(test, out);
  (void)chunk_width;
  for (auto& c : out.health_checks) c.message = tidy(c.message);

  if (gpu_count && *gpu_count > 0) {
    for (std::size_t i = 0; i < *gpu_count && out.gpus.size() < 1024; ++i) {
      if (std::any_of(out.gpus.begin(), out.gpus.end(),
                      [&](const GpuFacts& g) { return g.index == static_cast<int>(i); }))
        continue;
      GpuFacts g;
      g.index = static_cast<int>(i);
      out.gpus.push_back(std::move(g));
    }
  }
  add_named_gpus(out);
  std::vector<std::string> skipped;
  for (const auto& c : out.health_checks)
    if (c.result == "skip" && std::find(skipped.begin(), skipped.end(), c.test) == skipped.end())
      skipped.push_back(c.test);
  if (!skipped.empty())
    out.notes.push_back(fmt::format("dcgmi diag skipped: {}", fmt::join(skipped, ", ")));
  if (!any_row && out.health_checks.empty()) {
    if (!out.notes.empty()) return Status::ok();
    return Status::invalid_input("dcgmi diag: no test result row");
  }
  return Status::ok();
}

// ------------------------------------------------------------------ health

int sniff_dcgmi_health(std::string_view text) {
  std::string_view head = sniff_head(text).substr(0, 256 << 10);
  bool report = false, overall = false;
  int lines = 0;
  text_scan::for_each_line(head, kMaxLine, [&](std::string_view raw) {
    if (++lines > 2000) return false;
    auto r = parse_row(raw);
    if (!r) return true;
    if (r->single && r->name == "Health Monitor Report") report = true;
    if (!r->single && r->name == "Overall Health") overall = true;
    return true;
  });
  if (report && overall) return 100;
  if (report || overall) return 80;
  return 0;
}

namespace {

std::optional<std::string> health_word(std::string_view v) {
  const std::string l = lower(trim(v));
  if (l == "healthy") return "pass";
  if (l == "warning") return "warn";
  if (l == "failure") return "fail";
  return std::nullopt;
}

}  // namespace

Status import_dcgmi_health(std::string_view text, Facts& out) {
  std::string group = "GPU";  // the entity group the "-> N" rows belong to
  std::optional<int> entity;  // its id
  std::optional<std::string> overall;
  HealthCheck* cur = nullptr;

  auto start = [&](std::string test, std::string result) {
    HealthCheck c;
    c.tool = "dcgmi health";
    c.test = std::move(test);
    c.result = std::move(result);
    if (entity) {
      if (group == "GPU")
        c.gpu = entity;
      else
        c.entity = group + " " + std::to_string(*entity);
    }
    const std::size_t n = out.health_checks.size();
    add_check(out, std::move(c));
    cur = out.health_checks.size() > n ? &out.health_checks.back() : nullptr;
  };
  auto append = [&](std::string_view piece) {
    piece = trim(piece);
    if (!cur || piece.empty() || cur->message.size() >= kMaxMessage) return;
    if (!cur->message.empty()) cur->message += ' ';
    cur->message += std::string(piece);
  };

  text_scan::for_each_line(text, kMaxLine, [&](std::string_view raw) {
    auto r = parse_row(raw);
    if (!r || r->single) return true;
    const std::string_view name = r->name;
    const std::string_view value = trim(r->value);
    if (is_rule(name) && is_rule(value)) return true;
    if (name == "Overall Health") {
      if (auto w = health_word(value)) overall = w;
      cur = nullptr;
      return true;
    }
    // Older DCGM: "GPU ID: 0 | Warning", then "PCIe system: Warning - message" rows.
    if (starts_with(name, "GPU ID:")) {
      auto id = parse_int(trim(name.substr(7)));
      group = "GPU";
      entity = id && *id >= 0 && *id <= kMaxGpuId ? std::optional<int>(static_cast<int>(*id))
                                                  : std::nullopt;
      cur = nullptr;
      return true;
    }
    if (starts_with(name, "->")) {
      std::string_view what = trim(name.substr(2));
      if (auto id = parse_int(what)) {
        entity =
            *id >= 0 && *id <= kMaxGpuId ? std::optional<int>(static_cast<int>(*id)) : std::nullopt;
        cur = nullptr;
      } else if (what == "Errors") {
        cur = nullptr;
      } else if (auto w = health_word(value)) {
        start(std::string(what.substr(0, 48)), *w);
      }
      return true;
    }
    if (name.empty()) {
      // "PCIe system: Warning - Detected more than 8 PCIe replays per minute …" (older DCGM).
      const auto colon = value.find(": ");
      if (colon != std::string_view::npos && colon < 32 &&
          (contains(value.substr(0, colon), "system") || value.substr(0, colon) == "Driver")) {
        std::string_view rest = value.substr(colon + 2);
        const auto dash = rest.find(" - ");
        if (auto w = health_word(dash == std::string_view::npos ? rest : rest.substr(0, dash))) {
          start(std::string(value.substr(0, colon)), *w);
          if (dash != std::string_view::npos) append(rest.substr(dash + 3));
          return true;
        }
      }
      append(value);
      return true;
    }
    // An entity group title ("GPU", "NvSwitch", "CPU", "ConnectX") with no value.
    if (value.empty() && name.size() <= 24) {
      group = std::string(name);
      entity.reset();
      cur = nullptr;
    }
    return true;
  });
  for (auto& c : out.health_checks) c.message = tidy(c.message);
  add_named_gpus(out);
  if (!overall && out.health_checks.empty())
    return Status::invalid_input("dcgmi health: no \"Overall Health\" row");
  if (overall && *overall != "pass" && out.health_checks.empty())
    out.notes.push_back("dcgmi health: overall health " + *overall + " with no incident listed");
  if (overall && *overall == "pass" && out.health_checks.empty()) {
    HealthCheck c;
    c.tool = "dcgmi health";
    c.test = "Overall Health";
    c.result = "pass";
    add_check(out, std::move(c));
  }
  return Status::ok();
}

}  // namespace gpuvet::import
