// The workload of `gpuvet advise`: names, presets, the checks of impossible numbers, the TOML
// file and the candidate list.

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "core/small_file.h"
#include "core/toml_document.h"
#include "gpuvet/advise.h"

namespace gpuvet {
namespace {

std::string lower(std::string_view s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Shapes from each model's config.json on Hugging Face (num_hidden_layers, hidden_size,
// num_attention_heads, num_key_value_heads); parameter counts from the model cards.
const ModelPreset kPresets[] = {
    {"llama2-7b",
     {6.74e9, 32, 4096, 32, 32, 128},
     "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json"},
    {"llama2-13b",
     {13.0e9, 40, 5120, 40, 40, 128},
     "https://huggingface.co/meta-llama/Llama-2-13b-hf/blob/main/config.json"},
    {"llama3-8b",
     {8.03e9, 32, 4096, 32, 8, 128},
     "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json"},
    {"llama3-70b",
     {70.6e9, 80, 8192, 64, 8, 128},
     "https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json"},
};

constexpr std::size_t kMaxWorkloadBytes = std::size_t{1} << 20;

}  // namespace

const char* advise_mode_name(AdviseMode m) {
  switch (m) {
    case AdviseMode::kTrain:
      return "train";
    case AdviseMode::kInfer:
      return "infer";
    case AdviseMode::kJobs:
      return "jobs";
  }
  return "?";
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kFp8:
      return "fp8";
    case Precision::kInt8:
      return "int8";
    case Precision::kInt4:
      return "int4";
  }
  return "?";
}

const char* optimizer_name(Optimizer o) { return o == Optimizer::kAdam ? "adam" : "sgd"; }

const char* sharding_name(Sharding s) {
  switch (s) {
    case Sharding::kNone:
      return "none";
    case Sharding::kZero1:
      return "zero1";
    case Sharding::kZero2:
      return "zero2";
    case Sharding::kZero3:
      return "zero3";
    case Sharding::kTensor:
      return "tensor";
    case Sharding::kPipeline:
      return "pipeline";
  }
  return "?";
}

const char* link_class_name(LinkClass c) {
  switch (c) {
    case LinkClass::kNvlink:
      return "nvlink";
    case LinkClass::kPcie:
      return "pcie";
    case LinkClass::kSys:
      return "sys";
  }
  return "?";
}

Result<AdviseMode> parse_advise_mode(std::string_view name) {
  const std::string n = lower(name);
  if (n == "train" || n == "training") return AdviseMode::kTrain;
  if (n == "infer" || n == "inference" || n == "serve") return AdviseMode::kInfer;
  if (n == "jobs" || n == "many-jobs" || n == "independent") return AdviseMode::kJobs;
  return Status::invalid_input(
      fmt::format("mode '{}' is not one of train, infer, jobs (many independent jobs)", name));
}

Result<Precision> parse_precision(std::string_view name) {
  const std::string n = lower(name);
  if (n == "fp32" || n == "float32") return Precision::kFp32;
  if (n == "bf16" || n == "bfloat16") return Precision::kBf16;
  if (n == "fp16" || n == "float16") return Precision::kFp16;
  if (n == "fp8") return Precision::kFp8;
  if (n == "int8") return Precision::kInt8;
  if (n == "int4") return Precision::kInt4;
  return Status::invalid_input(
      fmt::format("precision '{}' is not one of fp32, bf16, fp16, fp8, int8, int4", name));
}

Result<Optimizer> parse_optimizer(std::string_view name) {
  const std::string n = lower(name);
  if (n == "adam" || n == "adamw") return Optimizer::kAdam;
  if (n == "sgd") return Optimizer::kSgd;
  return Status::invalid_input(fmt::format("optimizer '{}' is not one of adam, sgd", name));
}

Result<Sharding> parse_sharding(std::string_view name) {
  const std::string n = lower(name);
  if (n == "none" || n == "ddp" || n == "dp") return Sharding::kNone;
  if (n == "zero1" || n == "zero-1") return Sharding::kZero1;
  if (n == "zero2" || n == "zero-2") return Sharding::kZero2;
  if (n == "zero3" || n == "zero-3" || n == "fsdp") return Sharding::kZero3;
  if (n == "tensor" || n == "tp") return Sharding::kTensor;
  if (n == "pipeline" || n == "pp") return Sharding::kPipeline;
  return Status::invalid_input(
      fmt::format("sharding '{}' is not one of none, zero1, zero2, zero3, tensor, pipeline", name));
}

Result<LinkClass> parse_link_class(std::string_view name) {
  const std::string n = lower(name);
  if (n == "nvlink" || n == "nv") return LinkClass::kNvlink;
  if (n == "pcie" || n == "pix" || n == "pxb" || n == "phb" || n == "node") return LinkClass::kPcie;
  if (n == "sys") return LinkClass::kSys;
  return Status::invalid_input(fmt::format("link '{}' is not one of nvlink, pcie, sys", name));
}

double precision_bytes(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return 4;
    case Precision::kBf16:
    case Precision::kFp16:
      return 2;
    case Precision::kFp8:
    case Precision::kInt8:
      return 1;
    case Precision::kInt4:
      return 0.5;
  }
  return 2;
}

