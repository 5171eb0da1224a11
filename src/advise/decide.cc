// `gpuvet advise`: the candidates evaluated, then the article's checklist ("Checklist
// décisionnelle : devez-vous acheter un deuxième GPU ou un GPU unique plus grand ?") in order:
// does it fit at all; is the host the limit (I/O-bound platform: do not add GPUs); more VRAM
// for one model (prefer one bigger GPU unless you will run model parallelism); latency (one GPU
// per request path); many independent jobs (two GPUs as two processes); dual-socket SYS paths
// (validate topology before buying); else what data parallelism costs here.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include <fmt/format.h>

#include "advise/model.h"

namespace gpuvet {

const char* recommendation_name(Recommendation r) {
  switch (r) {
    case Recommendation::kOneBiggerGpu:
      return "one-bigger-gpu";
    case Recommendation::kAddGpuDataParallel:
      return "add-gpu-data-parallel";
    case Recommendation::kAddGpuIndependentJobs:
      return "add-gpu-independent-jobs";
    case Recommendation::kModelParallelRequired:
      return "model-parallel-required";
    case Recommendation::kFixHostFirst:
      return "fix-host-first";
    case Recommendation::kCheckTopologyFirst:
      return "check-topology-first";
    case Recommendation::kDoesNotFit:
      return "does-not-fit";
  }
  return "?";
}

namespace advisor {
namespace {

struct Evaluated {
  CandidateSpec spec;
  GpuBasis gpu;
  LinkBasis link;
};

struct Decision {
  Recommendation rec = Recommendation::kDoesNotFit;
  std::string summary;
  std::vector<std::string> deciding;
  std::vector<std::string> would_change;
};

const char* kHostLimitIds[] = {"io-bound", "cpu-saturated", "network-saturated"};

std::string ms(double v) { return v >= 100 ? fixed(v, 0) + " ms" : fixed(v, 2) + " ms"; }

std::string memory_line(const OptionResult& o) {
  return fmt::format("{}: {} GB per GPU of {} GB usable ({} GB, {} kept free)", o.label,
                     fixed(o.memory_gb, 1), fixed(o.usable_gb, 1), fixed(o.capacity_gb, 1),
                     percent(o.capacity_gb > 0 ? 1 - o.usable_gb / o.capacity_gb : 0));
}

const char* shard_word(const Workload& w) { return trains(w) ? "ZeRO-3" : "tensor parallelism"; }

Sharding alt_sharding(const Workload& w) {
  return trains(w) ? Sharding::kZero3 : Sharding::kTensor;
}

class Decider {
 public:
  Decider(const Context& c, const std::vector<Evaluated>& ev, const std::vector<OptionResult>& opts,
          const std::vector<std::string>& host_limits, int node_gpus)
      : c_(c), w_(*c.workload), ev_(ev), opts_(opts), host_(host_limits), node_gpus_(node_gpus) {}

  Decision run(bool with_host) {
    bool any_fit = false;
    for (const auto& o : opts_) any_fit = any_fit || o.fits;
    if (!any_fit) return not_fitting();
    if (with_host && !host_.empty() && adds_gpus()) return host_first();
    const Evaluated& base = base_candidate();
    const OptionResult one = single(base);
    if (!one.fits) return more_vram(base, one);
    if (w_.mode == AdviseMode::kJobs) return independent_jobs(one);
    if (w_.mode == AdviseMode::kInfer) return inference(base, one);
    return training(base, one);
  }

 private:
  bool adds_gpus() const {
    for (const auto& o : opts_)
      if (o.gpus > std::max(1, node_gpus_)) return true;
    return false;
  }

  // The GPU the question is about: the first candidate of two or more GPUs (usually
  // "2xthis"), else the first.
  const Evaluated& base_candidate() const {
    for (const auto& e : ev_)
      if (e.spec.count >= 2) return e;
    return ev_.front();
  }

  OptionResult single(const Evaluated& e) const {
    CandidateSpec one{1, e.spec.gpu};
    LinkBasis none;
    return evaluate(c_, one, e.gpu, none, Sharding::kNone);
  }

