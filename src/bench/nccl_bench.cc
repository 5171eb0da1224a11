// bench/nccl_bench.cc — NCCL collectives and the 2-rank P2P check behind `gpuvet bench`.
//
// How it measures (after nccl-tests, src/common.cu and the per-collective files):
//   * one process, one communicator per GPU (rank i = spec.gpus[i]);
//   * float32, out of place; each rank's send buffer holds small integers that depend on
//     the rank and the position, so every sum is exact in float and every value can be
//     checked with ==;
//   * per size: `warmup` untimed ops, then `iterations` ops back to back; every op is one
//     ncclGroupStart / one call per rank / ncclGroupEnd. A CUDA event is recorded on each
//     rank's stream before the first op and after each quarter of the loop, so the time per
//     op is max over ranks (elapsed / iterations) — nccl-tests takes host wall time over the
//     same loop, which is the slowest rank too — and the four quarters give the spread;
//   * algbw = size / time (GB/s = 1e9 B/s), busbw = algbw × factor (detail::bus_bw_factor);
//   * after the timed loop the receive buffers are filled with NaN, one more op runs and
//     every value is compared with the expected one.
//
// Never hangs: communicators are nonblocking (ncclCommInitRankConfig, blocking = 0, NCCL
// 2.14+). Every wait — init, an ncclGroupEnd that answers ncclInProgress, the completion of
// the ops, finalize — polls ncclCommGetAsyncError on each communicator and cudaStreamQuery
// on each stream against a deadline (spec.timeout per phase); past it every communicator
// is aborted with ncclCommAbort and the stalled rank is named. Buffers of a GPU whose stream
// is still busy after the abort are deliberately leaked: cudaFree would wait for the stuck
// kernel. With an NCCL older than 2.14 (no nonblocking communicators) ncclCommInitAll and
// blocking communicators are used; the completion of the ops is still polled under the
// deadline, but init and enqueue then cannot be bounded (said in a note).
//
// NCCL_NVLS_ENABLE is set to 0 unless the user set it: NVLink SHARP (multicast) is never
// used by default. NCCL_DEBUG is never set, and NCCL's own log is not parsed, so
// P2PTruth::nccl_transport stays empty.
//
// The library handle: NcclEnv is a plain value, so the dlopen handle and the resolved
// symbols live in a process-wide registry keyed by the requested name and by the path that
// was loaded (nccl_collective finds them from env.library, loading again if needed). Entries
// are never dlclose'd: NCCL starts threads and registers exit handlers, so unloading it while
// the process runs is not safe, and dlopen of an already-open library only bumps a count.
#include "bench/nccl_bench.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>

#include "bench/registry.h"
#include "gpu/nccl_api.h"
#include "gpu/nccl_lib.h"

static_assert(sizeof(gpuvet_ncclConfig_v21400) == 24, "ncclConfig_v21400 is 24 bytes on LP64");
static_assert(std::is_same_v<gpuvet_cudaStream_t, cudaStream_t>,
              "nccl_api.h's stream type must be cudaStream_t");
static_assert(sizeof(ncclUniqueId) == 128);

namespace gpuvet::bench {

// ------------------------------------------------------------------------------ helpers

namespace detail {

std::optional<double> bus_bw_factor(std::string_view op, int nranks) {
  if (nranks < 1) return std::nullopt;
  const double n = nranks;
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (op == "all_gather" || op == "reduce_scatter") return (n - 1) / n;
  return std::nullopt;
}

std::string nccl_version_string(int code) {
  if (code <= 0) return "unknown";
  // NCCL_VERSION(X,Y,Z): X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z from 2.9 on.
  if (code < 10000) return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
}

std::optional<CollectiveCounts> collective_counts(std::string_view op, std::size_t size_bytes,
                                                  int nranks) {
  if (nranks < 1 || size_bytes < sizeof(float)) return std::nullopt;
  const std::size_t n = static_cast<std::size_t>(nranks);
  const std::size_t count = size_bytes / sizeof(float);
  CollectiveCounts c;
  if (op == "all_reduce") {
    c.send_count = c.recv_count = c.param_count = count;
  } else if (op == "all_gather" || op == "reduce_scatter") {
    // nccl-tests: a per-rank chunk of count/n elements rounded down to 16 bytes (4 floats).
    std::size_t chunk = count / n;
    chunk = chunk >= 4 ? chunk & ~std::size_t{3} : std::max<std::size_t>(chunk, 1);
    c.param_count = chunk;
    if (op == "all_gather") {
      c.send_count = chunk;
      c.recv_count = chunk * n;
    } else {
      c.send_count = chunk * n;
      c.recv_count = chunk;
    }
  } else {
    return std::nullopt;
  }
  c.bytes = std::max(c.send_count, c.recv_count) * sizeof(float);
  return c;
}

}  // namespace detail

namespace {

using Clock = std::chrono::steady_clock;

std::string cuda_text(cudaError_t e) {
  return fmt::format("{}: {}", cudaGetErrorName(e), cudaGetErrorString(e));
}

const char* nccl_result_name(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "ncclSuccess";
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case ncclSystemError:
      return "ncclSystemError";
    case ncclInternalError:
      return "ncclInternalError";
    case ncclInvalidArgument:
      return "ncclInvalidArgument";
    case ncclInvalidUsage:
      return "ncclInvalidUsage";
    case ncclRemoteError:
      return "ncclRemoteError";
    case ncclInProgress:
      return "ncclInProgress";
    default:
      return "ncclResult(unknown)";
  }
}

// "1.5 s", "20 s"
std::string seconds_text(std::chrono::milliseconds ms) {
  const double s = static_cast<double>(ms.count()) / 1000.0;
  if (ms.count() % 1000 == 0) return fmt::format("{} s", ms.count() / 1000);
  return fmt::format("{:g} s", s);
}

// ----------------------------------------------------------------------- library loading

// struct NcclLib (the function table) is declared in bench/nccl_lib.h, shared with the
// scaling engine; NcclLib::text is defined below, after the anonymous namespace.

// Leaked on purpose (never destroyed, never dlclose'd): see the file comment.
struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const NcclLib>> libs;
};
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

