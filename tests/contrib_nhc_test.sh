#!/usr/bin/env bash
# contrib/nhc/gpuvet.nhc sourced as NHC sources a check, with a stand-in for NHC's `die`:
# a healthy node returns 0 without calling die; a degraded node calls `die 1` with gpuvet's
# one-line reason; a bad baseline calls die with "gpuvet: unknown: …".
# Usage: contrib_nhc_test.sh GPUVET FAKE_NVML_LIB SOURCE_DIR
set -uo pipefail
gpuvet=$1 fake_nvml=$2 src=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
scen=$src/tests/scenarios
live=(--nvml "$fake_nvml" --no-kernel-log --sample-window 0)
GPUVET_FAKE_NVML_SCENARIO=$scen/h200-1gpu-idle.json "$gpuvet" baseline capture "${live[@]}" \
  -o "$T/baseline.toml" >/dev/null || fail "baseline capture"

DIED=()
die() { DIED+=("$1|$2"); return "$1"; }
GPUVET=$gpuvet
# shellcheck disable=SC1091
source "$src/contrib/nhc/gpuvet.nhc"

export GPUVET_FAKE_NVML_SCENARIO=$scen/h200-1gpu-idle.json
check_gpuvet_gate "$T/baseline.toml" "${live[@]}" || fail "healthy node: check returned $?"
((${#DIED[@]} == 0)) || fail "healthy node: die was called: ${DIED[*]}"
echo "ok: healthy node passes without die"

export GPUVET_FAKE_NVML_SCENARIO=$scen/fault-gpu-lost.json
expected=$("$gpuvet" gate --baseline "$T/baseline.toml" "${live[@]}" --one-line)
check_gpuvet_gate "$T/baseline.toml" "${live[@]}" && fail "degraded node: check passed"
((${#DIED[@]} == 1)) || fail "degraded node: die called ${#DIED[@]} times"
[[ ${DIED[0]} == "1|$expected" ]] || fail "degraded node: die '${DIED[0]}', expected '1|$expected'"
[[ $expected == "gpuvet: GPU1 lost ("* ]] || fail "unexpected reason '$expected'"
((${#expected} <= 80)) || fail "reason longer than 80 characters"
echo "ok: degraded node: die 1 \"$expected\""

DIED=()
echo "nonsense = [" >"$T/bad.toml"
check_gpuvet_gate "$T/bad.toml" "${live[@]}" && fail "bad baseline: check passed"
[[ ${DIED[0]:-} == "1|gpuvet: unknown: "* ]] || fail "bad baseline: die '${DIED[0]:-}'"
echo "ok: bad baseline: die ${DIED[0]}"

DIED=()
check_gpuvet_gate && fail "no baseline: check passed"
[[ ${DIED[0]:-} == *"Syntax error"* ]] || fail "no baseline: die '${DIED[0]:-}'"
echo "ok: missing baseline argument is a syntax error"
echo PASS
