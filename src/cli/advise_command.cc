// `gpuvet advise`: "a second GPU, or one bigger GPU?" — the workload from the command line or a
// TOML file, this node from its saved facts (or a live collection), bench and scale JSON, the
// candidates from the catalog; the calculation in src/advise, the rendering in src/report.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "gpuvet/advise.h"
#include "gpuvet/advise_report.h"
#include "gpuvet/bench.h"
#include "gpuvet/collect.h"
#include "gpuvet/diagnose.h"
#include "gpuvet/report.h"
#include "live.h"

namespace gpuvet::cli {

namespace {

struct AdviseArgs {
  LiveArgs live;  // probe options for a live "this node"; --json, --no-color
  std::string workload_file;
  std::string mode, job, model, params, precision, optimizer, sharding;
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int batch = 1, seq = 2048, output_tokens = 256, micro_batches = 8;
  bool checkpointing = false;
  double latency_p99_ms = 0, throughput = 0;
  std::string candidates;
  std::string node, bench;
  std::vector<std::string> scale;
  std::string this_gpu, link;
  double headroom = 0.2, efficiency = 0.5, overlap = 0, bucket_mib = 25;
  bool catalog = false;
};

// "13e9", "13B", "6.7b", "350M", "1.5T": a parameter count.
Result<double> parse_count(const std::string& text) {
  if (text.empty()) return Status::invalid_input("--params: empty");
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (...) {
    return Status::invalid_input(fmt::format("--params '{}' is not a number", text));
  }
  std::string suffix = text.substr(used);
  double scale = 1;
  if (suffix.size() == 1) {
    switch (std::tolower(static_cast<unsigned char>(suffix[0]))) {
      case 'k':
        scale = 1e3;
        break;
      case 'm':
        scale = 1e6;
        break;
      case 'b':
        scale = 1e9;
        break;
      case 't':
        scale = 1e12;
        break;
      default:
        return Status::invalid_input(fmt::format("--params '{}': unknown suffix", text));
    }
  } else if (!suffix.empty()) {
    return Status::invalid_input(fmt::format("--params '{}' is not a number", text));
  }
  v *= scale;
  if (!std::isfinite(v))
    return Status::invalid_input(fmt::format("--params '{}' is not finite", text));
  return v;
}

Result<Workload> workload_from(const AdviseArgs& a, const CLI::App& app, std::string& candidates) {
  Workload w;
  const auto given = [&](const char* name) { return app.count(name) > 0; };
  if (!a.workload_file.empty()) {
    std::string file_candidates;
    auto f = load_workload_file(a.workload_file, &file_candidates);
    if (!f.is_ok()) return f.status();
    w = f.value();
    if (candidates.empty()) candidates = file_candidates;
  }
  if (given("--model")) {
    const ModelPreset* p = find_model_preset(a.model);
    if (!p) {
      std::string names;
      for (const auto& m : model_presets())
        names += (names.empty() ? "" : ", ") + std::string(m.name);
      return Status::invalid_input(
          fmt::format("--model '{}' is not a preset ({}); give --params, --layers, --hidden, "
                      "--heads instead",
                      a.model, names));
    }
    w.model = p->shape;
  }
  const auto named = [&](const char* flag, const std::string& value, auto parse,
                         auto& field) -> Status {
    if (!given(flag)) return Status::ok();
    auto v = parse(value);
    if (!v.is_ok()) return v.status();
    field = v.value();
    return Status::ok();
  };
  if (Status s = named("--mode", a.mode, parse_advise_mode, w.mode); !s.is_ok()) return s;
  if (Status s = named("--job", a.job, parse_advise_mode, w.job); !s.is_ok()) return s;
  if (Status s = named("--precision", a.precision, parse_precision, w.precision); !s.is_ok())
    return s;
  if (Status s = named("--optimizer", a.optimizer, parse_optimizer, w.optimizer); !s.is_ok())
    return s;
  if (Status s = named("--sharding", a.sharding, parse_sharding, w.sharding); !s.is_ok()) return s;
  if (Status s = named("--params", a.params, parse_count, w.model.params); !s.is_ok()) return s;
  if (given("--layers")) w.model.layers = a.layers;
  if (given("--hidden")) w.model.hidden = a.hidden;
  if (given("--heads")) w.model.attention_heads = a.heads;
  if (given("--kv-heads")) w.model.kv_heads = a.kv_heads;
  if (given("--head-dim")) w.model.head_dim = a.head_dim;
  if (given("--batch-per-gpu")) w.batch_per_gpu = a.batch;
  if (given("--seq-len")) w.seq_len = a.seq;
  if (given("--output-tokens")) w.output_tokens = a.output_tokens;
  if (given("--micro-batches")) w.micro_batches = a.micro_batches;
  if (given("--checkpointing")) w.activation_checkpointing = a.checkpointing;
  if (given("--latency-p99-ms")) w.latency_p99_ms = a.latency_p99_ms;
  if (given("--throughput")) w.throughput_target = a.throughput;
  if (Status s = validate_workload(w); !s.is_ok()) return s;
  return w;
}

// --bench FILE: a gpuvet bench --json document, or a saved nccl-tests all_reduce_perf log.
Result<std::vector<Measurement>> read_bench(const std::string& path) {
  auto json = read_bench_json_file(path);
  if (json.is_ok()) return json;
  auto imported = import_from(path);
  if (imported.is_ok())
    for (const auto& m : imported.value().measurements)
      if (m.test == "all_reduce_perf") return imported.value().measurements;
  return json.status();
}

Result<NodeEvidence> read_this_node(const AdviseArgs& a, bool& abandoned) {
  NodeEvidence n;
  if (!a.node.empty()) {
    auto imported = import_from(a.node);
    if (!imported.is_ok()) return imported.status();
    if (!any_recognised(imported.value()))
      return Status::invalid_input(fmt::format(
          "nothing in {} is a supported output (a diagnose or facts JSON, a capture; gpuvet "
          "formats lists them)",
          a.node));
    n.facts = std::move(imported.value());
    n.origin = a.node;
  } else {
    const CollectOptions o = collect_options(a.live);
    const SystemEnv env(o.root);
    Collection c = collect_facts(o, env);
    abandoned = c.abandoned_probes;
    if (nvml_library_unusable(c, o)) return Status::invalid_input(c.nvml_failure_message);
    n.facts = std::move(c.facts);
    n.origin = fmt::format("live on {}", n.facts.host.hostname.value_or("this node"));
  }
  n.diagnosis = diagnose(n.facts);
  if (!a.bench.empty()) {
    auto m = read_bench(a.bench);
    if (!m.is_ok()) return m.status();
    n.bench = std::move(m.value());
    n.bench_origin = a.bench;
  }
  // Several scale runs (one preset each, as scale --preset writes them) make one evidence: the
  // best 1-GPU GEMM rate, the overlap of the largest multi-GPU run, every spread.
  for (const auto& path : a.scale) {
    auto s = read_scale_evidence_file(path);
    if (!s.is_ok()) return s.status();
    if (!n.scale) {
      n.scale = std::move(s.value());
      continue;
    }
    ScaleEvidence& into = *n.scale;
    const ScaleEvidence& add = s.value();
    if (add.gemm_tflops && *add.gemm_tflops > into.gemm_tflops.value_or(0)) {
      into.gemm_tflops = add.gemm_tflops;
      into.gemm_preset = add.gemm_preset;
      into.origin = add.origin;
    }
    if (add.peak_tflops && *add.peak_tflops > into.peak_tflops.value_or(0))
      into.peak_tflops = add.peak_tflops;
    if (add.overlap && add.overlap_gpus.value_or(0) >= into.overlap_gpus.value_or(0)) {
      into.overlap = add.overlap;
      into.overlap_gpus = add.overlap_gpus;
    }
    into.spreads.insert(into.spreads.end(), add.spreads.begin(), add.spreads.end());
    std::stable_sort(into.spreads.begin(), into.spreads.end(), [](const auto& x, const auto& y) {
      return (x.workload == "infer") > (y.workload == "infer");
    });
  }
  return n;
}

std::string catalog_text() {
  std::string out =
      "| id | model | memory GB | bf16 dense TFLOP/s | memory GB/s | link | per direction GB/s | "
      "source |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& g : gpu_catalog())
    out += fmt::format("| `{}` | {} | {:g} | {:g} | {:g} | {} | {:g} | {}{} |\n", g.id, g.name,
                       g.memory_gb, g.bf16_dense_tflops, g.hbm_gbps, g.link_what, g.link_gbps,
                       g.source, g.verify ? " (verify)" : "");
  return out;
}

}  // namespace

std::function<Outcome()> setup_advise(CLI::App& app) {
  auto a = std::make_shared<AdviseArgs>();
  CLI::App* self = &app;
  app.add_flag("--json", a->live.json, "Print JSON (schema gpuvet.advise/1, docs/advise.md)");
  app.add_flag("--catalog", a->catalog,
               "Print the GPU catalog (Markdown: id, memory, bf16 TFLOP/s, memory bandwidth, link, "
               "source) and exit");
  app.add_option("--workload", a->workload_file,
                 "TOML file with a [workload] table (docs/advise.md); flags override it");
  app.add_option("--mode", a->mode, "train, infer, or jobs (many independent jobs)");
  app.add_option("--job", a->job, "jobs mode: what each job does, train or infer (default infer)");
  app.add_option("--model", a->model,
                 "A preset shape: llama2-7b, llama2-13b, llama3-8b, llama3-70b");
  app.add_option("--params", a->params, "Parameters: 13e9, 13B, 350M");
  app.add_option("--layers", a->layers, "Transformer layers");
  app.add_option("--hidden", a->hidden, "Hidden size (d_model)");
  app.add_option("--heads", a->heads, "Attention heads");
  app.add_option("--kv-heads", a->kv_heads, "KV heads (grouped-query attention; default: heads)");
  app.add_option("--head-dim", a->head_dim, "Head dimension (default: hidden / heads)");
  app.add_option("--precision", a->precision, "fp32, bf16, fp16, fp8, int8, int4 (default bf16)");
  app.add_option("--optimizer", a->optimizer, "adam or sgd (default adam)");
  app.add_option("--sharding", a->sharding,
                 "none (DDP), zero1, zero2, zero3 (FSDP), tensor, pipeline (default none)");
  app.add_option("--batch-per-gpu", a->batch,
                 "Train: sequences per GPU per step; infer: concurrent sequences (default 1)");
  app.add_option("--seq-len", a->seq,
                 "Tokens per sequence (infer: prompt and context; default 2048)");
  app.add_option("--output-tokens", a->output_tokens,
                 "Infer: tokens generated per request (default 256)");
  app.add_option("--micro-batches", a->micro_batches,
                 "Pipeline: micro-batches per step (default 8)");
  app.add_flag("--checkpointing", a->checkpointing, "Train with activation checkpointing");
  app.add_option("--latency-p99-ms", a->latency_p99_ms,
                 "Infer: p99 latency target per request (ms)");
  app.add_option("--throughput", a->throughput, "Throughput target (tokens/s, all GPUs)");
  app.add_option("--candidates", a->candidates,
                 "What to compare: 2xthis (this box with a second GPU), 1xH200, 2xRTX4090, … "
                 "(default 2xthis; --catalog lists the models)");
  app.add_option("--node", a->node,
                 "This node, saved: its diagnose or facts JSON (or a capture). Without it, and "
                 "with a 'this' candidate, this machine is collected live");
  app.add_option("--bench", a->bench,
                 "This node's all-reduce size sweep: gpuvet bench --json (--only all_reduce, 2+ "
                 "GPUs) or an nccl-tests all_reduce_perf log; α and busbw are fitted from it");
  app.add_option("--scale", a->scale,
                 "This node's gpuvet scale --json (repeat for several runs): measured TFLOP/s, "
                 "overlap, p99/p50");
  app.add_option("--this-gpu", a->this_gpu,
                 "The catalog model of this node's GPUs when its facts do not name them");
  app.add_option("--link", a->link,
                 "How GPUs added to this node would connect: nvlink, pcie, sys (default: as its "
                 "GPUs are now, else the catalog's)");
  app.add_option("--headroom", a->headroom, "Share of GPU memory kept free (default 0.2)")
      ->check(finite_range(0.0, 0.95));
  app.add_option("--efficiency", a->efficiency,
                 "Share of the reference TFLOP/s a whole model step reaches (default 0.5)")
      ->check(finite_range(0.01, 1.0));
  app.add_option("--overlap", a->overlap,
                 "Share of the gradient all-reduce hidden under compute (default: measured by "
                 "--scale, else 0.5)")
      ->check(finite_range(0.0, 1.0));
  app.add_option("--bucket-mib", a->bucket_mib, "DDP gradient bucket (MiB, default 25)")
      ->check(finite_range(0.01, 1e6));
  // Host limits cap the answer, so a live collection samples the host for a second, not
  // diagnose's 0.05 s, where one busy moment of one core reads as cpu-saturated.
  a->live.sample_window_s = 1.0;
  add_probe_options(app, a->live);
  return [a, self]() -> Outcome {
    if (a->catalog) {
      std::cout << catalog_text();
      return {kExitOk, false};
    }
    const auto fail = [](const std::string& message) -> Outcome {
      std::cerr << "gpuvet: " << terminal_safe(message) << "\n";
      return {kExitUnusable, false};
    };
    AdviseInput input;
    std::string candidates = a->candidates;
    auto w = workload_from(*a, *self, candidates);
    if (!w.is_ok()) return fail(w.status().message());
    input.workload = w.value();
    if (!candidates.empty()) {
      auto c = parse_candidates(candidates);
      if (!c.is_ok()) return fail(c.status().message());
      input.candidates = c.value();
    }
    input.options.headroom = a->headroom;
    input.options.efficiency = a->efficiency;
    if (self->count("--overlap")) input.options.overlap = a->overlap;
    input.options.bucket_mib = a->bucket_mib;
    input.options.this_gpu = a->this_gpu;
    if (!a->link.empty()) {
      auto l = parse_link_class(a->link);
      if (!l.is_ok()) return fail(l.status().message());
      input.options.link = l.value();
    }
    bool wants_this = input.candidates.empty();
    for (const auto& c : input.candidates) wants_this = wants_this || c.gpu == "this";
    bool abandoned = false;
    if (wants_this || !a->node.empty() || !a->bench.empty() || !a->scale.empty()) {
      auto node = read_this_node(*a, abandoned);
      if (!node.is_ok()) return fail(node.status().message());
      input.node = std::move(node.value());
    }
    auto report = advise(input);
    if (!report.is_ok()) {
      Outcome o = fail(report.status().message());
      o.abandoned_probes = abandoned;
      return o;
    }
    if (a->live.json)
      std::cout << advise_to_json(report.value()) << "\n";
    else
      std::cout << render_advise_text(report.value());
    return {kExitOk, abandoned};
  };
}

}  // namespace gpuvet::cli
