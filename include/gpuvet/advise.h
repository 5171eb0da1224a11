// gpuvet/advise.h — `gpuvet advise`: the article's "a second GPU, or one bigger GPU?" checklist
// as a calculator fed by measurements.
//
// A workload (train, infer, or many independent jobs; the model's size and shape, precision,
// optimizer, sharding, batch, sequence, a latency or throughput target) is set against
// candidates ("2xthis", "1xH200", …): this node, described by its facts and diagnosis, its
// `gpuvet bench` all-reduce sweep and its `gpuvet scale` runs, or GPU models from a small
// built-in catalog whose every figure names its public source. For each candidate the model
// prints every term: memory per GPU against usable memory, step time as compute plus exposed
// communication (ring all-reduce with α and busbw fitted from the node's own sweep when there
// is one), scaling efficiency, and for inference the per-token and p99 latency. From those
// terms comes one recommendation of a fixed set, the numbers that decide it and what would
// change it.
//
// Units: bytes and GB (1e9 bytes) for memory, GB/s (1e9 B/s) for bandwidth, µs for α, ms for
// times, TFLOP/s (1e12) for compute. Everything here except the file readers is a pure
// function of its inputs: thread-safe, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuvet/diagnose.h"
#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet {

// ---------------------------------------------------------------- the workload

enum class AdviseMode { kTrain, kInfer, kJobs };  // kJobs: many independent jobs, one per GPU
enum class Precision { kFp32, kBf16, kFp16, kFp8, kInt8, kInt4 };
enum class Optimizer { kAdam, kSgd };  // kSgd: SGD with momentum
enum class Sharding { kNone, kZero1, kZero2, kZero3, kTensor, kPipeline };

const char* advise_mode_name(AdviseMode m);  // "train", "infer", "jobs"
const char* precision_name(Precision p);     // "fp32", "bf16", …
const char* optimizer_name(Optimizer o);     // "adam", "sgd"
const char* sharding_name(Sharding s);       // "none", "zero1", …, "tensor", "pipeline"
Result<AdviseMode> parse_advise_mode(std::string_view name);  // also "jobs"/"many-jobs"
Result<Precision> parse_precision(std::string_view name);
Result<Optimizer> parse_optimizer(std::string_view name);
Result<Sharding> parse_sharding(std::string_view name);  // also "ddp", "zero-3", "fsdp", "tp", "pp"
// Bytes per weight: fp32 4, bf16/fp16 2, fp8/int8 1, int4 0.5.
double precision_bytes(Precision p);

struct ModelShape {
  double params = 0;        // Ψ, parameters
  int layers = 0;           // transformer blocks
  int hidden = 0;           // d_model
  int attention_heads = 0;  // 0: not given
  int kv_heads = 0;         // 0: attention_heads (no grouped-query attention)
  int head_dim = 0;         // 0: hidden / attention_heads
};

// A few public model shapes (from each model's config.json on Hugging Face) for --model.
struct ModelPreset {
  const char* name;  // "llama2-7b", …
  ModelShape shape;
  const char* source;
};
std::span<const ModelPreset> model_presets();
const ModelPreset* find_model_preset(std::string_view name);

struct Workload {
  AdviseMode mode = AdviseMode::kTrain;
  AdviseMode job = AdviseMode::kInfer;  // mode jobs: what each independent job does
  ModelShape model;
  Precision precision = Precision::kBf16;
  Optimizer optimizer = Optimizer::kAdam;
  Sharding sharding = Sharding::kNone;
  int batch_per_gpu = 1;    // train: sequences per GPU per step; infer: concurrent sequences
  int seq_len = 2048;       // train: tokens per sequence; infer: prompt plus context length
  int output_tokens = 256;  // infer: tokens generated per request
  int micro_batches = 8;    // pipeline: micro-batches per step (the bubble)
  bool activation_checkpointing = false;
  std::optional<double> latency_p99_ms;     // infer: per request
  std::optional<double> throughput_target;  // tokens per second, all GPUs together
};

// The model's head dimension and KV heads with the defaults applied (0 when unknown).
int workload_head_dim(const ModelShape& m);
int workload_kv_heads(const ModelShape& m);

// Impossible or missing numbers (no parameters, negative or zero sizes, a latency target of 0,
// training in int8/int4, a head count that does not divide the hidden size): one sentence.
[[nodiscard]] Status validate_workload(const Workload& w);

// A workload file (TOML): a [workload] table with the keys of the command line (mode, model,
// params, layers, hidden, heads, kv_heads, head_dim, precision, optimizer, sharding,
// batch_per_gpu, seq_len, output_tokens, micro_batches, checkpointing, latency_p99_ms,
// throughput, job) and optionally candidates = "2xthis,1xH200". Unknown keys and wrong types
// are errors. `candidates` receives the file's candidates, if any.
Result<Workload> parse_workload_toml(std::string_view text, const std::string& origin,
                                     std::string* candidates);
Result<Workload> load_workload_file(const std::string& path, std::string* candidates);

