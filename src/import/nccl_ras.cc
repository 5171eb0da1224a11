#include "import/nccl_ras.h"

#include <algorithm>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/text_scan.h"
#include "core/util.h"
#include "import/gpuvet_json.h"
#include "import/importer.h"

namespace gpuvet::import {
namespace {

using json = nlohmann::json;
using text_scan::contains;
using text_scan::find;

constexpr std::size_t npos = std::string_view::npos;
constexpr std::size_t kMaxLine = 4096;
constexpr std::size_t kMaxRanks = 1 << 16;
constexpr std::size_t kMaxDetails = 12;
constexpr int kMaxDepth = 32;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::optional<int> int_after(std::string_view s, std::string_view key) {
  const std::size_t p = find(s, key);
  if (p == npos) return std::nullopt;
  std::size_t b = p + key.size();
  std::size_t e = b;
  while (e < s.size() && is_digit(s[e]) && e - b < 9) ++e;
  auto v = parse_int(s.substr(b, e - b));
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

std::string word_after(std::string_view s, std::string_view key) {
  const std::size_t p = find(s, key);
  if (p == npos) return {};
  const std::size_t b = p + key.size();
  std::size_t e = b;
  while (e < s.size() && s[e] != ' ' && s[e] != ',' && e - b < 128) ++e;
  return text_scan::printable(s.substr(b, e - b), 128);
}

// The error words ncclras uses for a communicator or the job.
bool is_error_word(std::string_view w) {
  return w == "MISMATCH" || w == "INCOMPLETE" || w == "DEAD" || w == "TIMEOUT" || w == "ERROR" ||
         w == "ABORT";
}

std::vector<std::string> error_words(std::string_view s) {
  std::vector<std::string> out;
  for (auto w : split(s, ',')) {
    w = trim(w);
    if (is_error_word(w)) out.emplace_back(w);
  }
  return out;
}

const char* status_for(const std::vector<std::string>& errors) {
  for (const auto& e : errors)
    if (e == "DEAD") return "dead";
  for (const auto& e : errors)
    if (e == "INCOMPLETE") return "missing";
  for (const auto& e : errors)
    if (e == "TIMEOUT") return "unresponsive";
  for (const auto& e : errors)
    if (e == "ERROR" || e == "ABORT") return "async error";
  return "outlier";
}

void add_detail(RasCommunicator& c, std::string_view line) {
  if (c.details.size() < kMaxDetails) c.details.push_back(text_scan::printable(line, 200));
}

int sniff_text(std::string_view head) {
  const bool summary = contains(head, "Job summary\n") || contains(head, "Job summary\r\n");
  const bool comms = contains(head, "Communicators") &&
                     (contains(head, "Status  Errors") || contains(head, "Status Errors"));
  if (summary && comms) return 100;
  if (comms && contains(head, "Ranks")) return 80;
  if (summary && contains(head, "GPUs") && contains(head, "Processes")) return 70;
  return 0;
}

}  // namespace

int sniff_nccl_ras_text(std::string_view text) { return sniff_text(sniff_head(text)); }

Status import_nccl_ras_text(std::string_view text, Facts& out) {
  enum class Section { kNone, kSummary, kCommunicators, kErrors, kWarnings };
  Section section = Section::kNone;
  RasCommunicator* current = nullptr;
  std::vector<std::string> current_errors;
  std::optional<std::string> current_op;
  std::optional<int> current_upto;
  std::size_t rank_records = 0;
  std::size_t tables = 0;
  std::vector<RasCommunicator> table_rows;  // groups with errors, kept when no entry details them
  text_scan::LineReader lines(text);
  for (std::string_view raw; lines.next(raw);) {
    std::string_view line = trim(raw.substr(0, kMaxLine));
    if (line.empty()) continue;
    if (line == "Job summary") {
      section = Section::kSummary;
      continue;
    }
    if (starts_with(line, "Communicators")) {
      section = Section::kCommunicators;
      continue;
    }
    if (line == "Errors") {
      section = Section::kErrors;
      current = nullptr;
      continue;
    }
    if (line == "Warnings") {
      section = Section::kWarnings;
      current = nullptr;
      continue;
    }
    if (line.find_first_not_of('=') == npos) continue;
    if (section == Section::kCommunicators) {
      // "0         1         4         8        32        32   RUNNING  MISMATCH"
      auto w = text_scan::words(line, 12);
      if (w.size() >= 7 && parse_int(w[0]) && parse_int(w[4]) &&
          !parse_int(w[w.size() - 2]).has_value()) {
        ++tables;
        const std::string status(w[w.size() - 2]);
        auto errors = error_words(w.back());
        if (errors.empty()) continue;
        RasCommunicator c;
        c.id = "group " + std::string(w[0]);
        c.status = status;
        c.errors = errors;
        if (auto n = parse_int(w[4]); n && *n >= 0 && *n < 100000000) c.size = static_cast<int>(*n);
        table_rows.push_back(std::move(c));
      }
      continue;
    }
    if (section != Section::kErrors && section != Section::kWarnings) continue;
    // A new entry: "#0-0 (fa93daea854b060b) MISMATCH" or a job-level "INCOMPLETE" / "DEAD".
    const bool comm_entry = line[0] == '#';
    const bool job_entry =
        is_error_word(line) || (error_words(line).size() > 0 && line.find(' ') == npos);
    if (comm_entry || job_entry) {
      RasCommunicator c;
      std::string_view rest = line;
      if (comm_entry) {
        const std::size_t close = line.find(')');
        c.id = text_scan::printable(close == npos ? line : line.substr(0, close + 1), 80);
        rest = close == npos ? std::string_view{} : trim(line.substr(close + 1));
      } else {
        c.id = "job";
      }
      c.errors = error_words(rest);
      for (auto w : text_scan::words(rest, 8))
        if (is_error_word(w) && std::find(c.errors.begin(), c.errors.end(), w) == c.errors.end())
          c.errors.emplace_back(w);
      out.ras_communicators.push_back(std::move(c));
      current = &out.ras_communicators.back();
      current_errors = current->errors;
      current_op.reset();
      current_upto.reset();
      continue;
    }
    if (!current) continue;
    add_detail(*current, line);
    // "Communicator ranks have different AllGather operation counts"
    if (std::size_t p = find(line, "have different "); p != npos) {
      std::string op = word_after(line, "have different ");
      if (!op.empty() && op != "collective") current_op = op;
    }
    // "2 ranks have launched up to operation 641"
    if (contains(line, "have launched up to operation ")) {
      current_upto = int_after(line, "up to operation ");
      const std::string_view head = trim(line);
      std::size_t e = 0;
      while (e < head.size() && e < 9 && is_digit(head[e])) ++e;
      const auto n = parse_int(head.substr(0, e));
      if (current_upto && n && *n > 0 && *n <= 100000000 && current->launched.size() < 64)
        current->launched[std::to_string(*current_upto)] += static_cast<int>(*n);
    }
    // "The missing rank: 21" / "The missing ranks: 3, 21"
    if (std::size_t p = find(line, "missing rank"); p != npos && line.find(':', p) != npos) {
      for (auto w : split(line.substr(line.find(':', p) + 1), ','))
        if (auto r = parse_int(trim(w)); r && *r >= 0 && *r < 100000000)
          current->missing_ranks.push_back(static_cast<int>(*r));
    }
    // "Rank 12 -- GPU 4 managed by process 323032 on node 10.137.190.124"
    // "Process 60004 on node 10.4.109.13 managing GPU 0"
    const bool rank_line = starts_with(line, "Rank ") && contains(line, " -- GPU ");
    const bool process_line = starts_with(line, "Process ") && contains(line, " on node ");
    if ((rank_line || process_line) && rank_records < kMaxRanks) {
      CollectiveRank r;
      r.source = "nccl-ras";
      if (rank_line) r.rank = int_after(line, "Rank ");
      r.cuda_dev = int_after(line, " GPU ");
      r.pid = rank_line ? int_after(line, "process ") : int_after(line, "Process ");
      const std::string host = word_after(line, " on node ");
      if (!host.empty()) r.host = host;
      if (comm_entry || current->id != "job") r.pg = current->id;
      r.ras_status = status_for(current_errors);
      if (current_op && current_upto) r.op_counts[*current_op] = *current_upto;
      if (r.rank && r.ras_status == std::string("missing"))
        current->missing_ranks.push_back(*r.rank);
      if (r.rank && r.ras_status == std::string("dead")) current->dead_ranks.push_back(*r.rank);
      out.collective_ranks.push_back(std::move(r));
      ++rank_records;
    }
  }
  // "#0-0 (…)" details group 0: the table's row for it adds nothing.
  for (auto& row : table_rows) {
    const std::string prefix = "#" + row.id.substr(6) + "-";
    if (std::none_of(out.ras_communicators.begin(), out.ras_communicators.end(),
                     [&](const RasCommunicator& c) { return starts_with(c.id, prefix); }))
      out.ras_communicators.push_back(std::move(row));
  }
  if (tables == 0 && out.ras_communicators.empty()) {
    out.notes.push_back("nccl ras: no communicator table and no error entry");
    return Status::invalid_input("no NCCL RAS communicators in the text");
  }
  for (auto& c : out.ras_communicators) {
    std::sort(c.missing_ranks.begin(), c.missing_ranks.end());
    c.missing_ranks.erase(std::unique(c.missing_ranks.begin(), c.missing_ranks.end()),
                          c.missing_ranks.end());
  }
  return Status::ok();
}

// ------------------------------------------------------------------ JSON

namespace {

// NCCL 2.28.9 writes `"nvml_dev": 0` and the next `"status": {` without a comma between them.
std::string repair_missing_commas(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 64);
  char last = 0;  // last non-blank character written
  text_scan::LineReader lines(text);
  bool first = true;
  for (std::string_view line; lines.next(line);) {
    const std::string_view t = trim(line);
    if (!first && !t.empty() && t[0] == '"' && contains(t, "\":") &&
        (is_digit(last) || last == '"' || last == 'e' || last == 'l' || last == '}' || last == ']'))
      out += ',';
    if (!first) out += '\n';
    out.append(line);
    if (!t.empty()) last = t.back();
    first = false;
  }
  return out;
}

std::optional<int> int_of(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number_integer()) return std::nullopt;
  const auto v = it->get<std::int64_t>();
  if (v < 0 || v > 100000000) return std::nullopt;
  return static_cast<int>(v);
}

bool flag_of(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end()) return false;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_number_integer()) return it->get<std::int64_t>() != 0;
  return false;
}

