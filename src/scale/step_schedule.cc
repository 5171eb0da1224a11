#include "scale/step_schedule.h"

#include "hw/expectations.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gpuvet::scale {

std::size_t dtype_bytes(DType t) { return t == DType::kFp32 ? 4 : 2; }

bool is_collective(TaskKind k) {
  return k == TaskKind::kAllReduce || k == TaskKind::kAllGather || k == TaskKind::kReduceScatter;
}

double StepSchedule::flops() const {
  double f = 0;
  for (const auto& t : tasks) f += t.flops();
  return f;
}

std::size_t StepSchedule::bytes_on_device() const {
  std::size_t b = 0;
  for (const auto& s : buffers) b += s.bytes();
  return b;
}

std::vector<int> StepSchedule::collectives() const {
  std::vector<int> out;
  for (std::size_t i = 0; i < tasks.size(); ++i)
    if (is_collective(tasks[i].kind)) out.push_back(static_cast<int>(i));
  return out;
}

std::vector<Bucket> ddp_buckets(const std::vector<Param>& params, std::size_t bytes_per_elem,
                                std::size_t cap, std::size_t first_cap) {
  std::vector<Bucket> out;
  Bucket open;
  std::size_t open_bytes = 0;
  std::size_t offset = 0;
  for (int i = static_cast<int>(params.size()) - 1; i >= 0; --i) {
    const std::size_t n = params[static_cast<std::size_t>(i)].elems;
    if (open.params.empty()) open.offset = offset;
    open.params.push_back(i);
    open.count += n;
    open_bytes += n * bytes_per_elem;
    offset += n;
    if (open_bytes >= (out.empty() ? first_cap : cap)) {
      out.push_back(std::move(open));
      open = Bucket{};
      open_bytes = 0;
    }
  }
  if (!open.params.empty()) out.push_back(std::move(open));
  return out;
}

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr float kWeightSigma = 0.02f;  // a transformer's usual initialisation
constexpr float kActivationSigma = 1.0f;
constexpr int kSquareEdge = 4096;
constexpr int kSquareBufferSets = 8;  // square GEMMs beyond this reuse buffer sets in turn

