# Rules engine: catalog, shared helpers, thresholds, and the rule groups. Each rule group
# has its own list file so the groups can be built and tested on their own.
list(APPEND GPUVET_SOURCES src/rules/rule.cc src/rules/catalog.cc)
include(${CMAKE_CURRENT_LIST_DIR}/engine.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/gpu.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/topology.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/host.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/measurements.cmake OPTIONAL)
