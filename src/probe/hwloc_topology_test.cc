#include "probe/hwloc_topology.h"

#include <gtest/gtest.h>

namespace gpuvet::probe {
namespace {

TEST(HwlocTest, SyntheticTwoSockets) {
  auto host = read_hwloc_synthetic("pack:2 numa:1 core:4 pu:2");
  ASSERT_TRUE(host.is_ok()) << host.status().to_string();
  EXPECT_EQ(host.value().packages, 2);
  EXPECT_EQ(host.value().cores, 8);
  EXPECT_EQ(host.value().logical_cpus, 16);
  ASSERT_EQ(host.value().numa_nodes.size(), 2u);
  EXPECT_EQ(host.value().numa_nodes[0].cpus.size(), 8u);
  EXPECT_EQ(host.value().numa_nodes[1].cpus.front(), 8);
}

TEST(HwlocTest, BadSyntheticIsInvalidInput) {
  auto host = read_hwloc_synthetic("pack:banana");
  EXPECT_EQ(host.status().code(), StatusCode::kInvalidInput);
}

TEST(HwlocTest, LiveMachineHasCpus) {
  auto host = read_hwloc_host();
  ASSERT_TRUE(host.is_ok()) << host.status().to_string();
  EXPECT_GE(host.value().logical_cpus, 1);
  EXPECT_GE(host.value().numa_nodes.size(), 1u);
}

}  // namespace
}  // namespace gpuvet::probe
