// import/dcgmi.h — importers for the text tables of NVIDIA DCGM's command line: `dcgmi diag`
// (levels -r 1 to 4) and `dcgmi health -c`.
//
// `dcgmi diag` prints one box: a Metadata block (DCGM version, driver version, the device
// ids of the GPUs it saw), then the Deployment, Integration, Hardware and Stress blocks, one
// row per test with "Pass", "Fail", "Warn" or "Skip", for all GPUs ("Pass - All") or some
// ("Fail - GPU: 2", "Fail - GPUs: 1, 3"), and its "Warning" / "Error" / "Info" text cut into
// 45-character pieces over the following rows. Each test result becomes a HealthCheck
// (per GPU when the row names GPUs); the device-id list gives the GPU count.
//
// `dcgmi health -c` prints a "Health Monitor Report" box: Overall Health, then per entity
// ("-> 0" under "GPU"; older DCGM: "GPU ID: 0") each subsystem with an incident ("PCIe
// system", "Memory system", "Thermal system", …) with its Warning / Failure and message.
// Each incident becomes a HealthCheck.
//
// Hand-written scanners, linear in the input, safe on garbage, truncated or huge input;
// stateless free functions, thread-safe (see import/importer.h).
#pragma once

#include <string_view>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

// Format "dcgmi-diag".
int sniff_dcgmi_diag(std::string_view text);
Status import_dcgmi_diag(std::string_view text, Facts& out);

// Format "dcgmi-health".
int sniff_dcgmi_health(std::string_view text);
Status import_dcgmi_health(std::string_view text, Facts& out);

}  // namespace gpuvet::import
