#include "import/nccl_inspector.h"

#include <map>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/stats.h"
#include "core/text_scan.h"
#include "core/util.h"
#include "import/importer.h"

namespace gpuvet::import {
namespace {

using json = nlohmann::json;
using text_scan::contains;

struct Samples {
  std::vector<double> us, busbw;
};

struct RankRecords {
  JobRank rank;
  // (op, size or 0 when unknown) → samples
  std::map<std::pair<std::string, std::uint64_t>, Samples> by_op;
};

std::optional<std::int64_t> int_of(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number_unsigned()) {
    const auto u = it->get<std::uint64_t>();
    return u < (std::uint64_t{1} << 62) ? std::optional<std::int64_t>(static_cast<std::int64_t>(u))
                                        : std::nullopt;
  }
  return std::nullopt;
}

std::optional<double> num_of(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

std::string str_of(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string()
             ? text_scan::printable(it->get_ref<const std::string&>(), 64)
             : std::string();
}

}  // namespace

int sniff_nccl_inspector(std::string_view text) {
  const std::string_view head = first_lines(sniff_head(text), 20);
  return contains(head, "{\"header\":{") &&
                 (contains(head, "\"coll_perf\":{") || contains(head, "\"p2p_perf\":{"))
             ? 95
             : 0;
}

Status parse_nccl_inspector(std::string_view text, Facts& out) {
  std::map<std::pair<std::string, std::int64_t>, RankRecords> ranks;  // (comm id, rank)
  std::size_t lines = 0, bad = 0, huge = 0;
  bool cut = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    if (line.empty()) continue;
    if (++lines > kMaxInspectorLines) {
      cut = true;
      break;
    }
    auto doc = json::parse(line, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("header") ||
        !doc["header"].is_object()) {
      ++bad;
      continue;
    }
    const json& header = doc["header"];
    const json meta = doc.value("metadata", json::object());
    const bool p2p = doc.contains("p2p_perf");
    const json& perf = p2p ? doc["p2p_perf"] : doc.value("coll_perf", json());
    if (!perf.is_object()) {
      ++bad;
      continue;
    }
    const auto rank = int_of(header, "rank");
    const std::string comm = str_of(header, "id");
    if (!rank || comm.empty()) {
      ++bad;
      continue;
    }
    RankRecords& rr = ranks[{comm, *rank}];
    if (rr.rank.source.empty()) {
      rr.rank.source = "nccl-inspector";
      if (*rank >= 0 && *rank < (1 << 30)) rr.rank.rank = static_cast<int>(*rank);
      if (auto n = int_of(header, "n_ranks"); n && *n > 0 && *n < (1 << 30))
        rr.rank.world_size = static_cast<int>(*n);
      if (auto h = str_of(meta, "hostname"); !h.empty()) rr.rank.host = h;
      if (auto p = int_of(meta, "pid"); p && *p > 0 && *p < (1 << 30))
        rr.rank.pid = static_cast<int>(*p);
      rr.rank.backend = "nccl";
      const std::string name = str_of(header, "comm_name");
      rr.rank.notes.push_back(fmt::format(
          "communicator {}{}", comm, name.empty() || name == "unknown" ? "" : " (" + name + ")"));
    }
    const char* k_op = p2p ? "p2p" : "coll";
    const char* k_size = p2p ? "p2p_msg_size_bytes" : "coll_msg_size_bytes";
    const char* k_time = p2p ? "p2p_exec_time_us" : "coll_exec_time_us";
    const char* k_bus = p2p ? "p2p_busbw_gbs" : "coll_busbw_gbs";
    std::string op = str_of(perf, k_op);
    if (op.empty()) op = "?";
    std::uint64_t size = 0;
    if (auto it = perf.find(k_size); it != perf.end() && it->is_number_unsigned()) {
      size = it->get<std::uint64_t>();
      if (size >= (std::uint64_t{1} << 63)) {  // the uint8 defect: 2^64 − count
        size = 0;
        ++huge;
      }
    } else if (auto s = int_of(perf, k_size); s && *s >= 0) {
      size = static_cast<std::uint64_t>(*s);
    }
    Samples& smp = rr.by_op[{op, size}];
    if (auto t = num_of(perf, k_time); t && *t >= 0) smp.us.push_back(*t);
    if (auto b = num_of(perf, k_bus); b && *b >= 0 && *b < 1e5 && size > 0) smp.busbw.push_back(*b);
  }
  if (ranks.empty())
    return Status::invalid_input(fmt::format("no NCCL Inspector record among {} line(s)", lines));
  for (auto& [key, rr] : ranks) {
    for (auto& [op_size, smp] : rr.by_op) {
      JobCollective c;
      c.op = op_size.first;
      if (op_size.second > 0) c.size_bytes = op_size.second;
      c.count = static_cast<std::int64_t>(smp.us.size());
      c.median_us = median(smp.us);
      c.busbw_gbps = median(smp.busbw);
      rr.rank.collectives.push_back(std::move(c));
    }
    if (bad > 0) rr.rank.notes.push_back(fmt::format("{} line(s) were not Inspector records", bad));
    if (huge > 0)
      rr.rank.notes.push_back(fmt::format(
          "{} record(s) with a size of 2^63 bytes or more (Inspector's uint8 defect): size unknown",
          huge));
    if (cut)
      rr.rank.notes.push_back(
          fmt::format("more than {} lines: the rest were not read", kMaxInspectorLines));
    out.job_ranks.push_back(std::move(rr.rank));
  }
  return Status::ok();
}

}  // namespace gpuvet::import
