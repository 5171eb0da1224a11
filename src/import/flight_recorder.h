// import/flight_recorder.h — PyTorch's flight recorder: the per-rank ring buffer of collectives
// that ProcessGroupNCCL dumps on a timeout (TORCH_NCCL_DUMP_ON_TIMEOUT=1, one file per rank at
// TORCH_FR_DUMP_TEMP_FILE<rank>).
//
// Format "pytorch-flight-recorder": the JSON form (_dump_nccl_trace_json, torch >= 2.5, and
// _dump_fr_trace_json, >= 2.8): {"version", "pg_config": {name: {name, desc, ranks}},
// "pg_status": {pg_id: {last_enqueued_collective, last_started_collective,
// last_completed_collective}}, "entries": [{record_id, pg_id, process_group: [name, desc],
// collective_seq_id, p2p_seq_id, profiling_name, state, time_created_ns, timeout_ms, is_p2p,
// …}]}. Sequence numbers may be numbers or strings (the JSON dump writes them as strings).
// One CollectiveRank per process group: its pg_status, or (without one) the highest
// collective_seq_id scheduled, started and completed among its entries; the first entry not
// completed, its pending count. The rank comes from a "rank" key when the dump has one, else
// from the file's name (import/load.cc). No dump records the host or the GPU.
//
// Format "pytorch-flight-recorder-pickle": the default dump is a Python pickle. gpuvet does not
// execute or decode pickles: it recognises one (protocol header and the dump's own keys) and
// says how to get the JSON form; the input is then an input problem, not silently skipped.
// A file that starts like the JSON dump but does not parse is an input problem too.
// Stateless free functions, thread-safe; linear; safe on garbage.
#pragma once

#include <string_view>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

int sniff_flight_recorder_json(std::string_view text);
Status import_flight_recorder_json(std::string_view text, Facts& out);

int sniff_flight_recorder_pickle(std::string_view text);
Status import_flight_recorder_pickle(std::string_view text, Facts& out);

}  // namespace gpuvet::import
