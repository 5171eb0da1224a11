#include "core/pair_matrix.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <set>
#include <unordered_map>

#include "core/util.h"

namespace gpuvet {
namespace {

using P2PField = std::optional<P2PStatus> GpuPair::*;
constexpr std::array<std::pair<const char*, P2PField>, 5> kP2PFields = {{
    {"read", &GpuPair::p2p_read},
    {"write", &GpuPair::p2p_write},
    {"nvlink", &GpuPair::p2p_nvlink},
    {"atomics", &GpuPair::p2p_atomics},
    {"pcie", &GpuPair::p2p_pcie},
}};

}  // namespace

std::string path_label(const GpuPair& p) {
  if (p.path == PathType::kNVLink && p.nvlinks) return "NV" + std::to_string(*p.nvlinks);
  return path_type_name(p.path);
}

std::optional<PathType> path_type_from(std::string_view s, std::optional<int>& nvlinks) {
  if (starts_with(s, "NV")) {
    auto rest = s.substr(2);
    if (rest.empty()) return PathType::kNVLink;
    auto n = parse_int(rest);
    if (!n || *n < 0 || *n > std::numeric_limits<int>::max()) return std::nullopt;
    nvlinks = static_cast<int>(*n);
    return PathType::kNVLink;
  }
  static const std::pair<std::string_view, PathType> kNames[] = {
      {"PIX", PathType::kPIX},   {"PXB", PathType::kPXB},   {"PHB", PathType::kPHB},
      {"NODE", PathType::kNODE}, {"SYS", PathType::kSYS},   {"SOC", PathType::kSYS},
      {"X", PathType::kSelf},    {"?", PathType::kUnknown},
  };
  for (const auto& [name, type] : kNames)
    if (s == name) return type;
  return std::nullopt;
}

std::optional<P2PStatus> p2p_status_from(std::string_view code) {
  for (int i = 0; i <= static_cast<int>(P2PStatus::kUnknown); ++i)
    if (code == p2p_status_code(static_cast<P2PStatus>(i))) return static_cast<P2PStatus>(i);
  return std::nullopt;
}

PairMatrix encode_pair_matrix(const std::vector<GpuPair>& pairs) {
  PairMatrix m;
  std::set<int> gpus;
  for (const auto& p : pairs) {
    gpus.insert(p.a);
    gpus.insert(p.b);
  }
  m.gpus.assign(gpus.begin(), gpus.end());
  const std::size_t n = m.gpus.size();
  std::unordered_map<int, std::size_t> pos;
  for (std::size_t i = 0; i < n; ++i) pos.emplace(m.gpus[i], i);
  // The pair of each cell (both halves), the first one listed where a pair repeats.
  std::vector<const GpuPair*> cell(n * n, nullptr);
  for (const auto& p : pairs) {
    if (p.a == p.b) continue;
    const std::size_t i = pos[p.a], j = pos[p.b];
    if (!cell[i * n + j]) cell[i * n + j] = cell[j * n + i] = &p;
  }
  auto rows = [&](auto&& text_of) {
    std::vector<std::string> out(n);
    for (std::size_t i = 0; i < n; ++i) {
      std::string& row = out[i];
      row.reserve(n * 5);
      for (std::size_t j = 0; j < n; ++j) {
        if (j) row += ' ';
        const GpuPair* p = cell[i * n + j];
        row += i == j ? std::string("X") : p ? text_of(*p) : std::string("-");
      }
    }
    return out;
  };
  m.path = rows(path_label);
  for (const auto& [name, field] : kP2PFields) {
    const bool any = std::any_of(pairs.begin(), pairs.end(),
                                 [f = field](const GpuPair& p) { return (p.*f).has_value(); });
    if (!any) continue;
    m.p2p.emplace_back(name, rows([f = field](const GpuPair& p) {
                         return std::string(p.*f ? p2p_status_code(*(p.*f)) : "-");
                       }));
  }
  return m;
}

std::vector<GpuPair> decode_pair_matrix(const PairMatrix& m, std::string& problem) {
  const std::size_t n = m.gpus.size();
  if (n > kPairMatrixMaxGpus) {
    problem = fmt::format("{} GPUs, more than the {} read", n, kPairMatrixMaxGpus);
    return {};
  }
  // Each matrix split into its cells, checked to be n × n.
  auto cells_of = [&](const std::vector<std::string>& rows, std::string_view what,
                      std::vector<std::string_view>& out) {
    if (rows.size() != n) {
      problem = fmt::format("{}: {} rows for {} GPUs", what, rows.size(), n);
      return false;
    }
    out.clear();
    out.reserve(n * n);
    for (std::size_t i = 0; i < n; ++i) {
      std::string_view row = rows[i];
      std::size_t count = 0;
      while (!row.empty()) {
        const std::size_t space = row.find(' ');
        out.push_back(row.substr(0, space));
        ++count;
        row = space == std::string_view::npos ? std::string_view() : row.substr(space + 1);
        if (count > n) break;
      }
      if (count != n) {
        problem = fmt::format("{} row {}: {} cells for {} GPUs", what, i, count, n);
        return false;
      }
    }
    return true;
  };
  std::vector<std::string_view> path;
  if (!cells_of(m.path, "path", path)) return {};
  std::vector<std::pair<P2PField, std::vector<std::string_view>>> p2p;
  for (const auto& [name, rows] : m.p2p) {
    const auto field = std::find_if(kP2PFields.begin(), kP2PFields.end(),
                                    [&](const auto& f) { return name == f.first; });
    if (field == kP2PFields.end()) continue;  // a later version's capability
    p2p.emplace_back(field->second, std::vector<std::string_view>());
    if (!cells_of(rows, "p2p." + name, p2p.back().second)) return {};
  }
  std::vector<GpuPair> out;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      const std::size_t at = i * n + j;
      GpuPair p;
      p.a = m.gpus[i];
      p.b = m.gpus[j];
      bool known = false;
      if (path[at] != "-") {
        const auto type = path_type_from(path[at], p.nvlinks);
        if (!type) {
          problem = fmt::format("path row {}: unknown cell \"{}\"", i, path[at].substr(0, 16));
          return {};
        }
        p.path = *type;
        known = true;
      }
      for (const auto& [field, cells] : p2p) {
        if (cells[at] == "-") continue;
        const auto status = p2p_status_from(cells[at]);
        if (!status) {
          problem = fmt::format("p2p row {}: unknown cell \"{}\"", i, cells[at].substr(0, 16));
          return {};
        }
        p.*field = *status;
        known = true;
      }
      if (known) out.push_back(std::move(p));
    }
  return out;
}

}  // namespace gpuvet
