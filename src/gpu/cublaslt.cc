// gpu/cublaslt.cc — loading cuBLASLt with dlopen, and the bf16 GEMM plan (gpu/cublaslt.h).
//
// Row-major through a column-major library: a row-major X[r×c] is the column-major Xᵀ, so
// C = A·B is computed as Cᵀ = Bᵀ·Aᵀ: cuBLASLt's first operand is our B, its second our A,
// and the output is n×m column-major — the row-major C[m×n] itself.
#include "gpu/cublaslt.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace gpuvet::gpu {
namespace {

template <class Fn>
bool resolve(void* handle, const char* name, Fn* out, std::vector<std::string>* missing) {
  *out = reinterpret_cast<Fn>(::dlsym(handle, name));
  if (!*out) missing->push_back(name);
  return *out != nullptr;
}

}  // namespace

std::string cublaslt_library_name(const std::string& path) {
  if (!path.empty()) return path;
  if (const char* env = std::getenv("GPUVET_CUBLASLT_LIBRARY"); env && *env) return env;
  return "libcublasLt.so.13";
}

std::string cublaslt_version_text(std::size_t v) {
  if (v == 0) return "unknown";
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

const CublasLtLib* cublaslt_library(const std::string& path, std::string* error) {
  static std::mutex mu;
  static std::map<std::string, CublasLtLib*> loaded;  // never unloaded: see the header
  const std::string name = cublaslt_library_name(path);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded.find(name); it != loaded.end()) return it->second;
  std::vector<std::string> tried = {name};
  // The default name is also looked for where the toolkit puts it.
  if (path.empty() && name == "libcublasLt.so.13")
    for (const char* p : {"/usr/local/cuda/lib64/libcublasLt.so.13",
                          "/usr/local/cuda/targets/x86_64-linux/lib/libcublasLt.so.13"})
      tried.push_back(p);
  void* h = nullptr;
  std::string why;
  for (const auto& t : tried) {
    h = ::dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) {
      tried = {t};
      break;
    }
    if (const char* e = ::dlerror(); e && why.empty()) why = e;
  }
  if (!h) {
    if (error) {
      std::string list;
      for (const auto& t : tried) list += (list.empty() ? "" : ", ") + t;
      *error = "cuBLASLt not found (tried " + list + ": " + why +
               "); point gpuvet at it with --cublas-lib or $GPUVET_CUBLASLT_LIBRARY (the CUDA "
               "toolkit's lib64, or a PyTorch install's site-packages/nvidia/cublas/lib)";
    }
    return nullptr;
  }
  auto* lib = new CublasLtLib;
  lib->handle = h;
  char resolved[4096] = {};
  lib->path = ::dlinfo(h, RTLD_DI_ORIGIN, resolved) == 0
                  ? std::string(resolved) + "/" + tried.front().substr(tried.front().rfind('/') + 1)
                  : tried.front();
  std::vector<std::string> missing;
  resolve(h, "cublasLtCreate", &lib->create, &missing);
  resolve(h, "cublasLtDestroy", &lib->destroy, &missing);
  resolve(h, "cublasLtGetVersion", &lib->get_version, &missing);
  resolve(h, "cublasLtMatmulDescCreate", &lib->desc_create, &missing);
  resolve(h, "cublasLtMatmulDescDestroy", &lib->desc_destroy, &missing);
  resolve(h, "cublasLtMatmulDescSetAttribute", &lib->desc_set, &missing);
  resolve(h, "cublasLtMatrixLayoutCreate", &lib->layout_create, &missing);
  resolve(h, "cublasLtMatrixLayoutDestroy", &lib->layout_destroy, &missing);
  resolve(h, "cublasLtMatmulPreferenceCreate", &lib->pref_create, &missing);
  resolve(h, "cublasLtMatmulPreferenceDestroy", &lib->pref_destroy, &missing);
  resolve(h, "cublasLtMatmulPreferenceSetAttribute", &lib->pref_set, &missing);
  resolve(h, "cublasLtMatmulAlgoGetHeuristic", &lib->heuristic, &missing);
  resolve(h, "cublasLtMatmul", &lib->matmul, &missing);
  if (!missing.empty()) {
    if (error) {
      std::string list;
      for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
      *error = lib->path + " is not cuBLASLt: missing " + list;
    }
    ::dlclose(h);
    delete lib;
    return nullptr;
  }
  lib->version = lib->get_version();
  loaded.emplace(name, lib);
  return lib;
}

