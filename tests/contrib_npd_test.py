#!/usr/bin/env python3
"""contrib/k8s/gpuvet-npd-plugin.json run as node-problem-detector runs it.

Each rule's command (path + args, exactly as configured) is run with the container's paths
mapped onto this machine: the gpuvet binary, the baseline ConfigMap and /host (a tree whose
proc and sys are this machine's and whose driver library is the fake NVML, chosen by
GPUVET_FAKE_NVML_SCENARIO). NPD reads exit 0 as OK, 1 as NonOK, anything else as Unknown, and
keeps max_output_length characters of stdout: the message must be one line that fits.
Usage: contrib_npd_test.py GPUVET FAKE_NVML_LIB SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

gpuvet, fake_nvml, src = sys.argv[1:4]
scen = os.path.join(src, "tests", "scenarios")
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


cfg = json.load(open(os.path.join(src, "contrib", "k8s", "gpuvet-npd-plugin.json")))
check(cfg["plugin"] == "custom", "plugin is custom")
pc = cfg["pluginConfig"]
check(pc["max_output_length"] == 80, "max_output_length 80")
secs = lambda s: float(s.rstrip("s"))
check(secs(pc["timeout"]) < secs(pc["invoke_interval"]), "timeout below the invoke interval")
check(int(pc["concurrency"]) >= 1, "concurrency set")
rules = cfg["rules"]
perm = [r for r in rules if r["type"] == "permanent"]
check(len(perm) == 1 and perm[0]["condition"] == "GpuvetUnhealthy",
      "one permanent rule on condition GpuvetUnhealthy")
check(any(r["type"] == "temporary" for r in rules), "a temporary rule")
check(any(c["type"] == "GpuvetUnhealthy" for c in cfg["conditions"]), "condition declared")

with tempfile.TemporaryDirectory() as t:
    host = os.path.join(t, "host")
    libdir = os.path.join(host, "usr", "lib", "x86_64-linux-gnu")
    os.makedirs(libdir)
    os.symlink("/proc", os.path.join(host, "proc"))
    os.symlink("/sys", os.path.join(host, "sys"))
    os.symlink(os.path.abspath(fake_nvml), os.path.join(libdir, "libnvidia-ml.so.1"))
    baseline = os.path.join(t, "baseline.toml")
    env = dict(os.environ, GPUVET_FAKE_NVML_SCENARIO=os.path.join(scen, "h200-1gpu-idle.json"))
    subprocess.run([gpuvet, "baseline", "capture", "--nvml", fake_nvml, "--no-kernel-log",
                    "--sample-window", "0", "-o", baseline], env=env, check=True,
                   stdout=subprocess.DEVNULL, timeout=60)
    bad = os.path.join(t, "bad.toml")
    open(bad, "w").write("[expect]\ngpu_count = \"many\"\n")
    mapping = {"/opt/gpuvet/bin/gpuvet": gpuvet, "/etc/gpuvet/baseline.toml": baseline,
               "/host": host}

    def mapped(arg, baseline_file):
        if arg == "/etc/gpuvet/baseline.toml":
            return baseline_file
        for k, v in mapping.items():
            if arg == k or arg.startswith(k + "/"):
                return v + arg[len(k):]
        return arg

    cases = [("healthy", "h200-1gpu-idle.json", baseline, 0),
             ("degraded", "fault-gpu-lost.json", baseline, 1),
             ("unusable (bad baseline)", "h200-1gpu-idle.json", bad, 2)]
    for rule in rules:
        argv = [rule["path"]] + rule.get("args", [])
        for name, scenario, base, want in cases:
            run_argv = [mapped(a, base) for a in argv]
            env = dict(os.environ, GPUVET_FAKE_NVML_SCENARIO=os.path.join(scen, scenario))
            p = subprocess.run(run_argv, env=env, capture_output=True, text=True,
                               timeout=secs(rule.get("timeout", pc["timeout"])) + 30)
            first = p.stdout.split("\n", 1)[0]
            what = f"{rule['type']} rule, {name}: exit {p.returncode} '{first}'"
            check(p.returncode == want, what + f" (want exit {want})")
            check(0 < len(first) <= pc["max_output_length"] and first.startswith("gpuvet: "),
                  f"{rule['type']} rule, {name}: first line starts 'gpuvet: ', <= 80 chars")
            check(p.stdout.count("\n") <= 1, f"{rule['type']} rule, {name}: one line")

print("FAIL" if failures else "PASS")
sys.exit(1 if failures else 0)
