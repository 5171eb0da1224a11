// gpu_load — keeps every GPU given on the command line busy for a number of seconds with
// an FMA-bound kernel (and a device-local copy every few launches), so `gpuvet diagnose`
// can be checked on a node under real load. Test tool for the gpu-labelled checks; not
// part of gpuvet itself. Usage: gpuvet_gpu_load SECONDS [GPU...]  (default: every GPU)
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

__global__ void fma_burn(float* out, int iters) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.9999f, d = blockIdx.x * 1e-4f;
  for (int i = 0; i < iters; ++i) {
    a = fmaf(a, b, c);
    d = fmaf(d, c, b);
    b = fmaf(b, a, -d) * 1e-7f + 1.0001f;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a + b + d;
}

bool check(cudaError_t e, const char* what, int gpu) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "gpu_load: GPU %d: %s: %s\n", gpu, what, cudaGetErrorString(e));
  return false;
}

void burn(int gpu, double seconds, int* status) {
  *status = 1;
  if (!check(cudaSetDevice(gpu), "cudaSetDevice", gpu)) return;
  cudaDeviceProp prop{};
  if (!check(cudaGetDeviceProperties(&prop, gpu), "cudaGetDeviceProperties", gpu)) return;
  const int blocks = prop.multiProcessorCount * 8, threads = 256;
  const size_t copy_bytes = size_t{1} << 30;
  float* out = nullptr;
  void *src = nullptr, *dst = nullptr;
  if (!check(cudaMalloc(&out, sizeof(float) * blocks * threads), "cudaMalloc", gpu)) return;
  const bool copies = cudaMalloc(&src, copy_bytes) == cudaSuccess &&
                      cudaMalloc(&dst, copy_bytes) == cudaSuccess;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  long launches = 0;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 8; ++i) fma_burn<<<blocks, threads>>>(out, 1 << 16);
    if (copies) cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice);
    if (!check(cudaDeviceSynchronize(), "kernel", gpu)) return;
    launches += 8;
  }
  std::printf("gpu_load: GPU %d (%s): %ld kernel launches in %.0f s\n", gpu, prop.name, launches,
              seconds);
  cudaFree(out);
  if (src) cudaFree(src);
  if (dst) cudaFree(dst);
  *status = 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::atof(argv[1]) <= 0) {
    std::fprintf(stderr, "usage: gpuvet_gpu_load SECONDS [GPU...]\n");
    return 3;
  }
  const double seconds = std::atof(argv[1]);
  std::vector<int> gpus;
  for (int i = 2; i < argc; ++i) gpus.push_back(std::atoi(argv[i]));
  if (gpus.empty()) {
    int n = 0;
    if (!check(cudaGetDeviceCount(&n), "cudaGetDeviceCount", -1)) return 2;
    for (int i = 0; i < n; ++i) gpus.push_back(i);
  }
  std::vector<int> status(gpus.size(), 1);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < gpus.size(); ++i)
    threads.emplace_back(burn, gpus[i], seconds, &status[i]);
  for (auto& t : threads) t.join();
  for (int s : status)
    if (s != 0) return 2;
  return 0;
}
