// gpu/nccl_lib.h — the dlopen'ed NCCL function table, shared by bench and scale (internal).
//
// nccl_lib.cc loads libnccl.so.2 with dlopen and keeps the resolved symbols in a
// process-wide registry keyed by the requested name and by the path that was loaded; entries
// are never unloaded (see nccl_lib.cc's file comment), so a table, once returned, is valid
// for the life of the process and immutable: any thread may use it. Loading is thread-safe
// (the registry has a mutex). Every piece of GPU code reaches NCCL through nccl_library()
// instead of loading it a second way. Only available when built with GPUVET_CUDA; no CUDA or
// fmt headers needed to include it.
#pragma once

#include <string>

#include "gpu/nccl_api.h"

namespace gpuvet::gpu {

struct NcclLib {
  void* handle = nullptr;
  std::string path;  // what was loaded (resolved)
  int version_code = 0;
  ncclGetVersion_fn get_version = nullptr;
  ncclGetErrorString_fn get_error_string = nullptr;
  ncclGetLastError_fn get_last_error = nullptr;  // 2.13+
  ncclGetUniqueId_fn get_unique_id = nullptr;
  ncclCommInitAll_fn comm_init_all = nullptr;
  ncclCommInitRankConfig_fn comm_init_rank_config = nullptr;  // 2.14+
  ncclCommGetAsyncError_fn comm_get_async_error = nullptr;
  ncclCommFinalize_fn comm_finalize = nullptr;  // 2.14+
  ncclCommDestroy_fn comm_destroy = nullptr;
  ncclCommAbort_fn comm_abort = nullptr;
  ncclGroupStart_fn group_start = nullptr;
  ncclGroupEnd_fn group_end = nullptr;
  ncclAllReduce_fn all_reduce = nullptr;
  ncclAllGather_fn all_gather = nullptr;
  ncclReduceScatter_fn reduce_scatter = nullptr;

  bool nonblocking() const { return comm_init_rank_config && get_unique_id && comm_finalize; }

  // "ncclSystemError: unhandled system error (…) — <ncclGetLastError>"
  std::string text(ncclResult_t r, ncclComm_t comm = nullptr) const;
};

// The name nccl_library loads for `path`: `path` itself, else $GPUVET_NCCL_LIBRARY, else
// "libnccl.so.2".
std::string nccl_library_name(const std::string& path);

// The loaded table for nccl_library_name(path), loading it on first use. The table lives for
// the whole process. nullptr with `*error` (when given) saying why: not found (with how to
// point gpuvet at NCCL), not a library, missing symbols, not NCCL 2.x.
const NcclLib* nccl_library(const std::string& path, std::string* error);

// Sets NCCL_NVLS_ENABLE=0 before any communicator exists unless the user chose, and says
// which (a note for the report): NVLink SHARP multicast is never used by default.
std::string nccl_keep_multicast_off();

// ncclGetVersion's code as text: 22809 → "2.28.9"; codes of 2.8 and older are
// major*1000 + minor*100 + patch (2708 → "2.7.8"); "unknown" for 0.
std::string nccl_version_text(int code);

}  // namespace gpuvet::gpu
