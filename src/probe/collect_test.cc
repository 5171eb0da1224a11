// collect_facts() end to end on a fixture tree (2 NUMA nodes, 4 GPUs) with the fake NVML.
#include "gpuvet/collect.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>

#include "fakes/file_systems.h"
#include "gpuvet/report.h"

namespace gpuvet {
namespace {

// dmesg must not reach the machine running the tests.
class NoDmesg final : public CommandRunner {
 public:
  Result<CommandResult> run(const std::vector<std::string>&, std::chrono::milliseconds,
                            std::size_t) const override {
    CommandResult r;
    r.exit_code = 1;
    r.err = "dmesg: read kernel buffer failed: Operation not permitted";
    return r;
  }
};

struct Fixture {
  std::unique_ptr<FileSystem> fs;
  NoDmesg runner;
  std::unique_ptr<Clock> clock = make_system_clock();
};

Collection collect(const std::string& sysroot, const std::string& scenario_name,
                   std::chrono::milliseconds gpu_timeout = std::chrono::milliseconds(3000),
                   const Clock* clock = nullptr) {
  const std::string root = std::string(GPUVET_TEST_DATA) + "/fixtures/" + sysroot;
  ::setenv("GPUVET_FAKE_NVML_SCENARIO",
           (std::string(GPUVET_TEST_DATA) + "/scenarios/" + scenario_name).c_str(), 1);
  Fixture f;
  f.fs = make_rooted_file_system(root);
  CollectOptions o;
  o.root = root;
  o.nvml_library = GPUVET_FAKE_NVML;
  o.gpu_timeout = gpu_timeout;
  o.pressure_window = std::chrono::milliseconds(5);
  return collect_facts(o, Env{*f.fs, f.runner, clock ? *clock : *f.clock});
}

bool any_note(const Facts& f, const std::string& needle) {
  return std::any_of(f.notes.begin(), f.notes.end(),
                     [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}

TEST(CollectTest, TwoNumaFourGpus) {
  testing::FakeClock clock;
  auto c = collect("sysroot-2numa-4gpu", "sysroot-2numa-4gpu.json", std::chrono::milliseconds(3000),
                   &clock);
  const Facts& f = c.facts;
  // When: /proc/uptime of the tree, the wall clock of the Env.
  EXPECT_EQ(f.host.uptime_s, 354123.45);
  EXPECT_EQ(f.host.collected_unix, 1764669600);
  EXPECT_STREQ(nvml_failure_name(c.nvml_failure), "none");
  ASSERT_EQ(f.host.numa_nodes.size(), 2u);
  EXPECT_EQ(f.host.numa_nodes[1].cpus.front(), 16);
  EXPECT_EQ(f.host.numa_nodes[1].cpus.back(), 31);
  EXPECT_EQ(f.host.nvlink_disabled_by_driver, false);
  ASSERT_EQ(f.gpus.size(), 4u);
  EXPECT_EQ(f.gpus[0].numa_node, 0);
  EXPECT_EQ(f.gpus[1].numa_node, 0);
  EXPECT_EQ(f.gpus[2].numa_node, 1);
  EXPECT_EQ(f.gpus[3].numa_node, 1);
  EXPECT_EQ(f.gpus[2].acs_redirects_p2p, true);
  EXPECT_FALSE(f.gpus[2].acs_bridges.empty());
  ASSERT_EQ(f.pairs.size(), 6u);
  EXPECT_EQ(f.pairs[0].path, PathType::kNODE);  // GPU0-GPU1
  EXPECT_EQ(f.pairs[1].path, PathType::kSYS);   // GPU0-GPU2

  // The containerised process is found with its binding; the invisible one is a note.
  auto p = std::find_if(f.processes.begin(), f.processes.end(),
                        [](const ProcessFacts& x) { return x.host_pid == 4242; });
  ASSERT_NE(p, f.processes.end());
  EXPECT_EQ(p->local_pid, 4242);
  EXPECT_EQ(p->ns_pids, (std::vector<int>{4242, 17}));
  EXPECT_EQ(p->gpu, 0);
  EXPECT_EQ(p->cpus_allowed.value_or(""), "16-31");
  EXPECT_EQ(p->mems_allowed_ids, std::vector<int>{1});
  auto ghost = std::find_if(f.processes.begin(), f.processes.end(),
                            [](const ProcessFacts& x) { return x.host_pid == 777777; });
  ASSERT_NE(ghost, f.processes.end());
  EXPECT_FALSE(ghost->local_pid);
  EXPECT_TRUE(any_note(f, "777777"));

  // No kernel log in the tree and dmesg refused: said, not hidden.
  EXPECT_FALSE(f.kernel_log.readable);
  EXPECT_TRUE(any_note(f, "kernel log unreadable"));

  // The JSON view is valid JSON with nulls, not zeros, for unknown values.
  auto j = nlohmann::json::parse(facts_to_json(f));
  EXPECT_EQ(j["schema"], "gpuvet.report/1");
  EXPECT_EQ(j["gpus"].size(), 4u);
  EXPECT_EQ(j["gpus"][2]["numa_node"], 1);
  EXPECT_EQ(j["pairs"][1]["path"], "SYS");
  EXPECT_TRUE(j["gpus"][0]["ecc"]["retired_pages_sbe"].is_null());
  EXPECT_DOUBLE_EQ(j["host"]["uptime_s"].get<double>(), 354123.45);
  EXPECT_EQ(j["host"]["collected_unix"], 1764669600);
  EXPECT_TRUE(j["samples"].is_array());
}

TEST(CollectTest, VmWithOneH200) {
  auto c = collect("sysroot-1gpu-vm", "h200-1gpu-idle.json");
  const Facts& f = c.facts;
  EXPECT_EQ(f.host.virtual_machine, true);
  EXPECT_EQ(f.host.nvlink_disabled_by_driver, true);
  EXPECT_EQ(f.host.uptime_s, 8123.77);
  ASSERT_TRUE(f.host.collected_unix);
  EXPECT_GT(*f.host.collected_unix, 1700000000);  // the system clock
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].acs_redirects_p2p, false);  // directly under the root complex
  EXPECT_EQ(f.gpus[0].numa_node, 0);              // sysfs says -1; its local CPUs are all on node 0
  EXPECT_TRUE(f.pairs.empty());
  const std::string text = render_facts_text(f);
  EXPECT_NE(text.find("NVIDIA H200"), std::string::npos);
  EXPECT_NE(text.find("Gen5/5 x16/16"), std::string::npos);
}

TEST(CollectTest, HungGpuDoesNotHangCollection) {
  const auto start = std::chrono::steady_clock::now();
  auto c = collect("sysroot-1gpu-vm", "fault-hang.json", std::chrono::milliseconds(400));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(c.abandoned_probes);
  ASSERT_EQ(c.facts.gpus.size(), 2u);
  EXPECT_TRUE(c.facts.gpus[1].unresponsive);
  EXPECT_TRUE(any_note(c.facts, "GPU1 not responding"));
}

TEST(CollectTest, NoDriverStillReportsTheHost) {
  auto c = collect("sysroot-1gpu-vm", "fault-driver-not-loaded.json");
  EXPECT_STREQ(nvml_failure_name(c.nvml_failure), "driver-not-loaded");
  EXPECT_TRUE(c.facts.gpu_facts_unavailable);
  EXPECT_TRUE(c.facts.host.hostname);
  EXPECT_FALSE(c.facts.host.numa_nodes.empty());
  EXPECT_TRUE(any_note(c.facts, "not loaded"));
}

}  // namespace
}  // namespace gpuvet
