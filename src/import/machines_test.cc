#include "import/machines.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "fixture_util.h"
#include "gpuvet/import.h"

namespace gpuvet::import {
namespace {

using gpuvet::testing::fixture;
using gpuvet::testing::read_file;
using gpuvet::testing::TempDir;

std::string nvsmi(const std::string& name) { return read_file(fixture("capture/nvsmi/" + name)); }
std::string tool(const std::string& name) { return read_file(fixture("capture/tools/" + name)); }

// The real captures of one H200 (nvidia-smi -q idle and under load, -q -x) and an mpstat
// with a host name beside them (they carry none): one machine, imported as before.
TEST(Machines, OneMachineInSeveralOutputsIsMerged) {
  TempDir dir("gpuvet-machines");
  dir.write("q.txt", nvsmi("gpuvet-h200-drv580-q.txt"));
  dir.write("q-load.txt", nvsmi("gpuvet-h200-drv580-q-load.txt"));
  dir.write("sub/q.xml", nvsmi("gpuvet-h200-drv580-q.xml"));
  dir.write("mpstat.txt", tool("mpstat-P-ALL-12h-average.txt"));
  dir.write("lscpu-ish.txt", "nothing a tool printed\n");
  auto f = import_path(dir.path());
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  ASSERT_EQ(f.value().gpus.size(), 1u);
  EXPECT_EQ(f.value().host.hostname, "gpu-node-07");
}

// Real nvidia-smi -q -x of different machines at the same bus id (an A100 box and a dual
// RTX 2070 box both at 0000:01:00.0): refused, each machine named with its files.
TEST(Machines, TwoBoardsAtOneBusIdAreTwoMachines) {
  TempDir dir("gpuvet-machines");
  dir.write("a.xml", nvsmi("telegraf-a100-sxm4-80gb-mig-drv535.xml"));
  dir.write("b.xml", nvsmi("telegraf-dual-rtx2070-v13.xml"));
  dir.write("cpu/mpstat.txt", tool("mpstat-P-ALL-12h-average.txt"));
  auto f = import_path(dir.path());
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidInput);
  const std::string& m = f.status().message();
  EXPECT_NE(m.find("describe 2 different machines"), std::string::npos) << m;
  EXPECT_NE(m.find("machine 1 (host gpu-node-07; 1× NVIDIA A100-SXM4-80GB"), std::string::npos)
      << m;
  EXPECT_NE(m.find("): a.xml, cpu/mpstat.txt"), std::string::npos) << m;
  EXPECT_NE(m.find("machine 2 (2× NVIDIA GeForce RTX 2070"), std::string::npos) << m;
  EXPECT_NE(m.find("): b.xml"), std::string::npos) << m;
  EXPECT_NE(m.find("bus id 0000:01:00.0 holds GPU-"), std::string::npos) << m;
  EXPECT_NE(m.find("run one machine at a time"), std::string::npos) << m;
}

// Single-GPU boxes at different bus ids with different drivers and no GPU in common.
TEST(Machines, DifferentDriversAndNoCommonGpuAreTwoMachines) {
  TempDir dir("gpuvet-machines");
  dir.write("p400.xml", nvsmi("telegraf-quadro-p400-drv418.xml"));
  dir.write("rtx3080.xml", nvsmi("telegraf-rtx3080-win-drv536-v12.xml"));
  auto f = import_path(dir.path());
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("driver 418.43 in"), std::string::npos)
      << f.status().message();
}

TEST(Machines, TwoHostNamesAreTwoMachines) {
  const std::string a = tool("mpstat-P-ALL-12h-average.txt");
  std::string b = a;
  b.replace(b.find("gpu-node-07"), 11, "gpu-node-08");
  TempDir dir("gpuvet-machines");
  dir.write("a.txt", a);
  dir.write("b.txt", b);
  auto f = import_path(dir.path());
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("host gpu-node-07 in"), std::string::npos)
      << f.status().message();
  // Case and domain do not make another host.
  b = a;
  b.replace(b.find("gpu-node-07"), 11, "GPU-Node-07.cluster.local");
  dir.write("b.txt", b);
  EXPECT_TRUE(import_path(dir.path()).is_ok());
}

// The shared corpus's folder of nvidia-smi -q -x from 20 different machines (ux review: it was
// merged into "13× mixed GPUs").
TEST(Machines, SharedXmlFolderIsManyMachines) {
  const std::string folder = gpuvet::testing::shared("nvsmi-xml");
  GPUVET_REQUIRE_SHARED(folder);
  auto f = import_path(folder);
  ASSERT_FALSE(f.is_ok());
  const std::string& m = f.status().message();
  EXPECT_NE(m.find("different machines"), std::string::npos) << m;
  EXPECT_NE(m.find("telegraf-rtx3090-drv525.xml"), std::string::npos) << m;
}

GpuIdentity board(int index, std::optional<std::string> bus, std::string uuid) {
  return {index, std::move(bus), std::move(uuid), std::nullopt, std::nullopt};
}

TEST(Machines, GroupingRules) {
  MachineIdentity l0, l1, q, i3, kernel_log;
  l0.gpus = {board(0, std::nullopt, "GPU-a"), board(1, std::nullopt, "GPU-b")};  // nvidia-smi -L
  l1.gpus = {board(0, std::nullopt, "GPU-x")};  // another box's -L: index 0 taken by GPU-a
  q.gpus = {board(0, "0000:18:00.0", "GPU-a")};
  q.driver = "535.1";
  i3.gpus = {board(0, "0000:2a:00.0", "GPU-b")};  // `-q -i 1`: index 0 but bus id known
  i3.driver = "550.2";                            // upgraded since, but shares GPU-b
  auto split =
      group_by_machine({{"l0", l0}, {"q", q}, {"i3", i3}, {"log", kernel_log}, {"l1", l1}});
  ASSERT_EQ(split.machines.size(), 2u);
  EXPECT_EQ(split.machines[0].inputs, (std::vector<std::string>{"l0", "q", "i3"}));
  EXPECT_EQ(split.machines[1].inputs, (std::vector<std::string>{"l1"}));
  EXPECT_EQ(split.unnamed, (std::vector<std::string>{"log"}));
  ASSERT_EQ(split.reasons.size(), 1u);
  EXPECT_EQ(split.reasons[0], "GPU0 holds GPU-a in l0 but GPU-x in l1");
  EXPECT_EQ(group_by_machine({{"l0", l0}, {"q", q}, {"i3", i3}}).machines.size(), 1u);
}

}  // namespace
}  // namespace gpuvet::import