std::span<const ModelPreset> model_presets() { return kPresets; }

const ModelPreset* find_model_preset(std::string_view name) {
  const std::string n = lower(name);
  for (const auto& p : kPresets)
    if (n == p.name) return &p;
  return nullptr;
}

int workload_head_dim(const ModelShape& m) {
  if (m.head_dim > 0) return m.head_dim;
  if (m.attention_heads > 0 && m.hidden > 0) return m.hidden / m.attention_heads;
  return 0;
}

int workload_kv_heads(const ModelShape& m) {
  return m.kv_heads > 0 ? m.kv_heads : m.attention_heads;
}

Status validate_workload(const Workload& w) {
  const ModelShape& m = w.model;
  if (!std::isfinite(m.params) || m.params <= 0)
    return Status::invalid_input(
        "the model needs a positive parameter count (--params 13e9, or --model llama2-13b)");
  if (m.params > 1e15)
    return Status::invalid_input(fmt::format("{:g} parameters is not a model size", m.params));
  if (m.layers < 0 || m.hidden < 0 || m.attention_heads < 0 || m.kv_heads < 0 || m.head_dim < 0)
    return Status::invalid_input("layers, hidden size, heads and head dim cannot be negative");
  if (m.attention_heads > 0 && m.hidden > 0 && m.head_dim == 0 && m.hidden % m.attention_heads)
    return Status::invalid_input(
        fmt::format("hidden size {} is not a multiple of {} attention heads (give --head-dim)",
                    m.hidden, m.attention_heads));
  if (m.kv_heads > 0 && m.attention_heads > 0 && m.kv_heads > m.attention_heads)
    return Status::invalid_input(
        fmt::format("{} KV heads is more than {} attention heads", m.kv_heads, m.attention_heads));
  if (w.batch_per_gpu <= 0) return Status::invalid_input("the batch per GPU must be at least 1");
  if (w.seq_len <= 0) return Status::invalid_input("the sequence length must be at least 1");
  if (w.output_tokens <= 0)
    return Status::invalid_input("the tokens generated per request must be at least 1");
  if (w.micro_batches <= 0)
    return Status::invalid_input("the pipeline micro-batches must be at least 1");
  if (w.latency_p99_ms && !(std::isfinite(*w.latency_p99_ms) && *w.latency_p99_ms > 0))
    return Status::invalid_input("a p99 latency target must be a positive number of milliseconds");
  if (w.throughput_target && !(std::isfinite(*w.throughput_target) && *w.throughput_target > 0))
    return Status::invalid_input("a throughput target must be a positive number of tokens/s");
  const bool trains =
      w.mode == AdviseMode::kTrain || (w.mode == AdviseMode::kJobs && w.job == AdviseMode::kTrain);
  if (trains && (w.precision == Precision::kInt8 || w.precision == Precision::kInt4))
    return Status::invalid_input(
        fmt::format("training in {} is not modelled: weights train in fp32, bf16, fp16 or fp8",
                    precision_name(w.precision)));
  if (w.mode == AdviseMode::kJobs && w.job == AdviseMode::kJobs)
    return Status::invalid_input("an independent job is train or infer");
  const bool infers =
      w.mode == AdviseMode::kInfer || (w.mode == AdviseMode::kJobs && w.job == AdviseMode::kInfer);
  if (infers && (w.sharding == Sharding::kZero1 || w.sharding == Sharding::kZero2))
    return Status::invalid_input(fmt::format(
        "sharding {} shards optimizer state, which inference has none of: use none, tensor or "
        "pipeline",
        sharding_name(w.sharding)));
  if (trains && w.mode == AdviseMode::kTrain && (m.layers == 0 || m.hidden == 0))
    return Status::invalid_input(
        "training needs the model's layers and hidden size for its activations (--layers, "
        "--hidden, or --model)");
  if (infers && (m.layers == 0 || m.hidden == 0 || workload_head_dim(m) == 0))
    return Status::invalid_input(
        "inference needs layers, hidden size and attention heads (or head dim) for the KV "
        "cache and the tensor-parallel all-reduces (or --model)");
  return Status::ok();
}

