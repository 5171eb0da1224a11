// tests/job_trace_gen.h — a PyTorch profiler trace of a made-up but well-formed training job, as
// large as asked: per step a ProfilerStep span, a data-loader span, `layers` operators each with
// its launch call and kernel, an NCCL all-reduce per 8 layers overlapping the next layers, a
// pageable copy. Kineto's layout and key order. For benchmarks and tests (not product code).
#pragma once

#include <cstddef>
#include <string>

#include <fmt/format.h>

namespace gpuvet::testing {

// About `bytes` of trace (whole steps, at least one).
inline std::string make_kineto_trace(std::size_t bytes, int rank = 0, int world = 8,
                                     int layers = 64) {
  std::string out;
  out.reserve(bytes + (1 << 16));
  out += fmt::format(
      "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {{\"id\": 0, \"name\": "
      "\"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85045379072, \"computeMajor\": 9}}\n  ],\n"
      "  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, \"world_size\": {}, "
      "\"nccl_version\": \"2.21.5\"}},\n  \"traceEvents\": [\n",
      rank, world);
  double t = 1.7e15;  // µs, as Kineto's absolute stamps
  long corr = 1;
  bool first = true;
  auto ev = [&](const std::string& e) {
    if (!first) out += ",\n";
    first = false;
    out += "  ";
    out += e;
  };
  for (int step = 1; out.size() < bytes || step == 1; ++step) {
    const double step_start = t;
    const double step_len = 800.0 + layers * 30.0;
    ev(fmt::format(
        R"J({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 4242, "tid": 4242, "ts": {:.3f}, "dur": {:.3f}, "args": {{"External id": {}}}}})J",
        step, step_start, step_len, corr++));
    ev(fmt::format(
        R"J({{"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "pid": 4242, "tid": 4242, "ts": {:.3f}, "dur": 200.000, "args": {{"External id": {}}}}})J",
        step_start, corr++));
    ev(fmt::format(
        R"J({{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": {:.3f}, "dur": 40.000, "args": {{"device": 0, "context": 1, "stream": 7, "correlation": {}, "bytes": 4194304, "memory bandwidth (GB/s)": 10.48}}}})J",
        step_start + 210, corr++));
    double h = step_start + 260;
    for (int l = 0; l < layers; ++l) {
      const long c = corr++;
      ev(fmt::format(
          R"J({{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 4242, "tid": 4242, "ts": {:.3f}, "dur": 12.500, "args": {{"External id": {}, "Record function id": 0, "Sequence number": {}, "Fwd thread id": 0}}}})J",
          h, c, c));
      ev(fmt::format(
          R"J({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242, "ts": {:.3f}, "dur": 4.200, "args": {{"External id": {}, "cbid": 211, "correlation": {}}}}})J",
          h + 6, c, c));
      ev(fmt::format(
          R"J({{"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "pid": 0, "tid": 7, "ts": {:.3f}, "dur": 24.000, "args": {{"External id": {}, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": {}, "registers per thread": 168, "shared memory": 213248, "blocks per SM": 1.0, "warps per SM": 4.0, "grid": [132, 1, 1], "block": [384, 1, 1], "est. achieved occupancy %": 6}}}})J",
          h + 10, c, c));
      ev(fmt::format(
          R"J({{"ph": "f", "id": {}, "pid": 0, "tid": 7, "ts": {:.3f}, "cat": "ac2g", "name": "ac2g", "bp": "e"}})J",
          c, h + 10));
      if (l % 8 == 7) {
        const long n = corr++;
        ev(fmt::format(
            R"J({{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 4242, "tid": 4243, "ts": {:.3f}, "dur": 8.000, "args": {{"External id": {}, "Collective name": "allreduce", "dtype": "BFloat16", "In msg nelems": 13107200, "Out msg nelems": 13107200, "Group size": {}}}}})J",
            h + 12, n, world));
        ev(fmt::format(
            R"J({{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "pid": 0, "tid": 20, "ts": {:.3f}, "dur": 150.000, "args": {{"External id": {}, "device": 0, "context": 1, "stream": 20, "correlation": {}}}}})J",
            h + 40, n, n));
      }
      h += 30;
    }
    t = step_start + step_len;
  }
  out += "\n  ],\n  \"traceName\": \"bench.pt.trace.json\"\n}\n";
  return out;
}

}  // namespace gpuvet::testing
