// gpu/cuda_resources.cc — the CUDA handles and NUMA-placed host memory (cuda_resources.h).
#include "gpu/cuda_resources.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <thread>
#include <utility>

#include "core/util.h"

namespace gpuvet::gpu {
namespace {

// Runs fn() with `device` current, then puts the previous device back; for destructors,
// which must free on the owning device and cannot report failures.
template <class Fn>
void on_device(int device, Fn&& fn) {
  int prev = -1;
  if (cudaGetDevice(&prev) != cudaSuccess) prev = -1;
  if (device >= 0) (void)cudaSetDevice(device);
  fn();
  if (prev >= 0 && prev != device) (void)cudaSetDevice(prev);
  (void)cudaGetLastError();
}

void add_note_once(std::vector<std::string>& notes, const std::string& note) {
  if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
}

// The CPUs of NUMA node `node` from sysfs ("0-3,8,10-11"); empty when unreadable or when a
// CPU is beyond what a cpu_set_t holds.
std::vector<int> node_cpus(const std::string& path) {
  std::ifstream file(path);
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::vector<int> cpus = parse_cpu_list(text).value_or(std::vector<int>{});
  for (int c : cpus)
    if (c >= CPU_SETSIZE) return {};
  return cpus;
}

// The node that holds the page at `p`, or -1 (move_pages with no targets only reports).
int node_of_page(const void* p) {
  void* pages[1] = {const_cast<void*>(p)};
  int status[1] = {-1};
  if (syscall(SYS_move_pages, 0, 1UL, pages, nullptr, status, 0) != 0) return -1;
  return status[0];
}

}  // namespace

// ------------------------------------------------------------------------ KeepCurrentDevice

KeepCurrentDevice::KeepCurrentDevice() {
  if (cudaGetDevice(&device_) != cudaSuccess) {
    (void)cudaGetLastError();
    device_ = -1;
  }
}

KeepCurrentDevice::~KeepCurrentDevice() {
  if (device_ >= 0) (void)cudaSetDevice(device_);
  (void)cudaGetLastError();
}

// ------------------------------------------------------------------------------ DeviceMem

DeviceMem& DeviceMem::operator=(DeviceMem&& o) noexcept {
  DeviceMem tmp(std::move(o));
  swap(tmp);
  return *this;
}

DeviceMem::~DeviceMem() {
  if (p_ && !leak_) on_device(device_, [&] { (void)cudaFree(p_); });
}

void DeviceMem::swap(DeviceMem& o) noexcept {
  std::swap(p_, o.p_);
  std::swap(device_, o.device_);
  std::swap(bytes_, o.bytes_);
  std::swap(leak_, o.leak_);
}

GpuStatus DeviceMem::allocate(int device, std::size_t bytes) {
  *this = DeviceMem();
  GPUVET_CUDA_TRY(cudaSetDevice(device));
  void* p = nullptr;
  GPUVET_CUDA_TRY(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)));
  p_ = p;
  device_ = device;
  bytes_ = bytes;
  return {};
}

// ------------------------------------------------------------------------------ HostMem

HostMem& HostMem::operator=(HostMem&& o) noexcept {
  HostMem tmp(std::move(o));
  swap(tmp);
  return *this;
}

HostMem::~HostMem() {
  if (!p_ || leak_) return;
  if (pinned_) {
    (void)cudaFreeHost(p_);
    (void)cudaGetLastError();
  } else {
    std::free(p_);
  }
}

void HostMem::swap(HostMem& o) noexcept {
  std::swap(p_, o.p_);
  std::swap(mapped_, o.mapped_);
  std::swap(bytes_, o.bytes_);
  std::swap(pinned_, o.pinned_);
  std::swap(leak_, o.leak_);
}