int ceil_div(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

std::size_t round_up(std::size_t a, std::size_t b) { return (a + b - 1) / b * b; }

class Builder {
 public:
  explicit Builder(StepSchedule& s) : s_(s) {}
  int buffer(std::size_t elems, DType t, float sigma, std::string role) {
    s_.buffers.push_back({std::max<std::size_t>(elems, 1), t, sigma, std::move(role)});
    return static_cast<int>(s_.buffers.size()) - 1;
  }
  int push(Task t) {
    if (s_.tasks.size() >= kMaxTasks)
      throw std::invalid_argument("more than " + std::to_string(kMaxTasks) +
                                  " tasks in one step: use fewer layers or tokens");
    s_.tasks.push_back(std::move(t));
    return static_cast<int>(s_.tasks.size()) - 1;
  }
  int gemm(const Gemm& g, int a, int b, int c, std::string what, int layer, int phase, Pass pass,
           std::vector<int> after = {}) {
    Task t;
    t.kind = TaskKind::kGemm;
    t.gemm = g;
    t.a = a, t.b = b, t.c = c;
    t.what = std::move(what);
    t.layer = layer, t.phase = phase, t.pass = pass;
    t.after = std::move(after);
    return push(std::move(t));
  }
  int collective(TaskKind kind, StreamId stream, int buffer, std::size_t offset, std::size_t count,
                 std::string what, int layer, int phase, Pass pass, std::vector<int> after) {
    Task t;
    t.kind = kind;
    t.stream = stream;
    t.buffer = buffer, t.offset = offset, t.count = count;
    t.what = std::move(what);
    t.layer = layer, t.phase = phase, t.pass = pass;
    t.after = std::move(after);
    return push(std::move(t));
  }
  // Fused Adam over `count` fp32 parameters: gradients in `grads`, three state buffers; after
  // the step's last collective (the gradients it updates with are reduced by then).
  int optimizer(std::size_t count, int grads) {
    std::vector<int> after;
    const auto coll = s_.collectives();
    if (!coll.empty()) after.push_back(coll.back());
    Task t;
    t.kind = TaskKind::kOptimizer;
    t.buffer = grads;
    t.count = count;
    t.what = "optimizer step (Adam, fp32)";
    t.pass = Pass::kUpdate;
    for (const char* r : {"master parameters (fp32)", "Adam first moment", "Adam second moment"})
      t.state.push_back(buffer(count, DType::kFp32, 0.0f, r));
    t.after = std::move(after);
    return push(std::move(t));
  }

 private:
  StepSchedule& s_;
};

// One transformer layer's training GEMMs (forward, then backward in reverse: dX then dW per
// projection) on buffers shaped like the real tensors: the forward input X and the weight W,
// the output Y, the output's gradient dY; dX = dY·Wᵀ reads W, dW = Xᵀ·dY reads X.
struct LayerTasks {
  std::vector<int> forward;   // 4 task indices
  std::vector<int> backward;  // 8: dX, dW per projection, MLP down first
  int dw_qkv = -1, dw_out = -1, dw_gate_up = -1, dw_down = -1;
};

struct Projection {
  const char* name;
  int in, out;
};

std::vector<Projection> projections(int h, int f, int shard) {
  return {{"QKV", h, ceil_div(3LL * h, shard)},
          {"attention out", ceil_div(h, shard), h},
          {"MLP gate+up", h, ceil_div(2LL * f, shard)},
          {"MLP down", ceil_div(f, shard), h}};
}

struct ProjectionBuffers {
  int x = -1, w = -1, y = -1, dy = -1, dx = -1, dw = -1;
};

std::vector<ProjectionBuffers> train_layer_buffers(Builder& b, int layer, int tokens, int h,
                                                   int f) {
  std::vector<ProjectionBuffers> out;
  const std::string l = "layer " + std::to_string(layer) + " ";
  for (const auto& p : projections(h, f, 1)) {
    ProjectionBuffers pb;
    const std::size_t t = static_cast<std::size_t>(tokens);
    pb.x = b.buffer(t * p.in, DType::kBf16, kActivationSigma, l + p.name + " input");
    pb.w = b.buffer(static_cast<std::size_t>(p.in) * p.out, DType::kBf16, kWeightSigma,
                    l + p.name + " weight");
    pb.y = b.buffer(t * p.out, DType::kBf16, 0.0f, l + p.name + " output");
    pb.dy = b.buffer(t * p.out, DType::kBf16, kActivationSigma, l + p.name + " output gradient");
    pb.dx = b.buffer(t * p.in, DType::kBf16, 0.0f, l + p.name + " input gradient");
    pb.dw = b.buffer(static_cast<std::size_t>(p.in) * p.out, DType::kBf16, 0.0f,
                     l + p.name + " weight gradient");
    out.push_back(pb);
  }
  return out;
}

// Forward GEMMs of one layer; `first_after` gates the first one (FSDP: its all-gather).
std::vector<int> push_forward(Builder& b, const std::vector<ProjectionBuffers>& bufs, int layer,
                              int phase, int tokens, int h, int f, std::vector<int> first_after) {
  std::vector<int> out;
  const auto proj = projections(h, f, 1);
  for (std::size_t i = 0; i < proj.size(); ++i) {
    const auto& p = proj[i];
    const auto& pb = bufs[i];
    out.push_back(b.gemm({tokens, p.out, p.in, false, false}, pb.x, pb.w, pb.y,
                         "layer " + std::to_string(layer) + " " + p.name + " forward", layer, phase,
                         Pass::kForward, i == 0 ? first_after : std::vector<int>{}));
  }
  return out;
}

LayerTasks push_backward(Builder& b, const std::vector<ProjectionBuffers>& bufs, int layer,
                         int phase, int tokens, int h, int f, std::vector<int> first_after) {
  LayerTasks lt;
  const auto proj = projections(h, f, 1);
  for (int i = 3; i >= 0; --i) {
    const auto& p = proj[static_cast<std::size_t>(i)];
    const auto& pb = bufs[static_cast<std::size_t>(i)];
    const std::string l = "layer " + std::to_string(layer) + " " + p.name;
    lt.backward.push_back(b.gemm({tokens, p.in, p.out, false, true}, pb.dy, pb.w, pb.dx, l + " dX",
                                 layer, phase, Pass::kBackward,
                                 i == 3 ? first_after : std::vector<int>{}));
    const int dw = b.gemm({p.in, p.out, tokens, true, false}, pb.x, pb.dy, pb.dw, l + " dW", layer,
                          phase, Pass::kBackward);
    lt.backward.push_back(dw);
    (i == 0 ? lt.dw_qkv : i == 1 ? lt.dw_out : i == 2 ? lt.dw_gate_up : lt.dw_down) = dw;
  }
  return lt;
}

double layer_params(int h, int f) { return 4.0 * h * h + 3.0 * h * f; }

// LLaMA's parameters of one layer in registration order, with the dW GEMM that makes each
// gradient ready (q, k and v come out of the fused QKV GEMM, gate and up out of gate+up).
std::vector<Param> layer_param_list(int layer, int h, int f, const LayerTasks& lt) {
  const std::string l = "layer " + std::to_string(layer) + " ";
  const auto hh = static_cast<std::size_t>(h) * h;
  const auto hf = static_cast<std::size_t>(h) * f;
  return {{l + "q_proj", hh, lt.dw_qkv},        {l + "k_proj", hh, lt.dw_qkv},
          {l + "v_proj", hh, lt.dw_qkv},        {l + "o_proj", hh, lt.dw_out},
          {l + "gate_proj", hf, lt.dw_gate_up}, {l + "up_proj", hf, lt.dw_gate_up},
          {l + "down_proj", hf, lt.dw_down}};
}

std::vector<Gemm> square_gemms(double target) {
  const double unit = 2.0 * kSquareEdge * kSquareEdge * static_cast<double>(kSquareEdge);
  std::vector<Gemm> ops;
  const double whole = std::floor(target / unit);
  if (whole > static_cast<double>(kMaxTasks))
    throw std::invalid_argument("the FLOPs asked need more than " + std::to_string(kMaxTasks) +
                                " GEMMs per step");
  for (int i = 0; i < static_cast<int>(whole); ++i)
    ops.push_back({kSquareEdge, kSquareEdge, kSquareEdge});
  const double rest = target - whole * unit;
  const long long k = std::llround(rest / (2.0 * kSquareEdge * kSquareEdge) / 64) * 64;
  if (k > 0) ops.push_back({kSquareEdge, kSquareEdge, static_cast<int>(k)});
  if (ops.empty()) {
    const int e = std::max(64, static_cast<int>(std::cbrt(std::max(target, 1.0) / 2) / 64) * 64);
    ops.push_back({e, e, e});
  }
  return ops;
}

// Data parallel and fully sharded training share their compute: the GEMMs of every layer (or
// the square GEMMs) per accumulation phase. Returns, per phase, the task indices.
struct TrainCompute {
  std::vector<std::vector<ProjectionBuffers>> layer_bufs;  // per layer
  std::vector<int> square_a, square_b, square_c;           // per buffer set
  std::vector<Gemm> square;
  int square_forward = 0;  // how many of `square` are the forward pass
};

void prepare_square(Builder& b, TrainCompute& tc, double flops) {
  tc.square = square_gemms(flops);
  double total = 0;
  for (const auto& g : tc.square) total += g.flops();
  double done = 0;
  for (const auto& g : tc.square) {
    done += g.flops();
    if (done > total / 3 * (1 + 1e-9)) break;
    ++tc.square_forward;
  }
  const int sets = std::min<int>(static_cast<int>(tc.square.size()), kSquareBufferSets);
  for (int i = 0; i < sets; ++i) {
    const Gemm& g = tc.square[static_cast<std::size_t>(i)];
    const std::string n = "square GEMM set " + std::to_string(i);
    tc.square_a.push_back(
        b.buffer(static_cast<std::size_t>(g.m) * g.k, DType::kBf16, kActivationSigma, n + " A"));
    tc.square_b.push_back(
        b.buffer(static_cast<std::size_t>(g.k) * g.n, DType::kBf16, kWeightSigma, n + " B"));
    tc.square_c.push_back(
        b.buffer(static_cast<std::size_t>(g.m) * g.n, DType::kBf16, 0.0f, n + " C"));
  }
}

// One accumulation phase of square GEMMs; returns the backward tasks' indices.
std::vector<int> push_square_phase(Builder& b, const TrainCompute& tc, int phase) {
  std::vector<int> backward;
  for (std::size_t i = 0; i < tc.square.size(); ++i) {
    const std::size_t set = i % tc.square_a.size();
    const bool fwd = static_cast<int>(i) < tc.square_forward;
    const int t = b.gemm(tc.square[i], tc.square_a[set], tc.square_b[set], tc.square_c[set],
                         std::string(fwd ? "forward" : "backward") + " GEMM " + std::to_string(i),
                         0, phase, fwd ? Pass::kForward : Pass::kBackward);
    if (!fwd) backward.push_back(t);
  }
  return backward;
}

// Scales the parameters' natural sizes to `grad_elems` in all (a --grad-bytes override or a
// preset without shapes), keeping their order and readiness.
void scale_params(std::vector<Param>& params, std::size_t grad_elems) {
  double natural = 0;
  for (const auto& p : params) natural += static_cast<double>(p.elems);
  if (params.empty() || natural <= 0) return;
  std::size_t given = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (i + 1 == params.size()) {
      params[i].elems = grad_elems > given ? grad_elems - given : 0;
    } else {
      params[i].elems = static_cast<std::size_t>(std::floor(
          static_cast<double>(params[i].elems) / natural * static_cast<double>(grad_elems)));
      given += params[i].elems;
    }
  }
  params.erase(
      std::remove_if(params.begin(), params.end(), [](const Param& p) { return p.elems == 0; }),
      params.end());
}

