#include "import/nvsmi_csv.h"

#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "core/util.h"
#include "import/nvsmi_monitor.h"
#include "import/nvsmi_text.h"

namespace gpuvet::import {

std::vector<std::vector<std::string>> split_csv(std::string_view text, std::size_t max_records,
                                                std::size_t max_field_bytes,
                                                std::size_t max_fields) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false;         // inside a quoted section
  bool was_quoted = false;     // this field had a quoted section (keep its blanks)
  bool any = false;            // the record has content (a blank line is not a record)
  std::size_t quoted_len = 0;  // length of the field when its quoted section closed

  auto end_field = [&] {
    if (was_quoted) {
      // Blanks after the closing quote (", " separators) are not part of the value.
      while (field.size() > quoted_len && (field.back() == ' ' || field.back() == '\t'))
        field.pop_back();
    } else {
      field = std::string(trim(field));
    }
    if (record.size() < max_fields) record.push_back(std::move(field));
    field.clear();
    was_quoted = false;
  };
  auto end_record = [&] {
    if (any) {
      end_field();
      records.push_back(std::move(record));
    }
    record.clear();
    field.clear();
    was_quoted = false;
    any = false;
  };
  auto put = [&](char c) {
    if (field.size() < max_field_bytes) field.push_back(c);
  };

  for (std::size_t i = 0; i < text.size() && records.size() < max_records; ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          put('"');
          ++i;
        } else {
          quoted = false;
          quoted_len = field.size();
        }
      } else {
        put(c);
      }
      continue;
    }
    switch (c) {
      case '"':
        // A quote opens a quoted section at the start of a field (after blanks); elsewhere
        // it is an ordinary character, as lenient readers treat it.
        if (trim(field).empty()) {
          field.clear();
          quoted = true;
          was_quoted = true;
          any = true;
        } else {
          put(c);
        }
        break;
      case ',':
        end_field();
        any = true;
        break;
      case '\r':
        if (i + 1 < text.size() && text[i + 1] == '\n') break;  // CRLF: the '\n' ends it
        end_record();
        break;
      case '\n':
        end_record();
        break;
      default:
        if (c != ' ' && c != '\t') any = true;
        put(c);
    }
  }
  if (records.size() < max_records) end_record();
  return records;
}

