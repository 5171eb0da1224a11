// launch/task.cc — `gpuvet launch --in-task`: inside a task a scheduler placed, which GPU it
// has, whether its CPUs and memory are on that GPU's NUMA node (optionally binding them), then
// exec of the command.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/util.h"
#include "gpuvet/launch.h"
#include "hw/facts_query.h"
#include "launch/command.h"

namespace gpuvet {
namespace {

std::optional<int> env_int(const std::function<const char*(const char*)>& getenv,
                           const char* name) {
  const char* v = getenv(name);
  if (!v) return std::nullopt;
  auto n = parse_int(v);
  if (!n || *n < 0 || *n > 1'000'000'000) return std::nullopt;
  return static_cast<int>(*n);
}

// SLURM_STEP_TASKS_PER_NODE "2(x3),1": the task count of node `node_id` (0-based).
std::optional<int> tasks_on_node(std::string_view spec, int node_id) {
  int node = 0;
  for (auto part : split(spec, ',')) {
    part = trim(part);
    int repeat = 1;
    if (auto open = part.find("(x"); open != std::string_view::npos) {
      if (part.back() != ')') return std::nullopt;
      auto r = parse_int(part.substr(open + 2, part.size() - open - 3));
      if (!r || *r < 1) return std::nullopt;
      repeat = static_cast<int>(std::min<std::int64_t>(*r, 1'000'000));
      part = part.substr(0, open);
    }
    auto count = parse_int(part);
    if (!count || *count < 0) return std::nullopt;
    if (node_id < node + repeat) return static_cast<int>(*count);
    node += repeat;
  }
  return std::nullopt;
}

std::vector<int> minus(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// "bind:1" → {"bind", {1}}; "default" → {"default", {}}.
std::pair<std::string, std::vector<int>> split_policy(const std::string& policy) {
  const auto colon = policy.find(':');
  if (colon == std::string::npos) return {policy, {}};
  return {policy.substr(0, colon),
          parse_cpu_list(std::string_view(policy).substr(colon + 1)).value_or(std::vector<int>{})};
}

// The nodes whose CPUs hold `cpus`, as "node 0 (CPUs 0-15)" phrases.
std::string where(const std::vector<int>& cpus, const std::map<int, std::vector<int>>& nodes) {
  std::vector<std::string> parts;
  std::vector<int> placed;
  for (const auto& [node, node_cpus] : nodes) {
    auto on = intersect_sorted(cpus, node_cpus);
    if (on.empty()) continue;
    parts.push_back(fmt::format("{} on node {}", format_cpu_list(on), node));
    placed.insert(placed.end(), on.begin(), on.end());
  }
  std::sort(placed.begin(), placed.end());
  if (auto rest = minus(cpus, placed); !rest.empty())
    parts.push_back(fmt::format("{} on no known node", format_cpu_list(rest)));
  return fmt::format("{}", fmt::join(parts, ", "));
}

Finding binding_finding(const TaskCheck& c, std::string evidence) {
  Finding f;
  f.id = "launch-binding-mismatch";
  f.severity = Severity::kWarning;
  f.subjects.push_back(c.task.rank ? fmt::format("task{}", *c.task.rank) : std::string("task"));
  if (c.gpu) f.subjects.push_back(fmt::format("GPU{}", *c.gpu));
  f.evidence = std::move(evidence);
  return f;
}

std::string task_name(const TaskIdentity& t) {
  if (!t.rank) return "the task";
  std::string s = fmt::format("task {}", *t.rank);
  if (t.local_rank) s += fmt::format(" (local {})", *t.local_rank);
  return s;
}

}  // namespace

TaskIdentity TaskIdentity::from_environment(const std::function<const char*(const char*)>& getenv) {
  TaskIdentity t;
  if (getenv("SLURM_PROCID") && getenv("SLURM_STEP_ID")) {
    t.launcher = "slurm";
    t.rank = env_int(getenv, "SLURM_PROCID");
    t.local_rank = env_int(getenv, "SLURM_LOCALID");
    t.world = env_int(getenv, "SLURM_STEP_NUM_TASKS");
    if (!t.world) t.world = env_int(getenv, "SLURM_NTASKS");
    const char* per_node = getenv("SLURM_STEP_TASKS_PER_NODE");
    if (!per_node) per_node = getenv("SLURM_TASKS_PER_NODE");
    if (auto node = env_int(getenv, "SLURM_NODEID"); node && per_node)
      t.local_world = tasks_on_node(per_node, *node);
  } else if (getenv("OMPI_COMM_WORLD_RANK")) {
    t.launcher = "openmpi";
    t.rank = env_int(getenv, "OMPI_COMM_WORLD_RANK");
    t.local_rank = env_int(getenv, "OMPI_COMM_WORLD_LOCAL_RANK");
    t.world = env_int(getenv, "OMPI_COMM_WORLD_SIZE");
    t.local_world = env_int(getenv, "OMPI_COMM_WORLD_LOCAL_SIZE");
  } else if (getenv("LOCAL_RANK") || getenv("RANK")) {
    t.launcher = "torchrun";
    t.rank = env_int(getenv, "RANK");
    t.local_rank = env_int(getenv, "LOCAL_RANK");
    t.world = env_int(getenv, "WORLD_SIZE");
    t.local_world = env_int(getenv, "LOCAL_WORLD_SIZE");
  }
  if (const char* v = getenv("CUDA_VISIBLE_DEVICES")) t.visible_devices = v;
  if (const char* v = getenv("CUDA_DEVICE_ORDER")) t.device_order = v;
  return t;
}

Result<TaskCheck> plan_task(const Facts& facts, const TaskIdentity& task, const LaunchHost& host,
                            const TaskOptions& o) {
  if (o.command.empty())
    return Status::invalid_input(
        "launch --in-task: no command after '--' (srun … gpuvet launch --in-task -- CMD …)");
  auto exe = resolve_launch_command(o.command.front());
  if (!exe.is_ok()) return exe.status();
  TaskCheck c;
  c.task = task;
  c.before = host;
  c.argv = o.command;
  c.argv.front() = exe.value();

  // The GPUs the task may use. CUDA numbers them in PCI bus order under
  // CUDA_DEVICE_ORDER=PCI_BUS_ID; so does NVML, but the facts may come in another order.
  std::vector<const GpuFacts*> in_bus_order;
  for (const auto& g : facts.gpus) in_bus_order.push_back(&g);
  if (std::ranges::all_of(in_bus_order,
                          [](const GpuFacts* g) { return g->pci_bus_id.has_value(); }))
    std::ranges::stable_sort(in_bus_order, {}, [](const GpuFacts* g) { return *g->pci_bus_id; });
  bool by_index = false;
  if (!task.visible_devices) {
    for (const auto& g : facts.gpus) c.visible.push_back(g.index);
    if (c.visible.size() > 1)
      c.notes.push_back(fmt::format("CUDA_VISIBLE_DEVICES is not set: the task sees all {} GPUs",
                                    c.visible.size()));
  } else {
    const std::string& v = *task.visible_devices;
    if (trim(v).empty() || v == "NoDevFiles" || v == "-1")
      return Status::invalid_input(fmt::format(
          "launch --in-task: the task was given no GPU (CUDA_VISIBLE_DEVICES='{}'): ask the "
          "scheduler for one (srun --gpus-per-task=1): nothing started",
          v));
    for (auto word : split(v, ',')) {
      word = trim(word);
      const GpuFacts* g = nullptr;
      if (auto index = parse_int(word)) {
        by_index = true;
        if (*index >= 0 && static_cast<std::size_t>(*index) < in_bus_order.size())
          g = in_bus_order[static_cast<std::size_t>(*index)];
      } else if (word.starts_with("MIG-")) {
        return Status::invalid_input(fmt::format(
            "launch --in-task: CUDA_VISIBLE_DEVICES names a MIG instance ({}): its GPU's node "
            "cannot be told from it; give the GPU's UUID: nothing started",
            word));
      } else {
        for (const auto& gpu : facts.gpus)
          if (gpu.uuid && !word.empty() && gpu.uuid->starts_with(word)) g = &gpu;
      }
      if (!g)
        return Status::invalid_input(fmt::format(
            "launch --in-task: CUDA_VISIBLE_DEVICES entry '{}' is no GPU of this node ({} "
            "GPU(s) seen through NVML): nothing started",
            word, facts.gpus.size()));
      c.visible.push_back(g->index);
    }
  }
  if (c.visible.empty())
    return Status::invalid_input("launch --in-task: this node has no GPU that NVML lists");

  // The one it uses: its only one, else the convention of one task per GPU (cuda:LOCAL_RANK).
  if (c.visible.size() == 1) {
    c.gpu = c.visible.front();
  } else if (task.local_rank && task.local_world && *task.local_world > 1) {
    if (static_cast<std::size_t>(*task.local_rank) < c.visible.size()) {
      c.gpu = c.visible[static_cast<std::size_t>(*task.local_rank)];
      c.notes.push_back(fmt::format(
          "{} of {} on this node sees {} GPUs: taken to use the one at its local rank, GPU{} "
          "(cuda:{}); one GPU per task (srun --gpus-per-task=1) makes that certain",
          task_name(task), *task.local_world, c.visible.size(), *c.gpu, *task.local_rank));
    } else {
      c.notes.push_back(fmt::format("{} has local rank {} but sees only {} GPUs: tasks share GPUs",
                                    task_name(task), *task.local_rank, c.visible.size()));
    }
  }

  // Where it belongs: its GPU's node, or the nodes of all its GPUs.
  c.node_cpus = hw::node_cpus(facts);
  const auto& nodes = c.node_cpus;
  std::set<int> targets;
  for (int index : c.gpu ? std::vector<int>{*c.gpu} : c.visible) {
    const GpuFacts* g = hw::find_gpu(facts, index);
    auto node = g ? hw::gpu_node(*g, nodes) : std::nullopt;
    if (!node) {
      c.notes.push_back(fmt::format(
          "GPU{}: NUMA node unknown (NVML and sysfs give none): binding not checked", index));
      targets.clear();
      break;
    }
    targets.insert(*node);
  }
  c.target_nodes.assign(targets.begin(), targets.end());
  for (int n : c.target_nodes)
    if (auto it = nodes.find(n); it != nodes.end())
      c.target_cpus.insert(c.target_cpus.end(), it->second.begin(), it->second.end());
  std::sort(c.target_cpus.begin(), c.target_cpus.end());
  if (!c.target_nodes.empty() && c.target_cpus.empty())
    c.notes.push_back(fmt::format("node {}: its CPUs are unknown: binding not checked",
                                  format_cpu_list(c.target_nodes)));

  // {gpu}, {uuid}, {numa} and {rank} expand as under --per-gpu, for the GPU the task uses.
  JobPlan as_job;
  as_job.rank = task.rank.value_or(0);
  as_job.gpu = c.gpu.value_or(-1);
  if (c.gpu)
    if (const GpuFacts* g = hw::find_gpu(facts, *c.gpu); g && g->uuid) as_job.uuid = *g->uuid;
  if (c.target_nodes.size() == 1) as_job.numa = c.target_nodes.front();
  for (std::size_t i = 1; i < c.argv.size(); ++i) {
    const JobPlaceholders used = job_placeholders(c.argv[i]);
    if (!c.gpu && (used.gpu || used.uuid || used.numa))
      return Status::invalid_input(fmt::format(
          "launch --in-task: '{}' needs the task's GPU, which is not known here (it sees "
          "several GPUs and no local rank): nothing started",
          c.argv[i]));
    if (!task.rank && used.rank)
      return Status::invalid_input(fmt::format(
          "launch --in-task: '{}' needs the task's rank, which is not known here (no launcher "
          "variables): nothing started",
          c.argv[i]));
    c.argv[i] = expand_job_argument(c.argv[i], as_job);
  }

  // What the command gets.
  if (task.rank) c.env.emplace_back("GPUVET_RANK", std::to_string(*task.rank));
  if (task.local_rank) c.env.emplace_back("GPUVET_LOCAL_RANK", std::to_string(*task.local_rank));
  if (task.world) c.env.emplace_back("GPUVET_WORLD", std::to_string(*task.world));
  if (c.gpu) {
    const GpuFacts* g = hw::find_gpu(facts, *c.gpu);
    c.env.emplace_back("GPUVET_GPU_INDEX", std::to_string(*c.gpu));
    if (g && g->uuid) c.env.emplace_back("GPUVET_GPU_UUID", *g->uuid);
    if (g && g->pci_bus_id) c.env.emplace_back("GPUVET_GPU_BUS_ID", *g->pci_bus_id);
  }
  c.env.emplace_back("GPUVET_NUMA_NODE", c.target_nodes.size() == 1
                                             ? std::to_string(c.target_nodes.front())
                                             : std::string("none"));
  if (by_index && !task.device_order) {
    c.env.emplace_back("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    c.notes.push_back(
        "CUDA_VISIBLE_DEVICES gives indices: CUDA_DEVICE_ORDER=PCI_BUS_ID set so that CUDA "
        "numbers the GPUs as NVML (and this check) does");
  } else if (by_index && *task.device_order != "PCI_BUS_ID") {
    c.notes.push_back(fmt::format(
        "CUDA_DEVICE_ORDER={}: CUDA may number the GPUs otherwise than NVML; the indices of "
        "CUDA_VISIBLE_DEVICES were read in PCI bus order",
        *task.device_order));
  }
  return c;
}

void judge_task(TaskCheck& c, const TaskOptions& o) {
  c.findings.clear();
  c.exit_code = 0;
  if (c.target_cpus.empty()) return;
  const LaunchHost& now = c.after ? *c.after : c.before;
  std::vector<std::string> problems = c.bind_errors;
  const std::string nodes_text = c.target_nodes.size() == 1
                                     ? fmt::format("node {}", c.target_nodes.front())
                                     : fmt::format("nodes {}", format_cpu_list(c.target_nodes));
  if (!now.cpus.empty()) {
    const auto off = minus(now.cpus, c.target_cpus);
    if (off.size() == now.cpus.size())
      problems.push_back(fmt::format("none of its CPUs ({}) is on its GPU's {} (CPUs {})",
                                     where(now.cpus, c.node_cpus), nodes_text,
                                     format_cpu_list(c.target_cpus)));
    else if (!off.empty())
      problems.push_back(fmt::format("{} of its {} CPUs ({}) are off its GPU's {} (CPUs {})",
                                     off.size(), now.cpus.size(), format_cpu_list(off), nodes_text,
                                     format_cpu_list(c.target_cpus)));
  }
  const auto [mode, policy_nodes] = split_policy(now.mem_policy);
  if ((mode == "bind" || mode == "prefer" || mode == "interleave" || mode == "prefer_many" ||
       mode == "weighted_interleave") &&
      !minus(policy_nodes, c.target_nodes).empty())
    problems.push_back(
        fmt::format("memory policy {} puts memory off its GPU's {}", now.mem_policy, nodes_text));
  if (!problems.empty()) {
    c.findings.push_back(binding_finding(
        c, fmt::format("{}{}: {}", task_name(c.task), c.gpu ? fmt::format(" on GPU{}", *c.gpu) : "",
                       fmt::join(problems, "; "))));
    if (o.strict) c.exit_code = 2;
  }
}

void bind_and_judge_task(TaskCheck& c, const TaskOptions& o) {
  if (o.bind && !c.target_cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : c.target_cpus)
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
    // The kernel keeps the affinity within the task's cpuset: what it allows of the node.
    if (o.cpu == CpuBind::kNode && ::sched_setaffinity(0, sizeof set, &set) != 0)
      c.bind_errors.push_back(fmt::format("binding its CPUs to {} failed ({})",
                                          format_cpu_list(c.target_cpus), std::strerror(errno)));
    if (o.mem != MemBind::kNone) {
      const auto usable = intersect_sorted(c.target_nodes, c.before.mems);
      if (usable.size() != c.target_nodes.size()) {
        c.bind_errors.push_back(fmt::format(
            "memory of node {} is not among the nodes it may use ({}): memory not bound",
            format_cpu_list(c.target_nodes),
            c.before.mems.empty() ? "unknown" : format_cpu_list(c.before.mems)));
      } else {
        const NodeMask mask = NodeMask::of(usable);
        const int mode =
            o.mem == MemBind::kPreferred && usable.size() == 1 ? kMpolPreferred : kMpolBind;
        if (::syscall(SYS_set_mempolicy, mode, mask.bits, NodeMask::kMaxNodes) != 0)
          c.bind_errors.push_back(fmt::format("binding its memory to node {} failed ({})",
                                              format_cpu_list(usable), std::strerror(errno)));
      }
    }
    c.after = LaunchHost::of_this_process();
  }
  judge_task(c, o);
}

Inheritance Inheritance::of_this_process() {
  Inheritance in;
  in.fds = open_fds();
  sigset_t mask;
  if (::pthread_sigmask(SIG_BLOCK, nullptr, &mask) == 0)
    for (int sig = 1; sig < NSIG; ++sig)
      if (::sigismember(&mask, sig) == 1) in.blocked_signals.push_back(sig);
  return in;
}

std::string exec_task(const TaskCheck& c, const Inheritance& inherited) {
  // NVML's device files and whatever else gpuvet opened are not the command's.
  for (int fd : open_fds())
    if (fd > 2 && !std::binary_search(inherited.fds.begin(), inherited.fds.end(), fd))
      if (const int flags = ::fcntl(fd, F_GETFD); flags >= 0)
        ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : inherited.blocked_signals) sigaddset(&mask, sig);
  ::pthread_sigmask(SIG_SETMASK, &mask, nullptr);
  std::vector<std::string> storage = environment_with(c.env);
  std::vector<char*> envp, argv;
  for (auto& e : storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  for (const auto& a : c.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execve(argv[0], argv.data(), envp.data());
  return fmt::format("launch --in-task: cannot run {}: {}", c.argv.front(), std::strerror(errno));
}

}  // namespace gpuvet
