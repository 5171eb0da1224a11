#include "import/psi.h"

#include <string>
#include <utility>

#include "core/text_scan.h"
#include "core/util.h"
#include "import/importer.h"

namespace gpuvet::import {
namespace {

using text_scan::contains;
using text_scan::for_each_line;
using text_scan::for_each_word;

struct PsiLine {
  bool full = false;
  std::optional<double> avg10, avg60;
  std::optional<std::uint64_t> total;
};

// "some avg10=0.00 avg60=0.00 avg300=0.00 total=0" (or "full …"), starting at `s`.
std::optional<PsiLine> parse_line(std::string_view s) {
  s = trim(s);
  PsiLine out;
  if (starts_with(s, "some ")) {
    out.full = false;
  } else if (starts_with(s, "full ")) {
    out.full = true;
  } else {
    return std::nullopt;
  }
  bool any = false;
  bool bad = false;
  for_each_word(s.substr(5), 8, [&](std::string_view w, std::size_t) {
    const auto eq = w.find('=');
    if (eq == std::string_view::npos) return;
    const auto key = w.substr(0, eq);
    const auto value = w.substr(eq + 1);
    if (key == "avg10" || key == "avg60" || key == "avg300") {
      const auto v = parse_double(value);
      if (!v || *v < 0 || *v > 100) {
        bad = true;
        return;
      }
      any = true;
      if (key == "avg10") out.avg10 = *v;
      if (key == "avg60") out.avg60 = *v;
    } else if (key == "total") {
      out.total = parse_uint(value);
      bad = bad || !out.total;
    }
  });
  if (bad || !any) return std::nullopt;
  return out;
}

void apply(const PsiLine& l, PsiFile& f) {
  if (l.full) {
    f.averages.full_avg10 = l.avg10;
    f.averages.full_avg60 = l.avg60;
    f.full_total_us = l.total;
  } else {
    f.averages.some_avg10 = l.avg10;
    f.averages.some_avg60 = l.avg60;
    f.some_total_us = l.total;
  }
}

enum class Resource { kNone, kCpu, kIo, kMemory, kCgroup };

// The resource a path names: "/proc/pressure/io" → kIo; "…/io.pressure" → kCgroup.
Resource resource_in(std::string_view s) {
  if (const auto at = s.find("/proc/pressure/"); at != std::string_view::npos) {
    std::string_view r = s.substr(at + 15);
    std::size_t n = 0;
    while (n < r.size() && r[n] >= 'a' && r[n] <= 'z') ++n;
    r = r.substr(0, n);
    if (r == "cpu") return Resource::kCpu;
    if (r == "io") return Resource::kIo;
    if (r == "memory") return Resource::kMemory;
    return Resource::kNone;
  }
  for (std::string_view c : {"cpu.pressure", "io.pressure", "memory.pressure"})
    if (contains(s, c)) return Resource::kCgroup;
  return Resource::kNone;
}

// A `grep -H` line, "/proc/pressure/io:some avg10=…", split into the resource its prefix
// names and the rest; any other line comes back whole with kNone.
std::pair<Resource, std::string_view> split_prefix(std::string_view line) {
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return {Resource::kNone, line};
  const Resource r = resource_in(line.substr(0, colon));
  if (r == Resource::kNone) return {Resource::kNone, line};
  return {r, line.substr(colon + 1)};
}

}  // namespace

std::optional<PsiFile> parse_psi_file(std::string_view text) {
  PsiFile f;
  bool any = false;
  int lines = 0;
  for_each_line(text, 4096, [&](std::string_view line) {
    if (++lines > 64) return false;
    if (auto l = parse_line(line)) {
      apply(*l, f);
      any = true;
    }
    return true;
  });
  if (!any) return std::nullopt;
  return f;
}

int sniff_psi(std::string_view text) {
  text = first_lines(sniff_head(text), 2000);
  // Every PSI line has an "avg10=", "avg60=" or "avg300=": without one, no line to read.
  if (!contains(text, "avg10=") && !contains(text, "avg60=") && !contains(text, "avg300="))
    return 0;
  int psi_lines = 0;
  int other = 0;
  bool named = false;
  int lines = 0;
  for_each_line(text, 4096, [&](std::string_view line) {
    if (++lines > 2000) return false;
    const auto [prefix, body] = split_prefix(line);
    if (parse_line(body)) {
      ++psi_lines;
      named = named || prefix != Resource::kNone;
    } else if (resource_in(line) != Resource::kNone) {
      named = true;
    } else if (!trim(line).empty()) {
      ++other;
    }
    return true;
  });
  if (psi_lines == 0 || other > psi_lines * 4 + 4) return 0;
  return named ? 95 : 60;
}

Status import_psi(std::string_view text, Facts& out) {
  HostPressure p;
  Resource current = Resource::kNone;  // named by the last header, command line or path
  int used = 0;
  int unnamed = 0;
  int cgroup = 0;
  PsiFile files[3];  // cpu, io, memory
  bool seen[3] = {false, false, false};
  for_each_line(text, 4096, [&](std::string_view line) {
    const auto [prefix, body] = split_prefix(line);
    const Resource r = prefix != Resource::kNone ? prefix : current;
    const auto l = parse_line(body);
    if (!l) {
      // A header naming the file that follows: "==> /proc/pressure/io <==", "$ cat …", a path.
      if (const Resource named = resource_in(line); named != Resource::kNone) current = named;
      return true;
    }
    if (r == Resource::kNone) {
      ++unnamed;
    } else if (r == Resource::kCgroup) {
      ++cgroup;
    } else {
      const int k = r == Resource::kCpu ? 0 : r == Resource::kIo ? 1 : 2;
      apply(*l, files[k]);
      seen[k] = true;
      ++used;
    }
    return true;
  });
  if (seen[0]) p.psi_cpu = files[0].averages;
  if (seen[1]) p.psi_io = files[1].averages;
  if (seen[2]) p.psi_memory = files[2].averages;
  if (unnamed > 0)
    out.notes.push_back(std::to_string(unnamed) +
                        " pressure line(s) without the /proc/pressure file they came from "
                        "(paste `grep -H . /proc/pressure/*`): which resource is not known, not "
                        "used");
  if (cgroup > 0)
    out.notes.push_back(std::to_string(cgroup) +
                        " cgroup pressure line(s) (cpu/io/memory.pressure): a container's own "
                        "stalls, not the host's, not used");
  if (used == 0) {
    if (out.notes.empty()) out.notes.push_back("no /proc/pressure line could be read");
    return Status::invalid_input(out.notes.back());
  }
  out.host.pressure = std::move(p);
  return Status::ok();
}

}  // namespace gpuvet::import