StepSchedule ddp_step(const ScalePreset& p, const StepOptions& o) {
  StepSchedule s;
  s.parallelism = Parallelism::kDataParallel;
  s.ranks = o.ranks;
  Builder b(s);
  const bool shaped = p.hidden > 0 && p.ffn > 0 && p.tokens > 0;
  const int layers = shaped ? std::max(p.layers, 1) : 1;
  TrainCompute tc;
  if (shaped)
    for (int l = 0; l < layers; ++l)
      tc.layer_bufs.push_back(train_layer_buffers(b, l, p.tokens, p.hidden, p.ffn));
  else
    prepare_square(b, tc, p.flops);

  const std::size_t grad_elems = p.grad_bytes / sizeof(float);
  const bool comm = o.ranks >= 2 && grad_elems > 0;
  const int grads = b.buffer(grad_elems, DType::kFp32, 0.0f, "gradients (fp32)");

  // Every phase's GEMMs; the last phase's backward makes the gradients the buckets wait for.
  std::vector<Param> params;
  std::vector<int> last_backward;  // the last phase's backward tasks, in order
  auto phase_compute = [&](int phase, bool last) {
    if (shaped) {
      for (int l = 0; l < layers; ++l)
        push_forward(b, tc.layer_bufs[static_cast<std::size_t>(l)], l, phase, p.tokens, p.hidden,
                     p.ffn, {});
      for (int l = layers - 1; l >= 0; --l) {
        const LayerTasks lt = push_backward(b, tc.layer_bufs[static_cast<std::size_t>(l)], l, phase,
                                            p.tokens, p.hidden, p.ffn, {});
        if (!last) continue;
        auto lp = layer_param_list(l, p.hidden, p.ffn, lt);
        params.insert(params.begin(), lp.begin(), lp.end());  // layer 0 registered first
        last_backward.insert(last_backward.end(), lt.backward.begin(), lt.backward.end());
      }
    } else {
      const std::vector<int> bw = push_square_phase(b, tc, phase);
      if (!last) return;
      // One parameter per backward GEMM, registered in forward order (the reverse of backward),
      // sized by its GEMM's share of the backward FLOPs.
      for (int t : bw)
        params.insert(params.begin(),
                      Param{"parameters of " + s.tasks[static_cast<std::size_t>(t)].what,
                            static_cast<std::size_t>(
                                std::llround(s.tasks[static_cast<std::size_t>(t)].flops() / 1e6)),
                            t});
      last_backward = bw;
    }
  };
  // Before the last phase the GEMMs run without a reduction (DDP's no_sync).
  for (int phase = 0; phase + 1 < o.accumulation; ++phase) phase_compute(phase, false);

  // The last phase: its GEMMs, with each bucket's all-reduce issued as soon as the GEMMs that
  // make its gradients are queued (it waits for them on the device), in bucket order.
  const std::size_t first_of_last = s.tasks.size();
  phase_compute(o.accumulation - 1, true);
  std::vector<Task> compute(s.tasks.begin() + static_cast<std::ptrdiff_t>(first_of_last),
                            s.tasks.end());
  s.tasks.resize(first_of_last);
  if (shaped &&
      p.grad_bytes != static_cast<std::size_t>(layer_params(p.hidden, p.ffn) * layers * 4))
    scale_params(params, grad_elems);
  else if (!shaped)
    scale_params(params, grad_elems);
  s.params = params;
  s.buckets = ddp_buckets(
      s.params, sizeof(float), p.bucket_bytes > 0 ? p.bucket_bytes : 25 * kMiB,
      std::min(kFirstBucketBytes, p.bucket_bytes > 0 ? p.bucket_bytes : kFirstBucketBytes));
  // Map the compute tasks' indices (params point at them) to their final positions.
  std::vector<int> final_index(compute.size(), -1);
  std::size_t next_bucket = 0;
  auto bucket_ready = [&](const Bucket& bk) {
    for (int pi : bk.params) {
      const int t = s.params[static_cast<std::size_t>(pi)].ready_after;
      if (final_index[static_cast<std::size_t>(t) - first_of_last] < 0) return false;
    }
    return true;
  };
  auto push_bucket = [&](std::size_t k, std::vector<int> after) {
    const Bucket& bk = s.buckets[k];
    std::string names;
    for (int pi : bk.params) {
      if (names.size() > 60) {
        names += ", …";
        break;
      }
      names += (names.empty() ? "" : ", ") + s.params[static_cast<std::size_t>(pi)].name;
    }
    const int t = b.collective(TaskKind::kAllReduce, StreamId::kComm, grads, bk.offset, bk.count,
                               "bucket " + std::to_string(k) + " all-reduce (" + names + ")", 0,
                               o.accumulation - 1, Pass::kBackward, std::move(after));
    s.tasks[static_cast<std::size_t>(t)].bucket = static_cast<int>(k);
  };
  for (std::size_t i = 0; i < compute.size(); ++i) {
    final_index[i] = b.push(compute[i]);
    if (!comm || !o.overlap) continue;
    while (next_bucket < s.buckets.size() && bucket_ready(s.buckets[next_bucket])) {
      std::vector<int> after;
      for (int pi : s.buckets[next_bucket].params) {
        const int t = final_index[static_cast<std::size_t>(
                                      s.params[static_cast<std::size_t>(pi)].ready_after) -
                                  first_of_last];
        if (std::find(after.begin(), after.end(), t) == after.end()) after.push_back(t);
      }
      push_bucket(next_bucket++, std::move(after));
    }
  }
  for (auto& prm : s.params)
    prm.ready_after = final_index[static_cast<std::size_t>(prm.ready_after) - first_of_last];
  const int last_gemm = static_cast<int>(s.tasks.size()) - 1;
  if (comm && !o.overlap)
    for (std::size_t k = 0; k < s.buckets.size(); ++k) push_bucket(k, {last_gemm});
  if (o.optimizer && grad_elems > 0) b.optimizer(grad_elems, grads);
  return s;
}

