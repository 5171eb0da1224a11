// import/nvsmi_xml.h — importer for `nvidia-smi -q -x` (XML), every DTD from driver 418 to
// 595: old and new element names (clocks_throttle_reasons / clocks_event_reasons,
// power_readings / gpu_power_readings, gpu_temp / gpu_temp_tlimit), MIG, Windows WDDM and
// vGPU guests (N/A PCIe fields stay empty).
//
// GPU indices follow the order of the <gpu> elements (<minor_number> is not the NVML index).
// A truncated document is read as far as it goes, with a note. Parsed with pugixml.
//
// Stateless free functions following capture/importer.h: pure, thread-safe, linear time,
// never throwing, safe on garbage, truncated, binary or huge input.
#pragma once

#include <string_view>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

// Format "nvidia-smi-q-xml".
int sniff_nvsmi_xml(std::string_view text);
Status import_nvsmi_xml(std::string_view text, Facts& out);

}  // namespace gpuvet::import
