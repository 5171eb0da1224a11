// watch/watch.cc — the collection at the start and the NVML sampler behind `gpuvet watch`.
#include "gpuvet/watch.h"

#include <algorithm>
#include <thread>

#include "probe/nvml_sampler.h"

namespace gpuvet {

struct Watch::Impl {
  explicit Impl(probe::SamplerOptions o) : sampler(std::move(o)) {}
  probe::NvmlSampler sampler;
  std::chrono::steady_clock::time_point t0;
  std::size_t gpu_taken = 0;
  std::size_t host_taken = 0;
  bool started = false;
};

Watch::Watch(WatchOptions options, const Env& env) : options_(std::move(options)), env_(env) {}

Watch::~Watch() {
  if (impl_) impl_->sampler.stop();
}

const Collection& Watch::start() {
  collection_ = collect_facts(options_.collect, env_);
  probe::SamplerOptions o;
  o.nvml_library = options_.collect.nvml_library;
  o.interval_s = options_.interval_s;
  o.init_timeout = options_.collect.init_timeout;
  o.gpu_timeout = options_.collect.gpu_timeout;
  o.health = true;
  o.gpus = options_.gpus;
  o.host_fs = options_.host_psi ? &env_.fs : nullptr;
  // A GPU that did not answer the collection is not sampled again (its probe thread may still
  // be inside the driver); the others are watched. It stays in the facts, unresponsive, and
  // the verdict names it.
  bool any_answering = false;
  if (collection_.abandoned_probes) {
    std::vector<int> answering;
    for (const auto& g : collection_.facts.gpus) {
      const bool asked =
          options_.gpus.empty() ||
          std::find(options_.gpus.begin(), options_.gpus.end(), g.index) != options_.gpus.end();
      if (asked && !g.unresponsive) answering.push_back(g.index);
    }
    any_answering = !answering.empty();
    o.gpus = std::move(answering);
  }
  impl_ = std::make_unique<Impl>(std::move(o));
  // No GPU facts (no driver, NVML hung at the start), or no GPU left that answered: nothing to
  // sample, and a second load of a library that just hung would leave one more thread in it.
  if (collection_.facts.gpus.empty() || (collection_.abandoned_probes && !any_answering))
    return collection_;
  impl_->t0 = std::chrono::steady_clock::now();
  impl_->sampler.start();
  impl_->started = true;
  return collection_;
}

double Watch::elapsed_s() const {
  if (!impl_ || !impl_->started) return 0;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - impl_->t0).count();
}

std::optional<WatchInterval> Watch::next(const std::atomic<bool>& stop) {
  if (!impl_ || !impl_->started) return std::nullopt;
  auto& s = impl_->sampler;
  for (;;) {
    if (stop) return std::nullopt;
    if (options_.duration_s > 0 && elapsed_s() >= options_.duration_s) return std::nullopt;
    auto fresh = s.samples_since(impl_->gpu_taken);
    if (!fresh.empty()) {
      // One probe's samples share their time and arrive together.
      WatchInterval w;
      w.t_s = fresh.front().t_s;
      for (auto& g : fresh) {
        if (g.t_s != w.t_s) break;
        w.gpus.push_back(std::move(g));
      }
      impl_->gpu_taken += w.gpus.size();
      auto host = s.host_samples_since(impl_->host_taken);
      impl_->host_taken += host.size();
      if (!host.empty()) w.host = host.back();
      return w;
    }
    if (s.finished()) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Facts Watch::finish() {
  Facts f = collection_.facts;
  if (!impl_) return f;
  f.samples = impl_->sampler.stop();
  f.host_samples = impl_->sampler.host_samples();
  for (const auto& n : impl_->sampler.notes()) f.notes.push_back(n);
  return f;
}

bool Watch::abandoned_probes() const {
  return collection_.abandoned_probes || (impl_ && impl_->sampler.abandoned_probes());
}

}  // namespace gpuvet