GpuStatus HostMem::allocate(std::size_t bytes, Kind kind) {
  *this = HostMem();
  if (kind == Kind::kPageable) {
    const std::size_t page = 4096;
    p_ = std::aligned_alloc(page, (bytes + page - 1) / page * page);
    if (!p_) return GpuStatus::error("out of host memory (" + std::to_string(bytes) + " bytes)");
    bytes_ = bytes;
    return {};
  }
  const unsigned flags = kind == Kind::kPinnedMapped ? cudaHostAllocPortable | cudaHostAllocMapped
                                                     : cudaHostAllocDefault;
  void* p = nullptr;
  GPUVET_CUDA_TRY(cudaHostAlloc(&p, bytes, flags));
  p_ = p;
  pinned_ = true;
  bytes_ = bytes;
  if (kind == Kind::kPinnedMapped) {
    void* mapped = nullptr;
    GPUVET_CUDA_TRY(cudaHostGetDevicePointer(&mapped, p_, 0));
    mapped_ = mapped;
  }
  return {};
}

GpuStatus allocate_host_on_node(HostMem& out, int gpu, std::size_t bytes, HostMem::Kind kind,
                                int numa_node, const std::function<void(void*)>& first_touch,
                                std::vector<std::string>& notes) {
  auto allocate_and_touch = [&]() -> GpuStatus {
    GPUVET_CUDA_TRY(cudaSetDevice(gpu));
    GPUVET_CUDA_TRY(out.allocate(bytes, kind));
    if (first_touch) first_touch(out.get());
    return {};
  };
  if (numa_node < 0) return allocate_and_touch();

  const std::string node = std::to_string(numa_node);
  const std::string path = "/sys/devices/system/node/node" + node + "/cpulist";
  const std::vector<int> cpus = node_cpus(path);
  if (cpus.empty()) {
    add_note_once(notes, "host buffers not placed on NUMA node " + node + ": cannot read " + path);
    return allocate_and_touch();
  }
  GpuStatus result;
  bool bound = false;
  int affinity_errno = 0;
  std::thread helper([&] {
    try {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : cpus) CPU_SET(c, &set);
      bound = sched_setaffinity(0, sizeof(set), &set) == 0;  // 0: this thread only
      if (!bound) affinity_errno = errno;                    // errno is per thread
      result = allocate_and_touch();
    } catch (const std::exception& e) {
      result = GpuStatus::error(std::string("internal error: ") + e.what());
    }
  });
  helper.join();
  if (!bound)
    add_note_once(notes, "host buffers not placed on NUMA node " + node +
                             ": sched_setaffinity failed (" + std::strerror(affinity_errno) + ")");
  if (result.ok() && bound) {
    const int landed = node_of_page(out.get<const char>() + bytes / 2);
    if (landed >= 0 && landed != numa_node)
      add_note_once(notes, "GPU" + std::to_string(gpu) + ": host buffer landed on NUMA node " +
                               std::to_string(landed) + ", not " + node);
  }
  return result;
}

// ------------------------------------------------------------------------------ Stream

Stream& Stream::operator=(Stream&& o) noexcept {
  Stream tmp(std::move(o));
  swap(tmp);
  return *this;
}

Stream::~Stream() {
  if (s_) on_device(device_, [&] { (void)cudaStreamDestroy(s_); });
}

void Stream::swap(Stream& o) noexcept {
  std::swap(s_, o.s_);
  std::swap(device_, o.device_);
}

GpuStatus Stream::create(int device) {
  *this = Stream();
  GPUVET_CUDA_TRY(cudaSetDevice(device));
  cudaStream_t s = nullptr;
  GPUVET_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  s_ = s;
  device_ = device;
  return {};
}

// ------------------------------------------------------------------------------ EventSet

EventSet& EventSet::operator=(EventSet&& o) noexcept {
  EventSet tmp(std::move(o));
  swap(tmp);
  return *this;
}

EventSet::~EventSet() {
  if (ev_.empty()) return;
  on_device(device_, [&] {
    for (cudaEvent_t e : ev_)
      if (e) (void)cudaEventDestroy(e);
  });
}

void EventSet::swap(EventSet& o) noexcept {
  std::swap(ev_, o.ev_);
  std::swap(device_, o.device_);
}

GpuStatus EventSet::create(int device, std::size_t n) {
  *this = EventSet();
  GPUVET_CUDA_TRY(cudaSetDevice(device));
  device_ = device;
  ev_.assign(n, nullptr);
  for (auto& e : ev_) GPUVET_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDefault));
  return {};
}

}  // namespace gpuvet::gpu