// An ELF shared object starts with \x7fELF; checking first turns "not a library" into a
// clear message instead of whatever dlerror() says.
std::optional<std::string> check_elf(const std::string& path) {
  if (path.find('/') == std::string::npos) return std::nullopt;  // a soname: the loader searches
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return path + ": no such file";
    return path + ": " + std::strerror(err);
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    ::close(fd);
    return path + ": not a regular file";
  }
  std::array<char, 4> magic{};
  const ssize_t n = ::read(fd, magic.data(), magic.size());
  ::close(fd);
  if (n != 4 || std::memcmp(magic.data(),
                            "\x7f"
                            "ELF",
                            4) != 0)
    return path + ": not a shared library (no ELF header)";
  return std::nullopt;
}

struct Loaded {
  std::shared_ptr<const NcclLib> lib;
  std::string error;
};

Loaded load_library(const std::string& requested) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  if (auto it = reg.libs.find(requested); it != reg.libs.end()) return {it->second, {}};

  if (auto bad = check_elf(requested)) return {nullptr, *bad};
  dlerror();
  void* handle = ::dlopen(requested.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    const std::string msg = err ? err : "unknown dlopen error";
    if (requested.find('/') == std::string::npos &&
        msg.find("cannot open shared object") != std::string::npos)
      return {nullptr,
              requested + " not found (install NCCL, or set --nccl-lib / $GPUVET_NCCL_LIBRARY)"};
    return {nullptr, requested + ": cannot load: " + msg};
  }

  auto lib = std::make_shared<NcclLib>();
  lib->handle = handle;
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) {
    char buf[PATH_MAX];
    lib->path = ::realpath(map->l_name, buf) ? buf : map->l_name;
  } else {
    lib->path = requested;
  }

  std::vector<std::string> missing;
  auto sym = [&](auto& fn, const char* name, bool required) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(handle, name));
    if (!fn && required) missing.emplace_back(name);
  };
  sym(lib->get_version, "ncclGetVersion", true);
  sym(lib->get_error_string, "ncclGetErrorString", true);
  sym(lib->get_last_error, "ncclGetLastError", false);
  sym(lib->get_unique_id, "ncclGetUniqueId", false);
  sym(lib->comm_init_all, "ncclCommInitAll", false);
  sym(lib->comm_init_rank_config, "ncclCommInitRankConfig", false);
  sym(lib->comm_get_async_error, "ncclCommGetAsyncError", true);
  sym(lib->comm_finalize, "ncclCommFinalize", false);
  sym(lib->comm_destroy, "ncclCommDestroy", true);
  sym(lib->comm_abort, "ncclCommAbort", true);
  sym(lib->group_start, "ncclGroupStart", true);
  sym(lib->group_end, "ncclGroupEnd", true);
  sym(lib->all_reduce, "ncclAllReduce", true);
  sym(lib->all_gather, "ncclAllGather", true);
  sym(lib->reduce_scatter, "ncclReduceScatter", true);
  if (!lib->nonblocking() && !lib->comm_init_all) missing.emplace_back("ncclCommInitAll");
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    ::dlclose(handle);
    return {nullptr,
            lib->path + ": a shared library, but not a usable NCCL (missing " + list + ")"};
  }

  int code = 0;
  if (ncclResult_t r = lib->get_version(&code); r != ncclSuccess) {
    std::string msg = lib->path + ": ncclGetVersion failed: " + lib->text(r);
    ::dlclose(handle);
    return {nullptr, msg};
  }
  lib->version_code = code;
  const int major = code < 10000 ? code / 1000 : code / 10000;
  if (major != 2) {
    std::string msg = fmt::format("{}: NCCL {} is not supported (gpuvet speaks the NCCL 2.x ABI)",
                                  lib->path, detail::nccl_version_string(code));
    ::dlclose(handle);
    return {nullptr, msg};
  }

  std::shared_ptr<const NcclLib> out = std::move(lib);
  reg.libs[requested] = out;
  reg.libs.emplace(out->path, out);
  return {out, {}};
}

// ---------------------------------------------------------------------- CUDA resources

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ && !leak_) {
      cudaSetDevice(device_);
      cudaFree(ptr_);
    }
  }
  cudaError_t allocate(int device, std::size_t floats) {
    device_ = device;
    floats_ = floats;
    if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) return e;
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, std::max<std::size_t>(floats, 1) * sizeof(float));
    if (e == cudaSuccess) ptr_ = static_cast<float*>(p);
    return e;
  }
  // After an abort that left a kernel running: cudaFree would wait for it.
  void leak() { leak_ = true; }
  float* data() const { return ptr_; }
  std::size_t floats() const { return floats_; }
  std::size_t bytes() const { return floats_ * sizeof(float); }

 private:
  int device_ = -1;
  float* ptr_ = nullptr;
  std::size_t floats_ = 0;
  bool leak_ = false;
};

// A rank's stream and timing events. cudaStreamDestroy and cudaEventDestroy do not wait
// for pending work, so this is safe to destroy even after an abort.
struct RankRes {
  int device = -1;
  cudaStream_t stream = nullptr;
  std::vector<cudaEvent_t> events;

  RankRes() = default;
  RankRes(const RankRes&) = delete;
  RankRes& operator=(const RankRes&) = delete;
  ~RankRes() {
    if (device >= 0) cudaSetDevice(device);
    for (cudaEvent_t e : events)
      if (e) cudaEventDestroy(e);
    if (stream) cudaStreamDestroy(stream);
  }
  cudaError_t create(int dev, int n_events) {
    device = dev;
    if (cudaError_t e = cudaSetDevice(dev); e != cudaSuccess) return e;
    if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess)
      return e;
    events.assign(static_cast<std::size_t>(n_events), nullptr);
    for (auto& ev : events)
      if (cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDefault); e != cudaSuccess)
        return e;
    return cudaSuccess;
  }
};

