# nvidia-smi topology and monitor importers: topo -m, topo -p2p, nvlink -s/-R (and dcgmi
# nvlink -s), pmon, dmon.
list(APPEND GPUVET_SOURCES src/capture/nvsmi_topo.cc src/capture/nvsmi_monitor.cc)
list(APPEND GPUVET_TESTS src/capture/nvsmi_topo_test.cc src/capture/nvsmi_monitor_test.cc)
