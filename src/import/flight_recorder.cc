#include "import/flight_recorder.h"

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

constexpr int kMaxDepth = 64;
constexpr std::size_t kMaxGroups = 1024;

// A sequence number written as a number or as a string ("7755", "-1").
std::optional<std::int64_t> seq(const json& v) {
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (i >= -1) return i;
    return std::nullopt;
  }
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u < (std::uint64_t{1} << 62)) return static_cast<std::int64_t>(u);
    return std::nullopt;
  }
  if (v.is_string()) {
    auto i = parse_int(trim(v.get_ref<const std::string&>()));
    if (i && *i >= -1) return i;
  }
  return std::nullopt;
}

std::optional<std::int64_t> seq_of(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  return seq(*it);
}

std::string str_of(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return {};
  if (it->is_string()) return text_scan::printable(it->get_ref<const std::string&>(), 80);
  if (it->is_number_integer()) return std::to_string(it->get<std::int64_t>());
  return {};
}

// The JSON dump's first bytes: an object whose first keys are the dump's own.
bool looks_like_dump(std::string_view head) {
  std::size_t i = 0;
  while (i < head.size() &&
         (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t'))
    ++i;
  if (i >= head.size() || head[i] != '{') return false;
  const bool entries = contains(head, "\"entries\"");
  const bool pg = contains(head, "\"pg_config\"") || contains(head, "\"pg_status\"");
  const bool version = contains(head, "\"version\"");
  const bool fields =
      contains(head, "\"collective_seq_id\"") || contains(head, "\"profiling_name\"");
  return (pg && (entries || version)) || (entries && fields);
}

Status fail(Facts& out, std::string why) {
  out.input_problems.push_back(why);
  out.notes.push_back(why);
  return Status::invalid_input(std::move(why));
}

struct Group {
  CollectiveRank r;
  std::optional<std::int64_t> max_scheduled, max_started, max_completed;
  int pending = 0;
  std::optional<std::int64_t> first_pending_seq;
  std::string first_pending_op;
  std::optional<std::int64_t> first_pending_timeout;
};

}  // namespace

int sniff_flight_recorder_json(std::string_view text) {
  return looks_like_dump(text.substr(0, 64 << 10)) ? 95 : 0;
}

Status import_flight_recorder_json(std::string_view text, Facts& out) {
  if (auto pos = too_deep_at(text, kMaxDepth))
    return fail(out, "flight-recorder dump: nested deeper than " + std::to_string(kMaxDepth) +
                         " levels at byte " + std::to_string(*pos) + "; not read");
  json doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded())
    return fail(out,
                "flight-recorder dump: starts like PyTorch's JSON dump but is not valid JSON "
                "(cut off while it was written?); not read");
  if (!doc.is_object()) return fail(out, "flight-recorder dump: the document is not an object");

  std::optional<int> rank;
  if (auto r = doc.find("rank"); r != doc.end())
    if (auto v = seq(*r); v && *v >= 0 && *v < 100000000) rank = static_cast<int>(*v);

  // pg_config: name → {name, desc, ranks: "[0, 1, …]"}
  std::map<std::string, std::pair<std::string, int>> config;  // name → (desc, size)
  if (auto c = doc.find("pg_config"); c != doc.end() && c->is_object())
    for (auto it = c->begin(); it != c->end() && config.size() < kMaxGroups; ++it) {
      if (!it->is_object()) continue;
      std::string ranks = str_of(*it, "ranks");
      int n = 0;
      if (!ranks.empty() && ranks != "[]")
        n = 1 + static_cast<int>(std::count(ranks.begin(), ranks.end(), ','));
      config[it.key()] = {str_of(*it, "desc"), n};
    }

  std::map<std::string, Group> groups;  // by pg id
  auto group = [&](const std::string& id) -> Group* {
    auto it = groups.find(id);
    if (it != groups.end()) return &it->second;
    if (groups.size() >= kMaxGroups) return nullptr;
    Group g;
    g.r.source = "flight-recorder";
    g.r.rank = rank;
    g.r.pg = id;
    return &groups.emplace(id, std::move(g)).first->second;
  };

  if (auto s = doc.find("pg_status"); s != doc.end() && s->is_object())
    for (auto it = s->begin(); it != s->end(); ++it) {
      if (!it->is_object()) continue;
      Group* g = group(text_scan::printable(it.key(), 40));
      if (!g) break;
      g->r.last_enqueued = seq_of(*it, "last_enqueued_collective");
      g->r.last_started = seq_of(*it, "last_started_collective");
      g->r.last_completed = seq_of(*it, "last_completed_collective");
    }

  std::size_t entries = 0;
  if (auto e = doc.find("entries"); e != doc.end() && e->is_array())
    for (const auto& entry : *e) {
      if (!entry.is_object()) continue;
      ++entries;
      std::string id = str_of(entry, "pg_id");
      std::string name, desc;
      if (auto pg = entry.find("process_group"); pg != entry.end() && pg->is_array()) {
        if (pg->size() > 0 && (*pg)[0].is_string())
          name = text_scan::printable((*pg)[0].get_ref<const std::string&>(), 80);
        if (pg->size() > 1 && (*pg)[1].is_string())
          desc = text_scan::printable((*pg)[1].get_ref<const std::string&>(), 80);
      }
      if (id.empty()) id = name;
      if (id.empty()) continue;
      Group* g = group(id);
      if (!g) break;
      if (!g->r.pg_name) {
        if (!desc.empty())
          g->r.pg_name = desc;
        else if (auto c = config.find(name); c != config.end() && !c->second.first.empty())
          g->r.pg_name = c->second.first;
      }
      if (!g->r.world_size)
        if (auto c = config.find(name); c != config.end() && c->second.second > 0)
          g->r.world_size = c->second.second;
      bool p2p = false;
      if (auto p = entry.find("is_p2p"); p != entry.end() && p->is_boolean()) p2p = p->get<bool>();
      if (p2p) continue;  // point-to-point ops have their own counter
      const auto s = seq_of(entry, "collective_seq_id");
      if (!s) continue;
      const std::string state = str_of(entry, "state");
      const std::string op = str_of(entry, "profiling_name");
      g->max_scheduled = std::max(g->max_scheduled.value_or(-1), *s);
      if (state == "started" || state == "completed")
        g->max_started = std::max(g->max_started.value_or(-1), *s);
      if (state == "completed") {
        g->max_completed = std::max(g->max_completed.value_or(-1), *s);
      } else {
        ++g->pending;
        if (!g->first_pending_seq || *s < *g->first_pending_seq) {
          g->first_pending_seq = s;
          g->first_pending_op = op;
          g->first_pending_timeout = seq_of(entry, "timeout_ms");
        }
      }
      if (!op.empty()) g->r.last_op = op;
    }

  if (groups.empty())
    return fail(out, "flight-recorder dump: no pg_status and no collective entries");
  for (auto& [id, g] : groups) {
    // pg_status is the truth (it survives the ring buffer's wrap); the entries fill in.
    if (!g.r.last_enqueued) g.r.last_enqueued = g.max_scheduled;
    if (!g.r.last_completed && g.max_completed) g.r.last_completed = g.max_completed;
    if ((!g.r.last_started || *g.r.last_started < 0) && g.max_started)
      g.r.last_started = g.max_started;
    g.r.pending_entries = g.pending;
    if (g.first_pending_seq) {
      g.r.timeout_seq = g.first_pending_seq;
      if (!g.first_pending_op.empty()) g.r.timeout_op = g.first_pending_op;
      g.r.timeout_ms = g.first_pending_timeout;
    }
    out.collective_ranks.push_back(std::move(g.r));
  }
  if (!rank)
    out.notes.push_back(
        "flight-recorder dump: it does not record its rank; the file name gives it "
        "(TORCH_FR_DUMP_TEMP_FILE<rank>)");
  (void)entries;
  return Status::ok();
}

int sniff_flight_recorder_pickle(std::string_view text) {
  // Protocol 2+ pickles start with PROTO (0x80) and the protocol number.
  if (text.size() < 16 || static_cast<unsigned char>(text[0]) != 0x80 ||
      static_cast<unsigned char>(text[1]) > 5)
    return 0;
  const std::string_view head = text.substr(0, 64 << 10);
  return contains(head, "pg_config") || contains(head, "pg_status") ||
                 (contains(head, "entries") && contains(head, "collective_seq_id"))
             ? 95
             : 0;
}

Status import_flight_recorder_pickle(std::string_view, Facts& out) {
  return fail(out,
              "flight-recorder dump in pickle form: gpuvet reads the JSON form only (it does not "
              "run pickles); dump with torch._C._distributed_c10d._dump_nccl_trace_json() (torch "
              ">= 2.5) or convert: python -c \"import pickle,json,sys; "
              "json.dump(pickle.load(open(sys.argv[1],'rb')), open(sys.argv[1]+'.json','w'), "
              "default=str)\" FILE");
}

}  // namespace gpuvet::import