// The caller's current CUDA device, put back on the way out (every rank moves it).
class KeepCurrentDevice {
 public:
  KeepCurrentDevice() {
    if (cudaGetDevice(&device_) != cudaSuccess) {
      cudaGetLastError();
      device_ = -1;
    }
  }
  KeepCurrentDevice(const KeepCurrentDevice&) = delete;
  KeepCurrentDevice& operator=(const KeepCurrentDevice&) = delete;
  ~KeepCurrentDevice() {
    if (device_ >= 0) cudaSetDevice(device_);
  }

 private:
  int device_ = -1;
};

// ------------------------------------------------------------------------- waiting

struct Failure {
  bool timeout = false;
  int rank = -1;             // the rank the failure (or the stall) is pinned on; -1 none
  std::vector<int> pending;  // timeout: every rank that had not finished
  std::string message;       // error text (not for timeouts: the caller words those)
};
using MaybeFailure = std::optional<Failure>;

// Polls until no communicator is ncclInProgress and, with `streams`, every stream is idle.
// Aborted (null) communicators are skipped. Never blocks in CUDA or NCCL.
MaybeFailure wait_for(const NcclLib& lib, const std::vector<ncclComm_t>& comms,
                      const std::vector<std::unique_ptr<RankRes>>* ranks,
                      Clock::time_point deadline) {
  auto nap = std::chrono::microseconds(20);
  for (;;) {
    std::vector<int> pending;
    const std::size_t n = ranks ? ranks->size() : comms.size();
    for (std::size_t r = 0; r < n; ++r) {
      const int rank = static_cast<int>(r);
      bool busy = false;
      if (r < comms.size() && comms[r]) {
        ncclResult_t async = ncclSuccess;
        if (ncclResult_t q = lib.comm_get_async_error(comms[r], &async); q != ncclSuccess)
          return Failure{false, rank, {}, "ncclCommGetAsyncError: " + lib.text(q, comms[r])};
        if (async == ncclInProgress)
          busy = true;
        else if (async != ncclSuccess)
          return Failure{false, rank, {}, lib.text(async, comms[r])};
      }
      if (!busy && ranks) {
        const RankRes& rr = *(*ranks)[r];
        cudaSetDevice(rr.device);
        const cudaError_t e = cudaStreamQuery(rr.stream);
        if (e == cudaErrorNotReady)
          busy = true;
        else if (e != cudaSuccess)
          return Failure{false, rank, {}, "cudaStreamQuery: " + cuda_text(e)};
      }
      if (busy) pending.push_back(rank);
    }
    if (pending.empty()) return std::nullopt;
    if (Clock::now() >= deadline) return Failure{true, pending.front(), pending, {}};
    std::this_thread::sleep_for(nap);
    nap = std::min<std::chrono::microseconds>(nap * 2, std::chrono::milliseconds(1));
  }
}

// ------------------------------------------------------------------------ communicators

// One communicator per device; rank i is devices[i]. Destruction aborts whatever is still
// open (the safe way out of any failure); the good path calls close().
class Comms {
 public:
  Comms(const NcclLib& lib, std::vector<int> devices) : lib_(lib), devices_(std::move(devices)) {}
  Comms(const Comms&) = delete;
  Comms& operator=(const Comms&) = delete;
  ~Comms() { abort(); }

  const std::vector<ncclComm_t>& handles() const { return handles_; }
  bool nonblocking() const { return nonblocking_; }

  MaybeFailure init(Clock::time_point deadline) {
    const int n = static_cast<int>(devices_.size());
    handles_.assign(devices_.size(), nullptr);
    nonblocking_ = lib_.nonblocking();
    if (!nonblocking_) {
      // NCCL < 2.14: blocking init, no deadline possible. On failure the handles are not
      // trusted (NCCL may have freed them) and are dropped, not aborted.
      const ncclResult_t r = lib_.comm_init_all(handles_.data(), n, devices_.data());
      if (r != ncclSuccess) {
        handles_.assign(devices_.size(), nullptr);
        return Failure{false, -1, {}, "ncclCommInitAll: " + lib_.text(r)};
      }
      return std::nullopt;
    }
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    if (ncclResult_t r = lib_.get_unique_id(&id); r != ncclSuccess)
      return Failure{false, -1, {}, "ncclGetUniqueId: " + lib_.text(r)};
    gpuvet_ncclConfig_v21400 config{sizeof(gpuvet_ncclConfig_v21400), GPUVET_NCCL_CONFIG_MAGIC,
                                    GPUVET_NCCL_CONFIG_VERSION, /*blocking=*/0,
                                    GPUVET_NCCL_CONFIG_UNDEF_INT};
    if (ncclResult_t r = lib_.group_start(); r != ncclSuccess)
      return Failure{false, -1, {}, "ncclGroupStart: " + lib_.text(r)};
    MaybeFailure first;
    for (int rank = 0; rank < n; ++rank) {
      if (cudaError_t e = cudaSetDevice(devices_[rank]); e != cudaSuccess) {
        if (!first) first = Failure{false, rank, {}, "cudaSetDevice: " + cuda_text(e)};
        continue;
      }
      ncclUniqueId copy = id;
      const ncclResult_t r = lib_.comm_init_rank_config(&handles_[rank], n, copy, rank, &config);
      if (r != ncclSuccess && r != ncclInProgress && !first)
        first = Failure{false, rank, {}, "ncclCommInitRankConfig: " + lib_.text(r)};
    }
    const ncclResult_t end = lib_.group_end();
    if (first) return first;
    if (end != ncclSuccess && end != ncclInProgress)
      return Failure{false, -1, {}, "ncclGroupEnd (communicator init): " + lib_.text(end)};
    if (auto w = wait_for(lib_, handles_, nullptr, deadline)) {
      if (!w->timeout) w->message = "communicator init: " + w->message;
      return w;
    }
    return std::nullopt;
  }

