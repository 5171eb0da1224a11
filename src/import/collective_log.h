// import/collective_log.h — what a hung job's per-rank logs say about its collectives: the
// PyTorch ProcessGroupNCCL watchdog lines and the NCCL INFO lines that say who each rank is.
//
// Read lines (any launcher prefix, torchrun's "[rank3]:", glog's "[E1206 18:44:12.71 …]"):
//   [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580,
//       OpType=ALLREDUCE, …, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.
//   [PG ID 0 PG GUID 0(default_pg) Rank 3] Exception (either an error or timeout) detected by
//       watchdog at work: 32, last enqueued NCCL work: 32, last completed NCCL work: 31.
//   [PG 1 Rank 0] Timeout at NCCL work: 7753, last enqueued NCCL work: 7755, …
//   … failure detected by watchdog at work sequence id: N PG status: last enqueued work: X,
//       last completed work: Y
//   … Received a dump signal due to a collective timeout from rank 7 … Last enqueued NCCL
//       work: X, last completed NCCL work: Y.   (a rank that did not time out itself)
//   … NCCL Work update periodically: last enqueued NCCL work: X, last completed NCCL work: Y.
//   … watchdog got stuck for 480 seconds … / Heartbeat monitor timed out!   (a frozen process)
//   host:pid:tid [cudaDev] NCCL INFO comm 0x… rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 1b000
//       … - Init COMPLETE   (and "rank 3 nRanks 8 …" of newer NCCL): who rank 3 is
//   CUDA out of memory, CUDA error, NCCL error, NCCL WARN lines: kept as the rank's errors.
// One CollectiveRank per (rank, process group) that the text names; the watchdog line, which
// names no PG, joins the PG record of its rank with the same sequence number. Lines without a
// rank belong to the file's one rank when it has only one. No regular expressions; linear;
// safe on garbage. Stateless free functions, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/facts.h"

namespace gpuvet::import {

// Appends the records of `text` to `out`. Returns how many lines were read into them. At most
// kMaxCollectiveRecords (rank, process group) records are kept per text; past that a note in
// `notes` says how many lines were not kept.
inline constexpr std::size_t kMaxCollectiveRecords = std::size_t{1} << 18;
std::size_t parse_collective_log(std::string_view text, std::vector<CollectiveRank>& out,
                                 std::vector<std::string>* notes = nullptr);

// Whether `text` holds a PyTorch watchdog progress or timeout line (for the sniffer).
bool has_collective_progress_line(std::string_view text);

// The rank a file's name gives, for inputs that do not print it (a flight-recorder dump, a
// per-rank log without prefixes): "rank3.log", "rank_3.txt", "rank-3", "nccl_trace_rank_3",
// "fr_trace_3"… The last path component only; nullopt when it names none or several.
std::optional<int> rank_from_file_name(std::string_view path);

}  // namespace gpuvet::import
