// probe/nvml_sampler.cc — the NVML time series of `gpuvet scale --duration` and
// `gpuvet watch`.
#include "probe/nvml_sampler.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

#include <fmt/format.h>

#include "import/psi.h"
#include "probe/nvml_library.h"
#include "probe/nvml_probe.h"

namespace gpuvet::probe {

void NvmlSampler::start() {
  t0_ = std::chrono::steady_clock::now();
  thread_ = std::thread([this] { loop(); });
}

std::vector<GpuSample> NvmlSampler::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  return samples_;
}

std::size_t NvmlSampler::samples_taken() const {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_.size();
}

void NvmlSampler::loop() {
  struct MarkFinished {
    std::atomic<bool>& flag;
    ~MarkFinished() { flag = true; }
  } mark{finished_};
  NvmlProbeOptions o;
  o.library_given_by_user = options_.nvml_library.has_value();
  o.library = options_.nvml_library.value_or("libnvidia-ml.so.1");
  o.init_timeout = options_.init_timeout;
  o.gpu_timeout = options_.gpu_timeout;
  o.cpu_affinity = false;
  o.samples_only = true;
  o.sample_health = options_.health;
  o.keep_init = true;  // one nvmlInit for the whole series, shut down when the loop ends
  auto since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  };
  const auto loaded = load_nvml(o);
  if (!loaded.library) {
    abandoned_probes_ = loaded.abandoned_threads;
    abandoned_count_ += loaded.abandoned_threads ? 1 : 0;
    notes_.push_back("no NVML samples: " + loaded.failure_message);
    return;
  }
  struct ShutdownHeld {
    const NvmlProbeOptions& o;
    const NvmlLoadResult& loaded;
    const bool& abandoned;
    ~ShutdownHeld() {
      // Not under a thread still inside the library: shutting down there could block.
      if (o.init_held && !abandoned && loaded.library->shutdown) loaded.library->shutdown();
    }
  } shutdown_held{o, loaded, abandoned_probes_};
  auto next = t0_;
  // The accumulated clock-event times last read per GPU, and when (see violation_interval_s).
  std::map<int, std::map<std::string, std::uint64_t>> violations;
  double violations_read_at = -1e300;
  while (!stop_) {
    const double t_probe_start = since_start();
    o.violation_counters = options_.health && t_probe_start - violations_read_at >=
                                                  options_.violation_interval_s - 1e-3;
    const NvmlProbeResult r = probe_nvml(o, loaded.library);
    if (o.violation_counters) {
      violations_read_at = t_probe_start;
      for (const auto& g : r.gpus)
        if (!g.clock_events.accumulated_ns.empty())
          violations[g.index] = g.clock_events.accumulated_ns;
    }
    if (options_.host_fs) sample_host(t_probe_start);
    const double t = since_start();
    if (r.abandoned_threads) {
      abandoned_probes_ = true;
      ++abandoned_count_;
    }
    if (r.failure != NvmlFailure::kNone) {
      notes_.push_back(fmt::format("NVML samples stopped at {:.1f} s: {}", t, r.failure_message));
      return;
    }
    o.init_held = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& g : r.gpus) {
        if (g.unresponsive) continue;
        if (!options_.gpus.empty() &&
            std::find(options_.gpus.begin(), options_.gpus.end(), g.index) == options_.gpus.end())
          continue;
        GpuSample s;
        s.gpu = g.index;
        s.t_s = t;
        s.sm_mhz = g.clocks.sm_mhz;
        s.gpu_c = g.thermal.gpu_c;
        s.power_w = g.power.draw_w;
        s.util_pct = g.utilization.gpu_pct;
        s.clock_event_mask = g.clock_events.active_mask;
        if (options_.health) {
          s.mem_mhz = g.clocks.mem_mhz;
          s.margin_c = g.thermal.margin_c;
          s.power_limit_w = g.power.enforced_limit_w ? g.power.enforced_limit_w : g.power.limit_w;
          s.mem_util_pct = g.utilization.memory_pct;
          s.memory_used_bytes = g.memory.used_bytes;
          s.pcie_gen = g.pcie.gen_current;
          s.pcie_width = g.pcie.width_current;
          s.pcie_replays = g.pcie.replay_counter;
          s.ecc_corrected = g.ecc.volatile_counts.corrected;
          s.ecc_uncorrected = g.ecc.volatile_counts.uncorrected;
          if (!g.nvlinks.empty()) {
            int up = 0;
            for (const auto& l : g.nvlinks) up += l.active.value_or(false) ? 1 : 0;
            s.nvlinks_up = up;
            s.nvlinks_total = static_cast<int>(g.nvlinks.size());
          }
          if (auto v = violations.find(g.index); v != violations.end())
            s.clock_event_ns = v->second;
        }
        samples_.push_back(s);
      }
    }
    // A GPU that stopped answering is not asked again: a hung call would leave one more
    // thread inside the driver per sample.
    for (const auto& g : r.gpus)
      if (g.unresponsive &&
          std::find(o.skip_gpus.begin(), o.skip_gpus.end(), g.index) == o.skip_gpus.end()) {
        o.skip_gpus.push_back(g.index);
        notes_.push_back(
            fmt::format("GPU{} not sampled after {:.1f} s: {}", g.index, t, *g.unresponsive));
      }
    if (!r.gpus.empty() && o.skip_gpus.size() >= r.gpus.size()) {
      notes_.push_back("NVML samples stopped: no GPU answers");
      return;
    }
    next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(options_.interval_s));
    while (!stop_ && std::chrono::steady_clock::now() < next)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace gpuvet::probe

namespace gpuvet::probe {

std::vector<GpuSample> NvmlSampler::samples_since(std::size_t from) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (from >= samples_.size()) return {};
  return {samples_.begin() + static_cast<std::ptrdiff_t>(from), samples_.end()};
}

std::vector<HostSample> NvmlSampler::host_samples_since(std::size_t from) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (from >= host_samples_.size()) return {};
  return {host_samples_.begin() + static_cast<std::ptrdiff_t>(from), host_samples_.end()};
}

// PSI shares over the interval since the previous reading, from the kernel's "some" totals
// (µs of stall). The first reading only sets the origin; a counter that went backwards
// gives no share.
void NvmlSampler::sample_host(double t) {
  static const char* const kFiles[] = {"/proc/pressure/cpu", "/proc/pressure/io",
                                       "/proc/pressure/memory"};
  HostSample h;
  h.t_s = t;
  std::optional<double>* shares[] = {&h.psi_cpu_some_pct, &h.psi_io_some_pct,
                                     &h.psi_memory_some_pct};
  const double dt = t - psi_prev_t_;
  bool any = false;
  for (int i = 0; i < 3; ++i) {
    auto r = options_.host_fs->read_file(kFiles[i], 4096);
    std::optional<std::uint64_t> total;
    if (r.is_ok())
      if (auto f = import::parse_psi_file(r.value())) total = f->some_total_us;
    if (total && psi_prev_[i] && *total >= *psi_prev_[i] && dt > 0) {
      *shares[i] =
          std::clamp(static_cast<double>(*total - *psi_prev_[i]) / (dt * 1e6) * 100, 0.0, 100.0);
      any = true;
    }
    psi_prev_[i] = total;
  }
  psi_prev_t_ = t;
  if (!any) return;
  std::lock_guard<std::mutex> lock(mu_);
  host_samples_.push_back(h);
}

}  // namespace gpuvet::probe