StepSchedule fsdp_step(const ScalePreset& p, const StepOptions& o) {
  if (!(p.hidden > 0 && p.ffn > 0 && p.tokens > 0))
    throw std::invalid_argument("a fully sharded preset needs layer shapes");
  StepSchedule s;
  s.parallelism = Parallelism::kFullySharded;
  s.ranks = o.ranks;
  Builder b(s);
  const int layers = std::max(p.layers, 1);
  const int n = std::max(o.ranks, 1);
  const bool comm = n >= 2;
  const auto per_layer = round_up(static_cast<std::size_t>(layer_params(p.hidden, p.ffn)),
                                  static_cast<std::size_t>(n));
  std::vector<std::vector<ProjectionBuffers>> bufs;
  std::vector<int> gathered, grads;
  for (int l = 0; l < layers; ++l) {
    bufs.push_back(train_layer_buffers(b, l, p.tokens, p.hidden, p.ffn));
    if (!comm) continue;
    const std::string name = "layer " + std::to_string(l) + " ";
    gathered.push_back(
        b.buffer(per_layer, DType::kBf16, kWeightSigma, name + "gathered parameters (bf16)"));
    grads.push_back(b.buffer(per_layer, DType::kFp32, 0.0f, name + "gradients (fp32)"));
  }
  const int phases = std::max(o.accumulation, 1);
  for (int phase = 0; phase < phases; ++phase) {
    // Forward: layer l's all-gather prefetched while layer l-1 computes, at most two layers
    // gathered (the gather of l waits for the forward of l-2 to end).
    std::vector<int> fwd_last(static_cast<std::size_t>(layers), -1),
        ag_f(static_cast<std::size_t>(layers), -1);
    auto gather_forward = [&](int l) {
      std::vector<int> after;
      if (l >= 2) after.push_back(fwd_last[static_cast<std::size_t>(l - 2)]);
      ag_f[static_cast<std::size_t>(l)] =
          b.collective(TaskKind::kAllGather, StreamId::kComm, gathered[static_cast<std::size_t>(l)],
                       0, per_layer, "layer " + std::to_string(l) + " all-gather (forward)", l,
                       phase, Pass::kForward, after);
    };
    if (comm) gather_forward(0);
    for (int l = 0; l < layers; ++l) {
      if (comm && l + 1 < layers) gather_forward(l + 1);
      std::vector<int> first_after;
      if (comm) first_after.push_back(ag_f[static_cast<std::size_t>(l)]);
      const auto f = push_forward(b, bufs[static_cast<std::size_t>(l)], l, phase, p.tokens,
                                  p.hidden, p.ffn, first_after);
      fwd_last[static_cast<std::size_t>(l)] = f.back();
    }
    // Backward: each layer gathered again (resharded after its forward), the next one's gather
    // issued before this one's backward GEMMs (backward prefetch), the gradients
    // reduce-scattered once the layer's dW GEMMs are done (every phase: FSDP has no no_sync
    // saving for sharded gradients).
    std::vector<int> bwd_last(static_cast<std::size_t>(layers), -1),
        ag_b(static_cast<std::size_t>(layers), -1);
    auto gather_backward = [&](int l) {
      std::vector<int> after;
      if (l + 2 < layers)
        after.push_back(bwd_last[static_cast<std::size_t>(l + 2)]);
      else
        after.push_back(fwd_last[static_cast<std::size_t>(layers - 1)]);
      ag_b[static_cast<std::size_t>(l)] =
          b.collective(TaskKind::kAllGather, StreamId::kComm, gathered[static_cast<std::size_t>(l)],
                       0, per_layer, "layer " + std::to_string(l) + " all-gather (backward)", l,
                       phase, Pass::kBackward, after);
    };
    if (comm) gather_backward(layers - 1);
    for (int l = layers - 1; l >= 0; --l) {
      if (comm && l >= 1) {
        // The prefetch waits for the backward two layers up; that task is queued already.
        gather_backward(l - 1);
      }
      std::vector<int> first_after;
      if (comm) first_after.push_back(ag_b[static_cast<std::size_t>(l)]);
      const LayerTasks lt = push_backward(b, bufs[static_cast<std::size_t>(l)], l, phase, p.tokens,
                                          p.hidden, p.ffn, first_after);
      bwd_last[static_cast<std::size_t>(l)] = lt.backward.back();
      if (comm)
        b.collective(TaskKind::kReduceScatter, StreamId::kComm, grads[static_cast<std::size_t>(l)],
                     0, per_layer, "layer " + std::to_string(l) + " reduce-scatter (gradients)", l,
                     phase, Pass::kBackward, {lt.backward.back()});
    }
  }
  if (o.optimizer) {
    const std::size_t shard =
        per_layer * static_cast<std::size_t>(layers) / static_cast<std::size_t>(n);
    b.optimizer(shard, b.buffer(shard, DType::kFp32, 0.0f, "gradient shard (fp32)"));
  }
  return s;
}

