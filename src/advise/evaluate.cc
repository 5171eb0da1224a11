// One candidate of `gpuvet advise`, term by term: what one of its GPUs is (this node's, from
// its facts and measurements, or a catalog model), how its GPUs talk (the node's own fitted
// all-reduce, its topology, or the catalog's link), and the memory, step time and latency of
// the workload on it.
#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "advise/model.h"
#include "hw/expectations.h"
#include "hw/facts_query.h"

namespace gpuvet::advisor {
namespace {

int path_rank(PathType p) {
  switch (p) {
    case PathType::kNVLink:
      return 0;
    case PathType::kPIX:
      return 1;
    case PathType::kPXB:
      return 2;
    case PathType::kPHB:
      return 3;
    case PathType::kNODE:
      return 4;
    case PathType::kSYS:
      return 5;
    default:
      return -1;
  }
}

const GpuFacts* first_named_gpu(const Facts& f) {
  for (const auto& g : f.gpus)
    if (g.name) return &g;
  return f.gpus.empty() ? nullptr : &f.gpus.front();
}

bool dual_socket(const Facts& f) {
  return f.host.sockets.value_or(0) >= 2 || f.host.numa_nodes.size() >= 2;
}

AlphaBeta catalog_ab(double theoretical_gbps, double fraction, double alpha_us, std::string what) {
  AlphaBeta ab;
  ab.alpha_us = alpha_us;
  ab.busbw_gbps = theoretical_gbps * fraction;
  ab.source = std::move(what);
  return ab;
}

}  // namespace

LinkBasis class_link(LinkClass cls, const GpuBasis& gpu, const Facts* facts, std::string origin) {
  LinkBasis l;
  int gen = 0;
  if (facts)
    if (const GpuFacts* g = first_named_gpu(*facts)) gen = g->pcie.gen_max.value_or(0);
  if (gen == 0)
    gen = gpu.spec && gpu.spec->link == LinkClass::kPcie && gpu.spec->link_gbps > 40 ? 5 : 4;
  const double pcie = pcie_x16_gbps(gen);
  const bool no_p2p = gpu.spec && !gpu.spec->peer_over_pcie;
  switch (cls) {
    case LinkClass::kNvlink: {
      const double rate =
          gpu.spec && gpu.spec->link == LinkClass::kNvlink ? gpu.spec->link_gbps : 450;
      l.nvlink = true;
      l.ab = catalog_ab(rate, kRingBusbwFraction, kNvlinkAlphaUs,
                        fmt::format("NVLink {} GB/s per direction × {} (ring protocol)",
                                    fixed(rate, 0), fixed(kRingBusbwFraction, 2)));
      l.what = fmt::format("NVLink ({})", origin);
      break;
    }
    case LinkClass::kPcie: {
      const double f = no_p2p ? kSysBusbwFraction : kRingBusbwFraction;
      l.ab = catalog_ab(pcie, f, kPcieAlphaUs,
                        fmt::format("PCIe Gen{} x16 {} GB/s × {}{}", gen, fixed(pcie, 1),
                                    fixed(f, 2), no_p2p ? " (no P2P: through host memory)" : ""));
      l.what = fmt::format("PCIe ({})", origin);
      break;
    }
    case LinkClass::kSys: {
      l.crosses_sys = true;
      l.ab = catalog_ab(pcie, kSysBusbwFraction, kPcieAlphaUs,
                        fmt::format("PCIe Gen{} x16 {} GB/s × {} across the socket link", gen,
                                    fixed(pcie, 1), fixed(kSysBusbwFraction, 2)));
      l.what = fmt::format("SYS ({})", origin);
      break;
    }
  }
  return l;
}

namespace {

struct TrainTime {
  double compute_ms = 0;
  double comm_ms = 0;
  double exposed_ms = 0;
  double step_ms = 0;
  double tokens_per_step = 0;  // all GPUs
  double compute_one_ms = 0;   // the same step on one GPU of this kind
};

TrainTime train_time(const Workload& w, int n, Sharding sharding, double tflops,
                     const AlphaBeta& ab, double overlap, double bucket_bytes,
                     std::vector<Term>& terms) {
  TrainTime t;
  const double tokens = static_cast<double>(w.batch_per_gpu) * w.seq_len;
  const double per_token = (w.activation_checkpointing ? 8.0 : 6.0) * w.model.params;
  const double rate = tflops * 1e12;
  t.compute_one_ms = per_token * tokens / rate * 1e3;
  const std::string flops_how =
      fmt::format("{}·Ψ·tokens = {} × {} × {} tokens / {} TFLOP/s",
                  w.activation_checkpointing ? 8 : 6, w.activation_checkpointing ? 8 : 6,
                  params_text(w.model.params), fixed(tokens, 0), fixed(tflops, 0));
  const bool split = sharding == Sharding::kTensor || sharding == Sharding::kPipeline;
  if (!split) {
    t.compute_ms = t.compute_one_ms;
    t.tokens_per_step = tokens * n;
    terms.push_back({"compute per step", t.compute_ms, "ms", flops_how});
    if (n >= 2) {
      const double grad = state_bytes(w).gradients * w.model.params;
      const double buckets = std::max(1.0, std::ceil(grad / bucket_bytes));
      const double volume = sharding == Sharding::kZero3 ? 1.5 : 1.0;
      t.comm_ms = volume * buckets * ring_allreduce_us(ab, n, grad / buckets) / 1e3;
      terms.push_back({"gradient all-reduce", t.comm_ms, "ms",
                       fmt::format("{}{} buckets × [2({}−1)·{} µs + 2({}−1)/{} · {} / {} GB/s]",
                                   volume > 1 ? "1.5 (ZeRO-3: parameter all-gathers + gradient "
                                                "reduce-scatter) × "
                                              : "",
                                   fixed(buckets, 0), n, fixed(ab.alpha_us, 1), n, n,
                                   bytes_text(grad / buckets), fixed(ab.busbw_gbps, 1))});
      t.exposed_ms = (1 - overlap) * t.comm_ms;
      terms.push_back({"exposed communication", t.exposed_ms, "ms",
                       fmt::format("(1 − {} overlap) × all-reduce", fixed(overlap, 2))});
    }
    t.step_ms = t.compute_ms + t.exposed_ms;
  } else if (sharding == Sharding::kTensor) {
    t.compute_ms = t.compute_one_ms / n;
    t.tokens_per_step = tokens;
    terms.push_back(
        {"compute per step", t.compute_ms, "ms", flops_how + fmt::format(" / {} GPUs", n)});
    if (n >= 2) {
      const double bytes = tokens * w.model.hidden * activation_bytes(w.precision);
      t.comm_ms = 4.0 * w.model.layers * ring_allreduce_us(ab, n, bytes) / 1e3;
      t.exposed_ms = t.comm_ms;
      terms.push_back({"tensor-parallel all-reduces", t.comm_ms, "ms",
                       fmt::format("4 per layer × {} layers, each of s·b·h = {}, on the critical "
                                   "path (not overlapped)",
                                   w.model.layers, bytes_text(bytes))});
    }
    t.step_ms = t.compute_ms + t.exposed_ms;
  } else {  // pipeline
    t.compute_ms = t.compute_one_ms / n;
    t.tokens_per_step = tokens;
    const double m = w.micro_batches;
    const double bubble = (m + n - 1) / m;
    terms.push_back(
        {"compute per step", t.compute_ms, "ms", flops_how + fmt::format(" / {} stages", n)});
    t.step_ms = t.compute_ms * bubble;
    t.exposed_ms = t.step_ms - t.compute_ms;
    terms.push_back({"pipeline bubble", t.exposed_ms, "ms",
                     fmt::format("(m + N − 1)/m = ({} + {} − 1)/{} with m micro-batches; the "
                                 "activations sent between stages are not counted",
                                 fixed(m, 0), n, fixed(m, 0))});
  }
  terms.push_back({"step", t.step_ms, "ms", "compute + exposed communication"});
  return t;
}

struct InferTime {
  double token_ms = 0;
  double prefill_ms = 0;
  double request_ms = 0;
  double tp_comm_per_token_ms = 0;
};

InferTime infer_time(const Workload& w, int n, Sharding sharding, double tflops, double hbm_gbps,
                     const AlphaBeta& ab, std::vector<Term>* terms) {
  InferTime t;
  const bool tensor = sharding == Sharding::kTensor && n >= 2;
  const bool pipeline = sharding == Sharding::kPipeline && n >= 2;
  const double parallel = tensor ? n : 1;  // pipeline stages run one after the other per token
  const double weights = precision_bytes(w.precision) * w.model.params;
  const double kv = kv_bytes_per_token(w) * w.seq_len * w.batch_per_gpu;
  const double mem_ms = (weights + kv) / (parallel * hbm_gbps * 1e9) * 1e3;
  const double rate = tflops * 1e12;
  const double cmp_ms = 2 * w.model.params * w.batch_per_gpu / (parallel * rate) * 1e3;
  if (terms)
    terms->push_back(
        {"decode: memory", mem_ms, "ms",
         fmt::format("(weights {} + KV cache {}) / ({}{} GB/s HBM)", gb(weights), gb(kv),
                     tensor ? fmt::format("{} × ", n) : "", fixed(hbm_gbps, 0))});
  if (terms)
    terms->push_back({"decode: compute", cmp_ms, "ms",
                      fmt::format("2·Ψ·batch / {}{} TFLOP/s", tensor ? fmt::format("{} × ", n) : "",
                                  fixed(tflops, 0))});
  t.token_ms = std::max(mem_ms, cmp_ms);
  if (tensor) {
    const double bytes =
        static_cast<double>(w.batch_per_gpu) * w.model.hidden * activation_bytes(w.precision);
    const double one = ring_allreduce_us(ab, n, bytes);
    t.tp_comm_per_token_ms = 2.0 * w.model.layers * one / 1e3;
    if (terms)
      terms->push_back(
          {"decode: TP all-reduces", t.tp_comm_per_token_ms, "ms",
           fmt::format("2 per layer × {} layers × {} µs (batch·hidden = {} B: "
                       "2({}−1)·{} µs + 2({}−1)/{} · {} B / {} GB/s)",
                       w.model.layers, fixed(one, 1), fixed(bytes, 0), n, fixed(ab.alpha_us, 1), n,
                       n, fixed(bytes, 0), fixed(ab.busbw_gbps, 1))});
    t.token_ms += t.tp_comm_per_token_ms;
  }
  if (terms)
    terms->push_back({"per token", t.token_ms, "ms", "max(memory, compute) + TP all-reduces"});
  const double prefill_tokens = static_cast<double>(w.seq_len) * w.batch_per_gpu;
  t.prefill_ms = 2 * w.model.params * prefill_tokens / (parallel * rate) * 1e3;
  double prefill_comm = 0;
  if (tensor)
    prefill_comm =
        2.0 * w.model.layers *
        ring_allreduce_us(ab, n, prefill_tokens * w.model.hidden * activation_bytes(w.precision)) /
        1e3;
  t.prefill_ms += prefill_comm;
  if (terms)
    terms->push_back(
        {"prefill", t.prefill_ms, "ms",
         fmt::format("2·Ψ·{} prompt tokens / {}{} TFLOP/s{}", fixed(prefill_tokens, 0),
                     tensor ? fmt::format("{} × ", n) : "", fixed(tflops, 0),
                     tensor ? fmt::format(" + TP all-reduces {} ms", fixed(prefill_comm, 2))
                            : (pipeline ? " (stages in sequence)" : ""))});
  t.request_ms = t.prefill_ms + w.output_tokens * t.token_ms;
  if (terms)
    terms->push_back({"request (p50)", t.request_ms, "ms",
                      fmt::format("prefill + {} tokens × per token", w.output_tokens)});
  return t;
}

}  // namespace

std::optional<ScaleEvidence::Spread> spread_for(const Context& c, int gpus) {
  if (!c.node || !c.node->scale) return std::nullopt;
  std::vector<ScaleEvidence::Spread> pool;
  const bool infer = !trains(*c.workload);
  for (const auto& s : c.node->scale->spreads)
    if (!infer || s.workload == "infer") pool.push_back(s);
  if (pool.empty()) pool = c.node->scale->spreads;  // a training step's spread, said so
  std::optional<ScaleEvidence::Spread> best;
  for (const auto& s : pool) {
    if (!best) {
      best = s;
    } else if (s.gpus <= gpus) {
      // The measured count nearest at or under the candidate's.
      if (best->gpus > gpus || s.gpus > best->gpus) best = s;
    } else if (best->gpus > gpus && s.gpus < best->gpus) {
      best = s;
    }
  }
  return best;
}

Result<GpuBasis> gpu_basis(const Context& c, const CandidateSpec& spec) {
  GpuBasis b;
  const bool needs_hbm = !trains(*c.workload);
  if (spec.gpu != "this") {
    const GpuModelSpec* g = find_gpu_model(spec.gpu);
    if (!g) return Status::invalid_input(fmt::format("unknown GPU model '{}'", spec.gpu));
    b.spec = g;
    b.name = g->name;
    b.capacity_gb = g->memory_gb;
    b.capacity_how = fmt::format("catalog: {}", g->source);
    b.tflops = g->bf16_dense_tflops * c.catalog_calibration;
    b.tflops_how =
        c.catalog_calibration != 1
            ? fmt::format("catalog {} × {}", fixed(g->bf16_dense_tflops, 0), c.calibration_how)
            : fmt::format("catalog: data-sheet bf16 dense peak");
    b.hbm_gbps = g->hbm_gbps;
    b.hbm_how = "catalog";
    return b;
  }
  if (!c.node)
    return Status::invalid_input(
        "candidate 'this' needs this node: run advise on it, or give --node (its diagnose or "
        "facts JSON, or a capture)");
  const Facts& f = c.node->facts;
  const GpuFacts* g = first_named_gpu(f);
  const std::string facts_name = g && g->name ? *g->name : "";
  b.this_node = true;
  b.spec = find_gpu_model(!c.options->this_gpu.empty() ? c.options->this_gpu : facts_name);
  if (!c.options->this_gpu.empty() && !b.spec)
    return Status::invalid_input(
        fmt::format("--this-gpu '{}' is not a GPU model of the catalog", c.options->this_gpu));
  b.name = !facts_name.empty() ? facts_name : (b.spec ? b.spec->name : "");
  if (b.name.empty())
    return Status::invalid_input(fmt::format(
        "{} names no GPU: say which model this node has with --this-gpu (H100, L40S, …)",
        c.node->origin));
  if (g && g->memory.total_bytes && *g->memory.total_bytes > 0) {
    b.capacity_gb = static_cast<double>(*g->memory.total_bytes) / kGB;
    b.capacity_how = fmt::format("this node: GPU{} memory", g->index);
  } else if (b.spec) {
    b.capacity_gb = b.spec->memory_gb;
    b.capacity_how = fmt::format("catalog ({}): the facts give no memory size", b.spec->id);
  } else {
    return Status::invalid_input(fmt::format(
        "this node's GPU ({}) has no memory size in the facts and is not in the catalog", b.name));
  }
  const ScaleEvidence* s = c.node->scale ? &*c.node->scale : nullptr;
  if (s && s->gemm_tflops) {
    b.tflops = *s->gemm_tflops;
    b.tflops_measured = true;
    b.tflops_how = fmt::format("measured: {} {} bf16 GEMMs on 1 GPU", s->origin,
                               s->gemm_preset.value_or("train"));
  } else if (s && s->peak_tflops) {
    b.tflops = *s->peak_tflops;
    b.tflops_measured = true;
    b.tflops_how = fmt::format("measured: {} peak bf16 GEMM", s->origin);
  } else if (b.spec) {
    b.tflops = b.spec->bf16_dense_tflops;
    b.tflops_how =
        fmt::format("catalog ({}): data-sheet bf16 dense peak; no scale run given", b.spec->id);
  } else {
    return Status::invalid_input(fmt::format(
        "this node's GPU ({}) is not in the catalog and no scale run says its TFLOP/s: give "
        "--scale (gpuvet scale --json) or --this-gpu",
        b.name));
  }
  if (auto m = hw::expected_device_memory(b.name)) {
    b.hbm_gbps = m->peak_gbps;
    b.hbm_how = fmt::format("data sheet ({})", m->source);
  } else if (b.spec) {
    b.hbm_gbps = b.spec->hbm_gbps;
    b.hbm_how = "catalog";
  } else if (needs_hbm) {
    return Status::invalid_input(fmt::format(
        "this node's GPU ({}) has no known memory bandwidth, which inference time needs: give "
        "--this-gpu",
        b.name));
  }
  return b;
}

LinkBasis link_basis(const Context& c, const CandidateSpec& spec, const GpuBasis& gpu) {
  const int n = spec.count;
  if (n < 2) {
    LinkBasis l;
    l.what = "one GPU: no collective";
    return l;
  }
  if (!gpu.this_node) {
    const GpuModelSpec& g = *gpu.spec;
    return class_link(g.link, gpu, nullptr, fmt::format("catalog, {}", g.link_what));
  }
  const Facts& f = c.node->facts;
  const int have = static_cast<int>(f.gpus.size());
  // The worst path among the GPUs this candidate would use that the node already has.
  const GpuPair* worst = nullptr;
  for (const auto& p : f.pairs) {
    if (p.a >= n || p.b >= n || path_rank(p.path) < 0) continue;
    if (!worst || path_rank(p.path) > path_rank(worst->path)) worst = &p;
  }
  if (c.options->link) {
    LinkBasis l = class_link(*c.options->link, gpu, &f, "--link");
    return l;
  }
  if (n > have && !worst && dual_socket(f)) {
    LinkBasis l = class_link(LinkClass::kSys, gpu, &f,
                             "assumed: a dual-socket host, and which socket the added GPU "
                             "hangs off is not known (--link pcie|nvlink says otherwise)");
    return l;
  }
  LinkBasis l;
  if (worst) {
    l.crosses_sys = worst->path == PathType::kSYS;
    l.nvlink = worst->path == PathType::kNVLink;
    l.what = fmt::format("{} (this node: GPU{}-GPU{}{})", path_type_name(worst->path), worst->a,
                         worst->b, n > have ? "; the added GPUs assumed alike" : "");
  }
  if (c.fit) {
    l.ab = *c.fit;
    if (!worst) l.what = "measured all-reduce (this node)";
    return l;
  }
  if (worst) {
    if (auto e = hw::expected_peer(f, *worst)) {
      const bool no_p2p = !l.nvlink && gpu.spec && !gpu.spec->peer_over_pcie;
      const double frac = (l.crosses_sys || no_p2p) ? kSysBusbwFraction : kRingBusbwFraction;
      l.ab = catalog_ab(e->theoretical_gbps, frac, l.nvlink ? kNvlinkAlphaUs : kPcieAlphaUs,
                        fmt::format("this node's path {} ({}) × {}; no all-reduce sweep given",
                                    path_type_name(worst->path), e->basis, fixed(frac, 2)));
      return l;
    }
  }
  // Nothing known about the node's links: the catalog's for this model, else PCIe.
  const LinkClass cls = gpu.spec ? gpu.spec->link : LinkClass::kPcie;
  LinkBasis k = class_link(
      cls, gpu, &f,
      gpu.spec ? fmt::format("catalog, {}", gpu.spec->link_what) : std::string("assumed PCIe"));
  if (!l.what.empty()) k.what = l.what, k.crosses_sys = l.crosses_sys;
  return k;
}

OptionResult evaluate(const Context& c, const CandidateSpec& spec, const GpuBasis& gpu,
                      const LinkBasis& link, Sharding sharding) {
  const Workload& w = *c.workload;
  const AdviseOptions& opt = *c.options;
  OptionResult o;
  o.spec = spec;
  o.gpus = spec.count;
  o.gpu_name = gpu.name;
  o.this_node = gpu.this_node;
  o.sharding = sharding;
  o.label = fmt::format("{}×{}{}", spec.count, gpu.name, gpu.this_node ? " (this node)" : "");
  o.capacity_gb = gpu.capacity_gb;
  o.usable_gb = gpu.capacity_gb * (1 - opt.headroom);
  o.link = link.what;
  o.crosses_sys = link.crosses_sys;
  o.compute_measured = gpu.tflops_measured;
  o.comm_measured = link.ab.measured;
  const int n = spec.count;
  const bool jobs = w.mode == AdviseMode::kJobs;
  const Sharding mem_sharding = jobs ? Sharding::kNone : sharding;
  const int mem_n = jobs ? 1 : n;
  const MemoryEstimate m = estimate_memory(w, mem_n, mem_sharding);
  o.memory = memory_terms(w, mem_n, mem_sharding, m);
  o.memory_gb = m.total() / kGB;
  o.fits = o.memory_gb <= o.usable_gb;

  const double tflops = gpu.tflops * opt.efficiency;
  o.time.push_back({"compute rate", tflops, "TFLOP/s",
                    fmt::format("{} TFLOP/s ({}) × {} model efficiency", fixed(gpu.tflops, 0),
                                gpu.tflops_how, fixed(opt.efficiency, 2))});
  if (n >= 2 && !jobs && !(w.mode == AdviseMode::kInfer && sharding == Sharding::kNone))
    o.time.push_back({"all-reduce α, busbw", link.ab.alpha_us, "µs",
                      fmt::format("α {} µs, busbw {} GB/s ({})", fixed(link.ab.alpha_us, 2),
                                  fixed(link.ab.busbw_gbps, 1), link.ab.source)});
  const bool job_trains = jobs && w.job == AdviseMode::kTrain;
  if (w.mode == AdviseMode::kTrain || job_trains) {
    const int tn = jobs ? 1 : n;
    const TrainTime t = train_time(w, tn, jobs ? Sharding::kNone : sharding, tflops, link.ab,
                                   c.overlap, opt.bucket_mib * 1024 * 1024, o.time);
    o.step_ms = t.step_ms;
    const double per_replica = t.tokens_per_step / (t.step_ms / 1e3);
    o.throughput = jobs ? per_replica * n : per_replica;
    if (n >= 2) {
      if (jobs) {
        o.efficiency = 1.0;
        o.comm_share = 0.0;
      } else {
        const double one =
            static_cast<double>(w.batch_per_gpu) * w.seq_len / (t.compute_one_ms / 1e3);
        o.efficiency = *o.throughput / (n * one);
        o.comm_share = t.exposed_ms / t.step_ms;
      }
    }
    o.time.push_back({"throughput", *o.throughput, "tokens/s",
                      jobs ? fmt::format("{} independent jobs × tokens per step / step", n)
                           : "tokens per step (all GPUs) / step"});
  } else {
    const double hbm = gpu.hbm_gbps.value_or(0);
    const Sharding s = jobs ? Sharding::kNone : sharding;
    const InferTime t = infer_time(w, jobs ? 1 : n, s, tflops, hbm, link.ab, &o.time);
    const int model_gpus = (s == Sharding::kTensor || s == Sharding::kPipeline) ? n : 1;
    const int replicas = std::max(1, n / model_gpus);
    o.step_ms = t.request_ms;
    o.throughput = replicas * w.batch_per_gpu * w.output_tokens / (t.request_ms / 1e3);
    if (n >= 2) {
      const InferTime one = infer_time(w, 1, Sharding::kNone, tflops, hbm, link.ab, nullptr);
      const double thr_one = w.batch_per_gpu * w.output_tokens / (one.request_ms / 1e3);
      o.efficiency = *o.throughput / (n * thr_one);
      o.comm_share = t.tp_comm_per_token_ms * w.output_tokens / t.request_ms;
    }
    const auto spread = spread_for(c, model_gpus);
    const double amp = spread ? spread->p99_over_p50 : 1.0;
    o.p99_ms = t.request_ms * amp;
    o.time.push_back(
        {"request (p99)", *o.p99_ms, "ms",
         spread ? fmt::format("p50 × {} (measured p99/p50 of {} {} on {} GPU{})", fixed(amp, 2),
                              spread->workload, spread->preset, spread->gpus,
                              spread->gpus > 1 ? "s" : "")
                : std::string("p50 × 1.00: no spread measured (give --scale), so a floor")});
    o.time.push_back(
        {"throughput", *o.throughput, "tokens/s",
         fmt::format("{} replica{} × {} sequences × {} tokens / request time", replicas,
                     replicas > 1 ? "s" : "", w.batch_per_gpu, w.output_tokens)});
  }
  return o;
}

}  // namespace gpuvet::advisor
