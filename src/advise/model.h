// advise/model.h — the pieces of `gpuvet advise`'s calculation shared by its files: byte
// counts, number formats, what one GPU of a candidate is and how its GPUs talk, and the
// evaluation of one candidate. Internal to src/advise; pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuvet/advise.h"

namespace gpuvet::advisor {

inline constexpr double kGB = 1e9;
// scaling-inefficient's default (Thresholds::scaling_efficiency): under it, the communication
// is no longer cheap.
inline constexpr double kEfficientScaling = 0.8;
// "Heavy sync" over a SYS path: the exposed all-reduce takes at least this share of the step.
inline constexpr double kHeavySyncShare = 0.25;
inline constexpr double kDefaultOverlap = 0.5;

struct StateBytes {
  double weights = 0, gradients = 0, optimizer = 0;
};

std::string gb(double bytes);               // "13.0 GB"
std::string bytes_text(double bytes);       // "26.2 MB", "8.2 kB", "13.0 GB"
std::string fixed(double v, int decimals);  // "12.5"
std::string percent(double fraction);       // "41 %"
std::string params_text(double params);     // "13e9"
bool trains(const Workload& w);
StateBytes state_bytes(const Workload& w);
double activation_bytes(Precision p);
double kv_bytes(Precision p);
double kv_bytes_per_token(const Workload& w);

std::vector<Term> memory_terms(const Workload& w, int n, Sharding sharding,
                               const MemoryEstimate& m);

// One GPU of a candidate: what it holds and how fast it computes and reads memory.
struct GpuBasis {
  std::string name;
  const GpuModelSpec* spec = nullptr;  // catalog row, when known
  bool this_node = false;
  double capacity_gb = 0;
  std::string capacity_how;
  double tflops = 0;  // the reference rate (before the model efficiency)
  std::string tflops_how;
  bool tflops_measured = false;
  std::optional<double> hbm_gbps;
  std::string hbm_how;
};

// How the GPUs of a candidate talk.
struct LinkBasis {
  AlphaBeta ab;
  std::string what;  // for people
  bool crosses_sys = false;
  bool nvlink = false;
};

// Everything the candidates share: the workload, the options, what the node measured.
struct Context {
  const Workload* workload = nullptr;
  const AdviseOptions* options = nullptr;
  const NodeEvidence* node = nullptr;
  std::optional<AlphaBeta> fit;      // from the node's sweep
  double overlap = kDefaultOverlap;  // share of the gradient all-reduce hidden
  std::string overlap_how;
  double catalog_calibration = 1;  // measured / data sheet of this node's GPU
  std::string calibration_how;
};

Result<GpuBasis> gpu_basis(const Context& c, const CandidateSpec& spec);
// The catalog figures of a link class for GPUs like `gpu` (added GPUs, a catalog model, the
// "what would change" comparisons); `facts` gives the PCIe generation when known. `origin`
// names where the class came from, for people.
LinkBasis class_link(LinkClass cls, const GpuBasis& gpu, const Facts* facts, std::string origin);
LinkBasis link_basis(const Context& c, const CandidateSpec& spec, const GpuBasis& gpu);
// The candidate under `sharding` (the workload's, or another for "what would change").
OptionResult evaluate(const Context& c, const CandidateSpec& spec, const GpuBasis& gpu,
                      const LinkBasis& link, Sharding sharding);
// The spread measured for a candidate of `gpus` GPUs: the same count if measured, else the
// nearest below, else the smallest.
std::optional<ScaleEvidence::Spread> spread_for(const Context& c, int gpus);

}  // namespace gpuvet::advisor
