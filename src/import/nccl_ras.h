// import/nccl_ras.h — NCCL RAS, as its client `ncclras` (or `STATUS` over the RAS port)
// prints it: the state of every communicator of a running job, gathered from all its processes.
//
// Format "nccl-ras" (text, NCCL >= 2.24): the "Job summary" and "Communicators" sections, then
// the "Errors" and "Warnings" entries: "#<group>-<comm> (<hash>) MISMATCH|INCOMPLETE|…" with
// their lines ("Communicator ranks have different AllGather operation counts", "30 ranks have
// launched up to operation 640", "Missing communicator data from 1 rank", "The missing rank:
// 21"), the outliers "Rank 12 -- GPU 4 managed by process 323032 on node 10.137.190.124", and
// job-level "INCOMPLETE"/"DEAD" entries naming processes ("Process 60004 on node 10.4.109.13
// managing GPU 0", "1 job process is considered dead").
// Format "nccl-ras-json" (`ncclras -f json`, NCCL >= 2.28.7): {"nccl_version", …,
// "communicators": [{hash, size, ranks_count, missing_ranks_count, ranks: [{rank, host, pid,
// cuda_dev, nvml_dev, status: {init_state, async_error, finalize_called, destroy_flag,
// abort_flag}, collective_counts: {AllReduce: N, …}}], missing_ranks: [{rank, host, pid,
// cuda_dev, nvml_dev, status: {unresponsive, considered_dead}}]}]}. NCCL 2.28.9 omits a comma
// inside missing_ranks entries; that one defect is repaired before parsing.
//
// Both fill Facts::collective_ranks (source "nccl-ras": rank, host, pid, GPU, per-operation
// counts, ras_status) and Facts::ras_communicators (those with errors, missing or dead ranks).
// Stateless free functions, thread-safe; linear; safe on garbage.
#pragma once

#include <string_view>

#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet::import {

int sniff_nccl_ras_text(std::string_view text);
Status import_nccl_ras_text(std::string_view text, Facts& out);

int sniff_nccl_ras_json(std::string_view text);
Status import_nccl_ras_json(std::string_view text, Facts& out);

}  // namespace gpuvet::import
