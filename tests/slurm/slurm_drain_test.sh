#!/usr/bin/env bash
# A real one-node Slurm cluster on 127.0.0.1 (munged, slurmctld, slurmd from Debian's packages,
# private ports, state in a temporary directory) whose HealthCheckProgram is
# contrib/slurm/gpuvet-healthcheck running `gpuvet gate --drain slurm` against a fake-NVML
# node. Checks, through sinfo, that:
#   1. a degraded node is drained with a "gpuvet:" reason;
#   2. the same node, healthy again, is resumed (idle);
#   3. a drain set by someone else is never cleared by gpuvet, even when healthy;
#   4. `srun -N1 gpuvet gate --json` collects a gpuvet.gate/1 document through Slurm;
#   5. the fleet pattern: srun writes one report per node (--output=DIR/%N.json) that
#      `gpuvet fleet ingest` and `gpuvet fleet report` read.
# Usage: slurm_drain_test.sh GPUVET FAKE_NVML_LIB SOURCE_DIR
# Exits 77 (skipped) when not root or the Slurm/MUNGE programs are missing.
set -uo pipefail
gpuvet=$1 fake_nvml=$2 src=$3
# shellcheck source=cluster.sh
source "$(dirname "$0")/cluster.sh"
started=$(date +%s)
cluster_prepare

# The node: a baseline captured from a healthy fake node; the scenario the health check sees
# is the file named in $T/scenario, which the test switches.
scen=$src/tests/scenarios
live_args="--nvml $fake_nvml --no-kernel-log --sample-window 0"
# shellcheck disable=SC2086
GPUVET_FAKE_NVML_SCENARIO=$scen/h200-1gpu-idle.json "$gpuvet" baseline capture $live_args \
  -o "$T/baseline.toml" >/dev/null || fail "baseline capture failed"
echo "$scen/fault-gpu-lost.json" >"$T/scenario"
cat >"$T/gpuvet.env" <<EOF
GPUVET=$gpuvet
GPUVET_BASELINE=$T/baseline.toml
GPUVET_GATE_ARGS="$live_args"
SLURM_CONF=$T/slurm.conf
GPUVET_FAKE_NVML_SCENARIO=\$(cat $T/scenario)
EOF
cat >"$T/healthcheck" <<EOF
#!/bin/sh
echo "\$(date +%T) run" >>$T/healthcheck.log
GPUVET_ENV_FILE=$T/gpuvet.env $src/contrib/slurm/gpuvet-healthcheck >>$T/healthcheck.log 2>&1
echo "\$(date +%T) rc=\$?" >>$T/healthcheck.log
EOF
chmod 755 "$T/healthcheck"

SLURM_EXTRA_CONF="HealthCheckProgram=$T/healthcheck
HealthCheckInterval=2
HealthCheckNodeState=ANY"
cluster_start

# Degraded (fault-gpu-lost: GPUs missing against the baseline): drained by gpuvet.
wait_for 90 '^drain(ed|ing)[^ ]* .*\[gpuvet\]$' "degraded node drained with a gpuvet reason"
line=$(node_state)
[[ $line == *"GPU1 lost +"*"[gpuvet]" ]] || fail "the drain reason does not name what failed: $line"
# The cause fits sinfo -R's default REASON column (20 characters), the marker after it.
reason=$(timeout 10 sinfo -h -R -N -o "%20E" | head -1)
[[ $reason == "GPU1 lost +"* ]] || fail "sinfo -R's REASON column does not show the cause: '$reason'"

# Healthy again: gpuvet resumes its own drain.
echo "$scen/h200-1gpu-idle.json" >"$T/scenario"
wait_for 60 '^idle[^ ]* ' "healthy node resumed"

# A drain set by someone else is kept, even while gpuvet passes the node.
timeout 10 scontrol update nodename="$host" state=drain reason="admin: bad fan" ||
  fail "scontrol update by the admin failed"
runs_before=$(grep -c ' rc=' "$T/healthcheck.log")
for _ in $(seq 60); do
  (($(grep -c ' rc=' "$T/healthcheck.log") >= runs_before + 2)) && break
  sleep 1
