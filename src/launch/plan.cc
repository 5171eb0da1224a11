// launch/plan.cc — which GPUs, which CPUs and memory for each job, what its command and
// environment are: everything decided before anything starts, so bad input starts nothing.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <re2/re2.h>

#include "core/util.h"
#include "gpuvet/launch.h"
#include "hw/facts_query.h"
#include "launch/command.h"

namespace gpuvet {

namespace fs = std::filesystem;

const char* cpu_bind_name(CpuBind b) { return b == CpuBind::kNode ? "node" : "none"; }
const char* mem_bind_name(MemBind b) {
  switch (b) {
    case MemBind::kBind:
      return "bind";
    case MemBind::kPreferred:
      return "preferred";
    case MemBind::kNone:
      return "none";
  }
  return "none";
}

LaunchHost LaunchHost::of_this_process() {
  LaunchHost h;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) h.cpus.push_back(c);
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (!line.starts_with("Mems_allowed_list:")) continue;
    if (auto ids = parse_cpu_list(trim(std::string_view(line).substr(18)))) h.mems = *ids;
  }
  h.mem_policy = read_mem_policy_of_this_process();
  return h;
}

namespace {

// The GPU a --gpus word names: an index, a UUID (or a prefix naming one GPU), a bus id.
Result<const GpuFacts*> find_named_gpu(const Facts& facts, const std::string& word) {
  if (auto index = parse_int(word)) {
    if (const GpuFacts* g = hw::find_gpu(facts, static_cast<int>(*index))) return g;
    return Status::invalid_input(
        fmt::format("--gpus: no GPU {} on this node ({} GPU(s))", word, facts.gpus.size()));
  }
  if (auto bus = normalize_pci_bus_id(word); bus && word.find(':') != std::string::npos) {
    if (const GpuFacts* g = hw::find_gpu_by_bus(facts, *bus)) return g;
    return Status::invalid_input(fmt::format("--gpus: no GPU at bus id {}", word));
  }
  const GpuFacts* found = nullptr;
  for (const auto& g : facts.gpus) {
    if (!g.uuid || !g.uuid->starts_with(word)) continue;
    if (found)
      return Status::invalid_input(fmt::format(
          "--gpus: '{}' names more than one GPU (GPU{} and GPU{})", word, found->index, g.index));
    found = &g;
  }
  if (found) return found;
  return Status::invalid_input(
      fmt::format("--gpus: '{}' is no GPU index, UUID or bus id of this node (GPU indices 0-{})",
                  word, facts.gpus.empty() ? 0 : facts.gpus.size() - 1));
}

Status check_log_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return Status::invalid_input(
        fmt::format("--log-dir {}: cannot create it ({}): nothing started", dir, ec.message()));
  const fs::path probe = fs::path(dir) / fmt::format(".gpuvet-write-test-{}", ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return Status::invalid_input(fmt::format(
        "--log-dir {}: cannot write there ({}): nothing started", dir, std::strerror(errno)));
  ::close(fd);
  fs::remove(probe, ec);
  return Status::ok();
}

enum class Piece { kText, kGpu, kUuid, kNuma, kRank };

// Calls fn(piece, text) for each part of a job argument in order: literal text (with "{{" and
// "}}" already made "{" and "}") or a placeholder.
template <typename Fn>
void scan_job_argument(const std::string& arg, Fn&& fn) {
  for (std::size_t i = 0; i < arg.size(); ++i) {
    auto word = [&](std::string_view w) { return arg.compare(i, w.size(), w) == 0; };
    if (word("{{") || word("}}")) {
      fn(Piece::kText, std::string_view(arg).substr(i, 1));
      ++i;
    } else if (word("{gpu}")) {
      fn(Piece::kGpu, std::string_view());
      i += 4;
    } else if (word("{uuid}")) {
      fn(Piece::kUuid, std::string_view());
      i += 5;
    } else if (word("{numa}")) {
      fn(Piece::kNuma, std::string_view());
      i += 5;
    } else if (word("{rank}")) {
      fn(Piece::kRank, std::string_view());
      i += 5;
    } else {
      fn(Piece::kText, std::string_view(arg).substr(i, 1));
    }
  }
}

}  // namespace

