// import/nvsmi_table.h — importer for the plain `nvidia-smi` output (the default table, the
// output people paste most), and for the error lines nvidia-smi prints instead of, or above,
// its tables.
//
// The table is read by its '|' cells, in every driver era's layout: the old one (drivers
// 3xx-5xx: "| GPU  Name        Persistence-M| Bus-Id        Disp.A | …", a "MIG M." third row
// from 450 on), the wide one (545+), the Windows one ("TCC/WDDM" in place of
// "Persistence-M"), with or without the "NVIDIA-SMI … Driver Version: …" banner, and the
// Processes table (with or without the GI/CI columns). Per GPU it fills index, name (as
// printed, "..." where nvidia-smi cut it), bus id, persistence mode, temperature, perf state,
// power draw and cap, memory used/total, utilisation, ECC mode and volatile uncorrected ECC
// count, MIG mode; compute processes (type C, C+G) go to Facts::processes. Several tables in
// one text (`nvidia-smi -l`) keep the last. A GPU that shows "ERR!" in two or more readings
// is not answering its driver (Facts: GpuFacts::unresponsive); one "ERR!" is an unreadable
// field and a note. Compute modes other than Default are notes (the facts model has no field).
//
// Error lines are evidence, not an unreadable file:
//   "Unable to determine the device handle for GPU 0000:09:00.0: Unknown Error",
//   "… for GPU0000:3B:00.0: GPU is lost.  Reboot the system to recover this GPU", "GPU is lost"
//     → a GPU at that bus id that does not answer (GpuFacts::unresponsive, as the live probe
//       records a GPU whose handle NVML cannot get);
//   "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver…",
//   "Failed to initialize NVML: …", "NVIDIA-SMI couldn't find libnvidia-ml.so…",
//   "No devices were found"
//     → no GPU facts from the driver (a failed "nvml" source and Facts::gpu_facts_unavailable,
//       as the live collector records a failed nvmlInit).
//
// Stateless free functions following import/importer.h: pure, thread-safe, linear time,
// never throwing, safe on garbage, truncated, binary or huge input.
#pragma once

#include <cstddef>
#include <string_view>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

// Format "nvidia-smi": the default `nvidia-smi` table and its error lines.
int sniff_nvsmi_table(std::string_view text);
Status import_nvsmi_table(std::string_view text, Facts& out);

namespace nvsmi {

// True for a line that is one of nvidia-smi's error lines above.
bool is_error_line(std::string_view line);
// Reads every error line of `text` into `out` as described above; GPUs it adds take the
// lowest indices out.gpus leaves free. Returns how many error lines it read.
std::size_t read_error_lines(std::string_view text, Facts& out);

}  // namespace nvsmi
}  // namespace gpuvet::import