// ---------------------------------------------------------------- TOML

namespace {

struct TomlReader {
  const toml::table& t;
  const std::string& origin;

  Status number(std::string_view key, double& out) const {
    const toml::node* n = t.get(key);
    if (!n) return Status::ok();
    if (const auto* f = n->as_floating_point())
      out = f->get();
    else if (const auto* i = n->as_integer())
      out = static_cast<double>(i->get());
    else
      return Status::invalid_input(fmt::format("{}: '{}' must be a number", origin, key));
    if (!std::isfinite(out))
      return Status::invalid_input(fmt::format("{}: '{}' must be a finite number", origin, key));
    return Status::ok();
  }
  Status integer(std::string_view key, int& out) const {
    const toml::node* n = t.get(key);
    if (!n) return Status::ok();
    const auto* i = n->as_integer();
    if (!i)
      return Status::invalid_input(fmt::format("{}: '{}' must be a whole number", origin, key));
    if (i->get() < -1'000'000'000 || i->get() > 1'000'000'000)
      return Status::invalid_input(fmt::format("{}: '{}' is out of range", origin, key));
    out = static_cast<int>(i->get());
    return Status::ok();
  }
  Status text(std::string_view key, std::optional<std::string>& out) const {
    const toml::node* n = t.get(key);
    if (!n) return Status::ok();
    const auto* s = n->as_string();
    if (!s) return Status::invalid_input(fmt::format("{}: '{}' must be a string", origin, key));
    out = s->get();
    return Status::ok();
  }
};

constexpr const char* kWorkloadKeys[] = {
    "mode",          "job",           "model",          "params",     "layers",
    "hidden",        "heads",         "kv_heads",       "head_dim",   "precision",
    "optimizer",     "sharding",      "batch_per_gpu",  "seq_len",    "output_tokens",
    "micro_batches", "checkpointing", "latency_p99_ms", "throughput", "candidates"};

}  // namespace

Result<Workload> parse_workload_toml(std::string_view text, const std::string& origin,
                                     std::string* candidates) {
  auto parsed = parse_toml(text, origin);
  if (!parsed.is_ok()) return parsed.status();
  const toml::table& root = parsed.value();
  for (const auto& [key, node] : root)
    if (key.str() != "workload")
      return Status::invalid_input(
          fmt::format("{}: unknown table or key '{}' (expected [workload])", origin, key.str()));
  const toml::table* t = root["workload"].as_table();
  if (!t) return Status::invalid_input(fmt::format("{}: no [workload] table", origin));
  for (const auto& [key, node] : *t) {
    bool known = false;
    for (const char* k : kWorkloadKeys) known = known || key.str() == k;
    if (!known)
      return Status::invalid_input(fmt::format(
          "{}: unknown key '{}' in [workload] (docs/advise.md lists them)", origin, key.str()));
  }
  const TomlReader r{*t, origin};
  Workload w;
  std::optional<std::string> s;
  const auto named = [&](const char* key, auto parse, auto& field) -> Status {
    s.reset();
    if (Status st = r.text(key, s); !st.is_ok()) return st;
    if (!s) return Status::ok();
    auto v = parse(*s);
    if (!v.is_ok()) return Status::invalid_input(origin + ": " + v.status().message());
    field = v.value();
    return Status::ok();
  };
  if (Status st = named("mode", parse_advise_mode, w.mode); !st.is_ok()) return st;
  if (Status st = named("job", parse_advise_mode, w.job); !st.is_ok()) return st;
  if (Status st = named("precision", parse_precision, w.precision); !st.is_ok()) return st;
  if (Status st = named("optimizer", parse_optimizer, w.optimizer); !st.is_ok()) return st;
  if (Status st = named("sharding", parse_sharding, w.sharding); !st.is_ok()) return st;
  s.reset();
  if (Status st = r.text("model", s); !st.is_ok()) return st;
  if (s) {
    const ModelPreset* p = find_model_preset(*s);
    if (!p) return Status::invalid_input(fmt::format("{}: unknown model preset '{}'", origin, *s));
    w.model = p->shape;
  }
  if (Status st = r.number("params", w.model.params); !st.is_ok()) return st;
  if (Status st = r.integer("layers", w.model.layers); !st.is_ok()) return st;
  if (Status st = r.integer("hidden", w.model.hidden); !st.is_ok()) return st;
  if (Status st = r.integer("heads", w.model.attention_heads); !st.is_ok()) return st;
  if (Status st = r.integer("kv_heads", w.model.kv_heads); !st.is_ok()) return st;
  if (Status st = r.integer("head_dim", w.model.head_dim); !st.is_ok()) return st;
  if (Status st = r.integer("batch_per_gpu", w.batch_per_gpu); !st.is_ok()) return st;
  if (Status st = r.integer("seq_len", w.seq_len); !st.is_ok()) return st;
  if (Status st = r.integer("output_tokens", w.output_tokens); !st.is_ok()) return st;
  if (Status st = r.integer("micro_batches", w.micro_batches); !st.is_ok()) return st;
  if (const toml::node* n = t->get("checkpointing")) {
    const auto* b = n->as_boolean();
    if (!b)
      return Status::invalid_input(
          fmt::format("{}: 'checkpointing' must be true or false", origin));
    w.activation_checkpointing = b->get();
  }
  if (t->get("latency_p99_ms")) {
    double v = 0;
    if (Status st = r.number("latency_p99_ms", v); !st.is_ok()) return st;
    w.latency_p99_ms = v;
  }
  if (t->get("throughput")) {
    double v = 0;
    if (Status st = r.number("throughput", v); !st.is_ok()) return st;
    w.throughput_target = v;
  }
  s.reset();
  if (Status st = r.text("candidates", s); !st.is_ok()) return st;
  if (s && candidates) *candidates = *s;
  return w;
}

