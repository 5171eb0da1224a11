// The calculation of `gpuvet advise`: memory per GPU, step time and latency per candidate, term
// by term, then the article's checklist (decide.cc) on the results.
#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "advise/model.h"
#include "hw/expectations.h"
#include "hw/facts_query.h"

namespace gpuvet {

namespace advisor {

std::string gb(double bytes) { return fmt::format("{:.1f} GB", bytes / kGB); }

std::string bytes_text(double bytes) {
  if (bytes >= 1e9) return fmt::format("{:.1f} GB", bytes / 1e9);
  if (bytes >= 1e6) return fmt::format("{:.1f} MB", bytes / 1e6);
  if (bytes >= 1e3) return fmt::format("{:.1f} kB", bytes / 1e3);
  return fmt::format("{:.0f} B", bytes);
}

std::string fixed(double v, int decimals) { return hw::format_number(v, decimals); }

std::string percent(double fraction) { return fmt::format("{:.0f} %", fraction * 100); }

std::string params_text(double params) {
  if (params >= 1e9) return fmt::format("{}e9", fixed(params / 1e9, 2));
  if (params >= 1e6) return fmt::format("{}e6", fixed(params / 1e6, 2));
  return fixed(params, 0);
}

bool trains(const Workload& w) {
  return w.mode == AdviseMode::kTrain ||
         (w.mode == AdviseMode::kJobs && w.job == AdviseMode::kTrain);
}

// Bytes per parameter of the model states while training.
StateBytes state_bytes(const Workload& w) {
  StateBytes b;
  const bool fp32 = w.precision == Precision::kFp32;
  b.weights = fp32 ? 4 : 2;
  b.gradients = fp32 ? 4 : 2;
  if (w.optimizer == Optimizer::kAdam)
    b.optimizer = fp32 ? 8 : 12;  // mixed: fp32 master + m + v
  else
    b.optimizer = fp32 ? 4 : 8;  // mixed: fp32 master + momentum
  return b;
}

double activation_bytes(Precision p) { return p == Precision::kFp32 ? 4 : 2; }

double kv_bytes(Precision p) {
  if (p == Precision::kFp32) return 4;
  if (p == Precision::kFp8) return 1;
  return 2;  // bf16, fp16; int8/int4 quantise the weights only, the cache stays 16-bit
}

double kv_bytes_per_token(const Workload& w) {
  return 2.0 * w.model.layers * workload_kv_heads(w.model) * workload_head_dim(w.model) *
         kv_bytes(w.precision);
}

}  // namespace advisor

using namespace advisor;

MemoryEstimate estimate_memory(const Workload& w, int n, Sharding sharding) {
  MemoryEstimate m;
  n = std::max(1, n);
  const double psi = w.model.params;
  if (trains(w)) {
    const StateBytes b = state_bytes(w);
    const double W = b.weights * psi, G = b.gradients * psi, O = b.optimizer * psi;
    switch (sharding) {
      case Sharding::kNone:
        m.weights = W, m.gradients = G, m.optimizer = O;
        break;
      case Sharding::kZero1:
        m.weights = W, m.gradients = G, m.optimizer = O / n;
        break;
      case Sharding::kZero2:
        m.weights = W, m.gradients = G / n, m.optimizer = O / n;
        break;
      case Sharding::kZero3:
      case Sharding::kTensor:
      case Sharding::kPipeline:
        m.weights = W / n, m.gradients = G / n, m.optimizer = O / n;
        break;
    }
    // Korthikanti et al. 2022, eq. (1) without the attention-score term (FlashAttention keeps
    // no s×s matrix): 34·s·b·h bytes per layer for 16-bit activations.
    const double sbh = static_cast<double>(w.seq_len) * w.batch_per_gpu * w.model.hidden;
    const double scale = activation_bytes(w.precision) / 2;
    const double layer = 34 * sbh * scale;
    double act = w.activation_checkpointing
                     ? w.model.layers * 2 * sbh * scale + layer  // layer inputs + one recomputed
                     : w.model.layers * layer;
    if (sharding == Sharding::kTensor) act /= n;  // with sequence parallelism (Korthikanti §4)
    m.activations = act;
    return m;
  }
  // Inference: the weights and the KV cache of `batch` sequences of seq_len tokens.
  const bool split = sharding == Sharding::kTensor || sharding == Sharding::kPipeline;
  const double parts = split ? n : 1;
  m.weights = precision_bytes(w.precision) * psi / parts;
  m.kv_cache = kv_bytes_per_token(w) * w.seq_len * w.batch_per_gpu / parts;
  return m;
}

namespace advisor {

std::vector<Term> memory_terms(const Workload& w, int n, Sharding sharding,
                               const MemoryEstimate& m) {
  std::vector<Term> t;
  const std::string psi = params_text(w.model.params);
  const std::string over_n = n > 1 ? fmt::format(" / {}", n) : "";
  if (trains(w)) {
    const StateBytes b = state_bytes(w);
    const bool w_split = sharding == Sharding::kZero3 || sharding == Sharding::kTensor ||
                         sharding == Sharding::kPipeline;
    const bool g_split = w_split || sharding == Sharding::kZero2;
    const bool o_split = g_split || sharding == Sharding::kZero1;
    t.push_back(
        {"weights", m.weights / kGB, "GB",
         fmt::format("{} B × {} params{}", fixed(b.weights, 0), psi, w_split ? over_n : "")});
    t.push_back(
        {"gradients", m.gradients / kGB, "GB",
         fmt::format("{} B × {} params{}", fixed(b.gradients, 0), psi, g_split ? over_n : "")});
    t.push_back({"optimizer states", m.optimizer / kGB, "GB",
                 fmt::format("{} B × {} params{} ({} {})", fixed(b.optimizer, 0), psi,
                             o_split ? over_n : "", optimizer_name(w.optimizer),
                             w.precision == Precision::kFp32 ? "fp32" : "mixed precision")});
    const std::string sbh = fmt::format("{}×{}×{}", w.seq_len, w.batch_per_gpu, w.model.hidden);
    const std::string scale = w.precision == Precision::kFp32 ? " × 2 (fp32)" : "";
    t.push_back(
        {"activations", m.activations / kGB, "GB",
         w.activation_checkpointing
             ? fmt::format("checkpointed: {} layers × 2·s·b·h + one layer's 34·s·b·h, "
                           "s·b·h = {}{}{}",
                           w.model.layers, sbh, scale, sharding == Sharding::kTensor ? over_n : "")
             : fmt::format("{} layers × 34·s·b·h, s·b·h = {}{}{}", w.model.layers, sbh, scale,
                           sharding == Sharding::kTensor ? over_n : "")});
    return t;
  }
  const bool split = sharding == Sharding::kTensor || sharding == Sharding::kPipeline;
  t.push_back({"weights", m.weights / kGB, "GB",
               fmt::format("{} B × {} params{}", fixed(precision_bytes(w.precision), 1), psi,
                           split ? over_n : "")});
  t.push_back({"KV cache", m.kv_cache / kGB, "GB",
               fmt::format("2·{} layers·{} kv heads·{} head dim·{} B = {} kB/token × {} tokens × "
                           "{} sequences{}",
                           w.model.layers, workload_kv_heads(w.model), workload_head_dim(w.model),
                           fixed(kv_bytes(w.precision), 0), fixed(kv_bytes_per_token(w) / 1e3, 1),
                           w.seq_len, w.batch_per_gpu, split ? over_n : "")});
  return t;
}

}  // namespace advisor
}  // namespace gpuvet