  OptionResult with_sharding(const Evaluated& e, Sharding s, int count) const {
    CandidateSpec spec{count, e.spec.gpu};
    return evaluate(c_, spec, e.gpu, link_basis(c_, spec, e.gpu), s);
  }

  // The fewest GPUs of `e`'s kind that hold the workload under ZeRO-3 (training) or tensor
  // parallelism (inference); 0 when 64 do not.
  int min_sharded(const Evaluated& e) const {
    for (int n = 2; n <= 64; ++n)
      if (with_sharding(e, alt_sharding(w_), n).fits) return n;
    return 0;
  }

  // The fitting candidate of two or more GPUs with the most throughput.
  const OptionResult* best_multi_gpu() const {
    const OptionResult* multi = nullptr;
    for (const auto& o : opts_)
      if (o.fits && o.gpus >= 2 &&
          (!multi || o.throughput.value_or(0) > multi->throughput.value_or(0)))
        multi = &o;
    return multi;
  }

  Decision not_fitting() const {
    Decision d;
    const Sharding alt = alt_sharding(w_);
    for (std::size_t i = 0; i < ev_.size(); ++i) {
      if (ev_[i].spec.count < 2 || w_.sharding == alt || w_.mode == AdviseMode::kJobs) continue;
      const OptionResult o = with_sharding(ev_[i], alt, ev_[i].spec.count);
      if (o.fits) {
        d.rec = Recommendation::kModelParallelRequired;
        d.summary = fmt::format(
            "As given ({}), the model fits none of the candidates; with {} it fits on {}: "
            "model parallelism is required.",
            sharding_name(w_.sharding), shard_word(w_), o.label);
        d.deciding.push_back(memory_line(opts_[i]));
        d.deciding.push_back(fmt::format("with {}: {}", shard_word(w_), memory_line(o)));
        if (o.efficiency)
          d.deciding.push_back(fmt::format("{} efficiency {} (the communication it adds)", o.label,
                                           fixed(*o.efficiency, 2)));
        add_bigger_gpu_note(d, opts_[i].memory_gb);
        return d;
      }
    }
    d.rec = Recommendation::kDoesNotFit;
    const OptionResult& first = opts_.front();
    d.summary = fmt::format(
        "The model does not fit any candidate: {} GB per GPU against {} GB usable on {}.",
        fixed(first.memory_gb, 1), fixed(first.usable_gb, 1), first.label);
    d.deciding.push_back(memory_line(first));
    if (w_.mode == AdviseMode::kTrain && w_.sharding == Sharding::kNone)
      d.deciding.push_back(
          "data parallelism does not add VRAM: every GPU holds the whole model, its gradients "
          "and optimizer states");
    std::set<std::string> seen;
    for (const auto& e : ev_) {
      if (!seen.insert(e.gpu.name).second || w_.mode == AdviseMode::kJobs) continue;
      const int n = min_sharded(e);
      const OptionResult two = with_sharding(e, alt, std::max(2, e.spec.count));
      if (n > 0) {
        const OptionResult at = with_sharding(e, alt, n);
        d.would_change.push_back(fmt::format(
            "with {} it fits on {}×{}: {} GB per GPU of {} GB usable (on {}: {} GB per GPU)",
            shard_word(w_), n, e.gpu.name, fixed(at.memory_gb, 1), fixed(at.usable_gb, 1),
            two.label, fixed(two.memory_gb, 1)));
      } else {
        d.would_change.push_back(
            fmt::format("even 64×{} under {} do not hold it", e.gpu.name, shard_word(w_)));
      }
    }
    add_bigger_gpu_note(d, single(ev_.front()).memory_gb);
    return d;
  }