namespace {

using namespace nvsmi;

constexpr std::size_t kSniffBytes = 16384;
// Far above any one node; bounds what garbage can make us allocate.
constexpr std::size_t kMaxGpus = 1024;

// "power.draw [W]" → "power.draw"; lower-case.
std::string column_key(std::string_view header) {
  header = trim(header);
  if (auto b = header.find(" ["); b != std::string_view::npos) header = header.substr(0, b);
  return to_lower(trim(header));
}

bool looks_like_field_name(std::string_view h) {
  h = trim(h);
  if (auto b = h.find(" ["); b != std::string_view::npos) {
    if (h.back() != ']') return false;
    h = h.substr(0, b);
  }
  if (h.empty() || !std::isalpha(static_cast<unsigned char>(h[0]))) return false;
  for (char c : h)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  return true;
}

enum class Col {
  kUnknown,
  kTimestamp,
  kIndex,
  kName,
  kUuid,
  kSerial,
  kVbios,
  kBusId,
  kDriver,
  kPersistence,
  kPstate,
  kMig,
  kGenCur,
  kGenMax,
  kGenDevMax,
  kWidthCur,
  kWidthMax,
  kSm,
  kMem,
  kSmMax,
  kMemMax,
  kReasonMask,
  kReason,
  kCounter,
  kTemp,
  kTlimit,
  kMemTemp,
  kDraw,
  kDrawAvg,
  kDrawInst,
  kLimit,
  kEnforced,
  kDefault,
  kEccCur,
  kEccPending,
  kEccVolCorr,
  kEccVolUnc,
  kEccAggCorr,
  kEccAggUnc,
  kRetSbe,
  kRetDbe,
  kRetPending,
  kRemapCorr,
  kRemapUnc,
  kRemapPending,
  kRemapFail,
  kMemTotal,
  kMemUsed,
  kUtilGpu,
  kUtilMem,
  kFabricState,
  kFabricStatus,
  kClique,
  kCluster,
  kReplay
};

struct Column {
  Col col = Col::kUnknown;
  std::string reason;  // kReason: our reason name; kCounter: accumulated_ns key
};

Column classify(const std::string& k) {
  static const std::pair<std::string_view, Col> kTable[] = {
      {"timestamp", Col::kTimestamp},
      {"index", Col::kIndex},
      {"name", Col::kName},
      {"gpu_name", Col::kName},
      {"uuid", Col::kUuid},
      {"gpu_uuid", Col::kUuid},
      {"serial", Col::kSerial},
      {"gpu_serial", Col::kSerial},
      {"vbios_version", Col::kVbios},
      {"pci.bus_id", Col::kBusId},
      {"gpu_bus_id", Col::kBusId},
      {"driver_version", Col::kDriver},
      {"kmd_version", Col::kDriver},
      {"persistence_mode", Col::kPersistence},
      {"pstate", Col::kPstate},
      {"mig.mode.current", Col::kMig},
      {"pcie.link.gen.current", Col::kGenCur},
      {"pcie.link.gen.max", Col::kGenMax},
      {"pcie.link.gen.gpumax", Col::kGenDevMax},
      {"pcie.link.width.current", Col::kWidthCur},
      {"pcie.link.width.max", Col::kWidthMax},
      {"clocks.current.sm", Col::kSm},
      {"clocks.sm", Col::kSm},
      {"clocks.current.memory", Col::kMem},
      {"clocks.mem", Col::kMem},
      {"clocks.max.sm", Col::kSmMax},
      {"clocks.max.memory", Col::kMemMax},
      {"clocks.max.mem", Col::kMemMax},
      {"temperature.gpu", Col::kTemp},
      {"temperature.gpu.tlimit", Col::kTlimit},
      {"temperature.memory", Col::kMemTemp},
      {"power.draw", Col::kDraw},
      {"power.draw.average", Col::kDrawAvg},
      {"power.draw.instant", Col::kDrawInst},
      {"power.limit", Col::kLimit},
      {"enforced.power.limit", Col::kEnforced},
      {"power.default_limit", Col::kDefault},
      {"ecc.mode.current", Col::kEccCur},
      {"ecc.mode.pending", Col::kEccPending},
      {"ecc.errors.corrected.volatile.total", Col::kEccVolCorr},
      {"ecc.errors.uncorrected.volatile.total", Col::kEccVolUnc},
      {"ecc.errors.corrected.aggregate.total", Col::kEccAggCorr},
      {"ecc.errors.uncorrected.aggregate.total", Col::kEccAggUnc},
      {"retired_pages.single_bit_ecc.count", Col::kRetSbe},
      {"retired_pages.sbe", Col::kRetSbe},
      {"retired_pages.double_bit.count", Col::kRetDbe},
      {"retired_pages.dbe", Col::kRetDbe},
      {"retired_pages.pending", Col::kRetPending},
      {"remapped_rows.correctable", Col::kRemapCorr},
      {"remapped_rows.uncorrectable", Col::kRemapUnc},
      {"remapped_rows.pending", Col::kRemapPending},
      {"remapped_rows.failure", Col::kRemapFail},
      {"memory.total", Col::kMemTotal},
      {"memory.used", Col::kMemUsed},
      {"utilization.gpu", Col::kUtilGpu},
      {"utilization.memory", Col::kUtilMem},
      {"fabric.state", Col::kFabricState},
      {"fabric.status", Col::kFabricStatus},
      {"fabric.cliqueid", Col::kClique},
      {"fabric.clusteruuid", Col::kCluster},
      {"pcie.replay_counter", Col::kReplay},
  };
  for (auto [name, col] : kTable)
    if (k == name) return {col, {}};
  for (std::string_view prefix : {"clocks_throttle_reasons.", "clocks_event_reasons."}) {
    if (!starts_with(k, prefix)) continue;
    std::string_view rest = std::string_view(k).substr(prefix.size());
    if (rest == "active") return {Col::kReasonMask, {}};
    if (auto n = clock_event_name(rest)) return {Col::kReason, *n};
  }
  for (std::string_view prefix :
       {"clocks_throttle_reasons_counters.", "clocks_event_reasons_counters."}) {
    if (!starts_with(k, prefix)) continue;
    if (auto n = clock_counter_key(std::string_view(k).substr(prefix.size())))
      return {Col::kCounter, *n};
  }
  return {};
}

// Columns that only --query-gpu output has (a bare "name" or "index" column proves nothing).
bool is_distinctive(Col c) {
  return c != Col::kUnknown && c != Col::kName && c != Col::kIndex && c != Col::kSerial &&
         c != Col::kTimestamp;
}

bool is_header(const std::vector<std::string>& rec, std::size_t* known = nullptr,
               std::size_t* distinctive = nullptr) {
  std::size_t k = 0, d = 0;
  for (const auto& f : rec) {
    if (!looks_like_field_name(f)) return false;
    Col c = classify(column_key(f)).col;
    if (c != Col::kUnknown) ++k;
    if (is_distinctive(c)) ++d;
  }
  if (known) *known = k;
  if (distinctive) *distinctive = d;
  return !rec.empty() && (d >= 1 || k >= 2);
}

// A cell that has nvidia-smi's shape: full bus id, GPU UUID, [N/A], or number + its units.
bool looks_like_nvsmi_cell(std::string_view v) {
  v = trim(v);
  if (v == "[N/A]" || v == "[Not Supported]" || starts_with(v, "GPU-")) return true;
  if (v.size() == 16 && v[8] == ':' && normalize_pci_bus_id(v)) return true;
  for (std::string_view unit : {" MiB", " MHz", " W", " %"})
    if (v.size() > unit.size() && v.substr(v.size() - unit.size()) == unit &&
        number(v.substr(0, v.size() - unit.size())))
      return true;
  return false;
}

template <typename T>
void set(std::optional<T>& field, std::optional<T> v) {
  if (v) field = std::move(v);
}

std::optional<int> as_int(std::optional<std::int64_t> v) {
  if (!v || *v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max())
    return std::nullopt;
  return static_cast<int>(*v);
}

void apply(const Column& c, std::string_view v, GpuFacts& g, Facts& out, ClockEventFlags& flags,
           std::optional<double>& draw_avg, std::optional<double>& draw_inst) {
  switch (c.col) {
    case Col::kUnknown:
    case Col::kTimestamp:
    case Col::kIndex:
      break;
    case Col::kName:
      set(g.name, text(v));
      break;
    case Col::kUuid:
      set(g.uuid, text(v));
      break;
    case Col::kSerial:
      set(g.serial, text(v));
      break;
    case Col::kVbios:
      set(g.vbios, text(v));
      break;
    case Col::kBusId:
      if (auto id = text(v)) set(g.pci_bus_id, normalize_pci_bus_id(*id));
      break;
    case Col::kDriver:
      set(out.host.driver_version, text(v));
      break;
    case Col::kPersistence:
      if (auto e = enabled(v)) g.persistence_mode = *e ? "enabled" : "disabled";
      break;
    case Col::kPstate:
      set(g.pstate, pstate(v));
      break;
    case Col::kMig:
      set(g.mig_enabled, enabled(v));
      break;
    case Col::kGenCur:
      set(g.pcie.gen_current, as_int(integer(v)));
      break;
    case Col::kGenMax:
      set(g.pcie.gen_max, as_int(integer(v)));
      break;
    case Col::kGenDevMax:
      set(g.pcie.gen_device_max, as_int(integer(v)));
      break;
    case Col::kWidthCur:
      set(g.pcie.width_current, as_int(integer(v)));
      break;
    case Col::kWidthMax:
      set(g.pcie.width_max, as_int(integer(v)));
      break;
    case Col::kReplay:
      set(g.pcie.replay_counter, count(v));
      break;
    case Col::kSm:
      set(g.clocks.sm_mhz, as_int(integer(v)));
      break;
    case Col::kMem:
      set(g.clocks.mem_mhz, as_int(integer(v)));
      break;
    case Col::kSmMax:
      set(g.clocks.sm_max_mhz, as_int(integer(v)));
      break;
    case Col::kMemMax:
      set(g.clocks.mem_max_mhz, as_int(integer(v)));
      break;
    case Col::kReasonMask:
      if (auto m = hex_mask(v)) apply_clock_event_mask(*m, g.clock_events);
      break;
    case Col::kReason:
      if (auto on = active(v)) {
        std::uint64_t bit = clock_event_bit(c.reason);
        flags.seen |= bit;
        if (*on) flags.active |= bit;
      } else if (auto m = hex_mask(v)) {  // older drivers print each reason as a mask
        std::uint64_t bit = clock_event_bit(c.reason);
        flags.seen |= bit;
        if (*m & bit) flags.active |= bit;
      }
      break;
    case Col::kCounter:
      if (auto ns = duration_ns(v)) g.clock_events.accumulated_ns[c.reason] = *ns;
      break;
    case Col::kTemp:
      set(g.thermal.gpu_c, as_int(integer(v)));
      break;
    case Col::kTlimit:
      set(g.thermal.margin_c, as_int(integer(v)));
      break;
    case Col::kMemTemp:
      set(g.thermal.memory_c, as_int(integer(v)));
      break;
    case Col::kDraw:
      set(g.power.draw_w, number(v));
      break;
    case Col::kDrawAvg:
      set(draw_avg, number(v));
      break;
    case Col::kDrawInst:
      set(draw_inst, number(v));
      break;
    case Col::kLimit:
      set(g.power.limit_w, number(v));
      break;
    case Col::kEnforced:
      set(g.power.enforced_limit_w, number(v));
      break;
    case Col::kDefault:
      set(g.power.default_limit_w, number(v));
      break;
    case Col::kEccCur:
      set(g.ecc.enabled, enabled(v));
      break;
    case Col::kEccPending:
      set(g.ecc.pending_enabled, enabled(v));
      break;
    case Col::kEccVolCorr:
      set(g.ecc.volatile_counts.corrected, count(v));
      break;
    case Col::kEccVolUnc:
      set(g.ecc.volatile_counts.uncorrected, count(v));
      break;
    case Col::kEccAggCorr:
      set(g.ecc.aggregate_counts.corrected, count(v));
      break;
    case Col::kEccAggUnc:
      set(g.ecc.aggregate_counts.uncorrected, count(v));
      break;
    case Col::kRetSbe:
      set(g.ecc.retired_pages_sbe, as_int(integer(v)));
      break;
    case Col::kRetDbe:
      set(g.ecc.retired_pages_dbe, as_int(integer(v)));
      break;
    case Col::kRetPending:
      set(g.ecc.retired_pages_pending, yes_no(v));
      break;
    case Col::kRemapCorr:
      set(g.ecc.remapped_rows_correctable, as_int(integer(v)));
      break;
    case Col::kRemapUnc:
      set(g.ecc.remapped_rows_uncorrectable, as_int(integer(v)));
      break;
    case Col::kRemapPending:
      set(g.ecc.remapping_pending, yes_no(v));
      break;
    case Col::kRemapFail:
      set(g.ecc.remapping_failed, yes_no(v));
      break;
    case Col::kMemTotal:
      set(g.memory.total_bytes, mib_bytes(v));
      break;
    case Col::kMemUsed:
      set(g.memory.used_bytes, mib_bytes(v));
      break;
    case Col::kUtilGpu:
      set(g.utilization.gpu_pct, as_int(integer(v)));
      break;
    case Col::kUtilMem:
      set(g.utilization.memory_pct, as_int(integer(v)));
      break;
    case Col::kFabricState:
      set(g.fabric.state, fabric_state(v));
      break;
    case Col::kFabricStatus:
      set(g.fabric.status, fabric_status(v));
      break;
    case Col::kClique:
      if (auto id = count(v); id && *id <= 0xffffffffu)
        g.fabric.clique_id = static_cast<std::uint32_t>(*id);
      break;
    case Col::kCluster:
      set(g.fabric.cluster_uuid, text(v));
      break;
  }
}

// The "timestamp" cell, "2024/01/13 09:41:02.123" → seconds since the epoch (local time of the
// node, taken as UTC: only differences are used).
std::optional<double> timestamp_seconds(std::string_view v) {
  v = trim(v);
  auto space = v.find(' ');
  if (space == std::string_view::npos || space != 10) return std::nullopt;
  std::string_view date = v.substr(0, 10);
  if ((date[4] != '/' && date[4] != '-') || date[7] != date[4]) return std::nullopt;
  auto y = parse_int(date.substr(0, 4));
  auto m = parse_int(date.substr(5, 2));
  auto d = parse_int(date.substr(8, 2));
  if (!y || !m || !d || *m < 1 || *m > 12 || *d < 1 || *d > 31) return std::nullopt;
  auto day = SampleSeries::days_from_civil(*y, static_cast<int>(*m), static_cast<int>(*d));
  auto clock = SampleSeries::clock_seconds(v.substr(space + 1));
  if (!day || !clock) return std::nullopt;
  return static_cast<double>(*day) * 86400.0 + *clock;
}

}  // namespace

