// gpu/cublaslt.h — cuBLASLt loaded at run time with dlopen, and one bf16 GEMM through it
// (internal; GPUVET_CUDA only).
//
// gpuvet links no CUDA library but the static runtime: cuBLASLt comes from the machine
// (the CUDA toolkit's lib64, or a PyTorch wheel's nvidia/cublas/lib) when it is there, so a
// node without it still runs everything else. The table, once loaded, lives for the process
// and is immutable (any thread may use it); loading is thread-safe. Types come from the
// toolkit's cublasLt.h at build time; no symbol of it is linked.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

namespace gpuvet::gpu {

struct CublasLtLib {
  void* handle = nullptr;
  std::string path;
  std::size_t version = 0;  // cublasLtGetVersion(): 130100 for 13.1.0
  decltype(&::cublasLtCreate) create = nullptr;
  decltype(&::cublasLtDestroy) destroy = nullptr;
  decltype(&::cublasLtGetVersion) get_version = nullptr;
  decltype(&::cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&::cublasLtMatmul) matmul = nullptr;
};

// The names tried: `path` when given, else $GPUVET_CUBLASLT_LIBRARY, else libcublasLt.so.13
// (the loader's search path), then the CUDA toolkit's lib64.
std::string cublaslt_library_name(const std::string& path);

// The loaded table, loading it on first use; nullptr with `*error` saying why (not found,
// with what was tried and how to point gpuvet at it; missing symbols).
const CublasLtLib* cublaslt_library(const std::string& path, std::string* error);

// "13.1.0" from cublasLtGetVersion()'s 130100.
std::string cublaslt_version_text(std::size_t version);

// C[m×n] = A[m×k] · B[k×n] in bf16 with fp32 accumulation, row-major, on one device and
// stream, through one algorithm chosen once by cuBLASLt's heuristic for the workspace it is
// given (the caller's, shared by every GEMM of one thread; 32 MiB suits Hopper). `transpose_a` /
// `transpose_b` read A as [k×m] / B as [n×k] (the backward pass's Xᵀ·dY and dY·Wᵀ). Not
// thread-safe: one per host thread.
class BlasGemm {
 public:
  // Creates the handle, descriptors and the plan; the error text on failure.
  static std::unique_ptr<BlasGemm> create(const CublasLtLib& lib, int m, int n, int k,
                                          bool transpose_a, bool transpose_b, void* workspace,
                                          std::size_t workspace_bytes, std::string* error);
  ~BlasGemm();
  BlasGemm(const BlasGemm&) = delete;
  BlasGemm& operator=(const BlasGemm&) = delete;

  // Enqueues one GEMM; A, B, C are bf16 device buffers of the shapes above.
  cublasStatus_t run(const void* a, const void* b, void* c, cudaStream_t stream) const;
  double flops() const { return 2.0 * m_ * n_ * static_cast<double>(k_); }
  std::string shape() const;  // "2048×12288×4096 (Aᵀ)"

 private:
  BlasGemm() = default;
  const CublasLtLib* lib_ = nullptr;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  void* workspace_ = nullptr;  // the caller's
  std::size_t workspace_bytes_ = 0;
  int m_ = 0, n_ = 0, k_ = 0;
  bool ta_ = false, tb_ = false;
};

// cuBLASLt's status as its name: "CUBLAS_STATUS_NOT_SUPPORTED".
const char* cublas_status_name(cublasStatus_t s);

}  // namespace gpuvet::gpu