const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

std::unique_ptr<BlasGemm> BlasGemm::create(const CublasLtLib& lib, int m, int n, int k,
                                           bool transpose_a, bool transpose_b, void* workspace,
                                           std::size_t workspace_bytes, std::string* error) {
  std::unique_ptr<BlasGemm> g(new BlasGemm);
  g->lib_ = &lib;
  g->m_ = m, g->n_ = n, g->k_ = k, g->ta_ = transpose_a, g->tb_ = transpose_b;
  g->workspace_ = workspace;
  g->workspace_bytes_ = workspace_bytes;
  const auto fail = [&](const char* what, cublasStatus_t s) {
    if (error) *error = std::string(what) + ": " + cublas_status_name(s) + " for " + g->shape();
    return nullptr;
  };
  cublasStatus_t s;
  if ((s = lib.create(&g->handle_)) != CUBLAS_STATUS_SUCCESS) return fail("cublasLtCreate", s);
  if ((s = lib.desc_create(&g->desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F)) != CUBLAS_STATUS_SUCCESS)
    return fail("cublasLtMatmulDescCreate", s);
  // cuBLASLt's first operand is our B, its second our A (see the file comment).
  const cublasOperation_t op_first = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  lib.desc_set(g->desc_, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof op_first);
  lib.desc_set(g->desc_, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof op_second);
  // Column-major shapes: first n×k (stored k×n when transposed), second k×m (stored m×k).
  if ((s = transpose_b
               ? lib.layout_create(&g->la_, CUDA_R_16BF, k, n, k)
               : lib.layout_create(&g->la_, CUDA_R_16BF, n, k, n)) != CUBLAS_STATUS_SUCCESS ||
      (s = transpose_a
               ? lib.layout_create(&g->lb_, CUDA_R_16BF, m, k, m)
               : lib.layout_create(&g->lb_, CUDA_R_16BF, k, m, k)) != CUBLAS_STATUS_SUCCESS ||
      (s = lib.layout_create(&g->lc_, CUDA_R_16BF, n, m, n)) != CUBLAS_STATUS_SUCCESS)
    return fail("cublasLtMatrixLayoutCreate", s);
  cublasLtMatmulPreference_t pref = nullptr;
  if ((s = lib.pref_create(&pref)) != CUBLAS_STATUS_SUCCESS)
    return fail("cublasLtMatmulPreferenceCreate", s);
  const std::uint64_t ws = workspace_bytes;
  lib.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  s = lib.heuristic(g->handle_, g->desc_, g->la_, g->lb_, g->lc_, g->lc_, pref, 1, &result, &found);
  lib.pref_destroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS) return fail("cublasLtMatmulAlgoGetHeuristic", s);
  if (found == 0) return fail("cublasLtMatmulAlgoGetHeuristic found no algorithm", s);
  g->algo_ = result.algo;
  return g;
}

BlasGemm::~BlasGemm() {
  if (!lib_) return;
  if (la_) lib_->layout_destroy(la_);
  if (lb_) lib_->layout_destroy(lb_);
  if (lc_) lib_->layout_destroy(lc_);
  if (desc_) lib_->desc_destroy(desc_);
  if (handle_) lib_->destroy(handle_);
}

cublasStatus_t BlasGemm::run(const void* a, const void* b, void* c, cudaStream_t stream) const {
  const float alpha = 1.0f, beta = 0.0f;
  return lib_->matmul(handle_, desc_, &alpha, b, la_, a, lb_, &beta, c, lc_, c, lc_, &algo_,
                      workspace_, workspace_bytes_, stream);
}

std::string BlasGemm::shape() const {
  std::string s = std::to_string(m_) + "x" + std::to_string(n_) + "x" + std::to_string(k_);
  if (ta_) s += " (A transposed)";
  if (tb_) s += " (B transposed)";
  return s;
}

}  // namespace gpuvet::gpu