  // "One GPU would need X GB": the catalog models that hold it alone.
  void add_bigger_gpu_note(Decision& d, double need_gb) const {
    const double headroom = c_.options->headroom;
    std::string holds;
    for (const auto& g : gpu_catalog())
      if (g.memory_gb * (1 - headroom) >= need_gb)
        holds += (holds.empty() ? "" : ", ") + std::string(g.id);
    d.would_change.push_back(fmt::format(
        "one GPU alone needs {} GB usable, {} GB with {} kept free: {}", fixed(need_gb, 1),
        fixed(need_gb / (1 - headroom), 1), percent(headroom),
        holds.empty() ? "no GPU in the catalog holds that" : "the catalog's " + holds + " would"));
  }

  Decision host_first() const {
    Decision d;
    d.rec = Recommendation::kFixHostFirst;
    d.summary = fmt::format(
        "The host is the limit now ({}): more GPUs would only wait on it. Fix the host first.",
        host_.front().substr(0, host_.front().find(':')));
    for (std::size_t i = 0; i < host_.size() && i < 2; ++i) d.deciding.push_back(host_[i]);
    d.deciding.push_back(fmt::format(
        "useful GPUs: at most the {} this node has until then (every candidate is capped)",
        std::max(1, node_gpus_)));
    Decider rest(c_, ev_, opts_, {}, node_gpus_);
    const Decision after = rest.run(false);
    d.would_change.push_back(fmt::format("with the host fixed, the checklist says {}: {}",
                                         recommendation_name(after.rec), after.summary));
    return d;
  }

  const OptionResult* best_single_fitting(bool exclude_base_gpu, const std::string& base) const {
    const OptionResult* best = nullptr;
    for (const auto& o : opts_) {
      if (o.gpus != 1 || !o.fits) continue;
      if (exclude_base_gpu && o.gpu_name == base) continue;
      if (!best || o.throughput.value_or(0) > best->throughput.value_or(0)) best = &o;
    }
    return best;
  }

  Decision more_vram(const Evaluated& base, const OptionResult& one) const {
    Decision d;
    const OptionResult* bigger = best_single_fitting(true, base.gpu.name);
    if (bigger) {
      d.rec = Recommendation::kOneBiggerGpu;
      d.summary = fmt::format(
          "One {} does not hold the model and {} does: prefer one bigger GPU unless you will run "
          "model parallelism.",
          base.gpu.name, bigger->label);
      d.deciding.push_back(memory_line(one));
      d.deciding.push_back(memory_line(*bigger));
      for (const auto& o : opts_)
        if (o.gpus >= 2 && o.fits && o.efficiency) {
          d.would_change.push_back(fmt::format(
              "{} under {} also holds it ({} GB per GPU) at efficiency {}: worth it only with "
              "model parallelism you will run anyway",
              o.label, sharding_name(o.sharding), fixed(o.memory_gb, 1), fixed(*o.efficiency, 2)));
          break;
        }
      if (w_.mode == AdviseMode::kTrain && w_.sharding == Sharding::kNone)
        d.would_change.push_back(
            "data parallelism does not add VRAM: a second GPU of the same kind holds no more of "
            "the model");
      return d;
    }
    d.rec = Recommendation::kModelParallelRequired;
    const OptionResult* multi = best_multi_gpu();
    d.summary = fmt::format(
        "One {} does not hold the model; {} does under {}: model parallelism is required.",
        base.gpu.name, multi ? multi->label : "a candidate", sharding_name(w_.sharding));
    d.deciding.push_back(memory_line(one));
    if (multi) d.deciding.push_back(memory_line(*multi));
    if (multi && multi->efficiency)
      d.deciding.push_back(fmt::format("{} efficiency {}, communication {} of the step",
                                       multi->label, fixed(*multi->efficiency, 2),
                                       percent(multi->comm_share.value_or(0))));
    add_bigger_gpu_note(d, one.memory_gb);
    return d;
  }

