// gpu/cuda_resources.h — RAII handles for the CUDA objects bench and scale use: device and
// host memory (host memory placed on a NUMA node on request), streams, event sets, and a
// guard that puts the caller's current device back.
//
// Each handle owns its objects on one device and frees them in its destructor on that
// device, then puts the caller's current device back and clears CUDA's last-error slot
// (a destructor cannot report). Handles are movable, not copyable. After an abort that left
// a kernel running, DeviceMem::leak() and HostMem::leak() give the memory up for good:
// cudaFree would wait for that kernel. cudaStreamDestroy and cudaEventDestroy do not wait
// for pending work, so a Stream or an EventSet may go at any time. Errors are GpuStatus with
// the plain CUDA text ("cudaErrorMemoryAllocation: out of memory"); callers add context.
// Thread safety: a handle is used by one thread at a time; the CUDA objects it holds may be
// used from any thread, as CUDA allows. Only built with GPUVET_CUDA; C++17 (CUDA sources
// include it).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "gpu/cuda_status.h"

namespace gpuvet::gpu {

// The current device of this thread, put back on the way out (rank loops and destructors
// move it).
class KeepCurrentDevice {
 public:
  KeepCurrentDevice();
  KeepCurrentDevice(const KeepCurrentDevice&) = delete;
  KeepCurrentDevice& operator=(const KeepCurrentDevice&) = delete;
  ~KeepCurrentDevice();

 private:
  int device_ = -1;
};

class DeviceMem {
 public:
  DeviceMem() = default;
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
  DeviceMem(DeviceMem&& o) noexcept { swap(o); }
  DeviceMem& operator=(DeviceMem&& o) noexcept;
  ~DeviceMem();

  // `bytes` (at least 1) on `device`, which is left current; what was held is freed first.
  [[nodiscard]] GpuStatus allocate(int device, std::size_t bytes);
  // Never freed: for memory a kernel may still be using after an abort.
  void leak() { leak_ = true; }

  template <class T = void>
  T* get() const {
    return static_cast<T*>(p_);
  }
  int device() const { return device_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void swap(DeviceMem& o) noexcept;
  void* p_ = nullptr;
  int device_ = -1;
  std::size_t bytes_ = 0;
  bool leak_ = false;
};

class HostMem {
 public:
  enum class Kind {
    kPageable,      // aligned_alloc (page-aligned): what a plain program copies from
    kPinned,        // cudaHostAlloc, default flags
    kPinnedMapped,  // cudaHostAlloc, portable and mapped: any GPU may DMA it or read it
                    // from a kernel through mapped()
  };

  HostMem() = default;
  HostMem(const HostMem&) = delete;
  HostMem& operator=(const HostMem&) = delete;
  HostMem(HostMem&& o) noexcept { swap(o); }
  HostMem& operator=(HostMem&& o) noexcept;
  ~HostMem();

  // What was held is freed first. Pageable memory that cannot be had is the error "out of
  // host memory (N bytes)".
  [[nodiscard]] GpuStatus allocate(std::size_t bytes, Kind kind);
  void leak() { leak_ = true; }

  template <class T = void>
  T* get() const {
    return static_cast<T*>(p_);
  }
  // The device address of kPinnedMapped memory (with UVA the same pointer); else null.
  void* mapped() const { return mapped_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void swap(HostMem& o) noexcept;
  void* p_ = nullptr;
  void* mapped_ = nullptr;
  std::size_t bytes_ = 0;
  bool pinned_ = false;
  bool leak_ = false;
};

// Host memory for GPU `gpu` whose pages live on NUMA node `numa_node` (when >= 0). Pinning
// faults the pages in during cudaHostAlloc, so the allocation itself, not only the first
// touch, runs on a helper thread bound to the node's CPUs, with `gpu` current; then
// first_touch(out.get()) writes every page from there too. When the node's CPUs cannot be
// read or the thread cannot be bound, the memory is still allocated (unplaced) and a note
// says why; a note also says when the pages landed on another node. Each note is added to
// `notes` once.
[[nodiscard]] GpuStatus allocate_host_on_node(HostMem& out, int gpu, std::size_t bytes,
                                              HostMem::Kind kind, int numa_node,
                                              const std::function<void(void*)>& first_touch,
                                              std::vector<std::string>& notes);

// A non-blocking stream (the legacy default stream, used by setup and checks, does not order
// it) on one device.
class Stream {
 public:
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& o) noexcept { swap(o); }
  Stream& operator=(Stream&& o) noexcept;
  ~Stream();

  // On `device`, which is left current.
  [[nodiscard]] GpuStatus create(int device);
  cudaStream_t get() const { return s_; }
  int device() const { return device_; }

 private:
  void swap(Stream& o) noexcept;
  cudaStream_t s_ = nullptr;
  int device_ = -1;
};

// `n` timing events (cudaEventDefault) of one device.
class EventSet {
 public:
  EventSet() = default;
  EventSet(const EventSet&) = delete;
  EventSet& operator=(const EventSet&) = delete;
  EventSet(EventSet&& o) noexcept { swap(o); }
  EventSet& operator=(EventSet&& o) noexcept;
  ~EventSet();

  // On `device`, which is left current; what was held is destroyed first.
  [[nodiscard]] GpuStatus create(int device, std::size_t n);
  cudaEvent_t operator[](std::size_t i) const { return ev_[i]; }
  const cudaEvent_t* data() const { return ev_.data(); }
  std::size_t size() const { return ev_.size(); }

 private:
  void swap(EventSet& o) noexcept;
  std::vector<cudaEvent_t> ev_;
  int device_ = -1;
};

}  // namespace gpuvet::gpu