  // Finalize (nonblocking: polled under the deadline) and destroy; anything wrong → abort.
  MaybeFailure close(Clock::time_point deadline) {
    if (nonblocking_) {
      for (std::size_t r = 0; r < handles_.size(); ++r) {
        if (!handles_[r]) continue;
        const ncclResult_t f = lib_.comm_finalize(handles_[r]);
        if (f != ncclSuccess && f != ncclInProgress) {
          Failure fail{
              false, static_cast<int>(r), {}, "ncclCommFinalize: " + lib_.text(f, handles_[r])};
          abort();
          return fail;
        }
      }
      if (auto w = wait_for(lib_, handles_, nullptr, deadline)) {
        abort();
        return w;
      }
    }
    MaybeFailure first;
    for (std::size_t r = 0; r < handles_.size(); ++r) {
      if (!handles_[r]) continue;
      const ncclResult_t d = lib_.comm_destroy(handles_[r]);
      if (d != ncclSuccess && d != ncclInProgress && !first)
        first = Failure{false, static_cast<int>(r), {}, "ncclCommDestroy: " + lib_.text(d)};
      handles_[r] = nullptr;
    }
    return first;
  }

  void abort() {
    for (auto& h : handles_) {
      if (h) lib_.comm_abort(h);
      h = nullptr;
    }
  }

 private:
  const NcclLib& lib_;
  std::vector<int> devices_;
  std::vector<ncclComm_t> handles_;
  bool nonblocking_ = false;
};

// After a failure: abort every communicator (NCCL's kernels see the abort flag and return),
// then give the streams a short grace. Returns the ranks whose stream is still busy — their
// buffers must be leaked.
std::vector<int> abort_and_drain(const NcclLib& lib, Comms& comms,
                                 const std::vector<std::unique_ptr<RankRes>>& ranks) {
  comms.abort();
  const std::vector<ncclComm_t> none;
  auto w = wait_for(lib, none, &ranks, Clock::now() + std::chrono::seconds(5));
  if (!w) return {};
  if (w->timeout) return w->pending;
  std::vector<int> all;  // a stream in error: do not trust any of them
  for (std::size_t r = 0; r < ranks.size(); ++r) all.push_back(static_cast<int>(r));
  return all;
}

// Sets NCCL_NVLS_ENABLE=0 before any communicator exists, unless the user chose; says which.
std::string keep_multicast_off() {
  const char* v = std::getenv("NCCL_NVLS_ENABLE");
  if (!v) {
    ::setenv("NCCL_NVLS_ENABLE", "0", 0);
    return "NCCL_NVLS_ENABLE=0 (set by gpuvet): NVLink SHARP multicast is not used";
  }
  if (std::string_view(v) == "0") return "NCCL_NVLS_ENABLE=0 (from the environment)";
  return fmt::format(
      "NCCL_NVLS_ENABLE={} set in the environment: NCCL may use NVLink SHARP "
      "multicast",
      v);
}

std::string rank_list(const std::vector<int>& ranks, const std::vector<int>& devices) {
  std::string s;
  for (int r : ranks) s += fmt::format("{}{} (GPU {})", s.empty() ? "" : ", ", r, devices[r]);
  return s;
}

// "timeout after 20 s: rank 3 (GPU 3) did not finish all_reduce of 64 MiB"
std::string failure_text(const Failure& f, const std::vector<int>& devices,
                         std::chrono::milliseconds timeout, const std::string& what) {
  if (f.timeout) {
    std::string s = fmt::format("timeout after {}: rank {} (GPU {}) did not finish {}",
                                seconds_text(timeout), f.rank, devices[f.rank], what);
    if (f.pending.size() > 1) {
      std::vector<int> others(f.pending.begin() + 1, f.pending.end());
      s += "; also pending: rank " + rank_list(others, devices);
    }
    return s;
  }
  if (f.rank >= 0 && f.rank < static_cast<int>(devices.size()))
    return fmt::format("{}: rank {} (GPU {}): {}", what, f.rank, devices[f.rank], f.message);
  return what + ": " + f.message;
}

// ------------------------------------------------------------------------ data patterns

// Small integers: exact in float32, and so is any sum of them over up to 900 ranks (< 2^24).
inline float pattern(int rank, std::size_t i) {
  return static_cast<float>((rank + 1) + 16 * static_cast<int>(i % 1024));
}

struct Expect {
  std::string_view op;
  int nranks;
  std::size_t chunk;  // param_count
  // The value rank `rank` must hold at position i of its receive buffer.
  float operator()(int rank, std::size_t i) const {
    const float base_sum = static_cast<float>(nranks) * static_cast<float>(nranks + 1) / 2.0f;
    if (op == "all_reduce")
      return base_sum + static_cast<float>(nranks * 16 * static_cast<int>(i % 1024));
    if (op == "all_gather") return pattern(static_cast<int>(i / chunk), i % chunk);
    // reduce_scatter: block `rank` of the element-wise sum.
    const std::size_t j = static_cast<std::size_t>(rank) * chunk + i;
    return base_sum + static_cast<float>(nranks * 16 * static_cast<int>(j % 1024));
  }
};

constexpr std::size_t kStageFloats = std::size_t{16} << 20;  // 64 MiB host staging

// Fills each rank's send buffer with pattern(rank, i): staged copies on the rank's stream.
MaybeFailure fill_send(const NcclLib& lib, const std::vector<std::unique_ptr<RankRes>>& ranks,
                       const std::vector<DeviceBuffer>& send, Clock::time_point deadline) {
  std::vector<float> host(std::min(kStageFloats, std::max<std::size_t>(send[0].floats(), 1)));
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    cudaSetDevice(ranks[r]->device);
    for (std::size_t off = 0; off < send[r].floats(); off += host.size()) {
      const std::size_t len = std::min(host.size(), send[r].floats() - off);
      for (std::size_t i = 0; i < len; ++i) host[i] = pattern(static_cast<int>(r), off + i);
      // Pageable source: the call returns once `host` is staged, so it can be refilled; the
      // DMA is ordered on the stream before the collectives.
      if (cudaError_t e = cudaMemcpyAsync(send[r].data() + off, host.data(), len * sizeof(float),
                                          cudaMemcpyHostToDevice, ranks[r]->stream);
          e != cudaSuccess)
        return Failure{false, static_cast<int>(r), {}, "cudaMemcpyAsync (fill): " + cuda_text(e)};
    }
  }
  const std::vector<ncclComm_t> none;
  return wait_for(lib, none, &ranks, deadline);
}