int sniff_nvsmi_query_csv(std::string_view text) {
  auto head = text.substr(0, kSniffBytes);
  // Cut at the last complete line so a cut record does not count as a short row.
  if (head.size() < text.size())
    if (auto nl = head.rfind('\n'); nl != std::string_view::npos) head = head.substr(0, nl + 1);
  auto recs = split_csv(head, 6);
  if (recs.empty()) return 0;
  std::size_t known = 0, distinctive = 0;
  if (is_header(recs[0], &known, &distinctive)) {
    if (recs[0].size() == 1 && distinctive == 0) return 0;
    for (std::size_t i = 1; i < recs.size(); ++i)
      if (recs[i].size() != recs[0].size()) return 30;  // header plus odd rows: unsure
    if (distinctive >= 2 || (distinctive >= 1 && recs.size() > 1)) return 95;
    return 60;
  }
  // No header: only nvidia-smi-shaped rows of one width earn a weak, noted match.
  if (recs[0].size() < 2) return 0;
  for (const auto& r : recs) {
    if (r.size() != recs[0].size()) return 0;
    bool shaped = false;
    for (const auto& f : r) {
      if (f.size() > 256) return 0;
      if (looks_like_nvsmi_cell(f)) shaped = true;
    }
    if (!shaped) return 0;
  }
  return 20;
}

