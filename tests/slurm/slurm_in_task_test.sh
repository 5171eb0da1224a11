#!/usr/bin/env bash
# `gpuvet launch --in-task` inside the tasks a real srun starts (a one-node Slurm on 127.0.0.1,
# tests/slurm/cluster.sh, with task/affinity so that --cpu-bind places each task on a CPU).
# The node is the fake NVML's four GPUs on a two-node sysfs tree whose nodes are this
# machine's CPU 0 (GPU0, GPU1) and CPU 1 (GPU2, GPU3). Two tasks, each seeing GPU0 and GPU2,
# use the one at their local rank: task 0 → GPU0 (node 0), task 1 → GPU2 (node 1). Checks:
#   1. --cpu-bind=map_cpu:1,0 (each task on the other GPU's CPU): both tasks warn
#      launch-binding-mismatch, and each command still runs, in gpuvet's place (its parent is
#      slurmstepd), with its CPU as Slurm placed it;
#   2. map_cpu:0,1: no warning, "ok";
#   3. map_cpu:1,0 with --strict: the step fails (exit 2) and no command ran;
#   4. map_cpu:1,0 with --bind: each command runs on its GPU's CPU.
# Usage: slurm_in_task_test.sh GPUVET FAKE_NVML_LIB SOURCE_DIR
# Exits 77 (skipped) when not root, the Slurm/MUNGE programs are missing or this machine has
# fewer than 2 CPUs.
set -uo pipefail
gpuvet=$1 fake_nvml=$2 src=$3
# shellcheck source=cluster.sh
source "$(dirname "$0")/cluster.sh"
started=$(date +%s)
(($(nproc) >= 2)) || skip "needs 2 CPUs (one per NUMA node of the fixture)"
cluster_prepare

cp -a "$src/tests/fixtures/sysroot-2numa-4gpu" "$T/root"
echo 0 >"$T/root/sys/devices/system/node/node0/cpulist"
echo 1 >"$T/root/sys/devices/system/node/node1/cpulist"
export GPUVET_FAKE_NVML_SCENARIO=$src/tests/scenarios/sysroot-2numa-4gpu.json
gpu0=GPU-5d3f6a8e-21c4-4b7e-9f0a-6c1e2d3b4a50
gpu2=GPU-5d3f6a8e-21c4-4b7e-9f0a-6c1e2d3b4a52
mkdir -m 777 "$T/out"
cat >"$T/job.sh" <<EOF
#!/bin/sh
{
  echo "cpus=\$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)"
  echo "parent=\$(cat /proc/\$PPID/comm)"
  echo "gpu=\$GPUVET_GPU_UUID"
} >"$T/out/task\$SLURM_PROCID"
EOF
chmod 755 "$T/job.sh"

SLURM_TASK_PLUGIN=task/affinity SLURM_NODE_CPUS=2 cluster_start
wait_for 60 '^idle[^ ]* ' "node idle"

# in_task CPU_MAP [gpuvet options…]: the two-task step; srun's output in $T/step.log.
in_task() {
  local map=$1
  shift
  rm -f "$T"/out/task*
  # srun passes our environment on (--export=ALL cannot carry a value with a comma).
  CUDA_VISIBLE_DEVICES="$gpu0,$gpu2" timeout 60 srun -N1 -n2 -t 1 -l --cpu-bind="map_cpu:$map" \
    "$gpuvet" launch --in-task --nvml "$fake_nvml" --root "$T/root" "$@" -- "$T/job.sh" \
    >"$T/step.log" 2>&1
}
field() { sed -n "s/^$2=//p" "$T/out/task$1"; }

in_task 1,0 || fail "the misplaced step failed (exit $?): $(cat "$T/step.log")"
grep -q "^0: gpuvet launch --in-task: warning launch-binding-mismatch: task 0 (local 0) on GPU0: none of its CPUs (1 on node 1) is on its GPU's node 0" "$T/step.log" ||
  fail "task 0 on the wrong CPU was not reported: $(cat "$T/step.log")"
grep -q "^1: gpuvet launch --in-task: warning launch-binding-mismatch: task 1 (local 1) on GPU2: none of its CPUs (0 on node 0) is on its GPU's node 1" "$T/step.log" ||
  fail "task 1 on the wrong CPU was not reported: $(cat "$T/step.log")"
for t in 0 1; do
  [[ -s $T/out/task$t ]] || fail "task $t's command did not run: $(cat "$T/step.log")"
  [[ $(field $t parent) == slurmstepd ]] ||
    fail "task $t's command is a child of $(field $t parent), not slurmstepd: gpuvet did not exec"
done
[[ $(field 0 cpus) == 1 && $(field 1 cpus) == 0 ]] ||
  fail "the check changed the placement: $(cat "$T"/out/task*)"
[[ $(field 0 gpu) == "$gpu0" && $(field 1 gpu) == "$gpu2" ]] ||
  fail "the commands were told other GPUs: $(cat "$T"/out/task*)"
echo "ok: srun --cpu-bind=map_cpu:1,0: both tasks warned, both commands ran in gpuvet's place"

in_task 0,1 || fail "the well-placed step failed (exit $?): $(cat "$T/step.log")"
grep -q "warning" "$T/step.log" && fail "a well-placed task warned: $(cat "$T/step.log")"
(($(grep -c "binding on the GPU's node: ok" "$T/step.log") == 2)) ||
  fail "the well-placed tasks did not both say ok: $(cat "$T/step.log")"
echo "ok: srun --cpu-bind=map_cpu:0,1: both tasks ok"

in_task 1,0 --strict && fail "--strict let a misplaced step run: $(cat "$T/step.log")"
grep -q "not started (exit 2)" "$T/step.log" || fail "--strict did not say why: $(cat "$T/step.log")"
compgen -G "$T/out/task*" >/dev/null && fail "--strict ran a command: $(ls "$T/out")"
echo "ok: --strict: the misplaced step failed and no command ran"

in_task 1,0 --bind --mem none || fail "the --bind step failed (exit $?): $(cat "$T/step.log")"
[[ $(field 0 cpus) == 0 && $(field 1 cpus) == 1 ]] ||
  fail "--bind did not move each task to its GPU's CPU: $(cat "$T"/out/task*) $(cat "$T/step.log")"
grep -q "warning" "$T/step.log" && fail "a task bound by gpuvet warned: $(cat "$T/step.log")"
echo "ok: --bind: each task moved to its GPU's node before its command"
echo "PASS in $(($(date +%s) - started)) s"
