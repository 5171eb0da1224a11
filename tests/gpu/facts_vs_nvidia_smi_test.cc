// GPU-only check (ctest label "gpu"): gpuvet's live facts agree with
// `nvidia-smi -q -x` on the same node, field by field. Prints the comparison
// table so the run can be recorded under docs/results/.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <pugixml.hpp>

#include "core/util.h"
#include "gpuvet/collect.h"

namespace gpuvet {
namespace {

std::optional<double> leading_number(std::string_view s) {
  s = trim(s);
  std::size_t end = 0;
  while (end < s.size() && (std::isdigit(static_cast<unsigned char>(s[end])) || s[end] == '.'))
    ++end;
  return parse_double(s.substr(0, end));
}

std::string text(pugi::xml_node gpu, const char* path) {
  return std::string(trim(gpu.first_element_by_path(path).text().as_string()));
}

struct Row {
  std::string field, nvidia_smi, gpuvet;
  bool agree;
};

TEST(GpuFactsVsNvidiaSmi, EveryFieldAgrees) {
  auto runner = make_process_runner();
  auto smi = runner->run({"nvidia-smi", "-q", "-x"}, std::chrono::seconds(60));
  ASSERT_TRUE(smi.is_ok()) << smi.status().to_string();
  ASSERT_EQ(smi.value().exit_code, 0) << smi.value().err;
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(smi.value().out.c_str()));

  auto fs = make_rooted_file_system("/");
  auto clock = make_system_clock();
  CollectOptions options;
  options.pressure_window = std::chrono::milliseconds(0);
  Collection c = collect_facts(options, Env{*fs, *runner, *clock});
  ASSERT_FALSE(c.facts.gpu_facts_unavailable)
      << (c.facts.notes.empty() ? "" : c.facts.notes.back());

  // Temperatures, the T.Limit margin and current clocks move between two reads (right after
  // a heavy kernel the T.Limit margin climbs by several degrees a second): nvidia-smi is read
  // again after gpuvet, and gpuvet's reading must lie between the two, within the tolerance.
  auto smi_after = runner->run({"nvidia-smi", "-q", "-x"}, std::chrono::seconds(60));
  ASSERT_TRUE(smi_after.is_ok()) << smi_after.status().to_string();
  pugi::xml_document doc_after;
  ASSERT_TRUE(doc_after.load_string(smi_after.value().out.c_str()));
  auto gpu_after = [&](std::string_view bus) {
    for (auto gpu : doc_after.child("nvidia_smi_log").children("gpu"))
      if (normalize_pci_bus_id(gpu.attribute("id").as_string()) == bus) return gpu;
    return pugi::xml_node();
  };