// ---------------------------------------------------------------- the GPU catalog

enum class LinkClass {
  kNvlink,
  kPcie,
  kSys
};                                         // how GPUs of a box talk: NVLink, PCIe, across sockets
const char* link_class_name(LinkClass c);  // "nvlink", "pcie", "sys"
Result<LinkClass> parse_link_class(std::string_view name);

struct GpuModelSpec {
  const char* id;    // what --candidates names ("H200", "RTX4090"), case-insensitive
  const char* name;  // "NVIDIA H200 SXM 141GB"
  // Lower-case fragments of the NVML name that identify the model ("h200"; "h100 pcie").
  const char* nvml_match;
  double memory_gb = 0;               // 1e9 bytes
  double bf16_dense_tflops = 0;       // dense (no sparsity), FP32 accumulate
  double hbm_gbps = 0;                // device memory bandwidth
  LinkClass link = LinkClass::kPcie;  // how two of them join in a box made for them
  double link_gbps = 0;               // per GPU, per direction
  const char* link_what;              // "NVLink 4, 18 links, through NVSwitch"
  bool peer_over_pcie = true;         // false: GeForce, the driver offers no P2P over PCIe
  const char* source;                 // the data sheet (URL)
  bool verify = false;                // a figure we could not read on NVIDIA's own page
};

// Every model, in table order. Static data.
std::span<const GpuModelSpec> gpu_catalog();
// By id (case-insensitive, "-" and spaces ignored) or by an NVML name ("NVIDIA H200").
const GpuModelSpec* find_gpu_model(std::string_view id_or_name);

// The all-reduce figures the catalog gives a link class when nothing was measured:
// busbw = link_gbps × kRingBusbwFraction (NVLink, PCIe with P2P) or × kSysBusbwFraction (SYS,
// or GeForce cards that go through host memory); α per ring step from published small-message
// times. Sources in the .cc and docs/advise.md.
inline constexpr double kRingBusbwFraction = 0.8;
inline constexpr double kSysBusbwFraction = 0.45;
inline constexpr double kNvlinkAlphaUs = 2.0;
inline constexpr double kPcieAlphaUs = 3.0;
// Theoretical per-direction bandwidth of a PCIe x16 link (after line encoding), by generation.
double pcie_x16_gbps(int gen);

// ---------------------------------------------------------------- all-reduce: α–β

// One size of an all-reduce sweep: time per operation on `ranks` GPUs.
struct AllReduceSample {
  double size_bytes = 0;
  double time_us = 0;
  int ranks = 0;
};

// t(S) = 2(N−1)·α + 2(N−1)/N · S / busbw: the ring all-reduce of S bytes on N GPUs.
struct AlphaBeta {
  double alpha_us = 0;      // per ring step
  double busbw_gbps = 0;    // nccl-tests' bus bandwidth
  int ranks = 0;            // GPUs of the sweep it was fitted on (0: catalog figures)
  int points = 0;           // sizes it was fitted on
  double max_residual = 0;  // worst |t − fit| / t over the sweep
  bool measured = false;
  std::string source;  // "fitted on bench.json: 4 sizes, 2 GPUs", "catalog: NVLink …"
};

// Time of one all-reduce of `bytes` on `n` GPUs, in µs (0 for n < 2).
double ring_allreduce_us(const AlphaBeta& ab, int n, double bytes);

// The all-reduce rows of a bench or nccl-tests sweep (tests "all_reduce" / "all_reduce_perf",
// in-place rows and rows with wrong data left out): size, time, and the GPU count worked out
// from busbw / algbw = 2(N−1)/N. kInvalidInput when there is none.
Result<std::vector<AllReduceSample>> allreduce_sweep(const std::vector<Measurement>& measurements);

// Least squares of t = a + b·S with relative errors (each point weighted by 1/t², so 8 B and
// 512 MiB count alike), then α = a / 2(N−1) and busbw = 2(N−1)/N / b. Refused (kInvalidInput)
// with fewer than 2 distinct sizes, one GPU, mixed GPU counts, or a fit whose slope is not
// positive.
Result<AlphaBeta> fit_alpha_beta(const std::vector<AllReduceSample>& sweep, std::string origin);

// ---------------------------------------------------------------- what the node measured

// What `gpuvet scale --json` measured that the model uses.
struct ScaleEvidence {
  std::string origin;
  std::optional<double> gemm_tflops;  // best achieved_tflops of a 1-GPU training run
  std::optional<std::string> gemm_preset;
  std::optional<double> peak_tflops;  // the dense bf16 GEMM rate scale measured (peak_method)
  std::optional<double> overlap;      // 1 − exposed_comm / comm of a training run on N > 1
  std::optional<int> overlap_gpus;
  // p99 / p50 of the measured steps or requests, per configuration (inference runs first).
  struct Spread {
    std::string workload;  // "infer" or "train"
    std::string preset;
    int gpus = 1;
    double p99_over_p50 = 1;
  };
  std::vector<Spread> spreads;
  std::vector<std::string> notes;
};

