// The kit's status without a GPU: CUDA error text, the call in front when named, the sticky
// table, deadline wording and GPUVET_CUDA_TRY's early return.
#include "gpu/cuda_status.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace gpuvet::gpu {
namespace {

TEST(CudaStatus, SuccessIsOk) {
  EXPECT_TRUE(cuda_status(cudaSuccess).ok());
  EXPECT_TRUE(cuda_status("cudaMalloc", cudaSuccess).ok());
  EXPECT_TRUE(GpuStatus{}.ok());
}

TEST(CudaStatus, AnErrorCarriesItsCodeAndText) {
  const GpuStatus s = cuda_status(cudaErrorMemoryAllocation);
  EXPECT_TRUE(s.is_error());
  EXPECT_EQ(s.code, cudaErrorMemoryAllocation);
  EXPECT_EQ(s.text, "cudaErrorMemoryAllocation: out of memory");
  EXPECT_EQ(s.text, cuda_text(cudaErrorMemoryAllocation));
  EXPECT_EQ(cuda_status("cudaMalloc", cudaErrorMemoryAllocation).text,
            "cudaMalloc: cudaErrorMemoryAllocation: out of memory");
}

TEST(CudaStatus, ContextGoesInFrontOfErrorsOnly) {
  EXPECT_EQ(with_context("setup", GpuStatus::error("x")).text, "setup: x");
  EXPECT_TRUE(with_context("setup", GpuStatus{}).ok());
  const GpuStatus t = with_context("setup", GpuStatus::timeout());
  EXPECT_TRUE(t.is_timeout());
  EXPECT_TRUE(t.text.empty());
  EXPECT_TRUE(GpuStatus::stopped().is_stopped());
}

TEST(CudaStatus, AtRankPinsFailuresOnly) {
  EXPECT_EQ(at_rank(3, GpuStatus::error("x")).ranks, std::vector<int>{3});
  EXPECT_TRUE(at_rank(3, GpuStatus{}).ranks.empty());
  EXPECT_EQ(GpuStatus::timeout({2, 5}).ranks, (std::vector<int>{2, 5}));
}

TEST(CudaStatus, StickyErrorsAreTheContextKillers) {
  EXPECT_TRUE(is_sticky(cudaErrorIllegalAddress));
  EXPECT_TRUE(is_sticky(cudaErrorLaunchFailure));
  EXPECT_TRUE(is_sticky(cudaErrorECCUncorrectable));
  EXPECT_FALSE(is_sticky(cudaSuccess));
  EXPECT_FALSE(is_sticky(cudaErrorMemoryAllocation));
  EXPECT_FALSE(is_sticky(cudaErrorPeerAccessUnsupported));
}

TEST(CudaStatus, DeadlinesInSeconds) {
  EXPECT_EQ(seconds_text(std::chrono::seconds(20)), "20 s");
  EXPECT_EQ(seconds_text(std::chrono::milliseconds(1500)), "1.5 s");
  EXPECT_EQ(seconds_text(std::chrono::milliseconds(1)), "0.001 s");
  EXPECT_EQ(seconds_text(std::chrono::milliseconds(50)), "0.05 s");
}

GpuStatus two_steps(cudaError_t first, bool* second_ran) {
  GPUVET_CUDA_TRY(first);
  *second_ran = true;
  GPUVET_CUDA_TRY(GpuStatus::error("second"));
  return {};
}

TEST(CudaStatus, TryReturnsTheFirstFailure) {
  bool second = false;
  const GpuStatus a = two_steps(cudaErrorInvalidValue, &second);
  EXPECT_FALSE(second);
  EXPECT_EQ(a.code, cudaErrorInvalidValue);
  const GpuStatus b = two_steps(cudaSuccess, &second);
  EXPECT_TRUE(second);
  EXPECT_EQ(b.text, "second");
}

}  // namespace
}  // namespace gpuvet::gpu