StepSchedule tp_request(const ScalePreset& p, const StepOptions& o) {
  StepSchedule s;
  s.parallelism = Parallelism::kTensorParallel;
  s.ranks = o.ranks;
  Builder b(s);
  const int n = std::max(o.ranks, 1);
  const int layers = std::max(p.layers, 1);
  const int passes = p.tokens_per_request;
  if (passes < 1) throw std::invalid_argument("the preset has no tokens per request");
  const bool comm = n >= 2;
  if (!(p.hidden > 0 && p.ffn > 0 && p.tokens > 0)) {
    // No shapes: per pass and layer, square GEMMs of the layer's share, one all-reduce.
    const auto g = square_gemms(p.flops / layers / n);
    const int a =
        b.buffer(static_cast<std::size_t>(g[0].m) * g[0].k, DType::kBf16, kActivationSigma, "A");
    const int w =
        b.buffer(static_cast<std::size_t>(g[0].k) * g[0].n, DType::kBf16, kWeightSigma, "B");
    const int c = b.buffer(static_cast<std::size_t>(g[0].m) * g[0].n, DType::kBf16, 0.0f, "C");
    const std::size_t act = p.activation_bytes / 2;
    const int act_buf = comm && act > 0 ? b.buffer(act, DType::kBf16, 0.0f, "activations") : -1;
    for (int t = 0; t < passes; ++t)
      for (int l = 0; l < layers; ++l) {
        for (const auto& gm : g)
          b.gemm(gm, a, w, c, "layer " + std::to_string(l) + " GEMM", l, t, Pass::kRequest);
        if (act_buf >= 0)
          b.collective(TaskKind::kAllReduce, StreamId::kCompute, act_buf, 0, act,
                       "layer " + std::to_string(l) + " all-reduce", l, t, Pass::kRequest, {});
      }
    return s;
  }
  const int rows = p.tokens, h = p.hidden, f = p.ffn;
  const auto proj = projections(h, f, n);
  // Activations flow through one workspace per projection; weights are every layer's own.
  std::vector<int> x, y;
  for (const auto& pr : proj) {
    x.push_back(b.buffer(static_cast<std::size_t>(rows) * pr.in, DType::kBf16, kActivationSigma,
                         std::string(pr.name) + " input"));
    y.push_back(b.buffer(static_cast<std::size_t>(rows) * pr.out, DType::kBf16, 0.0f,
                         std::string(pr.name) + " output"));
  }
  std::vector<std::vector<int>> w(static_cast<std::size_t>(layers));
  for (int l = 0; l < layers; ++l)
    for (const auto& pr : proj)
      w[static_cast<std::size_t>(l)].push_back(
          b.buffer(static_cast<std::size_t>(pr.in) * pr.out, DType::kBf16, kWeightSigma,
                   "layer " + std::to_string(l) + " " + pr.name + " weight shard"));
  for (int t = 0; t < passes; ++t)
    for (int l = 0; l < layers; ++l)
      for (std::size_t i = 0; i < proj.size(); ++i) {
        const auto& pr = proj[i];
        const std::string name = "layer " + std::to_string(l) + " " + pr.name;
        b.gemm({rows, pr.out, pr.in, false, false}, x[i], w[static_cast<std::size_t>(l)][i], y[i],
               name, l, t, Pass::kRequest);
        // Row-parallel projections end in partial sums: all-reduced on the critical path.
        if (comm && (i == 1 || i == 3))
          b.collective(TaskKind::kAllReduce, StreamId::kCompute, y[i], 0,
                       static_cast<std::size_t>(rows) * pr.out, name + " all-reduce", l, t,
                       Pass::kRequest, {});
      }
  return s;
}

}  // namespace

