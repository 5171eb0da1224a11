# Measurement rules (bandwidth vs expectations, wrong collective results, scaling, tail latency)
# and the expectation tables they and `gpuvet bench` share.
list(APPEND GPUVET_SOURCES src/rules/rules_measurements.cc src/rules/expectations.cc)
list(APPEND GPUVET_TESTS src/rules/rules_measurements_test.cc)
