// `gpuvet advise` for people (every term of every candidate, the recommendation first) and for
// programs (gpuvet.advise/1, docs/advise.md).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>

#include "gpuvet/advise.h"
#include "gpuvet/advise_report.h"
#include "report/json_document.h"
#include "report/terminal_text.h"

namespace gpuvet {
namespace {

using json = nlohmann::ordered_json;

using report::opt;

std::string num(double v) {
  const double a = v < 0 ? -v : v;
  if (a == 0) return "0";
  if (a >= 1000) return fmt::format("{:.0f}", v);
  if (a >= 100) return fmt::format("{:.1f}", v);
  if (a >= 1) return fmt::format("{:.2f}", v);
  if (a >= 0.01) return fmt::format("{:.3f}", v);
  return fmt::format("{:.2g}", v);
}

std::string workload_line(const Workload& w) {
  std::string mode = advise_mode_name(w.mode);
  if (w.mode == AdviseMode::kJobs) mode += fmt::format(" (each job: {})", advise_mode_name(w.job));
  const double p = w.model.params;
  std::string s = p >= 1e9   ? fmt::format("{}, {:g}e9 params", mode, p / 1e9)
                  : p >= 1e6 ? fmt::format("{}, {:g}e6 params", mode, p / 1e6)
                             : fmt::format("{}, {:g} params", mode, p);
  if (w.model.layers) s += fmt::format(", {} layers", w.model.layers);
  if (w.model.hidden) s += fmt::format(", hidden {}", w.model.hidden);
  if (w.model.attention_heads)
    s += fmt::format(", {} heads ({} KV, dim {})", w.model.attention_heads,
                     workload_kv_heads(w.model), workload_head_dim(w.model));
  s += fmt::format(", {}", precision_name(w.precision));
  const bool train =
      w.mode == AdviseMode::kTrain || (w.mode == AdviseMode::kJobs && w.job == AdviseMode::kTrain);
  if (train) s += fmt::format(", {}", optimizer_name(w.optimizer));
  if (w.mode != AdviseMode::kJobs) s += fmt::format(", sharding {}", sharding_name(w.sharding));
  s += fmt::format(", batch {} × {} tokens per GPU", w.batch_per_gpu, w.seq_len);
  if (!train) s += fmt::format(", {} tokens out per request", w.output_tokens);
  if (train) s += w.activation_checkpointing ? ", checkpointing on" : ", checkpointing off";
  if (w.latency_p99_ms) s += fmt::format(", p99 target {} ms", num(*w.latency_p99_ms));
  if (w.throughput_target)
    s += fmt::format(", throughput target {} tokens/s", num(*w.throughput_target));
  return s;
}

json terms_json(const std::vector<Term>& terms) {
  json a = json::array();
  for (const auto& t : terms)
    a.push_back({{"name", t.name}, {"value", t.value}, {"unit", t.unit}, {"how", t.how}});
  return a;
}

}  // namespace

std::string render_advise_text(const AdviseReport& r) {
  report::TerminalText out;
  out << "gpuvet advise: " << workload_line(r.workload) << "\n";
  if (!r.node_origin.empty()) out << "This node: " << r.node_origin << "\n";
  if (r.fit)
    out << fmt::format("All-reduce fit: α {} µs, busbw {} GB/s ({}; worst residual {:.0f} %)\n",
                       num(r.fit->alpha_us), num(r.fit->busbw_gbps), r.fit->source,
                       r.fit->max_residual * 100);
  out << "\nRecommendation: " << recommendation_name(r.recommendation) << "\n";
  out << "  " << r.summary << "\n";
  if (!r.deciding.empty()) {
    out << "Deciding numbers:\n";
    for (const auto& d : r.deciding) out << "  - " << d << "\n";
  }
  if (!r.would_change.empty()) {
    out << "What would change the answer:\n";
    for (const auto& d : r.would_change) out << "  - " << d << "\n";
  }
  if (!r.host_limits.empty()) {
    out << "Host limits (from diagnose):\n";
    for (const auto& d : r.host_limits) out << "  - " << d << "\n";
  }
  out << "\nCandidates\n";
  for (const auto& o : r.candidates) {
    out << "\n" << o.label << "  [" << (o.fits ? "fits" : "DOES NOT FIT");
    if (o.gpus >= 2) out << ", link " << o.link;
    out << "]\n";
    out << fmt::format("  memory per GPU: {:.1f} GB of {:.1f} GB usable ({:.1f} GB; {})\n",
                       o.memory_gb, o.usable_gb, o.capacity_gb,
                       o.this_node ? "this node" : "catalog");
    for (const auto& t : o.memory)
      out << fmt::format("    {:<18} {:>9} {:<3} {}\n", t.name, num(t.value), t.unit, t.how);
    out << "  time:\n";
    for (const auto& t : o.time)
      out << fmt::format("    {:<28} {:>9} {:<8} {}\n", t.name, num(t.value), t.unit, t.how);
    std::string tail;
    if (o.efficiency) tail += fmt::format("efficiency {}", num(*o.efficiency));
    if (o.comm_share)
      tail += fmt::format("{}communication {:.0f} % of the {}", tail.empty() ? "" : ", ",
                          *o.comm_share * 100,
                          r.workload.mode == AdviseMode::kInfer ? "request" : "step");
    if (o.useful_gpus && *o.useful_gpus < o.gpus)
      tail +=
          fmt::format("{}useful GPUs {} (host limits)", tail.empty() ? "" : ", ", *o.useful_gpus);
    if (!tail.empty()) out << "  " << tail << "\n";
  }
  if (!r.assumptions.empty()) {
    out << "\nAssumptions:\n";
    for (const auto& a : r.assumptions) out << "  - " << a << "\n";
  }
  if (!r.notes.empty()) {
    out << "Notes:\n";
    for (const auto& n : r.notes) out << "  - " << n << "\n";
  }
  return out.str();
}

std::string advise_to_json(const AdviseReport& r, int indent) {
  const Workload& w = r.workload;
  json workload = {
      {"mode", advise_mode_name(w.mode)},
      {"job", w.mode == AdviseMode::kJobs ? json(advise_mode_name(w.job)) : json(nullptr)},
      {"params", w.model.params},
      {"layers", w.model.layers},
      {"hidden", w.model.hidden},
      {"attention_heads", w.model.attention_heads},
      {"kv_heads", workload_kv_heads(w.model)},
      {"head_dim", workload_head_dim(w.model)},
      {"precision", precision_name(w.precision)},
      {"optimizer", optimizer_name(w.optimizer)},
      {"sharding", sharding_name(w.sharding)},
      {"batch_per_gpu", w.batch_per_gpu},
      {"seq_len", w.seq_len},
      {"output_tokens", w.output_tokens},
      {"micro_batches", w.micro_batches},
      {"activation_checkpointing", w.activation_checkpointing},
      {"latency_p99_ms", opt(w.latency_p99_ms)},
      {"throughput_target", opt(w.throughput_target)}};
  const AdviseOptions& o = r.options;
  json options = {{"headroom", o.headroom},
                  {"efficiency", o.efficiency},
                  {"overlap", opt(o.overlap)},
                  {"link", o.link ? json(link_class_name(*o.link)) : json(nullptr)},
                  {"bucket_mib", o.bucket_mib},
                  {"this_gpu", o.this_gpu.empty() ? json(nullptr) : json(o.this_gpu)}};
  json fit = nullptr;
  if (r.fit)
    fit = {{"alpha_us", r.fit->alpha_us},
           {"busbw_gbps", r.fit->busbw_gbps},
           {"ranks", r.fit->ranks},
           {"points", r.fit->points},
           {"max_residual", r.fit->max_residual},
           {"source", r.fit->source}};
  json candidates = json::array();
  for (const auto& c : r.candidates)
    candidates.push_back({{"label", c.label},
                          {"count", c.gpus},
                          {"gpu", c.spec.gpu},
                          {"gpu_name", c.gpu_name},
                          {"this_node", c.this_node},
                          {"sharding", sharding_name(c.sharding)},
                          {"link", c.gpus >= 2 ? json(c.link) : json(nullptr)},
                          {"crosses_sys", c.crosses_sys},
                          {"capacity_gb", c.capacity_gb},
                          {"usable_gb", c.usable_gb},
                          {"memory_gb", c.memory_gb},
                          {"fits", c.fits},
                          {"memory", terms_json(c.memory)},
                          {"time", terms_json(c.time)},
                          {"step_ms", opt(c.step_ms)},
                          {"throughput_tokens_s", opt(c.throughput)},
                          {"efficiency", opt(c.efficiency)},
                          {"comm_share", opt(c.comm_share)},
                          {"p99_ms", opt(c.p99_ms)},
                          {"useful_gpus", opt(c.useful_gpus)},
                          {"compute_measured", c.compute_measured},
                          {"comm_measured", c.comm_measured}});
  json doc = {{"schema", "gpuvet.advise/1"},
              {"tool", {{"name", "gpuvet"}, {"version", GPUVET_VERSION}, {"command", "advise"}}},
              {"workload", workload},
              {"node", r.node_origin.empty() ? json(nullptr) : json(r.node_origin)},
              {"options", options},
              {"allreduce_fit", fit},
              {"recommendation", recommendation_name(r.recommendation)},
              {"summary", r.summary},
              {"deciding", r.deciding},
              {"would_change", r.would_change},
              {"host_limits", r.host_limits},
              {"candidates", candidates},
              {"assumptions", r.assumptions},
              {"notes", r.notes}};
  return report::dump_document(doc, indent);
}

}  // namespace gpuvet