  auto root = doc.child("nvidia_smi_log");
  EXPECT_EQ(std::string(trim(root.child("driver_version").text().as_string())),
            c.facts.host.driver_version.value_or(""));
  int xml_gpus = 0;
  std::vector<Row> rows;
  for (auto gpu : root.children("gpu")) {
    ++xml_gpus;
    auto bus = normalize_pci_bus_id(gpu.attribute("id").as_string());
    ASSERT_TRUE(bus);
    const GpuFacts* g = nullptr;
    for (const auto& f : c.facts.gpus)
      if (f.pci_bus_id == bus) g = &f;
    ASSERT_NE(g, nullptr) << "gpuvet did not report GPU " << *bus;
    const std::string id = "GPU" + std::to_string(g->index) + " ";
    auto same = [&](const char* field, const std::string& a, const std::optional<std::string>& b) {
      rows.push_back({id + field, a, b.value_or("null"), b && a == *b});
    };
    auto near = [&](const char* field, const std::string& a, std::optional<double> b, double tol) {
      auto x = leading_number(a);
      bool ok = x && b && std::fabs(*x - *b) <= tol;
      rows.push_back({id + field, a, b ? fmt::format("{}", *b) : "null", ok});
    };
    const pugi::xml_node after = gpu_after(*bus);
    // A moving reading: gpuvet's value between nvidia-smi's before and after, ± tol.
    auto between = [&](const char* field, const char* path, std::optional<double> b, double tol) {
      const std::string a0 = text(gpu, path);
      const std::string a1 = after ? text(after, path) : a0;
      auto x0 = leading_number(a0);
      auto x1 = leading_number(a1);
      if (!x0) return;
      if (!x1) x1 = x0;
      const bool ok = b && *b >= std::min(*x0, *x1) - tol && *b <= std::max(*x0, *x1) + tol;
      rows.push_back(
          {id + field, a0 == a1 ? a0 : a0 + " .. " + a1, b ? fmt::format("{}", *b) : "null", ok});
    };
    auto opt_d = [](auto v) -> std::optional<double> {
      if (!v) return std::nullopt;
      return static_cast<double>(*v);
    };
    same("name", text(gpu, "product_name"), g->name);
    same("uuid", text(gpu, "uuid"), g->uuid);
    same("serial", text(gpu, "serial"), g->serial);
    same("vbios", text(gpu, "vbios_version"), g->vbios);
    same("pci_bus_id", *normalize_pci_bus_id(text(gpu, "pci/pci_bus_id")), g->pci_bus_id);
    near("pcie.gen_current", text(gpu, "pci/pci_gpu_link_info/pcie_gen/current_link_gen"),
         opt_d(g->pcie.gen_current), 0);
    near("pcie.gen_max", text(gpu, "pci/pci_gpu_link_info/pcie_gen/max_link_gen"),
         opt_d(g->pcie.gen_max), 0);
    near("pcie.width_current", text(gpu, "pci/pci_gpu_link_info/link_widths/current_link_width"),
         opt_d(g->pcie.width_current), 0);
    near("pcie.width_max", text(gpu, "pci/pci_gpu_link_info/link_widths/max_link_width"),
         opt_d(g->pcie.width_max), 0);
    near("pcie.replay_counter", text(gpu, "pci/replay_counter"), opt_d(g->pcie.replay_counter), 0);
    near("clocks.sm_max", text(gpu, "max_clocks/sm_clock"), opt_d(g->clocks.sm_max_mhz), 0);
    near("clocks.mem_max", text(gpu, "max_clocks/mem_clock"), opt_d(g->clocks.mem_max_mhz), 0);
    // Current clocks move between the two reads; an idle GPU hops between a few P-state clocks.
    between("clocks.mem", "clocks/mem_clock", opt_d(g->clocks.mem_mhz),
            0.15 * g->clocks.mem_max_mhz.value_or(0));
    std::string limit = text(gpu, "gpu_power_readings/current_power_limit");
    if (limit.empty()) limit = text(gpu, "power_readings/power_limit");
    near("power.limit", limit, g->power.limit_w, 0.5);
    std::string deflimit = text(gpu, "gpu_power_readings/default_power_limit");
    if (deflimit.empty()) deflimit = text(gpu, "power_readings/default_power_limit");
    near("power.default_limit", deflimit, g->power.default_limit_w, 0.5);
    std::string ecc = text(gpu, "ecc_mode/current_ecc");
    same("ecc.enabled", ecc,
         g->ecc.enabled ? std::optional<std::string>(*g->ecc.enabled ? "Enabled" : "Disabled")
                        : std::nullopt);
    near("memory.total_mib", text(gpu, "fb_memory_usage/total"),
         g->memory.total_bytes ? std::optional<double>(*g->memory.total_bytes / 1048576.0)
                               : std::nullopt,
         1.0);
    between("thermal.gpu_c", "temperature/gpu_temp", opt_d(g->thermal.gpu_c), 3);
    between("thermal.margin_c", "temperature/gpu_temp_tlimit", opt_d(g->thermal.margin_c), 3);
    std::string mig = text(gpu, "mig_mode/current_mig");
    if (mig == "Enabled" || mig == "Disabled")
      same("mig", mig,
           g->mig_enabled ? std::optional<std::string>(*g->mig_enabled ? "Enabled" : "Disabled")
                          : std::nullopt);
  }
  EXPECT_EQ(static_cast<std::size_t>(xml_gpus), c.facts.gpus.size());
  std::printf("%-28s %-40s %-40s %s\n", "field", "nvidia-smi -q -x", "gpuvet facts", "agree");
  for (const auto& r : rows) {
    std::printf("%-28s %-40s %-40s %s\n", r.field.c_str(), r.nvidia_smi.c_str(), r.gpuvet.c_str(),
                r.agree ? "yes" : "NO");
    EXPECT_TRUE(r.agree) << r.field << ": nvidia-smi '" << r.nvidia_smi << "' vs gpuvet '"
                         << r.gpuvet << "'";
  }
}

}  // namespace
}  // namespace gpuvet
