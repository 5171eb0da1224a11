// import/nvsmi_csv.h — importer for `nvidia-smi --query-gpu=… --format=csv[,noheader][,nounits]`,
// and the small RFC 4180 record splitter it reads with.
//
// Columns are mapped by their header names ("pci.bus_id", "power.draw [W]",
// "clocks_event_reasons.sw_power_cap", "clocks_throttle_reasons.active" …), with or without
// units in header and cells. Output without a header cannot be mapped (its columns are
// whatever the user asked for): it is recognised weakly and only noted.
//
// A looped capture (`-l N`, or a "timestamp" column with repeated GPUs; told apart by index,
// else UUID, else bus id) keeps each GPU's latest row in Facts::gpus and, when a GPU has
// several rows, one GpuSample per row in Facts::samples (sm_mhz, gpu_c, power_w, util_pct,
// clock_event_mask from a clocks_event_reasons.active / clocks_throttle_reasons.active column).
// t_s comes from the "timestamp" column ("2024/01/13 09:41:02.123") when every row has one,
// else from the row order in seconds; a note says which.
//
// Stateless free functions following capture/importer.h: pure, thread-safe, linear time,
// never throwing, safe on garbage, truncated, binary or huge input.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

// Format "nvidia-smi-query-csv".
int sniff_nvsmi_query_csv(std::string_view text);
Status import_nvsmi_query_csv(std::string_view text, Facts& out);

// RFC 4180 records: ',' between fields, CRLF or LF between records, '"' quoting (with ""
// for a quote) over commas and line breaks. Unquoted fields are trimmed of blanks (nvidia-smi
// writes ", " between fields); blank lines are skipped. Stops after max_records records; a
// field longer than max_field_bytes is cut there, fields past max_fields in a record are
// dropped. An unterminated quote runs to the end.
std::vector<std::vector<std::string>> split_csv(std::string_view text,
                                                std::size_t max_records = 1u << 20,
                                                std::size_t max_field_bytes = 4096,
                                                std::size_t max_fields = 4096);

}  // namespace gpuvet::import
