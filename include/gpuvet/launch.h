// gpuvet/launch.h — `gpuvet launch --per-gpu`: one copy of a command per GPU, each pinned to
// the CPUs and memory of its GPU's NUMA node, checked after start, stopped as a group when one
// fails; and `gpuvet ckpt-slot`: at most K checkpoint writers at once.
//
// The article's best pattern for several GPUs is independent jobs, one process per GPU, each
// bound to its GPU's node. plan_launch() turns the node's facts (the GPU's NUMA node from NVML
// and sysfs, never its index) and what this process may use into one JobPlan per GPU;
// run_launch() starts them (fork, CPU and memory policy, a cgroup v2 leaf per job where one
// can be made, else a process group under gpuvet as child subreaper), reads each binding back
// from /proc, finds each job's processes on the GPUs through NVML, and waits: the first job
// that fails stops the others (SIGTERM, a grace period, SIGKILL to the whole tree) unless
// keep_going. Linux only. One thread drives a launch; it owns SIGINT/SIGTERM/SIGHUP while it
// runs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuvet/diagnose.h"
#include "gpuvet/facts.h"
#include "gpuvet/status.h"

namespace gpuvet {

enum class CpuBind { kNode, kNone };
enum class MemBind { kBind, kPreferred, kNone };
const char* cpu_bind_name(CpuBind b);  // "node", "none"
const char* mem_bind_name(MemBind b);  // "bind", "preferred", "none"

struct LaunchOptions {
  // Which GPUs: indices, UUIDs (or their unambiguous prefixes) or bus ids; empty: every GPU.
  std::vector<std::string> gpus;
  // The command and its arguments; "{gpu}", "{uuid}", "{numa}", "{rank}" expand in each.
  std::vector<std::string> command;
  std::string log_dir;  // each job's stdout+stderr to DIR/job<rank>-gpu<index>.log; empty: ours
  // Without log_dir: the jobs' stdout goes to our stderr (our stdout carries a JSON document).
  bool job_output_to_stderr = false;
  CpuBind cpu = CpuBind::kNode;
  MemBind mem = MemBind::kBind;
  bool strict = false;      // a binding or GPU mapping that is not the intended one stops all
  bool keep_going = false;  // a failed job does not stop the others
  double grace_s = 10;      // SIGTERM → SIGKILL
  // How long to look for each job's processes on the GPUs through NVML (0: do not look).
  double check_timeout_s = 60;
  double sample_interval_s = 1;  // the GPU clock/temperature series over the run (0: none)
  bool live = false;             // --watch: a progress line per sampled interval (each job's GPU)
  bool use_cgroup = true;        // false: process groups and the subreaper sweep only
  std::string throughput_regex;  // its first group (a number) on job log lines, per job
  // Checkpoint slots for `gpuvet ckpt-slot` inside the jobs: GPUVET_CKPT_SLOTS=K and
  // GPUVET_CKPT_DIR (default: a private directory under log_dir or /tmp).
  int ckpt_slots = 0;
  std::string ckpt_dir;
};

// What this process may use, as the kernel says (sched_getaffinity, Mems_allowed): a job is
// bound to its node's CPUs and memory within these.
struct LaunchHost {
  std::vector<int> cpus;
  std::vector<int> mems;
  // Its memory policy (get_mempolicy), written as numa_maps writes one: "default", "local",
  // "bind:1", "prefer:0", "interleave:0-1"; empty when it could not be read.
  std::string mem_policy;
  static LaunchHost of_this_process();
};

struct JobPlan {
  int rank = 0;
  int gpu = 0;
  std::string uuid;
  std::optional<std::string> bus_id;
  std::optional<int> numa;
  std::vector<int> cpus;  // empty: not bound
  std::vector<int> mems;  // empty: not bound
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // set on top of ours
  std::string log_path;                                  // empty: gpuvet's stdout/stderr
  std::vector<std::string> notes;                        // why a binding is partial or absent
};

// One JobPlan per chosen GPU, in the order given (or GPU index order). Bad input (an unknown
// GPU, an empty list, a GPU without UUID, an empty command, a command not found on PATH, a
// log directory that cannot be written, a bad regex) is an error; so is, with `strict`, a job
// whose binding cannot be the intended one. Starts nothing.
Result<std::vector<JobPlan>> plan_launch(const Facts& facts, const LaunchOptions& options,
                                         const LaunchHost& host);

// "{gpu}" → 3, "{uuid}" → GPU-…, "{numa}" → 1 (or "none"), "{rank}" → 0; "{{" → "{".
std::string expand_job_argument(const std::string& arg, const JobPlan& job);
// Which of those `arg` uses ("{{gpu}}" uses none).
struct JobPlaceholders {
  bool gpu = false, uuid = false, numa = false, rank = false;
};
JobPlaceholders job_placeholders(const std::string& arg);

// What one job did.
struct JobResult {
  JobPlan plan;
  int pid = 0;
  double start_s = 0, end_s = 0;         // from the launch's start
  std::optional<int> exit_code;          // exited
  std::optional<int> signal;             // killed by this signal
  bool stopped_by_gpuvet = false;        // the signal came from the group stop
  std::string start_error;               // exec failed: why
  std::vector<std::string> bind_errors;  // the child could not apply a binding
  // Read back from /proc/<pid> right after exec.
  std::optional<std::string> cpus_read_back;        // Cpus_allowed_list
  std::optional<std::string> mem_policy_read_back;  // numa_maps' policy: "bind:1", "default"
  // GPUs NVML showed the job's processes on (index), with the first PID seen on each.
  std::vector<std::pair<int, int>> seen_on;
  int left_behind = 0;  // processes of the job still alive after its leader ended: killed
  std::vector<std::string> log_tail;  // the last lines of its log (failed jobs)
  // From the sampler: its GPU over the run.
  std::optional<int> sm_mhz_min, sm_mhz_median, sm_mhz_max, temp_c_max;
  std::optional<double> power_w_max;
  std::vector<std::string> clock_events;  // reasons seen while sampled ("sw_power_cap", …)
  // From --throughput-regex.
  int throughput_lines = 0;
  std::optional<double> throughput_median, throughput_last;
};

struct LaunchReport {
  std::vector<JobResult> jobs;
  std::string control;  // "cgroup v2 /sys/fs/cgroup/…/gpuvet-launch-123" or "process groups"
  std::optional<int> first_failure;   // index into jobs
  std::string stop_reason;            // why gpuvet stopped the group ("" when it did not)
  std::optional<int> interrupted_by;  // SIGINT/SIGTERM/SIGHUP received
  std::vector<int> leftover_pids;     // still alive at the very end (should be none)
  std::vector<Finding> findings;      // launch-* findings, worst first
  std::vector<std::string> notes;
  double wall_s = 0;
  int exit_code = 0;  // the first failed job's code (128+signal), 128+signal on ^C, else 0
};

// What this process was started with and hands on to the jobs and commands it starts: its open
// file descriptors (a launcher's PMI socket, say) and its blocked signals. Taken before
// anything else opens a file (NVML may hold device files that a job must not inherit).
struct Inheritance {
  std::vector<int> fds;
  std::vector<int> blocked_signals;
  static Inheritance of_this_process();
};

// Runs the plan to its end. `nvml_library` as CollectOptions::nvml_library (the mapping
// check and the sampler); each job gets the descriptors of `inherited` and no other (they are
// closed between fork and exec); `progress` lines (one per event) go to the callback when set.
LaunchReport run_launch(const std::vector<JobPlan>& plan, const LaunchOptions& options,
                        const std::optional<std::string>& nvml_library,
                        const Inheritance& inherited,
                        const std::function<void(const std::string&)>& progress = {});

// `gpuvet launch --in-task -- CMD`: inside one task that a scheduler placed (srun, mpirun,
// torchrun), check that task's GPU and binding, then let CMD replace gpuvet (exec), so the
// scheduler's signals, exit code and accounting are the command's own.
//
// Who the task is, from the launcher's environment: Slurm (SLURM_PROCID, SLURM_LOCALID,
// SLURM_NTASKS, SLURM_STEP_TASKS_PER_NODE with SLURM_NODEID), Open MPI
// (OMPI_COMM_WORLD_RANK, _LOCAL_RANK, _SIZE, _LOCAL_SIZE), or torchrun and the like (RANK,
// LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE), the first found; and CUDA_VISIBLE_DEVICES.
struct TaskIdentity {
  std::string launcher;  // "slurm", "openmpi", "torchrun", "" (none found)
  std::optional<int> rank, local_rank, world, local_world;
  std::optional<std::string> visible_devices;  // CUDA_VISIBLE_DEVICES as given; unset: empty
  std::optional<std::string> device_order;     // CUDA_DEVICE_ORDER
  // `getenv` answers for one variable (nullptr when unset); bad numbers are left empty.
  static TaskIdentity from_environment(const std::function<const char*(const char*)>& getenv);
};

struct TaskOptions {
  std::vector<std::string> command;
  bool bind =
      false;  // bind the task to its GPU's node before exec: CPUs per `cpu`, memory per `mem`
  CpuBind cpu = CpuBind::kNode;
  MemBind mem = MemBind::kBind;
  bool strict = false;  // a binding that is not on the GPU's node: do not exec (exit 2)
};

struct TaskCheck {
  TaskIdentity task;
  std::vector<int> visible;       // GPU indices the task may use, in CUDA_VISIBLE_DEVICES order
  std::optional<int> gpu;         // the one it is taken to use (its only one, or its local rank's)
  std::vector<int> target_nodes;  // the NUMA node(s) its CPUs and memory belong on
  std::vector<int> target_cpus;   // their CPUs
  std::map<int, std::vector<int>> node_cpus;  // every NUMA node's CPUs, from the facts
  LaunchHost before;                          // the task as the scheduler placed it
  std::optional<LaunchHost> after;            // after --bind
  std::vector<std::string> bind_errors;
  std::vector<std::pair<std::string, std::string>> env;  // set for the command (GPUVET_*, …)
  std::vector<std::string> argv;                         // argv[0] resolved on PATH
  std::vector<Finding> findings;                         // launch-binding-mismatch, …
  std::vector<std::string> notes;
  int exit_code = 0;  // 2 when --strict refuses to run the command, else 0 (exec)
};

// Which GPU(s) the task has and where it belongs, from the facts of this node and the task's
// environment; nothing is changed. Bad input (no command, a command not found, a task given no
// GPU, a CUDA_VISIBLE_DEVICES entry that is no GPU of this node) is an error.
Result<TaskCheck> plan_task(const Facts& facts, const TaskIdentity& task, const LaunchHost& host,
                            const TaskOptions& options);
// With options.bind: binds this process (sched_setaffinity, set_mempolicy) and reads it back
// into check.after. Then judges the binding (check.findings, check.exit_code).
void bind_and_judge_task(TaskCheck& check, const TaskOptions& options);
// Judges check.after (else check.before) against the target; fills findings and exit_code.
void judge_task(TaskCheck& check, const TaskOptions& options);
// Replaces this process with the command (environment: ours plus check.env): descriptors opened
// since `inherited` was taken are closed on exec, its signal mask is restored. Returns only on
// failure, with the reason.
std::string exec_task(const TaskCheck& check, const Inheritance& inherited);

// `gpuvet ckpt-slot`: takes one of `slots` lock files in `dir` (flock, released by the kernel
// when the holder dies), runs `command` while holding it, returns its exit code (128+signal).
// Waits at most `timeout_s` for a slot (0: forever): then an error. Bad input is an error.
struct CkptSlotOptions {
  int slots = 0;
  std::string dir;
  double timeout_s = 0;
  std::vector<std::string> command;
};
Result<int> run_in_ckpt_slot(const CkptSlotOptions& options,
                             const std::function<void(const std::string&)>& progress = {});

}  // namespace gpuvet
