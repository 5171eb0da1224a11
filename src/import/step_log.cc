#include "import/step_log.h"

#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <re2/re2.h>

#include "core/text_scan.h"
#include "core/util.h"
#include "import/importer.h"
#include "import/kineto_trace.h"

namespace gpuvet::import {
namespace {

using text_scan::contains;

// One step as a line says it.
struct StepLine {
  std::optional<int> rank;
  std::optional<std::int64_t> number;
  std::optional<double> ms;
  std::optional<double> items_per_s;
};

// A launcher's rank prefix: torchrun's "[rank3]:" or "[default3]:" near the start, srun -l's "3: ".
std::optional<int> prefix_rank(std::string_view line) {
  const std::string_view head = line.substr(0, 48);
  for (std::string_view tag : {std::string_view("[rank"), std::string_view("[default")}) {
    auto p = head.find(tag);
    if (p == std::string_view::npos) continue;
    std::size_t b = p + tag.size(), e = b;
    while (e < head.size() && e - b < 7 && head[e] >= '0' && head[e] <= '9') ++e;
    if (e > b && e < head.size() && head[e] == ']')
      return static_cast<int>(*parse_int(head.substr(b, e - b)));
  }
  std::size_t e = 0;
  while (e < head.size() && e < 7 && head[e] >= '0' && head[e] <= '9') ++e;
  if (e > 0 && e + 1 < head.size() && head[e] == ':' && head[e + 1] == ' ')
    return static_cast<int>(*parse_int(head.substr(0, e)));
  return std::nullopt;
}

// The number right after `key` in `line` (spaces skipped): "1523.4" of "(ms): 1523.4 |".
std::optional<double> number_after(std::string_view line, std::string_view key) {
  auto p = text_scan::find(line, key);
  if (p == text_scan::npos) return std::nullopt;
  std::size_t b = p + key.size();
  while (b < line.size() && line[b] == ' ') ++b;
  std::size_t e = b;
  while (e < line.size() && (std::isdigit(static_cast<unsigned char>(line[e])) || line[e] == '.'))
    ++e;
  return parse_double(line.substr(b, e - b));
}

// A step number read as a double (the digits of a log line, a --step-regex group), when it fits
// an int64: a longer one is no step count, and converting it would be undefined.
std::optional<std::int64_t> step_number(double v) {
  if (!(v > -9.2e18 && v < 9.2e18)) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

// Megatron-LM: " iteration      100/  500000 | … | elapsed time per iteration (ms): 1523.4 |".
std::optional<StepLine> megatron_line(std::string_view line) {
  auto ms = number_after(line, "elapsed time per iteration (ms):");
  const auto it = number_after(line, "iteration");
  const auto number = it ? step_number(*it) : std::nullopt;
  if (!ms || !number) return std::nullopt;
  StepLine s;
  s.number = number;
  s.ms = ms;
  s.rank = prefix_rank(line);
  return s;
}

// nanoGPT: "iter 100: loss 4.2081, time 123.45ms, mfu 30.21%".
std::optional<StepLine> nanogpt_line(std::string_view line) {
  auto p = text_scan::find(line, "iter ");
  if (p == text_scan::npos || !contains(line, ": loss ") || !contains(line, "ms"))
    return std::nullopt;
  const auto it = number_after(line, "iter ");
  const auto number = it ? step_number(*it) : std::nullopt;
  auto ms = number_after(line, ", time ");
  if (!number || !ms) return std::nullopt;
  StepLine s;
  s.number = number;
  s.ms = ms;
  s.rank = prefix_rank(line);
  return s;
}

// Gathers step lines into one JobRank per rank.
class Ranks {
 public:
  void add(const StepLine& s) {
    const int key = s.rank.value_or(-1);
    auto it = ranks_.find(key);
    if (it == ranks_.end()) {
      if (ranks_.size() >= kMaxStepRanks) {
        ranks_cut_ = true;
        return;
      }
      it = ranks_.emplace(key, JobRank{}).first;
      it->second.source = "step-log";
      if (s.rank) it->second.rank = s.rank;
    }
    JobRank& r = it->second;
    if (r.steps.size() >= kMaxJobSteps) {
      steps_cut_ = true;
      return;
    }
    JobStep step;
    step.number = s.number.value_or(static_cast<std::int64_t>(r.steps.size()) + 1);
    step.wall_ms = s.ms.value_or(0);
    step.items_per_s = s.items_per_s;
    r.steps.push_back(step);
  }
  std::size_t lines = 0;
  std::size_t too_long = 0;

  void into(Facts& out) {
    for (auto& [key, r] : ranks_) {
      if (too_long > 0)
        r.notes.push_back(
            fmt::format("{} line(s) over {} bytes were not matched", too_long, kMaxStepLineBytes));
      if (steps_cut_)
        r.notes.push_back(fmt::format("more than {} steps: the rest were not read", kMaxJobSteps));
      if (ranks_cut_)
        r.notes.push_back(fmt::format("more than {} ranks: the rest were not read", kMaxStepRanks));
      out.job_ranks.push_back(std::move(r));
    }
  }
  bool empty() const { return ranks_.empty(); }

 private:
  std::map<int, JobRank> ranks_;
  bool steps_cut_ = false, ranks_cut_ = false;
};

template <class Fn>
void each_line(std::string_view text, Fn fn) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    fn(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
}

}  // namespace

int sniff_step_log(std::string_view text) {
  const std::string_view head = first_lines(sniff_head(text), 2000);
  int megatron = 0, nanogpt = 0;
  each_line(head, [&](std::string_view line) {
    if (line.size() > kMaxStepLineBytes) return;
    if (megatron_line(line)) ++megatron;
    if (nanogpt_line(line)) ++nanogpt;
  });
  if (megatron >= 2 || nanogpt >= 2) return 80;
  return megatron + nanogpt > 0 ? 50 : 0;
}

Status parse_step_log(std::string_view text, Facts& out) {
  Ranks ranks;
  each_line(text, [&](std::string_view line) {
    if (line.size() > kMaxStepLineBytes) {
      ++ranks.too_long;
      return;
    }
    if (auto s = megatron_line(line))
      ranks.add(*s);
    else if (auto n = nanogpt_line(line))
      ranks.add(*n);
  });
  if (ranks.empty()) return Status::invalid_input("no step line (Megatron-LM or nanoGPT form)");
  ranks.into(out);
  return Status::ok();
}

std::size_t parse_step_log_with(std::string_view text, const std::string& pattern, Facts& out) {
  const re2::RE2 re(pattern, re2::RE2::Quiet);
  if (!re.ok()) return 0;
  const int groups = re.NumberOfCapturingGroups();
  const auto& names = re.NamedCapturingGroups();
  auto index = [&](const char* name) -> int {
    auto it = names.find(name);
    return it == names.end() ? -1 : it->second;
  };
  const int g_ms = index("ms"), g_s = index("s"), g_tput = index("items_per_s"),
            g_step = index("step"), g_rank = index("rank");
  std::vector<re2::StringPiece> caps(static_cast<std::size_t>(groups) + 1);
  Ranks ranks;
  std::size_t matched = 0;
  auto num = [&](int g) -> std::optional<double> {
    if (g < 0 || caps[static_cast<std::size_t>(g)].data() == nullptr) return std::nullopt;
    const auto& c = caps[static_cast<std::size_t>(g)];
    return parse_double(std::string_view(c.data(), c.size()));
  };
  each_line(text, [&](std::string_view line) {
    if (line.size() > kMaxStepLineBytes) {
      ++ranks.too_long;
      return;
    }
    if (!re.Match(re2::StringPiece(line.data(), line.size()), 0, line.size(), re2::RE2::UNANCHORED,
                  caps.data(), groups + 1))
      return;
    StepLine s;
    if (auto v = num(g_ms))
      s.ms = *v;
    else if (auto sec = num(g_s))
      s.ms = *sec * 1000.0;
    s.items_per_s = num(g_tput);
    if (!s.ms && !s.items_per_s) return;
    if (s.ms && (*s.ms < 0 || *s.ms > 1e9)) return;
    if (auto n = num(g_step)) s.number = step_number(*n);
    if (auto r = num(g_rank); r && *r >= 0 && *r < (1 << 30)) s.rank = static_cast<int>(*r);
    if (!s.rank) s.rank = prefix_rank(line);
    ++matched;
    ranks.add(s);
  });
  ranks.into(out);
  return matched;
}

}  // namespace gpuvet::import

namespace gpuvet {

Status check_step_regex(const std::string& pattern) {
  const re2::RE2 re(pattern, re2::RE2::Quiet);
  if (!re.ok())
    return Status::invalid_input(fmt::format("--step-regex '{}': {}", pattern, re.error()));
  const auto& names = re.NamedCapturingGroups();
  if (!names.count("ms") && !names.count("s") && !names.count("items_per_s"))
    return Status::invalid_input(fmt::format(
        "--step-regex '{}' names no step time: use (?P<ms>…), (?P<s>…) or (?P<items_per_s>…), "
        "and optionally (?P<step>…) and (?P<rank>…)",
        pattern));
  return Status::ok();
}

}  // namespace gpuvet