struct Wrong {
  std::size_t count = 0;
  std::string first;  // "rank 2 (GPU 2) element 17: got 3, expected 36"
};

// Copies every receive buffer back (the streams are idle) and counts the values that differ.
std::variant<Wrong, Failure> check_recv(const std::vector<std::unique_ptr<RankRes>>& ranks,
                                        const std::vector<DeviceBuffer>& recv,
                                        const Expect& expect) {
  Wrong wrong;
  std::vector<float> host(std::min(kStageFloats, std::max<std::size_t>(recv[0].floats(), 1)));
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    cudaSetDevice(ranks[r]->device);
    for (std::size_t off = 0; off < recv[r].floats(); off += host.size()) {
      const std::size_t len = std::min(host.size(), recv[r].floats() - off);
      // Device → pageable host returns when the copy is done; the stream is idle already.
      if (cudaError_t e = cudaMemcpyAsync(host.data(), recv[r].data() + off, len * sizeof(float),
                                          cudaMemcpyDeviceToHost, ranks[r]->stream);
          e != cudaSuccess)
        return Failure{false, static_cast<int>(r), {}, "cudaMemcpyAsync (check): " + cuda_text(e)};
      if (cudaError_t e = cudaStreamSynchronize(ranks[r]->stream); e != cudaSuccess)
        return Failure{false, static_cast<int>(r), {}, "cudaStreamSynchronize: " + cuda_text(e)};
      for (std::size_t i = 0; i < len; ++i) {
        const float want = expect(static_cast<int>(r), off + i);
        if (!(host[i] == want)) {
          if (wrong.count == 0)
            wrong.first = fmt::format("rank {} (GPU {}) element {}: got {:g}, expected {:g}", r,
                                      ranks[r]->device, off + i, host[i], want);
          ++wrong.count;
        }
      }
    }
  }
  return wrong;
}

// One op on every rank: ncclGroupStart, a call per rank, ncclGroupEnd; an ncclInProgress
// answer (nonblocking communicators: connection setup) is polled out under the deadline,
// so on return the op is queued on every stream.
MaybeFailure launch(const NcclLib& lib, std::string_view op, const Comms& comms,
                    const std::vector<std::unique_ptr<RankRes>>& ranks,
                    const std::vector<DeviceBuffer>& send, const std::vector<DeviceBuffer>& recv,
                    std::size_t param_count, Clock::time_point deadline) {
  const auto& h = comms.handles();
  if (ncclResult_t r = lib.group_start(); r != ncclSuccess)
    return Failure{false, -1, {}, "ncclGroupStart: " + lib.text(r)};
  MaybeFailure first;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    ncclResult_t res = ncclSuccess;
    const char* fn = "";
    if (op == "all_reduce") {
      fn = "ncclAllReduce";
      res = lib.all_reduce(send[r].data(), recv[r].data(), param_count, ncclFloat32, ncclSum, h[r],
                           ranks[r]->stream);
    } else if (op == "all_gather") {
      fn = "ncclAllGather";
      res = lib.all_gather(send[r].data(), recv[r].data(), param_count, ncclFloat32, h[r],
                           ranks[r]->stream);
    } else {
      fn = "ncclReduceScatter";
      res = lib.reduce_scatter(send[r].data(), recv[r].data(), param_count, ncclFloat32, ncclSum,
                               h[r], ranks[r]->stream);
    }
    if (res != ncclSuccess && res != ncclInProgress && !first)
      first = Failure{false, static_cast<int>(r), {}, std::string(fn) + ": " + lib.text(res, h[r])};
  }
  const ncclResult_t end = lib.group_end();  // always paired with the start, even after an error
  if (first) return first;
  if (end == ncclInProgress) return wait_for(lib, h, nullptr, deadline);
  if (end != ncclSuccess) return Failure{false, -1, {}, "ncclGroupEnd: " + lib.text(end)};
  return std::nullopt;
}

double spread_pct(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return median > 0 ? (v.back() - v.front()) / median * 100.0 : 0;
}

std::shared_ptr<const NcclLib> lib_for(const NcclEnv& env, std::string& error) {
  if (!env.ok) {
    error = env.error.empty() ? "NCCL was not loaded" : env.error;
    return nullptr;
  }
  Loaded l = load_library(env.library);
  if (!l.lib) error = l.error;
  return l.lib;
}

// Outcome of one size: a row, or a failure that ends the benchmark.
struct SizeOutcome {
  std::vector<BenchCell> cells;
  std::optional<std::string> fatal;
};

std::vector<BenchCell> error_row(const std::string& e) {
  std::vector<BenchCell> row(3);
  for (auto& c : row) c.error = e;
  return row;
}

class CollectiveRun {
 public:
  CollectiveRun(const NcclLib& lib, const CollectiveSpec& spec, std::vector<int> devices,
                BenchMatrix& m)
      : lib_(lib), spec_(spec), devices_(std::move(devices)), m_(m), comms_(lib, devices_) {}

