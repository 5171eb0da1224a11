#!/usr/bin/env python3
"""contrib/k8s/gpuvet-fleet-collect.yaml run as Kubernetes runs it.

The reporter DaemonSet's script runs for three nodes (NODE_NAME as the downward API sets it,
the container's paths from its env pointed at this machine: the gpuvet binary, a baseline, a
/host tree whose driver library is the fake NVML, a reports volume); it must write
nodes/<node>.json and nothing half-written. Then the CronJob's script runs twice on the same
volume: fleet.db and fleet-report.json (gpuvet.fleet/1, 3 nodes) appear, exit 0, and the
second run adds nothing.
Usage: contrib_k8s_fleet_test.py GPUVET FAKE_NVML_LIB SOURCE_DIR
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import yaml

gpuvet, fake_nvml, src = sys.argv[1:4]
scen = os.path.join(src, "tests", "scenarios")
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


docs = list(yaml.safe_load_all(open(os.path.join(src, "contrib", "k8s",
                                                  "gpuvet-fleet-collect.yaml"))))
kinds = {d["kind"]: d for d in docs}
check(set(kinds) == {"DaemonSet", "CronJob"}, "a DaemonSet and a CronJob")
ds = kinds["DaemonSet"]["spec"]["template"]["spec"]
cj = kinds["CronJob"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
check(kinds["CronJob"]["spec"]["concurrencyPolicy"] == "Forbid", "one fleet writer at a time")
claims = {v["persistentVolumeClaim"]["claimName"] for spec in (ds, cj)
          for v in spec["volumes"] if "persistentVolumeClaim" in v}
check(claims == {"gpuvet-reports"}, "both write the same claim")
reporter, fleet = ds["containers"][0], cj["containers"][0]
for c in (reporter, fleet):
    check(c["command"][:2] == ["/bin/sh", "-c"], f"{c['name']}: a shell script")
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    check("/reports" in mounts and not mounts["/reports"].get("readOnly"),
          f"{c['name']}: /reports mounted writable")
host_mounts = [m for m in reporter["volumeMounts"] if m["mountPath"].startswith("/host")]
check(host_mounts and all(m.get("readOnly") for m in host_mounts), "host mounts read-only")


def env_of(container):
    return {e["name"]: e.get("value") for e in container["env"]}


with tempfile.TemporaryDirectory() as t:
    def host_tree(node):
        # What the node's /host mounts show: its own host name, this machine's /sys, the
        # fake NVML as the driver's library.
        host = os.path.join(t, "host-" + node)
        libdir = os.path.join(host, "usr", "lib", "x86_64-linux-gnu")
        os.makedirs(libdir)
        os.makedirs(os.path.join(host, "proc", "sys", "kernel"))
        open(os.path.join(host, "proc", "sys", "kernel", "hostname"), "w").write(node + "\n")
        os.symlink("/sys", os.path.join(host, "sys"))
        os.symlink(os.path.abspath(fake_nvml), os.path.join(libdir, "libnvidia-ml.so.1"))
        return host

    reports = os.path.join(t, "reports")
    os.makedirs(reports)
    baseline = os.path.join(t, "baseline.toml")
    scenario = os.path.join(scen, "h200-1gpu-idle.json")
    base_env = dict(os.environ, GPUVET_FAKE_NVML_SCENARIO=scenario)
    subprocess.run([gpuvet, "baseline", "capture", "--nvml", fake_nvml, "--no-kernel-log",
                    "--sample-window", "0", "-o", baseline], env=base_env, check=True,
                   stdout=subprocess.DEVNULL, timeout=60)
    paths = {"GPUVET": gpuvet, "BASELINE": baseline, "REPORTS": reports}

    script = reporter["command"][2]
    declared = env_of(reporter)
    check(declared["GPUVET"] == "/opt/gpuvet/bin/gpuvet", "reporter runs the node's gpuvet")
    for node in ("gpu-node-1", "gpu-node-2", "gpu-node-3"):
        env = {**base_env, **{k: v for k, v in declared.items() if v is not None}, **paths,
               "HOST_ROOT": host_tree(node), "NODE_NAME": node}
        p = subprocess.Popen(["/bin/sh", "-c", script], env=env, start_new_session=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out = os.path.join(reports, "nodes", node + ".json")
        deadline = time.monotonic() + 60
        try:
            while time.monotonic() < deadline and not os.path.exists(out) and p.poll() is None:
                time.sleep(0.05)
        finally:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)
        check(os.path.exists(out), f"{node}: the reporter wrote nodes/{node}.json")
        if os.path.exists(out):
            d = json.load(open(out))
            check(d["schema"] == "gpuvet.gate/1" and d["verdict"] == "pass" and
                  d["host"] == node, f"{node}: a passing gpuvet.gate/1 report of {d['host']}")
    left = [f for f in os.listdir(os.path.join(reports, "nodes")) if not f.endswith(".json")]
    check(left == [], f"no half-written report left ({left})")

    job = fleet["command"][2]
    job_env = {**os.environ, **env_of(fleet), "GPUVET": gpuvet, "REPORTS": reports}
    for run in (1, 2):
        p = subprocess.run(["/bin/sh", "-c", job], env=job_env, capture_output=True, text=True,
                           timeout=120)
        check(p.returncode == 0, f"job run {run}: exit {p.returncode} {p.stderr.strip()}")
        added = "3 added" if run == 1 else "0 added, 3 already there"
        check(added in p.stdout, f"job run {run}: '{added}' in '{p.stdout.strip()}'")
    r = json.load(open(os.path.join(reports, "fleet-report.json")))
    check(r["schema"] == "gpuvet.fleet/1" and r["nodes"] == 3 and r["outliers"] == [],
          "fleet-report.json: gpuvet.fleet/1, 3 nodes, no outlier")

print("FAIL" if failures else "PASS")
sys.exit(1 if failures else 0)