Result<Workload> load_workload_file(const std::string& path, std::string* candidates) {
  auto text = read_small_file(path, kMaxWorkloadBytes, "workload file");
  if (!text.is_ok()) return text.status();
  return parse_workload_toml(text.value(), path, candidates);
}

// ---------------------------------------------------------------- candidates

Result<std::vector<CandidateSpec>> parse_candidates(std::string_view text) {
  std::vector<CandidateSpec> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string item(text.substr(start, comma - start));
    start = comma + 1;
    // Trim.
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front())))
      item.erase(0, 1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.pop_back();
    if (item.empty()) {
      if (comma == text.size() && !out.empty()) break;
      return Status::invalid_input(fmt::format("--candidates '{}': an empty entry", text));
    }
    CandidateSpec c;
    std::size_t digits = 0;
    while (digits < item.size() && std::isdigit(static_cast<unsigned char>(item[digits]))) ++digits;
    std::string rest = item.substr(digits);
    if (digits > 0) {
      if (rest.starts_with("x") || rest.starts_with("X"))
        rest.erase(0, 1);
      else if (rest.starts_with("\xc3\x97"))  // ×
        rest.erase(0, 2);
      else
        return Status::invalid_input(
            fmt::format("--candidates: '{}' is not COUNTxGPU (2xthis, 1xH200, 2xRTX4090)", item));
      long long n = 0;
      const auto [ptr, ec] = std::from_chars(item.data(), item.data() + digits, n);
      if (ec != std::errc() || n < 1 || n > 64)
        return Status::invalid_input(
            fmt::format("--candidates: '{}': the GPU count must be 1 to 64", item));
      c.count = static_cast<int>(n);
    } else if (item.starts_with("-")) {
      return Status::invalid_input(
          fmt::format("--candidates: '{}': the GPU count must be 1 to 64", item));
    }
    if (rest.empty())
      return Status::invalid_input(fmt::format("--candidates: '{}' names no GPU", item));
    if (lower(rest) == "this") {
      c.gpu = "this";
    } else {
      const GpuModelSpec* g = find_gpu_model(rest);
      if (!g) {
        std::string known;
        for (const auto& m : gpu_catalog())
          known += (known.empty() ? "" : ", ") + std::string(m.id);
        return Status::invalid_input(
            fmt::format("--candidates: unknown GPU model '{}' (this, or one of {})", rest, known));
      }
      c.gpu = g->id;
    }
    out.push_back(c);
    if (comma == text.size()) break;
  }
  if (out.empty()) return Status::invalid_input("--candidates names no candidate");
  return out;
}

}  // namespace gpuvet
