#include "import/paste_machines.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>

#include "core/gzip.h"
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

// Calls visit(line) for each line of `text`, in order; stops when it returns false. No list of
// every line is kept: a paste of 500 million empty lines costs no memory per line (D5).
template <class Visit>
void each_line(std::string_view text, Visit&& visit) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto nl = text.find('\n', pos);
    const std::size_t end = nl == std::string_view::npos ? text.size() : nl;
    if (!visit(Line{pos, end})) return;
    pos = end + 1;
  }
}

// Where a part is cut: at every start after the first of a kind that starts more than once.
// The table's version line has a border line and a timestamp above it, which go with it.
std::vector<std::size_t> cuts_of(std::string_view part) {
  std::array<int, 5> seen{};
  // Each start with where it would be cut (the two lines above it decide for a table).
  std::vector<std::pair<std::size_t, Start>> starts;  // cut offset, kind
  std::optional<Line> above1, above2;                 // the line above, and the one above that
  auto text_of = [&](const Line& l) { return trim(part.substr(l.begin, l.end - l.begin)); };
  // The timestamp nvidia-smi prints first ("Mon Jan 20 10:18:26 2025").
  auto timestamp = [&](const Line& l) {
    const auto t = text_of(l);
    return !t.empty() && t.size() < 40 && !starts_with(t, "|") && !starts_with(t, "+") &&
           t.find(':') != std::string_view::npos &&
           std::isdigit(static_cast<unsigned char>(t.back()));
  };
  each_line(part, [&](const Line& l) {
    const auto line = part.substr(l.begin, l.end - l.begin);
    const Start s = line.size() > 512 ? Start::kNone : start_of(line);
    if (s != Start::kNone) {
      ++seen[static_cast<int>(s)];
      std::size_t at = l.begin;
      if (s == Start::kNvsmiTable) {
        // The border line above the version line, then the timestamp above that, go with it.
        std::optional<Line> above = above1;
        if (above && starts_with(text_of(*above), "+-")) {
          at = above->begin;
          above = above2;
        }
        if (above && timestamp(*above)) at = above->begin;
      }
      starts.emplace_back(at, s);
    }
    above2 = above1;
    above1 = l;
    return true;
  });
  std::vector<std::size_t> cuts;
  std::array<int, 5> taken{};
  for (auto [at, s] : starts)
    if (seen[static_cast<int>(s)] >= 2 && taken[static_cast<int>(s)]++ > 0) cuts.push_back(at);
  return cuts;
}

// Line numbers of offsets met in increasing order: each call counts only the newlines since the
// previous one, so numbering every piece of a paste costs one pass over it, not one per piece
// (a 5 MB session cut in thousands of pieces took 41 s when each recounted from the start).
class LineCounter {
 public:
  explicit LineCounter(std::string_view text) : text_(text) {}
  std::size_t at(const char* p) {
    const auto n = static_cast<std::size_t>(p - text_.data());
    if (n < pos_) pos_ = 0, line_ = 1;  // out of order: count again from the start
    line_ +=
        static_cast<std::size_t>(std::count(text_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                            text_.begin() + static_cast<std::ptrdiff_t>(n), '\n'));
    pos_ = n;
    return line_;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0, line_ = 1;
};

std::optional<int> attached_gpus(std::string_view text) {
  std::optional<int> found;
  text = text.substr(0, 64 << 10);
  each_line(text, [&](const Line& l) {
    const auto line = trim(text.substr(l.begin, l.end - l.begin));
    std::string_view value;
    if (starts_with(line, "Attached GPUs")) {
      const auto colon = line.find(':');
      if (colon == std::string_view::npos) return false;
      value = line.substr(colon + 1);
    } else if (starts_with(line, "<attached_gpus>")) {
      value = line.substr(15);
      value = value.substr(0, value.find('<'));
    } else {
      return true;
    }
    if (auto v = parse_int(trim(value))) found = static_cast<int>(*v);
    return false;
  });
  return found;
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

namespace {

// The segments as views of `text` with the command that printed them: nothing is copied until
// there are two or more (a single segment, the usual paste, is never copied).
struct Piece {
  std::string command;
  std::string_view text;
};

std::vector<Piece> pieces_of(std::string_view text) {
  std::vector<Piece> out;
  for (const auto& part : split_session(text)) {
    auto cuts = cuts_of(part.text);
    cuts.push_back(part.text.size());
    std::size_t from = 0;
    for (const std::size_t to : cuts) {
      const std::string_view piece = part.text.substr(from, to - from);
      from = to;
      if (!trim(piece).empty()) out.push_back({part.command, piece});
    }
  }
  return out;
}

std::vector<PasteSegment> segments_of(std::string_view text, const std::vector<Piece>& pieces,
                                      const std::string& origin) {
  std::vector<PasteSegment> out;
  LineCounter lines(text);
  for (const auto& [command, piece] : pieces) {
    const std::size_t first = lines.at(piece.data());
    std::size_t last = lines.at(piece.data() + piece.size());
    if (last > first && piece.back() == '\n') --last;
    out.push_back({fmt::format("{}, lines {}–{}", origin, first, last),
                   (command.empty() ? "" : "$ " + command + "\n") + std::string(piece)});
  }
  return out;
}

}  // namespace

std::vector<PasteSegment> paste_segments(std::string_view text, const std::string& origin) {
  return segments_of(text, pieces_of(text), origin);
}

MachineSplit machines_in_paste(std::string_view text, const std::string& origin,
                               const ImportOptions& options) {
  const auto pieces = pieces_of(text);
  if (pieces.size() < 2) return {};
  const auto segments = segments_of(text, pieces, origin);
  std::vector<std::pair<std::string, MachineIdentity>> ids;
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
  if (looks_gzipped(text)) {  // `zcat` forgotten: a .json.gz piped in as it is
    auto inflated = gunzip(text, options.max_file_bytes);
    if (!inflated.is_ok())
      return Status::invalid_input(origin + ": " + inflated.status().message());
    const std::string plain = std::move(inflated).value();
    return import_paste(plain, origin, options);
  }
  if (const auto split = import::machines_in_paste(text, origin, options);
      split.machines.size() > 1)
    return Status::invalid_input(import::several_machines_in_paste_message(split, origin));
  return import_text(text, origin, options);
}

}  // namespace gpuvet
