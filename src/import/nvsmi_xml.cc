#include "import/nvsmi_xml.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <pugixml.hpp>

#include "core/util.h"
#include "import/nvsmi_text.h"

namespace gpuvet::import {
namespace {

using namespace nvsmi;

constexpr std::size_t kSniffBytes = 4096;
// Far above any one node (NVL72 trays hold 4); bounds what garbage can make us allocate.
constexpr int kMaxGpus = 1024;

std::string_view val(const pugi::xml_node& n) { return n ? n.child_value() : std::string_view{}; }
std::string_view val(const pugi::xml_node& n, const char* name) { return val(n.child(name)); }

// First of several element names that exists (old and new DTD spellings).
pugi::xml_node either(const pugi::xml_node& n, const char* a, const char* b) {
  pugi::xml_node c = n.child(a);
  return c ? c : n.child(b);
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
std::optional<int> int_of(const pugi::xml_node& n, const char* name) {
  return as_int(integer(val(n, name)));
}

// Old DTDs: <single_bit>/<double_bit> with one count per location and a <total>.
std::optional<std::uint64_t> bit_block_total(const pugi::xml_node& block) {
  if (!block) return std::nullopt;
  if (auto total = count(val(block, "total"))) return total;
  std::optional<std::uint64_t> sum;
  for (pugi::xml_node c : block.children()) {
    if (c.type() != pugi::node_element || std::string_view(c.name()) == "total") continue;
    if (auto v = count(val(c))) sum = sum.value_or(0) + *v;
  }
  return sum;
}

void read_ecc_counts(const pugi::xml_node& n, EccCounts& out) {
  if (!n) return;
  pugi::xml_node sbe = n.child("single_bit"), dbe = n.child("double_bit");
  if (sbe || dbe) {
    set(out.corrected, bit_block_total(sbe));
    set(out.uncorrected, bit_block_total(dbe));
    return;
  }
  // Newer DTDs: sram_/dram_ (un)correctable; 580+ split sram_uncorrectable into _parity and
  // _secded, so a plain sram_uncorrectable, when present, replaces them.
  bool sram_unc_plain = static_cast<bool>(n.child("sram_uncorrectable"));
  std::optional<std::uint64_t> corr, unc;
  for (pugi::xml_node c : n.children()) {
    if (c.type() != pugi::node_element) continue;
    std::string_view name = c.name();
    if (name.find("threshold") != std::string_view::npos) continue;
    auto v = count(val(c));
    if (!v) continue;
    if (name.find("uncorrectable") != std::string_view::npos) {
      if (sram_unc_plain && name != "sram_uncorrectable" && starts_with(name, "sram")) continue;
      unc = unc.value_or(0) + *v;
    } else if (name.find("correctable") != std::string_view::npos) {
      corr = corr.value_or(0) + *v;
    }
  }
  set(out.corrected, corr);
  set(out.uncorrected, unc);
}

void read_clock_reasons(const pugi::xml_node& n, ClockEventReasons& ce) {
  if (!n) return;
  ClockEventFlags flags;
  for (pugi::xml_node c : n.children()) {
    if (c.type() != pugi::node_element) continue;
    std::string_view name = c.name();
    for (std::string_view prefix : {"clocks_event_reason_", "clocks_throttle_reason_"})
      if (starts_with(name, prefix)) name.remove_prefix(prefix.size());
    auto ours = clock_event_name(name);
    auto on = active(val(c));
    if (!ours || !on) continue;
    std::uint64_t bit = clock_event_bit(*ours);
    flags.seen |= bit;
    if (*on) flags.active |= bit;
  }
  apply_clock_event_flags(flags, ce);
}

void read_clock_counters(const pugi::xml_node& n, ClockEventReasons& ce) {
  if (!n) return;
  for (pugi::xml_node c : n.children()) {
    if (c.type() != pugi::node_element) continue;
    std::string_view name = c.name();
    for (std::string_view prefix :
         {"clocks_event_reasons_counters_", "clocks_throttle_reasons_counters_"})
      if (starts_with(name, prefix)) name.remove_prefix(prefix.size());
    auto key = clock_counter_key(name);
    auto ns = duration_ns(val(c));
    if (key && ns) ce.accumulated_ns[*key] = *ns;
  }
}

void read_gpu(const pugi::xml_node& g, GpuFacts& gpu, Facts& out) {
  set(gpu.name, text(val(g, "product_name")));
  set(gpu.uuid, text(val(g, "uuid")));
  set(gpu.serial, text(val(g, "serial")));
  set(gpu.vbios, text(val(g, "vbios_version")));
  if (auto id = text(g.attribute("id").value())) set(gpu.pci_bus_id, normalize_pci_bus_id(*id));
  if (auto pm = enabled(val(g, "persistence_mode")))
    gpu.persistence_mode = *pm ? "enabled" : "disabled";
  set(gpu.recovery_action, text(val(g, "gpu_recovery_action")));
  set(gpu.pstate, pstate(val(g, "performance_state")));
  set(gpu.mig_enabled, enabled(val(g.child("mig_mode"), "current_mig")));

  if (pugi::xml_node pci = g.child("pci")) {
    if (auto id = text(val(pci, "pci_bus_id"))) set(gpu.pci_bus_id, normalize_pci_bus_id(*id));
    set(gpu.pcie.replay_counter, count(val(pci, "replay_counter")));
    pugi::xml_node link = pci.child("pci_gpu_link_info");
    pugi::xml_node gen = link.child("pcie_gen");
    set(gpu.pcie.gen_max, int_of(gen, "max_link_gen"));
    set(gpu.pcie.gen_current, int_of(gen, "current_link_gen"));
    set(gpu.pcie.gen_device_max, int_of(gen, "max_device_link_gen"));
    pugi::xml_node w = link.child("link_widths");
    set(gpu.pcie.width_max, int_of(w, "max_link_width"));
    set(gpu.pcie.width_current, int_of(w, "current_link_width"));
  }

  read_clock_reasons(either(g, "clocks_event_reasons", "clocks_throttle_reasons"),
                     gpu.clock_events);
  read_clock_counters(
      either(g, "clocks_event_reasons_counters", "clocks_throttle_reasons_counters"),
      gpu.clock_events);

  pugi::xml_node fb = g.child("fb_memory_usage");
  set(gpu.memory.total_bytes, mib_bytes(val(fb, "total")));
  set(gpu.memory.used_bytes, mib_bytes(val(fb, "used")));
  pugi::xml_node util = g.child("utilization");
  set(gpu.utilization.gpu_pct, int_of(util, "gpu_util"));
  set(gpu.utilization.memory_pct, int_of(util, "memory_util"));

  pugi::xml_node mode = g.child("ecc_mode");
  set(gpu.ecc.enabled, enabled(val(mode, "current_ecc")));
  set(gpu.ecc.pending_enabled, enabled(val(mode, "pending_ecc")));
  pugi::xml_node errs = g.child("ecc_errors");
  read_ecc_counts(errs.child("volatile"), gpu.ecc.volatile_counts);
  read_ecc_counts(errs.child("aggregate"), gpu.ecc.aggregate_counts);
  pugi::xml_node rp = g.child("retired_pages");
  set(gpu.ecc.retired_pages_sbe,
      int_of(rp.child("multiple_single_bit_retirement"), "retired_count"));
  set(gpu.ecc.retired_pages_dbe, int_of(rp.child("double_bit_retirement"), "retired_count"));
  {
    auto blacklist = yes_no(val(rp, "pending_blacklist"));
    auto retirement = yes_no(val(rp, "pending_retirement"));
    if (blacklist || retirement)
      gpu.ecc.retired_pages_pending = blacklist.value_or(false) || retirement.value_or(false);
  }
  pugi::xml_node rr = g.child("remapped_rows");
  set(gpu.ecc.remapped_rows_correctable, int_of(rr, "remapped_row_corr"));
  set(gpu.ecc.remapped_rows_uncorrectable, int_of(rr, "remapped_row_unc"));
  set(gpu.ecc.remapping_pending, yes_no(val(rr, "remapped_row_pending")));
  set(gpu.ecc.remapping_failed, yes_no(val(rr, "remapped_row_failure")));

  pugi::xml_node th = g.child("temperature");
  set(gpu.thermal.gpu_c, int_of(th, "gpu_temp"));
  set(gpu.thermal.margin_c, int_of(th, "gpu_temp_tlimit"));
  // Only absolute thresholds; the *_tlimit_threshold ones are relative to T.Limit.
  set(gpu.thermal.shutdown_c, int_of(th, "gpu_temp_max_threshold"));
  set(gpu.thermal.slowdown_c, int_of(th, "gpu_temp_slow_threshold"));
  set(gpu.thermal.gpu_max_operating_c, int_of(th, "gpu_temp_max_gpu_threshold"));
  set(gpu.thermal.memory_max_c, int_of(th, "gpu_temp_max_mem_threshold"));
  set(gpu.thermal.memory_c, int_of(th, "memory_temp"));

  pugi::xml_node pw = either(g, "gpu_power_readings", "power_readings");
  for (const char* name : {"power_draw", "average_power_draw", "instant_power_draw"})
    if (!gpu.power.draw_w) set(gpu.power.draw_w, number(val(pw, name)));
  // Old DTDs: power_limit (management) + enforced_power_limit; newer: requested_power_limit
  // (management) + current_power_limit (enforced).
  set(gpu.power.limit_w, number(val(pw, "power_limit")));
  if (!gpu.power.limit_w) set(gpu.power.limit_w, number(val(pw, "requested_power_limit")));
  set(gpu.power.enforced_limit_w, number(val(pw, "enforced_power_limit")));
  if (!gpu.power.enforced_limit_w)
    set(gpu.power.enforced_limit_w, number(val(pw, "current_power_limit")));
  if (!gpu.power.limit_w) set(gpu.power.limit_w, gpu.power.enforced_limit_w);
  set(gpu.power.default_limit_w, number(val(pw, "default_power_limit")));

  pugi::xml_node clk = g.child("clocks");
  set(gpu.clocks.sm_mhz, int_of(clk, "sm_clock"));
  set(gpu.clocks.mem_mhz, int_of(clk, "mem_clock"));
  pugi::xml_node mx = g.child("max_clocks");
  set(gpu.clocks.sm_max_mhz, int_of(mx, "sm_clock"));
  set(gpu.clocks.mem_max_mhz, int_of(mx, "mem_clock"));

  if (pugi::xml_node f = g.child("fabric")) {
    set(gpu.fabric.state, fabric_state(val(f, "state")));
    set(gpu.fabric.status, fabric_status(val(f, "status")));
    if (auto id = count(val(either(f, "cliqueId", "clique_id"))); id && *id <= 0xffffffffu)
      gpu.fabric.clique_id = static_cast<std::uint32_t>(*id);
    set(gpu.fabric.cluster_uuid, text(val(either(f, "clusterUuid", "cluster_uuid"))));
    if (pugi::xml_node h = f.child("health"))
      set(gpu.fabric.health_summary, text(val(h, "summary")));
  }

  for (pugi::xml_node p : g.child("processes").children("process_info")) {
    auto pid = as_int(integer(val(p, "pid")));
    if (!pid) continue;
    ProcessFacts pf;
    pf.host_pid = *pid;
    pf.gpu = gpu.index;
    set(pf.name, text(val(p, "process_name")));
    set(pf.used_memory_bytes, mib_bytes(val(p, "used_memory")));
    out.processes.push_back(std::move(pf));
  }

  std::size_t migs = 0;
  for (pugi::xml_node m : g.child("mig_devices").children("mig_device")) {
    (void)m;
    ++migs;
  }
  if (migs) out.notes.push_back(fmt::format("GPU{}: {} MIG device(s) listed", gpu.index, migs));
}

}  // namespace

int sniff_nvsmi_xml(std::string_view text) {
  std::string_view head = text.substr(0, kSniffBytes);
  if (head.find("<nvidia_smi_log") != std::string_view::npos ||
      head.find("nvsmi_device") != std::string_view::npos)
    return 100;
  if (head.find("<?xml") != std::string_view::npos &&
      head.find("<gpu id=") != std::string_view::npos &&
      head.find("<product_name>") != std::string_view::npos)
    return 60;
  return 0;
}

Status import_nvsmi_xml(std::string_view text, Facts& out) {
  pugi::xml_document doc;
  // parse_default without parse_doctype; the DOCTYPE names a DTD file we never open.
  pugi::xml_parse_result res =
      doc.load_buffer(text.data(), text.size(), pugi::parse_default, pugi::encoding_auto);
  // On error pugixml keeps what it parsed before the damage: read that, and say so.
  if (!res)
    out.notes.push_back(
        fmt::format("nvidia-smi -q -x: XML damaged at byte {} ({}); read what came before",
                    res.offset, res.description()));
  pugi::xml_node log = doc.child("nvidia_smi_log");
  if (!log) {
    out.notes.push_back("nvidia-smi -q -x: no <nvidia_smi_log> element");
    return Status::invalid_input("nvidia-smi -q -x: nothing readable");
  }
  set(out.host.driver_version, nvsmi::text(val(log, "driver_version")));
  set(out.host.cuda_driver_version, nvsmi::text(val(log, "cuda_version")));
  nvsmi::read_timestamp(val(log, "timestamp"), out);
  if (!out.host.driver_version) set(out.host.driver_version, nvsmi::text(val(log, "kmd_version")));

  int index = 0;
  for (pugi::xml_node g : log.children("gpu")) {
    if (index == kMaxGpus) {
      out.notes.push_back(
          fmt::format("nvidia-smi -q -x: more than {} <gpu> elements; the rest ignored", kMaxGpus));
      break;
    }
    GpuFacts gpu;
    gpu.index = index++;
    read_gpu(g, gpu, out);
    out.gpus.push_back(std::move(gpu));
  }
  auto attached = count(val(log, "attached_gpus"));
  if (attached && *attached != static_cast<std::uint64_t>(index))
    out.notes.push_back(fmt::format(
        "attached_gpus says {} but the XML holds {} <gpu> element(s) (filtered with -i, or cut); "
        "indices here count the elements shown and may not be NVML indices",
        *attached, index));
  if (out.gpus.empty() && !out.host.driver_version) {
    out.notes.push_back("nvidia-smi -q -x: no <gpu> element and no driver version");
    return Status::invalid_input("nvidia-smi -q -x: nothing readable");
  }
  return Status::ok();
}

}  // namespace gpuvet::import