done
(($(grep -c ' rc=' "$T/healthcheck.log") >= runs_before + 2)) ||
  fail "the health check did not run twice after the admin's drain"
line=$(node_state)
[[ $line =~ ^drain(ed|ing)[^\ ]*\ admin:\ bad\ fan$ ]] || fail "the admin's drain was changed: $line"
echo "ok: admin's drain kept while healthy: $line"
# ... and while unhealthy: gpuvet does not overwrite the admin's reason.
echo "$scen/fault-gpu-lost.json" >"$T/scenario"
runs_before=$(grep -c ' rc=' "$T/healthcheck.log")
for _ in $(seq 60); do
  (($(grep -c ' rc=' "$T/healthcheck.log") >= runs_before + 2)) && break
  sleep 1
done
line=$(node_state)
[[ $line =~ ^drain(ed|ing)[^\ ]*\ admin:\ bad\ fan$ ]] || fail "the admin's reason was overwritten: $line"
grep -q "drained by someone else" "$T/healthcheck.log" ||
  fail "the health check did not say it kept someone else's drain"
echo "ok: admin's drain kept while unhealthy: $line"

# Collection through Slurm: srun runs the gate on the node and its JSON comes back.
echo "$scen/h200-1gpu-idle.json" >"$T/scenario"
timeout 10 scontrol update nodename="$host" state=resume || fail "resume by the admin failed"
wait_for 30 '^idle[^ ]* ' "node idle for the collection job"
# shellcheck disable=SC2086
GPUVET_FAKE_NVML_SCENARIO=$scen/h200-1gpu-idle.json timeout 60 srun -N1 -n1 -t 1 \
  "$gpuvet" gate --json --baseline "$T/baseline.toml" $live_args >"$T/collected.json" \
  2>"$T/srun.log" || fail "srun gpuvet gate --json failed: $(cat "$T/srun.log")"
python3 - "$T/collected.json" <<'EOF' || fail "srun's output is not a passing gpuvet.gate/1 document"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuvet.gate/1", d.get("schema")
assert d["verdict"] == "pass", d.get("verdict")
assert d["reason"].startswith("gpuvet: ") and len(d["reason"]) <= 80, d["reason"]
EOF
echo "ok: srun -N1 gpuvet gate --json: a passing gpuvet.gate/1 document"

# The fleet workflow (README): every node writes DIR/<node>.json through srun, one ingest.
mkdir -m 777 "$T/gates"
# shellcheck disable=SC2086
GPUVET_FAKE_NVML_SCENARIO=$scen/h200-1gpu-idle.json timeout 60 srun -N1 -n1 -t 1 \
  --output="$T/gates/%N.json" "$gpuvet" gate --json --baseline "$T/baseline.toml" $live_args \
  2>"$T/srun.log" || fail "srun --output=%N.json gpuvet gate --json failed: $(cat "$T/srun.log")"
[[ -s $T/gates/$host.json ]] || fail "srun wrote no $T/gates/$host.json: $(ls "$T/gates")"
"$gpuvet" fleet ingest "$T/fleet.db" "$T/gates" >"$T/ingest.log" 2>&1 ||
  fail "fleet ingest of srun's reports failed: $(cat "$T/ingest.log")"
"$gpuvet" fleet report "$T/fleet.db" --json >"$T/fleet.json" 2>"$T/fleet.log" ||
  fail "fleet report failed (exit $?): $(cat "$T/fleet.log")"