std::optional<std::string> str_of(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end()) return std::nullopt;
  if (it->is_string()) return text_scan::printable(it->get_ref<const std::string&>(), 128);
  if (it->is_number_unsigned()) return std::to_string(it->get<std::uint64_t>());
  if (it->is_number_integer()) return std::to_string(it->get<std::int64_t>());
  return std::nullopt;
}

CollectiveRank ras_rank(const json& r, const std::string& comm) {
  CollectiveRank c;
  c.source = "nccl-ras";
  c.pg = comm;
  c.rank = int_of(r, "rank");
  c.host = str_of(r, "host");
  c.pid = int_of(r, "pid");
  c.cuda_dev = int_of(r, "cuda_dev");
  c.nvml_dev = int_of(r, "nvml_dev");
  return c;
}

}  // namespace

int sniff_nccl_ras_json(std::string_view text) {
  const std::string_view head = text.substr(0, 16 << 10);
  std::size_t i = head.find_first_not_of(" \t\r\n");
  if (i == npos || head[i] != '{') return 0;
  if (!contains(head, "\"communicators\"")) return 0;
  if (contains(head, "\"nccl_version\"") || contains(head, "\"missing_ranks") ||
      contains(head, "\"collective_counts\""))
    return 95;
  return 0;
}

Status import_nccl_ras_json(std::string_view text, Facts& out) {
  if (auto pos = too_deep_at(text, kMaxDepth)) {
    out.input_problems.push_back("nccl ras json: nested deeper than expected; not read");
    return Status::invalid_input("nccl ras json: nested deeper than expected");
  }
  json doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded()) {
    doc = json::parse(repair_missing_commas(text), nullptr, false);
    if (!doc.is_discarded())
      out.notes.push_back(
          "nccl ras json: commas missing inside missing_ranks entries (NCCL 2.28.9) were added");
  }
  if (doc.is_discarded() || !doc.is_object()) {
    const std::string why = "nccl ras json: not valid JSON; not read";
    out.input_problems.push_back(why);
    out.notes.push_back(why);
    return Status::invalid_input(why);
  }
  auto comms = doc.find("communicators");
  if (comms == doc.end() || !comms->is_array()) {
    out.notes.push_back("nccl ras json: no communicators array");
    return Status::invalid_input("no communicators array");
  }
  std::size_t records = 0;
  for (const auto& c : *comms) {
    if (!c.is_object()) continue;
    const std::string hash = str_of(c, "hash").value_or("?");
    RasCommunicator rc;
    rc.id = hash;
    rc.size = int_of(c, "size");
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> spread;  // op → (min, max)
    bool any_error = false;
    if (auto ranks = c.find("ranks"); ranks != c.end() && ranks->is_array())
      for (const auto& r : *ranks) {
        if (!r.is_object() || records >= kMaxRanks) continue;
        CollectiveRank cr = ras_rank(r, hash);
        std::string status = "ok";
        if (auto s = r.find("status"); s != r.end() && s->is_object()) {
          if (flag_of(*s, "abort_flag"))
            status = "abort";
          else if (flag_of(*s, "async_error"))
            status = "async error";
          else if (auto init = int_of(*s, "init_state"); init && *init != 0)
            status = "init";
        }
        if (status == "abort" || status == "async error") any_error = true;
        cr.ras_status = status;
        if (auto counts = r.find("collective_counts"); counts != r.end() && counts->is_object())
          for (auto it = counts->begin(); it != counts->end(); ++it) {
            if (!it->is_number_integer()) continue;
            const auto n = it->get<std::int64_t>();
            const std::string op = text_scan::printable(it.key(), 40);
            cr.op_counts[op] = n;
            auto [s, inserted] = spread.emplace(op, std::make_pair(n, n));
            if (!inserted) {
              s->second.first = std::min(s->second.first, n);
              s->second.second = std::max(s->second.second, n);
            }
          }
        out.collective_ranks.push_back(std::move(cr));
        ++records;
      }
    if (auto missing = c.find("missing_ranks"); missing != c.end() && missing->is_array())
      for (const auto& r : *missing) {
        if (!r.is_object() || records >= kMaxRanks) continue;
        CollectiveRank cr = ras_rank(r, hash);
        const json* s = nullptr;
        if (auto st = r.find("status"); st != r.end() && st->is_object()) s = &*st;
        const json& flags = s ? *s : r;
        cr.ras_status = flag_of(flags, "considered_dead") ? "dead"
                        : flag_of(flags, "unresponsive")  ? "unresponsive"
                                                          : "missing";
        if (cr.rank) {
          rc.missing_ranks.push_back(*cr.rank);
          if (*cr.ras_status == "dead") rc.dead_ranks.push_back(*cr.rank);
        }
        out.collective_ranks.push_back(std::move(cr));
        ++records;
      }
    if (auto n = int_of(c, "missing_ranks_count"); n && *n > 0 && rc.missing_ranks.empty())
      rc.details.push_back(std::to_string(*n) + " missing rank(s), not listed");
    for (const auto& [op, mm] : spread)
      if (mm.first != mm.second)
        rc.details.push_back(op + " counts differ: " + std::to_string(mm.first) + " to " +
                             std::to_string(mm.second));
    if (!rc.missing_ranks.empty() || (int_of(c, "missing_ranks_count").value_or(0) > 0))
      rc.errors.push_back("INCOMPLETE");
    if (!rc.dead_ranks.empty()) rc.errors.push_back("DEAD");
    if (std::any_of(spread.begin(), spread.end(),
                    [](const auto& kv) { return kv.second.first != kv.second.second; }))
      rc.errors.push_back("MISMATCH");
    if (any_error) rc.errors.push_back("ERROR");
    if (!rc.errors.empty()) out.ras_communicators.push_back(std::move(rc));
  }
  return Status::ok();
}

}  // namespace gpuvet::import