  void run() {
    const int n = static_cast<int>(devices_.size());
    const int warmup = std::max(spec_.warmup, 0);
    const int iterations = std::max(spec_.iterations, 1);
    const double factor = *detail::bus_bw_factor(spec_.op, n);

    for (int d : devices_) {
      auto rr = std::make_unique<RankRes>();
      if (cudaError_t e = rr->create(d, iterations + 1); e != cudaSuccess) {
        m_.error = fmt::format("GPU {}: creating a stream and events: {}", d, cuda_text(e));
        ranks_.push_back(std::move(rr));
        return;
      }
      ranks_.push_back(std::move(rr));
    }

    if (auto f = comms_.init(Clock::now() + spec_.timeout)) {
      m_.error = failure_text(*f, devices_, spec_.timeout, "communicator init");
      if (f->timeout) drain_after_failure(nullptr, nullptr);
      return;
    }
    std::string gpu_list;
    for (int d : devices_) gpu_list += (gpu_list.empty() ? "" : ",") + std::to_string(d);
    m_.notes.push_back(fmt::format(
        "NCCL {}: {} rank{} on GPU {}, {} communicators; float32{}, out of place; {} warm-up and "
        "{} timed ops per size; time = slowest rank's mean per op (CUDA events); busbw = algbw "
        "× {:g}",
        detail::nccl_version_string(lib_.version_code), n, n == 1 ? "" : "s", gpu_list,
        comms_.nonblocking() ? "nonblocking" : "blocking (NCCL < 2.14: init and enqueue unbounded)",
        spec_.op == "all_gather" ? "" : " sum", warmup, iterations, factor));
    if (n == 1) m_.notes.push_back("1 GPU: only the path is exercised (busbw 0, as nccl-tests)");

    std::vector<std::size_t> seen;
    for (std::size_t size : spec_.sizes) {
      auto counts = detail::collective_counts(spec_.op, size, n);
      if (!counts) {
        m_.notes.push_back(fmt::format("{} B skipped: smaller than one float32", size));
        continue;
      }
      if (std::find(seen.begin(), seen.end(), counts->bytes) != seen.end()) continue;
      seen.push_back(counts->bytes);
      if (counts->bytes != size)
        m_.notes.push_back(
            fmt::format("{} runs as {} (whole 16-byte chunks per rank, as nccl-tests)",
                        size_label(size), size_label(counts->bytes)));
      SizeOutcome out = run_size(*counts, warmup, iterations, factor);
      if (out.fatal) {
        m_.error = *out.fatal;
        return;
      }
      m_.rows.push_back(size_label(counts->bytes));
      m_.row_gpu.push_back(-1);
      m_.cells.push_back(std::move(out.cells));
    }

    if (auto f = comms_.close(Clock::now() + spec_.timeout))
      m_.notes.push_back("communicator teardown: " +
                         failure_text(*f, devices_, spec_.timeout, "ncclCommFinalize") +
                         " (aborted)");
  }

 private:
  // Aborts every communicator and leaks the buffers of ranks whose stream stays busy.
  void drain_after_failure(std::vector<DeviceBuffer>* send, std::vector<DeviceBuffer>* recv) {
    const std::vector<int> stuck = abort_and_drain(lib_, comms_, ranks_);
    for (int r : stuck) {
      if (send) (*send)[r].leak();
      if (recv) (*recv)[r].leak();
    }
    if (!stuck.empty())
      m_.notes.push_back("still busy after ncclCommAbort, buffers left allocated: rank " +
                         rank_list(stuck, devices_));
  }