python3 - "$T/fleet.json" <<'EOF' || fail "the fleet report does not hold the node srun reported"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuvet.fleet/1", d.get("schema")
assert d["nodes"] == 1 and d["documents"] == 1, (d["nodes"], d["documents"])
assert d["groups"][0]["gate"]["pass"] == 1, d["groups"]
assert d["outliers"] == [], d["outliers"]
EOF
echo "ok: srun --output=%N.json, fleet ingest, fleet report: the node's report is in the history"
# The README's drain pipeline, end to end, with a hostile host name in the input (E3). Four
# peers like this node, this node, and a report whose host is "evil<newline><this node>" with a
# narrower link (an outlier). The hostile report is refused at ingest, so nothing is drained,
# least of all this healthy node; then this node's own report turns narrow and the same
# pipeline drains it, by its name, with the README's reason, which the node's own passing
# health check does not take for its own and so does not resume.
# The README's command, verbatim but for the database; its status is xargs's (scontrol's),
# as in an interactive shell: `fleet report` exits 2 when it finds an outlier.
fleet_pipeline() (
  set +o pipefail
  "$gpuvet" fleet report "$1" --json | jq -j '.outliers[] | select(.drain) | .host + "\u0000"' |
    xargs -0 -r -I{} scontrol update nodename={} state=drain reason="fleet outlier (gpuvet fleet)"
)
mkdir -p "$T/fleet2"
python3 - "$T/gates/$host.json" "$T/fleet2" "$host" <<'EOF' || fail "could not write the fleet reports"
import copy, json, sys
src, out, host = sys.argv[1], sys.argv[2], sys.argv[3]
doc = json.load(open(src))
def write(name, h, width=None):
    d = copy.deepcopy(doc)
    d["host"] = h
    d["node"]["host"] = h
    if width is not None:
        for g in d["node"]["gpus"]:
            g["pcie_width"] = width
    json.dump(d, open(f"{out}/{name}.json", "w"))
for i in range(4):
    write(f"peer{i}", f"peer{i}")
write(host, host)
write("hostile", f"evil\n{host}", width=8)
EOF
"$gpuvet" fleet ingest "$T/fleet2.db" "$T/fleet2" >"$T/ingest2.log" 2>&1
rc=$?
((rc == 3)) || fail "ingest with a hostile host name: exit $rc (want 3, the document refused)"
grep -q "not a plain host name" "$T/ingest2.log" || fail "ingest did not say why: $(cat "$T/ingest2.log")"
fleet_pipeline "$T/fleet2.db" || fail "the README pipeline failed on the fleet with a hostile report"
sleep 2
line=$(node_state)
[[ $line == idle* ]] || fail "a healthy node was drained through a hostile host name: $line"
echo "ok: README drain pipeline: the hostile report refused, the healthy node left alone ($line)"
python3 - "$T/gates/$host.json" "$T/fleet2-narrow.json" <<'EOF' || fail "could not write the narrow report"
import json, sys
d = json.load(open(sys.argv[1]))
d["collected_unix"] += 60
for g in d["node"]["gpus"]:
    g["pcie_width"] = 8
json.dump(d, open(sys.argv[2], "w"))
EOF
"$gpuvet" fleet ingest "$T/fleet2.db" "$T/fleet2-narrow.json" >>"$T/ingest2.log" 2>&1 ||
  fail "ingest of the narrow report failed: $(cat "$T/ingest2.log")"
fleet_pipeline "$T/fleet2.db" || fail "the README pipeline failed"
wait_for 30 '^drain(ed|ing)[^ ]* fleet outlier \(gpuvet fleet\)$' "the outlier drained by the README pipeline"
# Not gate's own reason: the node's passing health check (every 2 s) leaves the drain alone.
# Waits for two more completed health checks (their "rc=" lines), not a fixed time.
checks_done() { grep -c ' rc=' "$T/healthcheck.log" 2>/dev/null || echo 0; }
before=$(checks_done)
for _ in $(seq 300); do (($(checks_done) >= before + 2)) && break; sleep 0.1; done
(($(checks_done) >= before + 2)) || fail "no two health checks ran within 30 s"
line=$(node_state)
[[ $line == drain*"fleet outlier (gpuvet fleet)" ]] || fail "the health check undid the fleet drain: $line"
timeout 10 scontrol update nodename="$host" state=resume
echo "ok: README drain pipeline: the narrow node drained by name, kept through health checks"
echo "PASS in $(($(date +%s) - started)) s"