  Decision independent_jobs(const OptionResult& one) const {
    Decision d;
    d.rec = Recommendation::kAddGpuIndependentJobs;
    const OptionResult* multi = best_multi_gpu();
    d.summary = fmt::format(
        "Each job fits one {}: run them as independent processes, one per GPU; throughput grows "
        "with the GPU count and nothing is synchronised.",
        one.gpu_name);
    d.deciding.push_back(memory_line(one));
    if (multi)
      d.deciding.push_back(fmt::format("{}: {} tokens/s, {}× one GPU's {} (no communication)",
                                       multi->label, fixed(*multi->throughput, 0), multi->gpus,
                                       fixed(one.throughput.value_or(0), 0)));
    d.would_change.push_back(
        "a job that outgrows one GPU's memory, or a host that cannot feed more jobs (diagnose's "
        "io-bound, cpu-saturated)");
    return d;
  }

  Decision inference(const Evaluated& base, const OptionResult& one) const {
    Decision d;
    const double target = w_.latency_p99_ms.value_or(0);
    // The tensor-parallel variant of the multi-GPU candidate, for the comparison.
    std::optional<OptionResult> tp;
    for (const auto& e : ev_)
      if (e.spec.count >= 2) {
        tp = with_sharding(e, Sharding::kTensor, e.spec.count);
        break;
      }
    const OptionResult* bigger = best_single_fitting(true, base.gpu.name);
    const auto tp_line = [&]() {
      if (!tp || !tp->p99_ms) return std::string();
      double comm = 0;
      for (const auto& t : tp->time)
        if (t.name == "decode: TP all-reduces") comm = t.value;
      return fmt::format(
          "{} with tensor parallelism over {}: p99 {} ({} ms of all-reduces on every token's "
          "critical path, {} per layer × {} layers)",
          tp->label, tp->link, ms(*tp->p99_ms), fixed(comm, 2), 2, w_.model.layers);
    };
    if (!w_.latency_p99_ms) {
      d.rec = Recommendation::kAddGpuIndependentJobs;
      d.summary = fmt::format(
          "The model fits one {}: serve it with one replica per GPU (if it fits one GPU, do not "
          "distribute it).",
          base.gpu.name);
      d.deciding.push_back(memory_line(one));
      d.deciding.push_back(fmt::format("one GPU: {} tokens/s, p99 {} per request",
                                       fixed(one.throughput.value_or(0), 0),
                                       ms(one.p99_ms.value_or(0))));
      if (const auto l = tp_line(); !l.empty()) d.would_change.push_back(l);
      return d;
    }
    const bool one_meets = one.p99_ms && *one.p99_ms <= target;
    const bool tp_meets = tp && tp->fits && tp->p99_ms && *tp->p99_ms <= target;
    const std::string target_text = fmt::format("p99 target {}", ms(target));
    if (one_meets) {
      d.rec = Recommendation::kAddGpuIndependentJobs;
      d.summary = fmt::format(
          "The model fits one {} and one GPU meets the {}: one GPU per request path. Add GPUs as "
          "independent replicas, not as tensor-parallel shards.",
          base.gpu.name, target_text);
      d.deciding.push_back(
          fmt::format("one GPU per request: p99 {} ≤ {}", ms(*one.p99_ms), target_text));
      if (const auto l = tp_line(); !l.empty()) d.deciding.push_back(l);
      if (tp && tp->throughput && one.throughput)
        d.deciding.push_back(fmt::format(
            "{} replicas serve {} tokens/s; the same GPUs as one tensor-parallel group {}",
            tp->gpus, fixed(tp->gpus * *one.throughput, 0), fixed(*tp->throughput, 0)));
      d.deciding.push_back(memory_line(one));
      d.would_change.push_back(fmt::format(
          "a target under {} (one GPU's p99) would need a faster GPU or tensor parallelism{}",
          ms(*one.p99_ms),
          tp && tp->p99_ms ? fmt::format(" ({}: p99 {})", tp->label, ms(*tp->p99_ms)) : ""));
      return d;
    }
    if (bigger && bigger->p99_ms && *bigger->p99_ms <= target) {
      d.rec = Recommendation::kOneBiggerGpu;
      d.summary =
          fmt::format("One {} misses the {}; one {} meets it with a single GPU per request path.",
                      base.gpu.name, target_text, bigger->gpu_name);
      d.deciding.push_back(fmt::format("{}: p99 {} > {}", one.label, ms(*one.p99_ms), target_text));
      d.deciding.push_back(fmt::format("{}: p99 {}", bigger->label, ms(*bigger->p99_ms)));
      if (const auto l = tp_line(); !l.empty()) d.would_change.push_back(l);
      return d;
    }
    if (tp_meets) {
      d.rec = Recommendation::kModelParallelRequired;
      d.summary = fmt::format(
          "No single GPU meets the {}; tensor parallelism on {} does: model parallelism is "
          "required for this latency.",
          target_text, tp->label);
      d.deciding.push_back(fmt::format("{}: p99 {} > {}", one.label, ms(*one.p99_ms), target_text));
      d.deciding.push_back(tp_line());
      return d;
    }
    d.rec = Recommendation::kAddGpuIndependentJobs;
    d.summary = fmt::format(
        "No candidate meets the {}; the closest is one GPU per request path (p99 {}). Extra GPUs "
        "add throughput as replicas, not latency.",
        target_text, ms(one.p99_ms.value_or(0)));
    d.deciding.push_back(fmt::format("{}: p99 {}", one.label, ms(one.p99_ms.value_or(0))));
    if (const auto l = tp_line(); !l.empty()) d.deciding.push_back(l);
    d.would_change.push_back(
        "a looser target, a smaller model or precision (int8, int4), or a GPU with more memory "
        "bandwidth");
    return d;
  }