std::string expand_job_argument(const std::string& arg, const JobPlan& job) {
  std::string out;
  scan_job_argument(arg, [&](Piece p, std::string_view text) {
    switch (p) {
      case Piece::kText:
        out += text;
        break;
      case Piece::kGpu:
        out += std::to_string(job.gpu);
        break;
      case Piece::kUuid:
        out += job.uuid;
        break;
      case Piece::kNuma:
        out += job.numa ? std::to_string(*job.numa) : "none";
        break;
      case Piece::kRank:
        out += std::to_string(job.rank);
        break;
    }
  });
  return out;
}

JobPlaceholders job_placeholders(const std::string& arg) {
  JobPlaceholders used;
  scan_job_argument(arg, [&](Piece p, std::string_view) {
    used.gpu = used.gpu || p == Piece::kGpu;
    used.uuid = used.uuid || p == Piece::kUuid;
    used.numa = used.numa || p == Piece::kNuma;
    used.rank = used.rank || p == Piece::kRank;
  });
  return used;
}

Result<std::vector<JobPlan>> plan_launch(const Facts& facts, const LaunchOptions& o,
                                         const LaunchHost& host) {
  if (o.command.empty())
    return Status::invalid_input(
        "launch: no command after '--' (gpuvet launch --per-gpu -- CMD …)");
  if (o.grace_s < 0 || o.check_timeout_s < 0 || o.sample_interval_s < 0)
    return Status::invalid_input("launch: negative time");
  if (o.ckpt_slots < 0) return Status::invalid_input("--ckpt-slots: negative");
  if (!o.throughput_regex.empty()) {
    // RE2: linear time whatever the pattern and the line (never std::regex, which recurses per
    // character and overflows the stack on a long log line).
    const re2::RE2 re(o.throughput_regex, re2::RE2::Quiet);
    if (!re.ok())
      return Status::invalid_input(
          fmt::format("--throughput-regex '{}': {}", o.throughput_regex, re.error()));
    if (re.NumberOfCapturingGroups() < 1)
      return Status::invalid_input(fmt::format(
          "--throughput-regex '{}' has no group: put the number in (…)", o.throughput_regex));
    if (o.log_dir.empty())
      return Status::invalid_input("--throughput-regex reads the job logs: give --log-dir too");
  }

  // The GPUs, each once.
  std::vector<const GpuFacts*> chosen;
  if (o.gpus.empty()) {
    for (const auto& g : facts.gpus) chosen.push_back(&g);
    if (chosen.empty())
      return Status::invalid_input(
          "launch: this node has no GPU that NVML lists: nothing to launch");
  } else {
    for (const auto& word : o.gpus) {
      if (word == "all") {
        for (const auto& g : facts.gpus) chosen.push_back(&g);
        continue;
      }
      auto g = find_named_gpu(facts, word);
      if (!g.is_ok()) return g.status();
      chosen.push_back(g.value());
    }
    if (chosen.empty()) return Status::invalid_input("--gpus: the list is empty");
  }
  std::set<int> seen;
  for (const GpuFacts* g : chosen)
    if (!seen.insert(g->index).second)
      return Status::invalid_input(fmt::format("--gpus names GPU{} twice", g->index));

  auto exe = resolve_launch_command(o.command.front());
  if (!exe.is_ok()) return exe.status();
  if (!o.log_dir.empty())
    if (Status s = check_log_dir(o.log_dir); !s.is_ok()) return s;

  const auto nodes = hw::node_cpus(facts);
  std::vector<JobPlan> plan;
  for (const GpuFacts* g : chosen) {
    JobPlan j;
    j.rank = static_cast<int>(plan.size());
    j.gpu = g->index;
    if (!g->uuid)
      return Status::invalid_input(
          fmt::format("launch: GPU{} has no UUID (NVML did not answer for it): a job needs "
                      "CUDA_VISIBLE_DEVICES=<UUID>",
                      g->index));
    if (g->unresponsive)
      return Status::invalid_input(fmt::format(
          "launch: GPU{} does not answer ({}): nothing started", g->index, *g->unresponsive));
    j.uuid = *g->uuid;
    j.bus_id = g->pci_bus_id;
    j.numa = hw::gpu_node(*g, nodes);
    if (!j.numa)
      j.notes.push_back(fmt::format(
          "GPU{}: NUMA node unknown (NVML and sysfs give none): CPUs and memory not bound",
          g->index));
    if (j.numa && o.cpu == CpuBind::kNode) {
      auto it = nodes.find(*j.numa);
      const std::vector<int> node = it == nodes.end() ? std::vector<int>{} : it->second;
      j.cpus = intersect_sorted(node, host.cpus);
      if (node.empty())
        j.notes.push_back(fmt::format("node {}: its CPUs are unknown: CPUs not bound", *j.numa));
      else if (j.cpus.empty())
        j.notes.push_back(
            fmt::format("node {} CPUs {} are none of those gpuvet may use ({}): CPUs not bound",
                        *j.numa, format_cpu_list(node), format_cpu_list(host.cpus)));
      else if (j.cpus.size() < node.size())
        j.notes.push_back(fmt::format("node {}: bound to {} of its CPUs ({}), those gpuvet may use",
                                      *j.numa, j.cpus.size(), node.size()));
    }
    if (j.numa && o.mem != MemBind::kNone) {
      if (std::ranges::find(host.mems, *j.numa) != host.mems.end())
        j.mems = {*j.numa};
      else
        j.notes.push_back(fmt::format(
            "memory of node {} is not among the nodes gpuvet may use ({}): memory not bound",
            *j.numa, host.mems.empty() ? "unknown" : format_cpu_list(host.mems)));
    }
    if (o.strict && (!j.notes.empty()))
      return Status::invalid_input(fmt::format(
          "launch --strict: job {} on GPU{} cannot be bound as intended ({}): nothing started",
          j.rank, j.gpu, j.notes.front()));

    j.argv.push_back(exe.value());
    for (std::size_t i = 1; i < o.command.size(); ++i)
      j.argv.push_back(expand_job_argument(o.command[i], j));
    const int n = static_cast<int>(chosen.size());
    j.env = {{"CUDA_VISIBLE_DEVICES", j.uuid},
             {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
             {"GPUVET_LOCAL_RANK", std::to_string(j.rank)},
             {"GPUVET_RANK", std::to_string(j.rank)},
             {"GPUVET_WORLD", std::to_string(n)},
             {"GPUVET_GPU_INDEX", std::to_string(j.gpu)},
             {"GPUVET_GPU_UUID", j.uuid},
             {"GPUVET_NUMA_NODE", j.numa ? std::to_string(*j.numa) : "none"},
             // NCCL's RAS listener, one port per job so two jobs on a node do not collide.
             {"NCCL_RAS_ADDR", fmt::format("127.0.0.1:{}", 28028 + j.rank)}};
    if (j.bus_id) j.env.emplace_back("GPUVET_GPU_BUS_ID", *j.bus_id);
    if (!o.log_dir.empty()) {
      j.log_path = (fs::path(o.log_dir) / fmt::format("job{}-gpu{}.log", j.rank, j.gpu)).string();
      // A PyTorch job that times out in a collective leaves its flight recorder here.
      j.env.emplace_back("TORCH_FR_DUMP_TEMP_FILE",
                         (fs::path(o.log_dir) / fmt::format("fr_job{}_", j.rank)).string());
    }
    plan.push_back(std::move(j));
  }
  return plan;
}

}  // namespace gpuvet