Status import_nvsmi_query_csv(std::string_view text, Facts& out) {
  auto recs = split_csv(text);
  if (recs.empty()) {
    out.notes.push_back("nvidia-smi --query-gpu CSV: empty");
    return Status::invalid_input("nvidia-smi --query-gpu CSV: nothing readable");
  }
  if (!is_header(recs[0])) {
    out.notes.push_back(
        "nvidia-smi --query-gpu CSV without header (format=csv,noheader): columns unknown, "
        "not imported; capture it without noheader");
    return Status::invalid_input("nvidia-smi --query-gpu CSV without header: columns unknown");
  }
  std::vector<Column> cols;
  cols.reserve(recs[0].size());
  for (const auto& h : recs[0]) cols.push_back(classify(column_key(h)));
  // clocks.sm and clocks.current.sm are the same counter, so a query naming both should
  // print one value twice. When they differ (the seed article's task 5 shows 1710 vs 1410
  // and reads the first as the target the GPU does not hold), clocks.sm is taken as the
  // reference clock, unless a real clocks.max.sm column is there.
  std::optional<std::size_t> sm_col, sm_current_col;
  bool sm_max_col = false;
  for (std::size_t i = 0; i < recs[0].size(); ++i) {
    const std::string key = column_key(recs[0][i]);
    if (key == "clocks.sm") sm_col = i;
    if (key == "clocks.current.sm") sm_current_col = i;
    if (cols[i].col == Col::kSmMax) sm_max_col = true;
  }
  const bool sm_as_reference = sm_col && sm_current_col && !sm_max_col;
  if (sm_as_reference) cols[*sm_col].col = Col::kUnknown;
  bool sm_reference_used = false;
  std::optional<std::size_t> index_col, uuid_col, bus_col, time_col;
  bool mask_col = false;
  for (std::size_t i = 0; i < cols.size(); ++i) {
    if (cols[i].col == Col::kIndex) index_col = i;
    if (cols[i].col == Col::kUuid && !uuid_col) uuid_col = i;
    if (cols[i].col == Col::kBusId && !bus_col) bus_col = i;
    if (cols[i].col == Col::kTimestamp && !time_col) time_col = i;
    if (cols[i].col == Col::kReasonMask) mask_col = true;
  }
  // Without an index column a looped capture is told apart by the UUID or bus id.
  std::optional<std::size_t> key_col;
  if (!index_col) key_col = uuid_col ? uuid_col : bus_col;

  SampleSeries series(out, "nvidia-smi --query-gpu CSV");
  series.reserve(recs.size() - 1);
  const std::size_t first_gpu = out.gpus.size();
  std::size_t bad_rows = 0, repeats = 0;
  std::map<int, std::size_t> position;      // GPU index → out.gpus slot
  std::map<std::string, int> index_of_key;  // UUID / bus id → GPU index, without index column
  for (std::size_t r = 1; r < recs.size(); ++r) {
    const auto& rec = recs[r];
    if (rec == recs[0]) continue;  // header repeated (a looped capture)
    if (rec.size() != cols.size()) {
      ++bad_rows;
      continue;
    }
    GpuFacts g;
    g.index = static_cast<int>(out.gpus.size() - first_gpu);
    if (index_col) {
      if (auto i = as_int(integer(rec[*index_col])); i && *i >= 0) g.index = *i;
    } else if (key_col) {
      if (auto key = nvsmi::text(rec[*key_col]))
        g.index = index_of_key.try_emplace(std::move(*key), g.index).first->second;
    }
    ClockEventFlags flags;
    std::optional<double> draw_avg, draw_inst;
    for (std::size_t i = 0; i < cols.size(); ++i)
      apply(cols[i], rec[i], g, out, flags, draw_avg, draw_inst);
    if (!g.clock_events.active_mask) apply_clock_event_flags(flags, g.clock_events);
    if (sm_as_reference) {
      const auto reference = as_int(integer(rec[*sm_col]));
      if (reference && g.clocks.sm_mhz && *reference > *g.clocks.sm_mhz) {
        g.clocks.sm_max_mhz = reference;
        sm_reference_used = true;
      } else if (!g.clocks.sm_mhz) {
        g.clocks.sm_mhz = reference;
      }
    }
    if (!g.power.draw_w) g.power.draw_w = draw_avg ? draw_avg : draw_inst;
    if (!g.power.limit_w) g.power.limit_w = g.power.enforced_limit_w;
    GpuSample sample;
    sample.gpu = g.index;
    sample.sm_mhz = g.clocks.sm_mhz;
    sample.gpu_c = g.thermal.gpu_c;
    sample.power_w = g.power.draw_w;
    sample.util_pct = g.utilization.gpu_pct;
    if (mask_col) sample.clock_event_mask = g.clock_events.active_mask;
    // A looped capture (-l) repeats each GPU: keep its latest sample.
    bool replaced = false;
    if (auto it = position.find(g.index); it != position.end()) {
      out.gpus[it->second] = std::move(g);
      replaced = true;
      ++repeats;
    }
    if (!replaced && out.gpus.size() - first_gpu == kMaxGpus) {
      out.notes.push_back(
          fmt::format("nvidia-smi --query-gpu CSV: more than {} GPUs; the rest ignored", kMaxGpus));
      break;
    }
    if (!replaced) {
      position[g.index] = out.gpus.size();
      out.gpus.push_back(std::move(g));
    }
    series.add(sample, time_col ? timestamp_seconds(rec[*time_col]) : std::nullopt);
  }
  series.finish(time_col ? "timestamp" : "", std::nullopt);
  if (sm_reference_used)
    out.notes.push_back(
        "nvidia-smi --query-gpu CSV: clocks.sm differs from clocks.current.sm; clocks.sm read as "
        "the reference (maximum) SM clock");
  if (bad_rows)
    out.notes.push_back(
        fmt::format("nvidia-smi --query-gpu CSV: {} row(s) with a field count other than the "
                    "header's {} skipped",
                    bad_rows, cols.size()));
  if (repeats)
    out.notes.push_back(fmt::format(
        "nvidia-smi --query-gpu CSV: {} repeated sample(s) of the same GPU; kept the latest",
        repeats));
  if (out.gpus.empty()) {
    out.notes.push_back("nvidia-smi --query-gpu CSV: header but no data row");
    return Status::invalid_input("nvidia-smi --query-gpu CSV: no data row");
  }
  return Status::ok();
}

}  // namespace gpuvet::import