  Decision training(const Evaluated& base, const OptionResult& one) const {
    Decision d;
    const OptionResult* multi = best_multi_gpu();
    // Dual-socket SYS with heavy synchronisation: validate the topology before buying.
    for (const auto& o : opts_) {
      if (!o.fits || o.gpus < 2 || !o.this_node || !o.crosses_sys || !o.comm_share) continue;
      if (*o.comm_share < kHeavySyncShare) continue;
      d.rec = Recommendation::kCheckTopologyFirst;
      d.summary = fmt::format(
          "Over this SYS path the gradient all-reduce costs {} of the step: check the topology "
          "first (\"two GPUs\" may mean \"SYS path forever\").",
          percent(*o.comm_share));
      d.deciding.push_back(
          fmt::format("{} over {}: exposed communication {} of the step, "
                      "efficiency {}",
                      o.label, o.link, percent(*o.comm_share), fixed(o.efficiency.value_or(0), 2)));
      for (const auto& t : o.time)
        if (t.name == "all-reduce α, busbw") d.deciding.push_back(t.how);
      // The same GPUs on a path that stays under one socket.
      for (const auto& e : ev_)
        if (e.spec.gpu == o.spec.gpu && e.spec.count == o.spec.count) {
          const LinkBasis pcie = class_link(LinkClass::kPcie, e.gpu, &c_.node->facts,
                                            "one socket, one PCIe switch or host bridge");
          const OptionResult p = evaluate(c_, e.spec, e.gpu, pcie, o.sharding);
          d.would_change.push_back(fmt::format(
              "on a pair under one socket (PCIe peer to peer: busbw {} GB/s, α {} µs) the "
              "all-reduce would cost {} of the step, efficiency {}",
              fixed(pcie.ab.busbw_gbps, 1), fixed(pcie.ab.alpha_us, 1),
              percent(p.comm_share.value_or(0)), fixed(p.efficiency.value_or(0), 2)));
          break;
        }
      d.would_change.push_back(
          "a larger batch per GPU or more overlap shrinks the share (the all-reduce does not grow "
          "with the batch)");
      if (const OptionResult* bigger = best_single_fitting(true, base.gpu.name))
        d.would_change.push_back(
            fmt::format("{} would give {} tokens/s with no all-reduce at all "
                        "(this pair: {})",
                        bigger->label, fixed(bigger->throughput.value_or(0), 0),
                        fixed(o.throughput.value_or(0), 0)));
      return d;
    }
    const OptionResult* bigger = best_single_fitting(true, base.gpu.name);
    if (!multi) {
      d.rec = bigger ? Recommendation::kOneBiggerGpu : Recommendation::kAddGpuDataParallel;
      d.summary = bigger
                      ? fmt::format("Only single-GPU candidates: {} is the fastest.", bigger->label)
                      : "No multi-GPU candidate was given; nothing to compare.";
      d.deciding.push_back(memory_line(one));
      return d;
    }
    if (bigger && bigger->throughput.value_or(0) >= multi->throughput.value_or(0)) {
      d.rec = Recommendation::kOneBiggerGpu;
      d.summary = fmt::format("{} trains faster than {} ({} vs {} tokens/s): one bigger GPU.",
                              bigger->label, multi->label, fixed(*bigger->throughput, 0),
                              fixed(multi->throughput.value_or(0), 0));
      d.deciding.push_back(
          fmt::format("{}: {} tokens/s", bigger->label, fixed(*bigger->throughput, 0)));
      d.deciding.push_back(fmt::format("{}: {} tokens/s at efficiency {}", multi->label,
                                       fixed(multi->throughput.value_or(0), 0),
                                       fixed(multi->efficiency.value_or(0), 2)));
      return d;
    }
    d.rec = Recommendation::kAddGpuDataParallel;
    const double eff = multi->efficiency.value_or(1);
    d.summary = fmt::format(
        "The model fits one {} and the all-reduce is {} on {}: add GPUs as data-parallel "
        "replicas (efficiency {}).",
        base.gpu.name, eff >= kEfficientScaling ? "cheap" : "not cheap but still a net gain",
        multi->link, fixed(eff, 2));
    d.deciding.push_back(memory_line(one));
    d.deciding.push_back(fmt::format("{}: efficiency {}, exposed communication {} of the step",
                                     multi->label, fixed(eff, 2),
                                     percent(multi->comm_share.value_or(0))));
    d.deciding.push_back(fmt::format("{}: {} tokens/s against one GPU's {}", multi->label,
                                     fixed(multi->throughput.value_or(0), 0),
                                     fixed(one.throughput.value_or(0), 0)));
    if (bigger)
      d.would_change.push_back(fmt::format("{} would give {} tokens/s", bigger->label,
                                           fixed(bigger->throughput.value_or(0), 0)));
    // The overlap under which efficiency falls below kEfficientScaling: exposed ≤ compute ×
    // (1/0.8 − 1).
    double compute = 0, comm = 0;
    for (const auto& t : multi->time) {
      if (t.name == "compute per step") compute = t.value;
      if (t.name == "gradient all-reduce") comm = t.value;
    }
    if (comm > 0 && compute > 0) {
      const double need = 1 - compute * (1 / kEfficientScaling - 1) / comm;
      if (need > 0 && need < 1)
        d.would_change.push_back(fmt::format(
            "with less than {} of the all-reduce hidden under compute (now {}), efficiency falls "
            "under {}",
            percent(need), percent(c_.overlap), fixed(kEfficientScaling, 1)));
      else if (need <= 0)
        d.would_change.push_back(fmt::format(
            "even with no overlap the all-reduce ({}) stays under a quarter of the compute ({})",
            ms(comm), ms(compute)));
    }
    return d;
  }

