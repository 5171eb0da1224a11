# Kernel log: the Xid/fallen-off-the-bus text parser (capture), the Xid catalog, and the live
# reader over /dev/kmsg with a dmesg fallback (probe).
list(APPEND GPUVET_SOURCES src/capture/kernel_log.cc src/capture/xid_codes.cc
     src/probe/kernel_log_source.cc)
list(APPEND GPUVET_TESTS src/capture/kernel_log_test.cc src/probe/kernel_log_source_test.cc)