StepSchedule build_schedule(const ScalePreset& preset, const StepOptions& options) {
  if (!(preset.flops > 0)) throw std::invalid_argument("the preset has no FLOPs per step");
  if (options.ranks < 1) throw std::invalid_argument("no GPU given");
  if (options.accumulation < 1) throw std::invalid_argument("accumulation must be at least 1");
  switch (preset.parallelism) {
    case Parallelism::kDataParallel:
      return ddp_step(preset, options);
    case Parallelism::kFullySharded:
      return fsdp_step(preset, options);
    case Parallelism::kTensorParallel:
      return tp_request(preset, options);
  }
  throw std::invalid_argument("unknown parallelism");
}

// ------------------------------------------------------------------ simulation

namespace {

double collective_ms(const StepSchedule& s, const Task& t, double busbw_gbps, double alpha_us) {
  const double n = s.ranks;
  if (n < 2 || !(busbw_gbps > 0)) return 0;
  const double bytes =
      static_cast<double>(t.count) *
      static_cast<double>(dtype_bytes(s.buffers[static_cast<std::size_t>(t.buffer)].dtype));
  const double factor = t.kind == TaskKind::kAllReduce ? 2 * (n - 1) / n : (n - 1) / n;
  return alpha_us * 1e-3 + factor * bytes / (busbw_gbps * 1e9) * 1e3;
}

// Union length of intervals.
double union_ms(std::vector<std::pair<double, double>> v) {
  std::sort(v.begin(), v.end());
  double total = 0, cur_a = 0, cur_b = -1;
  bool open = false;
  for (const auto& [a, b] : v) {
    if (b <= a) continue;
    if (!open || a > cur_b) {
      if (open) total += cur_b - cur_a;
      cur_a = a, cur_b = b, open = true;
    } else {
      cur_b = std::max(cur_b, b);
    }
  }
  if (open) total += cur_b - cur_a;
  return total;
}

}  // namespace

