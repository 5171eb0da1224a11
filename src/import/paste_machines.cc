#include "import/paste_machines.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>

#include "core/util.h"
#include "import/load.h"

namespace gpuvet::import {
namespace {

// Outputs that list every GPU of their machine, by the line that starts each of them.
enum class Start { kNone, kNvsmiQ, kNvsmiXml, kNvsmiTable, kNvsmiList };

Start start_of(std::string_view line) {
  const std::string_view t = trim(line);
  if (starts_with(t, "=====") && t.find("NVSMI LOG") != std::string_view::npos)
    return Start::kNvsmiQ;
  if (starts_with(t, "<?xml")) return Start::kNvsmiXml;
  if (starts_with(t, "| NVIDIA-SMI ") && t.find("Driver Version") != std::string_view::npos)
    return Start::kNvsmiTable;
  if (starts_with(line, "GPU 0: ") && line.find("(UUID: ") != std::string_view::npos)
    return Start::kNvsmiList;
  return Start::kNone;
}

struct Line {
  std::size_t begin, end;  // offsets in the part, end before the newline
};

std::vector<Line> lines_of(std::string_view text) {
  std::vector<Line> v;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    const std::size_t end = nl == std::string_view::npos ? text.size() : nl;
    v.push_back({pos, end});
    pos = end + 1;
  }
  return v;
}

// Where a part is cut: at every start after the first of a kind that starts more than once.
// The table's version line has a border line and a timestamp above it, which go with it.
std::vector<std::size_t> cuts_of(std::string_view part) {
  const auto lines = lines_of(part);
  std::array<int, 5> seen{};
  std::vector<std::pair<std::size_t, Start>> starts;  // line index, kind
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto line = part.substr(lines[i].begin, lines[i].end - lines[i].begin);
    if (line.size() > 512) continue;
    const Start s = start_of(line);
    if (s == Start::kNone) continue;
    ++seen[static_cast<int>(s)];
    starts.emplace_back(i, s);
  }
  std::vector<std::size_t> cuts;
  std::array<int, 5> taken{};
  for (auto [i, s] : starts) {
    if (seen[static_cast<int>(s)] < 2 || taken[static_cast<int>(s)]++ == 0) continue;
    std::size_t at = i;
    if (s == Start::kNvsmiTable) {
      auto text_of = [&](std::size_t k) {
        return trim(part.substr(lines[k].begin, lines[k].end - lines[k].begin));
      };
      if (at > 0 && starts_with(text_of(at - 1), "+-")) --at;
      // The timestamp nvidia-smi prints first ("Mon Jan 20 10:18:26 2025").
      if (at > 0 && !text_of(at - 1).empty() && text_of(at - 1).size() < 40 &&
          !starts_with(text_of(at - 1), "|") && !starts_with(text_of(at - 1), "+") &&
          text_of(at - 1).find(':') != std::string_view::npos &&
          std::isdigit(static_cast<unsigned char>(text_of(at - 1).back())))
        --at;
    }
    cuts.push_back(lines[at].begin);
  }
  return cuts;
}

std::size_t line_number(std::string_view text, const char* at) {
  const auto n = static_cast<std::size_t>(at - text.data());
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + n, '\n'));
}

std::optional<int> attached_gpus(std::string_view text) {
  for (const auto& l : lines_of(text.substr(0, 64 << 10))) {
    const auto line = trim(text.substr(l.begin, l.end - l.begin));
    if (starts_with(line, "Attached GPUs")) {
      const auto colon = line.find(':');
      if (colon == std::string_view::npos) return std::nullopt;
      if (auto v = parse_int(trim(line.substr(colon + 1)))) return static_cast<int>(*v);
      return std::nullopt;
    }
    if (starts_with(line, "<attached_gpus>")) {
      auto v = line.substr(15);
      v = v.substr(0, v.find('<'));
      if (auto n = parse_int(trim(v))) return static_cast<int>(*n);
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// The whole GPU listing one segment's facts hold, when the segment is one such output.
std::optional<GpuListing> listing_of(const Facts& f, std::string_view text) {
  const ImportedFile* only = nullptr;
  for (const auto& r : f.imported) {
    if (r.format == "unrecognised") continue;
    if (only) return std::nullopt;  // a segment of several outputs: not one listing
    only = &r;
  }
  if (!only || f.gpus.empty()) return std::nullopt;
  GpuListing l;
  if (only->format == "nvidia-smi") {
    l.kind = "nvidia-smi table";
  } else if (only->format == "nvidia-smi-L") {
    l.kind = "nvidia-smi -L";
  } else if (only->format == "nvidia-smi-q" || only->format == "nvidia-smi-q-xml") {
    l.kind = only->format == "nvidia-smi-q" ? "nvidia-smi -q" : "nvidia-smi -q -x";
  } else {
    return std::nullopt;
  }
  l.count = static_cast<int>(f.gpus.size());
  if (l.kind == "nvidia-smi -q" || l.kind == "nvidia-smi -q -x")
    if (auto n = attached_gpus(text)) l.count = std::max(*n, 1);
  for (const auto& g : f.gpus)
    if (g.pci_bus_id) l.buses.insert(*g.pci_bus_id);
  return l;
}

}  // namespace

std::vector<PasteSegment> paste_segments(std::string_view text, const std::string& origin) {
  std::vector<PasteSegment> out;
  for (const auto& part : split_session(text)) {
    const std::string prompt = part.command.empty() ? "" : "$ " + part.command + "\n";
    auto cuts = cuts_of(part.text);
    cuts.push_back(part.text.size());
    std::size_t from = 0;
    for (const std::size_t to : cuts) {
      const std::string_view piece = part.text.substr(from, to - from);
      from = to;
      if (trim(piece).empty()) continue;
      const std::size_t first = line_number(text, piece.data());
      std::size_t last = line_number(text, piece.data() + piece.size());
      if (last > first && piece.back() == '\n') --last;
      out.push_back(
          {fmt::format("{}, lines {}–{}", origin, first, last), prompt + std::string(piece)});
    }
  }
  return out;
}

MachineSplit machines_in_paste(std::string_view text, const std::string& origin,
                               const ImportOptions& options) {
  const auto segments = paste_segments(text, origin);
  std::vector<std::pair<std::string, MachineIdentity>> ids;
  if (segments.size() < 2) return {};
  for (const auto& s : segments) {
    const Facts f = import_text(s.text, s.label, options);
    MachineIdentity id = identity_of(f);
    id.listing = listing_of(f, s.text);
    ids.emplace_back(s.label, std::move(id));
  }
  return group_by_machine(ids);
}

std::string several_machines_in_paste_message(const MachineSplit& split,
                                              const std::string& origin) {
  return several_machines_message(split, origin) + "\n(" + origin +
         " is one file holding the outputs of several machines: cut it at the lines above, "
         "one file per machine)";
}

}  // namespace gpuvet::import

namespace gpuvet {

Result<Facts> import_paste(std::string_view text, const std::string& origin,
                           const ImportOptions& options) {
  if (const auto split = import::machines_in_paste(text, origin, options);
      split.machines.size() > 1)
    return Status::invalid_input(import::several_machines_in_paste_message(split, origin));
  return import_text(text, origin, options);
}

}  // namespace gpuvet