  SizeOutcome run_size(const detail::CollectiveCounts& k, int warmup, int iterations,
                       double factor) {
    const std::size_t n = devices_.size();
    const std::string what = fmt::format("{} of {}", spec_.op, size_label(k.bytes));
    SizeOutcome out;
    std::vector<DeviceBuffer> send(n), recv(n);
    for (std::size_t r = 0; r < n; ++r) {
      cudaError_t e = send[r].allocate(devices_[r], k.send_count);
      if (e == cudaSuccess) e = recv[r].allocate(devices_[r], k.recv_count);
      if (e != cudaSuccess) {
        cudaGetLastError();  // allocation errors are not sticky; clear the last-error slot
        out.cells = error_row(fmt::format("cudaMalloc on GPU {}: {}", devices_[r], cuda_text(e)));
        return out;
      }
    }
    auto fatal = [&](const Failure& f, const std::string& phase) {
      drain_after_failure(&send, &recv);
      out.fatal = failure_text(f, devices_, spec_.timeout, what + phase);
      return out;
    };

    if (auto f = fill_send(lib_, ranks_, send, Clock::now() + spec_.timeout))
      return fatal(*f, " (filling the buffers)");

    // Warm-up.
    auto deadline = Clock::now() + spec_.timeout;
    for (int i = 0; i < warmup; ++i)
      if (auto f = launch(lib_, spec_.op, comms_, ranks_, send, recv, k.param_count, deadline))
        return fatal(*f, " (warm-up)");
    if (auto f = wait_for(lib_, comms_.handles(), &ranks_, deadline))
      return fatal(*f, " (warm-up)");

    // Timed loop: an event before the first op and after every op, on every stream.
    deadline = Clock::now() + spec_.timeout;
    auto record = [&](int slot) -> MaybeFailure {
      for (std::size_t r = 0; r < n; ++r) {
        cudaSetDevice(devices_[r]);
        if (cudaError_t e = cudaEventRecord(ranks_[r]->events[slot], ranks_[r]->stream);
            e != cudaSuccess)
          return Failure{false, static_cast<int>(r), {}, "cudaEventRecord: " + cuda_text(e)};
      }
      return std::nullopt;
    };
    // Events only at chunk boundaries (4 chunks): an event between every op costs host time
    // per launch, which small, launch-bound collectives pay in full (measured on the H200:
    // 8.4 vs 7.2 µs per op at 512 KiB against nccl-tests, which times the whole loop once).
    const int chunk = std::max(1, iterations / 4);
    std::vector<int> marks = {0};  // op counts at which an event was recorded
    if (auto f = record(0)) return fatal(*f, "");
    for (int i = 0; i < iterations; ++i) {
      if (auto f = launch(lib_, spec_.op, comms_, ranks_, send, recv, k.param_count, deadline))
        return fatal(*f, "");
      if ((i + 1) % chunk == 0 || i + 1 == iterations) {
        if (auto f = record(static_cast<int>(marks.size()))) return fatal(*f, "");
        marks.push_back(i + 1);
      }
    }
    if (auto f = wait_for(lib_, comms_.handles(), &ranks_, deadline)) return fatal(*f, "");

    const int last = static_cast<int>(marks.size()) - 1;
    double time_us = 0;                    // max over ranks of mean per op
    std::vector<double> op_us(last, 0.0);  // per chunk: mean per op, max over ranks
    for (std::size_t r = 0; r < n; ++r) {
      float ms = 0;
      cudaSetDevice(devices_[r]);
      if (cudaError_t e = cudaEventElapsedTime(&ms, ranks_[r]->events[0], ranks_[r]->events[last]);
          e != cudaSuccess)
        return fatal(
            Failure{false, static_cast<int>(r), {}, "cudaEventElapsedTime: " + cuda_text(e)}, "");
      time_us = std::max(time_us, static_cast<double>(ms) * 1000.0 / iterations);
      for (int i = 0; i < last; ++i) {
        if (cudaEventElapsedTime(&ms, ranks_[r]->events[i], ranks_[r]->events[i + 1]) ==
            cudaSuccess)
          op_us[i] =
              std::max(op_us[i], static_cast<double>(ms) * 1000.0 / (marks[i + 1] - marks[i]));
      }
    }

    // Verification: NaN in every receive buffer, one more op, compare every value.
    deadline = Clock::now() + spec_.timeout;
    for (std::size_t r = 0; r < n; ++r) {
      cudaSetDevice(devices_[r]);
      if (cudaError_t e = cudaMemsetAsync(recv[r].data(), 0xff, recv[r].bytes(), ranks_[r]->stream);
          e != cudaSuccess)
        return fatal(Failure{false, static_cast<int>(r), {}, "cudaMemsetAsync: " + cuda_text(e)},
                     " (check)");
    }
    if (auto f = launch(lib_, spec_.op, comms_, ranks_, send, recv, k.param_count, deadline))
      return fatal(*f, " (check)");
    if (auto f = wait_for(lib_, comms_.handles(), &ranks_, deadline)) return fatal(*f, " (check)");
    auto checked = check_recv(ranks_, recv, Expect{spec_.op, static_cast<int>(n), k.param_count});
    if (auto* f = std::get_if<Failure>(&checked)) return fatal(*f, " (check)");
    const Wrong wrong = std::get<Wrong>(checked);

    out.cells.resize(3);
    BenchCell& alg = out.cells[0];
    BenchCell& bus = out.cells[1];
    BenchCell& tim = out.cells[2];
    if (time_us > 0) {
      const double bytes = static_cast<double>(k.bytes);
      alg.value = bytes / (time_us * 1e3);  // B/µs / 1e3 = GB/s
      bus.value = *alg.value * factor;
      tim.value = time_us;
      std::vector<double> bw;
      bool all_positive = true;
      for (double t : op_us) {
        if (t <= 0)
          all_positive = false;
        else
          bw.push_back(bytes / (t * 1e3));
      }
      if (all_positive && op_us.size() > 1) {
        tim.spread_pct = spread_pct(op_us);
        alg.spread_pct = spread_pct(bw);
        if (factor > 0) bus.spread_pct = alg.spread_pct;
      }
    } else {
      for (auto& c : out.cells) c.error = "no time measured";
    }
    for (auto& c : out.cells) c.verified = wrong.count == 0;
    if (wrong.count > 0) {
      for (auto& c : out.cells) c.error = fmt::format("{} wrong values", wrong.count);
      m_.notes.push_back(
          fmt::format("{}: {} wrong values; first: {}", what, wrong.count, wrong.first));
    }
    return out;
  }

  const NcclLib& lib_;
  const CollectiveSpec& spec_;
  std::vector<int> devices_;
  BenchMatrix& m_;
  // Declared before comms_ so that communicators are aborted before streams go away.
  std::vector<std::unique_ptr<RankRes>> ranks_;
  Comms comms_;
};

void run_collective(const NcclEnv& env, const CollectiveSpec& spec, BenchMatrix& m) {
  if (!detail::bus_bw_factor(spec.op, 1)) {
    m.error = "unknown collective '" + spec.op + "' (all_reduce, all_gather, reduce_scatter)";
    return;
  }
  std::string why;
  auto lib = lib_for(env, why);
  if (!lib) {
    m.skipped = "NCCL unavailable: " + why;
    return;
  }
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    cudaGetLastError();
    m.skipped = e != cudaSuccess ? "no usable CUDA device: " + cuda_text(e) : "no CUDA device";
    return;
  }
  std::vector<int> devices = spec.gpus;
  if (devices.empty())
    for (int d = 0; d < count; ++d) devices.push_back(d);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] < 0 || devices[i] >= count) {
      m.error = fmt::format("GPU {} does not exist ({} CUDA devices)", devices[i], count);
      return;
    }
    if (std::find(devices.begin(), devices.begin() + i, devices[i]) != devices.begin() + i) {
      m.error = fmt::format("GPU {} is listed twice", devices[i]);
      return;
    }
  }
  if (spec.sizes.empty()) {
    m.error = "no message sizes given";
    return;
  }
  m.title =
      fmt::format("NCCL {} (float32{}), {} GPU{}", spec.op, spec.op == "all_gather" ? "" : ", sum",
                  devices.size(), devices.size() == 1 ? "" : "s");
  m.notes.push_back(keep_multicast_off());
  KeepCurrentDevice keep;
  CollectiveRun run(*lib, spec, std::move(devices), m);
  run.run();
}

