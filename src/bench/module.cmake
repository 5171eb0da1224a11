# gpuvet bench: the registry, statistics glue and renderers build everywhere; the CUDA and
# NCCL measurements only with GPUVET_CUDA (nvcc; static cudart, NCCL loaded at run time).
list(APPEND GPUVET_SOURCES src/bench/registry.cc src/bench/report.cc)
list(APPEND GPUVET_TESTS src/bench/registry_test.cc)
if(GPUVET_CUDA)
  list(APPEND GPUVET_SOURCES src/bench/cuda_bench.cu src/bench/nccl_bench.cc)
  list(APPEND GPUVET_TESTS src/bench/nccl_bench_test.cc)
  list(APPEND GPUVET_GPU_TESTS src/bench/cuda_bench_gpu_test.cc src/bench/nccl_bench_gpu_test.cc)
endif()