// Reads a gpuvet.scale/1 document; another schema, no results or nothing usable is
// kInvalidInput naming `origin`.
Result<ScaleEvidence> scale_evidence_json(std::string_view json_text, std::string_view origin);
Result<ScaleEvidence> read_scale_evidence_file(const std::string& path);

// "This node": its facts (and the diagnosis of them), all-reduce measurements, scale runs.
struct NodeEvidence {
  std::string origin;  // "live", or the --node path
  Facts facts;
  Diagnosis diagnosis;
  std::vector<Measurement> bench;  // gpuvet bench or nccl-tests measurements
  std::string bench_origin;
  std::optional<ScaleEvidence> scale;
};

// ---------------------------------------------------------------- the model

struct CandidateSpec {
  int count = 1;
  std::string gpu;  // "this" or a catalog id
};
// "2xthis,1xH200,2xRTX4090" ("x" or "×"; a bare "H200" is one). Counts 1 to 64.
Result<std::vector<CandidateSpec>> parse_candidates(std::string_view text);

struct AdviseOptions {
  double headroom = 0.2;    // share of GPU memory kept free (CUDA context, allocator, workspace)
  double efficiency = 0.5;  // share of the reference compute rate a whole model step reaches
  std::optional<double> overlap;  // share of the gradient all-reduce hidden under compute
  std::optional<LinkClass> link;  // how added GPUs of this node would connect
  double bucket_mib = 25;         // DDP gradient bucket
  // The catalog model of this node's GPUs when its facts do not name them (an imported host
  // capture, a diagnose JSON of a node without a driver): "H100", "L40S".
  std::string this_gpu;
};

// One line of the model: a named value with its unit and how it was computed.
struct Term {
  std::string name;
  double value = 0;
  std::string unit;
  std::string how;  // "2 B × 13.0e9 params", "measured: scale.json llm-7b-layer"
};

struct OptionResult {
  std::string label;  // "2×NVIDIA H200 (this node)"
  CandidateSpec spec;
  int gpus = 1;
  std::string gpu_name;
  bool this_node = false;
  Sharding sharding = Sharding::kNone;  // as modelled (the workload's)
  // Memory, per GPU.
  double capacity_gb = 0;
  double usable_gb = 0;
  std::vector<Term> memory;  // weights, gradients, optimizer, activations, KV cache
  double memory_gb = 0;
  bool fits = false;
  // Time.
  std::vector<Term> time;            // compute, all-reduce, exposed, step / per-token, latency
  std::optional<double> step_ms;     // train: one step; infer: one request at p50
  std::optional<double> throughput;  // tokens per second, all GPUs
  std::optional<double> efficiency;  // throughput(N) / (N × throughput(1)) of this GPU
  std::optional<double> comm_share;  // exposed communication / step
  std::optional<double> p99_ms;      // infer: per request
  std::optional<int> useful_gpus;    // capped by the host's limits
  std::string link;                  // "SYS (this node: GPU0-GPU1)", "NVLink (catalog)"
  bool crosses_sys = false;
  bool compute_measured = false;
  bool comm_measured = false;
};

enum class Recommendation {
  kOneBiggerGpu,
  kAddGpuDataParallel,
  kAddGpuIndependentJobs,
  kModelParallelRequired,
  kFixHostFirst,
  kCheckTopologyFirst,
  kDoesNotFit,
};
const char* recommendation_name(Recommendation r);  // "one-bigger-gpu", …

struct AdviseInput {
  Workload workload;
  std::vector<CandidateSpec> candidates;
  std::optional<NodeEvidence> node;
  AdviseOptions options;
};

struct AdviseReport {
  Workload workload;
  AdviseOptions options;
  std::vector<OptionResult> candidates;  // in the order given
  Recommendation recommendation = Recommendation::kDoesNotFit;
  std::string summary;                    // one sentence
  std::vector<std::string> deciding;      // the two or three numbers that decide it
  std::vector<std::string> would_change;  // what would change the answer
  std::vector<std::string> host_limits;   // diagnose findings that cap the useful GPU count
  std::optional<AlphaBeta> fit;           // from the node's own sweep
  std::vector<std::string> assumptions;   // every stated default the numbers rest on
  std::vector<std::string> notes;
  std::string node_origin;  // "" without a node
};

// The memory of one GPU for `w` on `n` GPUs under the workload's sharding, in bytes, term by
// term (the ZeRO paper's accounting: mixed-precision Adam keeps 2 + 2 + 12 bytes per param).
struct MemoryEstimate {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  double kv_cache = 0;
  double total() const { return weights + gradients + optimizer + activations + kv_cache; }
};
MemoryEstimate estimate_memory(const Workload& w, int n, Sharding sharding);

// The whole calculation. kInvalidInput for an impossible workload, an unknown GPU model, a
// "this" candidate without a node (or whose GPU is neither in the catalog nor measured), a
// sweep that cannot be fitted.
Result<AdviseReport> advise(const AdviseInput& input);

}  // namespace gpuvet