// One 2-rank all-reduce of 1 MiB over GPUs a and b, its sum checked; any failure (setup,
// NCCL error, stall) is false. `wedged` gets the GPUs still busy after an abort.
bool pair_allreduce(const NcclLib& lib, int a, int b, std::chrono::milliseconds timeout,
                    std::vector<int>& wedged) {
  const std::vector<int> devices{a, b};
  const std::size_t floats = (std::size_t{1} << 20) / sizeof(float);
  std::vector<std::unique_ptr<RankRes>> ranks;
  for (int d : devices) {
    auto rr = std::make_unique<RankRes>();
    if (rr->create(d, 0) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    ranks.push_back(std::move(rr));
  }
  std::vector<DeviceBuffer> send(2), recv(2);
  for (int r = 0; r < 2; ++r) {
    if (send[r].allocate(devices[r], floats) != cudaSuccess ||
        recv[r].allocate(devices[r], floats) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
  }
  Comms comms(lib, devices);  // after the buffers and streams: torn down first
  auto fail = [&]() {
    for (int r : abort_and_drain(lib, comms, ranks)) {
      send[r].leak();
      recv[r].leak();
      wedged.push_back(devices[r]);
    }
    return false;
  };
  if (fill_send(lib, ranks, send, Clock::now() + timeout)) return fail();
  if (comms.init(Clock::now() + timeout)) return fail();
  const auto deadline = Clock::now() + timeout;
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(devices[r]);
    if (cudaMemsetAsync(recv[r].data(), 0xff, recv[r].bytes(), ranks[r]->stream) != cudaSuccess)
      return fail();
  }
  if (launch(lib, "all_reduce", comms, ranks, send, recv, floats, deadline)) return fail();
  if (wait_for(lib, comms.handles(), &ranks, deadline)) return fail();
  auto checked = check_recv(ranks, recv, Expect{"all_reduce", 2, floats});
  if (std::holds_alternative<Failure>(checked)) return fail();
  const bool ok = std::get<Wrong>(checked).count == 0;
  (void)comms.close(Clock::now() + timeout);  // a teardown failure aborts; the result stands
  return ok;
}

}  // namespace

// ------------------------------------------------------------------------------ public

std::string NcclLib::text(ncclResult_t r, ncclComm_t comm) const {
  std::string s = nccl_result_name(r);
  if (get_error_string)
    if (const char* t = get_error_string(r); t && *t) s += fmt::format(": {}", t);
  if (get_last_error)
    if (const char* t = get_last_error(comm); t && *t) s += fmt::format(" — {}", t);
  return s;
}

const NcclLib* nccl_library(const std::string& path, std::string* error) {
  try {
    std::string requested = path;
    if (requested.empty())
      if (const char* e = std::getenv("GPUVET_NCCL_LIBRARY"); e && *e) requested = e;
    if (requested.empty()) requested = "libnccl.so.2";
    Loaded l = load_library(requested);
    if (!l.lib && error) *error = l.error;
    // The registry keeps every entry for the life of the process: the raw pointer stays valid.
    return l.lib.get();
  } catch (const std::exception& e) {
    if (error) *error = std::string("loading NCCL: ") + e.what();
  } catch (...) {
    if (error) *error = "loading NCCL: unexpected failure";
  }
  return nullptr;
}

std::string nccl_keep_multicast_off() { return keep_multicast_off(); }

std::string nccl_version_text(int code) { return detail::nccl_version_string(code); }

NcclEnv nccl_load(const std::string& library_path) {
  NcclEnv env;
  try {
    std::string requested = library_path;
    if (requested.empty())
      if (const char* e = std::getenv("GPUVET_NCCL_LIBRARY"); e && *e) requested = e;
    if (requested.empty()) requested = "libnccl.so.2";
    Loaded l = load_library(requested);
    if (!l.lib) {
      env.library = requested;
      env.error = l.error;
      return env;
    }
    env.ok = true;
    env.library = l.lib->path;
    env.version = detail::nccl_version_string(l.lib->version_code);
  } catch (const std::exception& e) {
    env.ok = false;
    env.error = std::string("loading NCCL: ") + e.what();
  } catch (...) {
    env.ok = false;
    env.error = "loading NCCL: unexpected failure";
  }
  return env;
}

BenchMatrix nccl_collective(const NcclEnv& env, const CollectiveSpec& spec) {
  BenchMatrix m;
  m.key = spec.op;
  m.unit = "GB/s";
  m.cols = {"algbw", "busbw", "time_us"};
  m.col_gpu = {-1, -1, -1};
  const auto t0 = Clock::now();
  try {
    run_collective(env, spec, m);
  } catch (const std::bad_alloc&) {
    m.error = "out of host memory";
  } catch (const std::exception& e) {
    m.error = std::string("unexpected failure: ") + e.what();
  } catch (...) {
    m.error = "unexpected failure";
  }
  m.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return m;
}

// nccl_transport stays empty: NCCL says which transport it chose only in its INFO log
// (NCCL_DEBUG=INFO), which gpuvet does not turn on or parse. a and b are CUDA ordinals, as
// for p2p_truth_cuda. After a stall that leaves a GPU busy even after ncclCommAbort, the
// remaining pairs with that GPU are not tried (nccl_allreduce_ok stays unset).
void p2p_truth_nccl(const NcclEnv& env, std::vector<P2PTruth>& truth,
                    std::chrono::milliseconds timeout) {
  try {
    std::string why;
    auto lib = lib_for(env, why);
    if (!lib) return;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
      cudaGetLastError();
      return;
    }
    keep_multicast_off();
    KeepCurrentDevice keep;
    std::vector<int> wedged;
    for (P2PTruth& t : truth) {
      if (t.a == t.b || t.a < 0 || t.b < 0 || t.a >= count || t.b >= count) continue;
      if (std::find(wedged.begin(), wedged.end(), t.a) != wedged.end() ||
          std::find(wedged.begin(), wedged.end(), t.b) != wedged.end())
        continue;
      t.nccl_allreduce_ok = pair_allreduce(*lib, t.a, t.b, timeout, wedged);
    }
  } catch (...) {
    // Nothing escapes; entries not reached keep nccl_allreduce_ok unset.
  }
}

}  // namespace gpuvet::bench
