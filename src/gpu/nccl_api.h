// gpu/nccl_api.h — the part of NCCL's C API that gpuvet uses, declared by us.
//
// We never include nccl.h: libnccl.so.2 is opened with dlopen (nccl_lib.cc) so gpuvet
// builds and runs without NCCL. The types, constants and function-pointer types below
// match NCCL 2.x's public header (checked against 2.28.9). Only calls whose ABI has been
// stable across 2.x are used:
//
//   ncclGetVersion, ncclGetErrorString          every 2.x
//   ncclGetUniqueId, ncclCommInitAll            every 2.x
//   ncclGroupStart/End, ncclAllReduce,
//   ncclAllGather, ncclReduceScatter            every 2.x (the 2.x signatures)
//   ncclCommDestroy, ncclCommAbort              every 2.x
//   ncclCommGetAsyncError                       2.4+
//   ncclGetLastError                            2.13+ (optional)
//   ncclCommInitRankConfig, ncclCommFinalize    2.14+ (optional: nonblocking communicators)
//
// ncclConfig_t grows with every release (2.28's is ncclConfig_v22800). NCCL copies
// min(config.size, its own sizeof) bytes, then resets to defaults every field newer than
// config.version. So we pass the smallest layout, ncclConfig_v21400 (size, magic,
// version, blocking), with version = 2.14.0 — never the loaded library's version — and
// it means the same to every NCCL from 2.14 on. C types only; no state.
#pragma once

#include <climits>
#include <cstddef>

extern "C" {

typedef struct ncclComm* ncclComm_t;
typedef struct CUstream_st* gpuvet_cudaStream_t;  // == cudaStream_t, without cuda headers

// ncclResult_t, ncclRedOp_t and ncclDataType_t are enums in nccl.h; int-sized on every
// ABI NCCL ships for.
typedef int ncclResult_t;
typedef int ncclRedOp_t;
typedef int ncclDataType_t;

enum : int {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,  // 2.12+
  ncclInProgress = 7,   // 2.14+: nonblocking communicators
};

enum : int { ncclSum = 0 };
enum : int { ncclFloat32 = 7, ncclBfloat16 = 9 };  // bfloat16: NCCL 2.10+

enum : int { NCCL_UNIQUE_ID_BYTES = 128 };
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

// The first ncclConfig_t (NCCL 2.14). `undef_tail` occupies the 4 bytes that are tail
// padding in nccl.h's v21400 struct; NCCL copies sizeof bytes, and in newer layouts those
// bytes are cgaClusterSize (reset to its default anyway because version < 2.17), so we
// set them to NCCL_CONFIG_UNDEF_INT rather than leave them indeterminate.
typedef struct {
  std::size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int undef_tail;
} gpuvet_ncclConfig_v21400;

enum : unsigned int {
  GPUVET_NCCL_CONFIG_MAGIC = 0xcafebeefu,
  GPUVET_NCCL_CONFIG_VERSION = 21400u,  // NCCL_VERSION(2, 14, 0)
};
enum : int { GPUVET_NCCL_CONFIG_UNDEF_INT = INT_MIN };

typedef ncclResult_t (*ncclGetVersion_fn)(int* version);
typedef const char* (*ncclGetErrorString_fn)(ncclResult_t result);
typedef const char* (*ncclGetLastError_fn)(ncclComm_t comm);
typedef ncclResult_t (*ncclGetUniqueId_fn)(ncclUniqueId* unique_id);
typedef ncclResult_t (*ncclCommInitAll_fn)(ncclComm_t* comms, int ndev, const int* devlist);
typedef ncclResult_t (*ncclCommInitRankConfig_fn)(ncclComm_t* comm, int nranks,
                                                  ncclUniqueId comm_id, int rank,
                                                  gpuvet_ncclConfig_v21400* config);
typedef ncclResult_t (*ncclCommGetAsyncError_fn)(ncclComm_t comm, ncclResult_t* async_error);
typedef ncclResult_t (*ncclCommFinalize_fn)(ncclComm_t comm);
typedef ncclResult_t (*ncclCommDestroy_fn)(ncclComm_t comm);
typedef ncclResult_t (*ncclCommAbort_fn)(ncclComm_t comm);
typedef ncclResult_t (*ncclGroupStart_fn)();
typedef ncclResult_t (*ncclGroupEnd_fn)();
typedef ncclResult_t (*ncclAllReduce_fn)(const void* sendbuff, void* recvbuff, std::size_t count,
                                         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                         gpuvet_cudaStream_t stream);
typedef ncclResult_t (*ncclAllGather_fn)(const void* sendbuff, void* recvbuff,
                                         std::size_t sendcount, ncclDataType_t datatype,
                                         ncclComm_t comm, gpuvet_cudaStream_t stream);
typedef ncclResult_t (*ncclReduceScatter_fn)(const void* sendbuff, void* recvbuff,
                                             std::size_t recvcount, ncclDataType_t datatype,
                                             ncclRedOp_t op, ncclComm_t comm,
                                             gpuvet_cudaStream_t stream);

}  // extern "C"