  const Context& c_;
  const Workload& w_;
  const std::vector<Evaluated>& ev_;
  const std::vector<OptionResult>& opts_;
  std::vector<std::string> host_;
  int node_gpus_;
};

}  // namespace
}  // namespace advisor

Result<AdviseReport> advise(const AdviseInput& input) {
  using namespace advisor;
  if (Status s = validate_workload(input.workload); !s.is_ok()) return s;
  const AdviseOptions& opt = input.options;
  if (!(opt.headroom >= 0 && opt.headroom < 1))
    return Status::invalid_input("the memory headroom must be at least 0 and under 1");
  if (!(opt.efficiency > 0 && opt.efficiency <= 1))
    return Status::invalid_input("the model efficiency must be above 0 and at most 1");
  if (opt.overlap && !(*opt.overlap >= 0 && *opt.overlap <= 1))
    return Status::invalid_input("the overlap must be between 0 and 1");
  if (!(opt.bucket_mib > 0)) return Status::invalid_input("the bucket size must be positive");

  AdviseReport r;
  r.workload = input.workload;
  r.options = opt;
  std::vector<CandidateSpec> candidates = input.candidates;
  if (candidates.empty()) {
    if (!input.node)
      return Status::invalid_input(
          "no candidates: name them (--candidates 2xthis,1xH200) or give this node (--node)");
    candidates = {{2, "this"}};
    r.notes.push_back("no --candidates: 2xthis (this box with a second GPU)");
  }

  Context c;
  c.workload = &r.workload;
  c.options = &r.options;
  c.node = input.node ? &*input.node : nullptr;
  if (c.node) {
    r.node_origin = c.node->origin;
    if (!c.node->bench.empty()) {
      auto sweep = allreduce_sweep(c.node->bench);
      if (sweep.is_ok()) {
        auto fit = fit_alpha_beta(sweep.value(), c.node->bench_origin);
        if (fit.is_ok()) {
          c.fit = fit.value();
          r.fit = fit.value();
        } else {
          r.notes.push_back(fit.status().message() +
                            "; the all-reduce uses the topology and "
                            "catalog figures");
        }
      } else {
        r.notes.push_back(c.node->bench_origin + ": " + sweep.status().message() +
                          "; the all-reduce uses the topology and catalog figures");
      }
    }
  }
  if (opt.overlap) {
    c.overlap = *opt.overlap;
    c.overlap_how = "--overlap";
  } else if (c.node && c.node->scale && c.node->scale->overlap) {
    c.overlap = *c.node->scale->overlap;
    c.overlap_how = fmt::format("measured: {} training on {} GPUs, 1 − exposed / all-reduce time",
                                c.node->scale->origin, c.node->scale->overlap_gpus.value_or(0));
  } else {
    c.overlap = kDefaultOverlap;
    c.overlap_how = "default: no multi-GPU scale run measured it";
  }
  // Catalog peaks are never reached: when this node measured its own GPU, the catalog models
  // are assumed to reach the same share of their data sheet.
  if (c.node && c.node->scale) {
    const Facts& f = c.node->facts;
    std::string name = opt.this_gpu;
    if (name.empty())
      for (const auto& g : f.gpus)
        if (g.name) {
          name = *g.name;
          break;
        }
    const GpuModelSpec* spec = name.empty() ? nullptr : find_gpu_model(name);
    const auto measured =
        c.node->scale->gemm_tflops ? c.node->scale->gemm_tflops : c.node->scale->peak_tflops;
    if (spec && measured && *measured > 0) {
      c.catalog_calibration = std::clamp(*measured / spec->bf16_dense_tflops, 0.05, 1.5);
      c.calibration_how = fmt::format("{} (this node's {} reached {} of its data-sheet {} TFLOP/s)",
                                      fixed(c.catalog_calibration, 2), spec->id,
                                      fixed(*measured, 0), fixed(spec->bf16_dense_tflops, 0));
    }
  }

  std::vector<Evaluated> ev;
  for (const auto& spec : candidates) {
    auto gpu = gpu_basis(c, spec);
    if (!gpu.is_ok()) return gpu.status();
    Evaluated e{spec, gpu.value(), {}};
    e.link = link_basis(c, spec, e.gpu);
    ev.push_back(std::move(e));
  }
  for (const auto& e : ev)
    r.candidates.push_back(evaluate(c, e.spec, e.gpu, e.link, r.workload.sharding));

  int node_gpus = 0;
  if (c.node) {
    node_gpus = static_cast<int>(c.node->facts.gpus.size());
    for (const auto& f : c.node->diagnosis.findings)
      for (const char* id : kHostLimitIds)
        if (f.id == id) {
          std::string subjects;
          for (const auto& s : f.subjects) subjects += (subjects.empty() ? "" : ", ") + s;
          r.host_limits.push_back(fmt::format("{} ({}): {}", f.id, subjects, f.evidence));
        }
  }
  if (!r.host_limits.empty())
    for (auto& o : r.candidates) o.useful_gpus = std::min(o.gpus, std::max(1, node_gpus));

  Decider decider(c, ev, r.candidates, r.host_limits, node_gpus);
  Decision d = decider.run(true);
  r.recommendation = d.rec;
  r.summary = d.summary;
  r.deciding = d.deciding;
  r.would_change = d.would_change;
  if (r.workload.throughput_target) {
    std::string met, missed;
    for (const auto& o : r.candidates) {
      if (!o.fits || !o.throughput) continue;
      std::string& into = *o.throughput >= *r.workload.throughput_target ? met : missed;
      into += fmt::format("{}{} ({})", into.empty() ? "" : ", ", o.label, fixed(*o.throughput, 0));
    }
    r.deciding.push_back(fmt::format("throughput target {} tokens/s: met by {}; missed by {}",
                                     fixed(*r.workload.throughput_target, 0),
                                     met.empty() ? "no candidate that fits" : met,
                                     missed.empty() ? "none" : missed));
  }

  r.assumptions.push_back(fmt::format(
      "memory: {} of each GPU kept free (CUDA context, allocator, workspace); usable = {} × "
      "capacity",
      percent(opt.headroom), fixed(1 - opt.headroom, 2)));
  if (trains(r.workload)) {
    r.assumptions.push_back(
        "model states per parameter (ZeRO paper): mixed-precision Adam 2 + 2 + 12 B (16Ψ in "
        "DDP, 4Ψ + 12Ψ/N ZeRO-1, 2Ψ + 14Ψ/N ZeRO-2, 16Ψ/N ZeRO-3); fp32 Adam 4 + 4 + 8; SGD "
        "with momentum 12 B (mixed) or 4 + 4 + 4 (fp32); fp8 trains with bf16 weights");
    r.assumptions.push_back(
        "activations: 34·s·b·h bytes per layer (Korthikanti et al. 2022, without the s² "
        "attention scores: FlashAttention); with checkpointing 2·s·b·h per layer plus one "
        "layer recomputed; logits and temporary buffers are in the headroom");
    r.assumptions.push_back(
        "compute: 6·Ψ FLOPs per token (8·Ψ with checkpointing), each GPU its own batch (data "
        "parallel)");
    r.assumptions.push_back(fmt::format("overlap of the gradient all-reduce with compute: {} ({})",
                                        fixed(c.overlap, 2), c.overlap_how));
  } else {
    r.assumptions.push_back(
        "decode is memory-bound: per token every GPU reads its weights and the KV cache once "
        "(kipply, Transformer Inference Arithmetic); tensor parallelism adds 2 all-reduces of "
        "batch·hidden per layer per token");
    r.assumptions.push_back(
        "KV cache = 2·layers·kv_heads·head_dim·bytes per token; int8/int4 quantise the weights "
        "only, the cache stays 16-bit");
  }
  r.assumptions.push_back(fmt::format(
      "model efficiency {}: the share of the reference TFLOP/s (measured GEMM rate, or the data "
      "sheet's) a whole model step reaches",
      fixed(opt.efficiency, 2)));
  if (!c.calibration_how.empty())
    r.assumptions.push_back("catalog TFLOP/s scaled by " + c.calibration_how);
  r.assumptions.push_back(fmt::format(
      "all-reduce: ring, t = 2(N−1)·α + 2(N−1)/N · S/busbw; {}",
      r.fit ? "α and busbw fitted on this node's sweep, assumed alike for more GPUs of this node"
            : fmt::format("catalog figures: busbw = link × {} (NVLink, PCIe with P2P) or × {} "
                          "(SYS, GeForce through host memory), α {} µs NVLink, {} µs PCIe",
                          fixed(kRingBusbwFraction, 2), fixed(kSysBusbwFraction, 2),
                          fixed(kNvlinkAlphaUs, 1), fixed(kPcieAlphaUs, 1))));
  if (r.workload.mode == AdviseMode::kJobs)
    r.notes.push_back(
        "jobs: each independent job alone on its GPU; the workload's sharding is not used");
  return r;
}

}  // namespace gpuvet
