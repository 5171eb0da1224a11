// DeviceHealth without a GPU: only sticky errors mark a device, the first one is kept, and
// each run's health is its own.
#include "gpu/device_health.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuvet::gpu {
namespace {

TEST(DeviceHealth, AStickyErrorMakesTheDeviceUnusable) {
  DeviceHealth health;
  EXPECT_TRUE(health.usable(3));
  EXPECT_TRUE(health.check(3).ok());
  health.record(3, cuda_status(cudaErrorIllegalAddress));
  EXPECT_FALSE(health.usable(3));
  EXPECT_EQ(health.dead_reason(3), cuda_text(cudaErrorIllegalAddress));
  const GpuStatus s = health.check(3);
  EXPECT_TRUE(s.is_error());
  EXPECT_EQ(s.text, "not run: GPU3 unusable after " + cuda_text(cudaErrorIllegalAddress));
  EXPECT_TRUE(health.usable(2));
}

TEST(DeviceHealth, OtherFailuresAreNotRemembered) {
  DeviceHealth health;
  health.record(0, cuda_status(cudaErrorMemoryAllocation));
  health.record(0, GpuStatus::error("wrong data: 1 mismatched words"));
  health.record(0, GpuStatus::timeout());
  health.record(-1, cuda_status(cudaErrorIllegalAddress));  // host memory: no device
  EXPECT_TRUE(health.usable(0));
  EXPECT_TRUE(health.usable(-1));
}

TEST(DeviceHealth, TheFirstStickyErrorIsKept) {
  DeviceHealth health;
  health.record(1, cuda_status("verification failed", cudaErrorLaunchFailure));
  health.record(1, cuda_status(cudaErrorIllegalAddress));
  EXPECT_EQ(health.dead_reason(1), "verification failed: " + cuda_text(cudaErrorLaunchFailure));
}

TEST(DeviceHealth, EachRunHasItsOwn) {
  DeviceHealth first, second;
  first.record(0, cuda_status(cudaErrorIllegalAddress));
  EXPECT_FALSE(first.usable(0));
  EXPECT_TRUE(second.usable(0));
}

}  // namespace
}  // namespace gpuvet::gpu
