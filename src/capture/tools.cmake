# Offline importers for host tools (numactl, lscpu, mpstat, iostat, sar), NCCL logs and topology
# dumps, and benchmark outputs (nccl-tests, nvbandwidth, cuda-samples).
list(APPEND GPUVET_SOURCES src/capture/host_tools.cc src/capture/nccl_log.cc
     src/capture/bench_outputs.cc)
list(APPEND GPUVET_TESTS src/capture/host_tools_test.cc src/capture/nccl_log_test.cc
     src/capture/bench_outputs_test.cc)