double uncovered_ms(const std::vector<std::pair<double, double>>& comm,
                    const std::vector<std::pair<double, double>>& compute) {
  std::vector<std::pair<double, double>> both = comm;
  both.insert(both.end(), compute.begin(), compute.end());
  return union_ms(both) - union_ms(compute);
}

SimResult simulate(const StepSchedule& s, const SimSpeeds& sp) {
  SimResult r;
  const std::size_t n = s.tasks.size();
  std::vector<double> base(n, 0);  // duration without contention
  for (std::size_t i = 0; i < n; ++i) {
    const Task& t = s.tasks[i];
    if (t.kind == TaskKind::kGemm)
      base[i] = sp.tflops > 0 ? t.flops() / (sp.tflops * 1e12) * 1e3 : 0;
    else if (t.kind == TaskKind::kOptimizer)
      base[i] = sp.hbm_gbps > 0
                    ? 7.0 * 4.0 * static_cast<double>(t.count) / (sp.hbm_gbps * 1e9) * 1e3
                    : 0;
    else
      base[i] = collective_ms(s, t, sp.busbw_gbps, sp.alpha_us);
  }
  std::vector<double> dur = base;
  std::vector<SimTask> times(n);
  // A GEMM beside a collective is slowed; the collectives' placement depends on the GEMMs'
  // lengths, so the pass is repeated until it settles (a few rounds).
  for (int round = 0; round < 8; ++round) {
    double free_at[2] = {0, 0};
    for (std::size_t i = 0; i < n; ++i) {
      const Task& t = s.tasks[i];
      double start = free_at[t.stream == StreamId::kComm ? 1 : 0];
      for (int a : t.after) start = std::max(start, times[static_cast<std::size_t>(a)].end_ms);
      times[i] = {start, start + dur[i]};
      free_at[t.stream == StreamId::kComm ? 1 : 0] = times[i].end_ms;
    }
    if (!(sp.overlap_slowdown > 0)) break;
    std::vector<double> next = base;
    for (std::size_t i = 0; i < n; ++i) {
      if (s.tasks[i].kind != TaskKind::kGemm || base[i] <= 0) continue;
      double beside = 0;
      for (std::size_t j = 0; j < n; ++j)
        if (is_collective(s.tasks[j].kind) && s.tasks[j].stream == StreamId::kComm)
          beside += std::max(0.0, std::min(times[i].end_ms, times[j].end_ms) -
                                      std::max(times[i].start_ms, times[j].start_ms));
      const double share = std::min(1.0, beside / (times[i].end_ms - times[i].start_ms));
      next[i] = base[i] * (1 + sp.overlap_slowdown * share);
    }
    if (next == dur) break;
    dur = next;
  }
  std::vector<std::pair<double, double>> comm, compute;
  double slowdown = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Task& t = s.tasks[i];
    r.step_ms = std::max(r.step_ms, times[i].end_ms);
    if (is_collective(t.kind)) {
      comm.emplace_back(times[i].start_ms, times[i].end_ms);
      r.comm_ms += dur[i];
    } else {
      compute.emplace_back(times[i].start_ms, times[i].end_ms);
      r.compute_ms += dur[i];
      slowdown += dur[i] - base[i];
    }
  }
  r.exposed_ms = uncovered_ms(comm, compute);
  r.comm_share = r.step_ms > 0 ? std::clamp((r.exposed_ms + slowdown) / r.step_ms, 0.0, 1.0) : 0;
  r.tasks = std::move(times);
  return r;
}

double longest_collective_s(const StepSchedule& s, double busbw_gbps) {
  double most = 0;
  for (const auto& t : s.tasks)
    if (is_collective(t.kind)) most = std::max(most, collective_ms(s, t, busbw_gbps, 0) / 1e3);
  return most;
}

double collective_deadline_s(const StepSchedule& s, double floor_s) {
  // At 1 GB/s the longest collective's seconds are its bus bytes in GB.
  return hw::collective_deadline_s(longest_collective_s(s, 1.0) * 1e9, floor_s);
}

}  // namespace gpuvet::scale
