# nvidia-smi's own outputs: -q -x (XML, via pugixml), -q text / -L, --query-gpu CSV.
list(APPEND GPUVET_SOURCES src/capture/nvsmi_xml.cc src/capture/nvsmi_text.cc
     src/capture/nvsmi_csv.cc)
list(APPEND GPUVET_TESTS src/capture/nvsmi_xml_test.cc src/capture/nvsmi_text_test.cc
     src/capture/nvsmi_csv_test.cc)
# Until gpuvet_core links pugixml itself (the top level may already find it: cached then).
find_library(GPUVET_PUGIXML NAMES libpugixml.a pugixml REQUIRED)
list(APPEND GPUVET_EXTRA_LIBS ${GPUVET_PUGIXML})
