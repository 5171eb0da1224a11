# Live host facts from procfs/sysfs (host identity, NUMA, NVIDIA driver params,
# IOMMU, per-GPU PCIe/ACS), host pressure sampling and GPU process binding.
list(APPEND GPUVET_SOURCES src/probe/host_sysfs.cc src/probe/pressure.cc src/probe/process_binding.cc)
list(APPEND GPUVET_TESTS src/probe/host_sysfs_test.cc src/probe/pressure_test.cc
     src/probe/process_binding_test.cc)
