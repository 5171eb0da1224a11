// hw/subject_gpus_test.cc — the GPUs a finding's subjects name, and their UUIDs and bus ids.
#include "hw/subject_gpus.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuvet::hw {
namespace {

Facts two_gpus() {
  Facts f;
  for (int i : {0, 3}) {
    GpuFacts g;
    g.index = i;
    g.uuid = "GPU-uuid-" + std::to_string(i);
    g.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";  // nvidia-smi's 8-digit domain
    f.gpus.push_back(g);
  }
  return f;
}

TEST(SubjectGpus, IndicesOfEachSubjectForm) {
  EXPECT_EQ(subject_gpu_indices("GPU3"), (std::vector<int>{3}));
  EXPECT_EQ(subject_gpu_indices("GPU0-GPU12"), (std::vector<int>{0, 12}));
  EXPECT_EQ(subject_gpu_indices("GPU0\xe2\x80\x93GPU3"), (std::vector<int>{0, 1, 2, 3}));
  for (const char* other : {"host", "pid 42", "nvme0n1", "CPU3", "GPU", "GPUx", "GPU1-", "GPU1-2",
                            "GPU1 (0000:3b:00.0)", "GPU3\xe2\x80\x93GPU1", "0000:3b:00.0"})
    EXPECT_TRUE(subject_gpu_indices(other).empty()) << other;
}

TEST(SubjectGpus, ResolvesUuidAndNormalisedBusIdFromFacts) {
  const auto gpus = subject_gpus(two_gpus(), {"GPU0-GPU3", "GPU3", "pid 7"});
  ASSERT_EQ(gpus.size(), 2u);  // GPU3 once
  EXPECT_EQ(gpus[0].index, 0);
  EXPECT_EQ(gpus[0].uuid, "GPU-uuid-0");
  EXPECT_EQ(gpus[0].pci_bus_id, "0000:10:00.0");
  EXPECT_EQ(gpus[1].index, 3);
  EXPECT_EQ(gpus[1].uuid, "GPU-uuid-3");
  EXPECT_EQ(gpus[1].pci_bus_id, "0000:13:00.0");
}

TEST(SubjectGpus, UnknownGpuAndBusOnlySubjects) {
  const auto gpus = subject_gpus(two_gpus(), {"GPU5", "0000:13:00.0", "0000:3B:00.0", "host"});
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(gpus[0].index, 5);  // not in the facts: its identity is unknown
  EXPECT_FALSE(gpus[0].uuid);
  EXPECT_FALSE(gpus[0].pci_bus_id);
  EXPECT_EQ(gpus[1].index, 3);  // the bus id of a known GPU names that GPU
  EXPECT_EQ(gpus[1].uuid, "GPU-uuid-3");
  EXPECT_FALSE(gpus[2].index);  // a lost GPU known by its address only
  EXPECT_EQ(gpus[2].pci_bus_id, "0000:3b:00.0");
  EXPECT_TRUE(subject_gpus(Facts{}, {"host", "eth0"}).empty());
}

}  // namespace
}  // namespace gpuvet::hw
