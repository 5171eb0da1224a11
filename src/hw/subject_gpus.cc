#include "hw/subject_gpus.h"

#include <algorithm>
#include <charconv>

#include "core/util.h"
#include "hw/facts_query.h"

namespace gpuvet::hw {

namespace {

// "GPU<digits>" at the front of `s`: the index, and `s` advanced past it.
std::optional<int> take_gpu(std::string_view& s) {
  if (s.substr(0, 3) != "GPU") return std::nullopt;
  const char* begin = s.data() + 3;
  const char* end = s.data() + s.size();
  int value = 0;
  const auto [p, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || p == begin || value < 0) return std::nullopt;
  s.remove_prefix(static_cast<std::size_t>(p - s.data()));
  return value;
}

constexpr std::string_view kEnDash = "\xe2\x80\x93";
constexpr int kMaxRange = 1024;

}  // namespace

std::vector<int> subject_gpu_indices(std::string_view subject) {
  std::string_view s = subject;
  const auto a = take_gpu(s);
  if (!a) return {};
  if (s.empty()) return {*a};
  const bool range = s.substr(0, kEnDash.size()) == kEnDash;
  if (range)
    s.remove_prefix(kEnDash.size());
  else if (s.front() == '-')
    s.remove_prefix(1);
  else
    return {};
  const auto b = take_gpu(s);
  if (!b || !s.empty()) return {};
  if (!range) return {*a, *b};
  if (*b < *a || *b - *a > kMaxRange) return {};
  std::vector<int> all;
  for (int i = *a; i <= *b; ++i) all.push_back(i);
  return all;
}

std::vector<SubjectGpu> subject_gpus(const Facts& facts, const std::vector<std::string>& subjects) {
  std::vector<SubjectGpu> out;
  auto seen_index = [&](int i) {
    return std::any_of(out.begin(), out.end(), [&](const SubjectGpu& g) { return g.index == i; });
  };
  auto seen_bus = [&](const std::string& bus) {
    return std::any_of(out.begin(), out.end(),
                       [&](const SubjectGpu& g) { return g.pci_bus_id == bus; });
  };
  auto from = [](const GpuFacts& g) {
    return SubjectGpu{g.index, g.uuid,
                      g.pci_bus_id ? normalize_pci_bus_id(*g.pci_bus_id) : std::nullopt};
  };
  for (const auto& subject : subjects) {
    const std::vector<int> indices = subject_gpu_indices(subject);
    for (const int i : indices) {
      if (seen_index(i)) continue;
      if (const GpuFacts* g = find_gpu(facts, i))
        out.push_back(from(*g));
      else
        out.push_back({i, std::nullopt, std::nullopt});
    }
    if (!indices.empty()) continue;
    const auto bus = normalize_pci_bus_id(subject);
    if (!bus) continue;
    if (const GpuFacts* g = find_gpu_by_bus(facts, *bus)) {
      if (!seen_index(g->index)) out.push_back(from(*g));
    } else if (!seen_bus(*bus)) {
      out.push_back({std::nullopt, std::nullopt, *bus});
    }
  }
  return out;
}

}  // namespace gpuvet::hw
