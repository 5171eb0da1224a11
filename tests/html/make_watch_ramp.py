#!/usr/bin/env python3
"""Turns a real `gpuvet watch --record` file into the same node watched for 4 minutes under
load, with one GPU that warms up and loses its clocks: the input of the HTML report's browser
test (tests/html/html_report_chromium_test.sh), judged again by `gpuvet diagnose --from`.

Usage: make_watch_ramp.py RECORD.json OUT.json

Everything but the series comes from the recording (the node's facts, as gpuvet wrote them);
the series is synthetic and deterministic: every GPU busy at 1 Hz for 240 s at its max clock,
near its power limit; the last GPU warms from 62 to 86 °C from t = 90 s, its SM clock falls by
about a quarter with sw_thermal_slowdown and then sw_power_cap in force; GPU1 has no sample for
12 s (a gap the figures must show); the host's CPU pressure rises with the heat.
"""
import json
import sys

src, out = sys.argv[1], sys.argv[2]
with open(src) as f:
    doc = json.load(f)
gpus = [g["index"] for g in doc["gpus"]]
hot = gpus[-1]
samples, host = [], []
for t in range(240):
    for g in gpus:
        if g == 1 and 150 <= t < 162:
            continue
        ramp = min(max((t - 90) / 90.0, 0.0), 1.0) if g == hot else 0.0
        mask = 0
        if ramp > 0.2:
            mask |= 0x20  # sw_thermal_slowdown
        if ramp > 0.6:
            mask |= 0x04  # sw_power_cap
        samples.append({
            "gpu": g, "t_s": float(t),
            "sm_mhz": int(1980 - 500 * ramp - (t % 7)),
            "gpu_c": int(62 + 24 * ramp + (t % 3)),
            "power_w": round(640.0 + 40 * ramp + (t % 5), 1),
            "util_pct": 100,
            "clock_event_mask": mask,
            "mem_mhz": 2619, "margin_c": int(23 - 24 * ramp), "power_limit_w": 700.0,
        })
    host.append({"t_s": float(t), "psi_cpu_some_pct": round(2 + 10 * (t / 240.0), 2),
                 "psi_io_some_pct": 0.5, "psi_memory_some_pct": 0.0})
doc["samples"] = samples
doc["host_samples"] = host
doc["tool"]["command"] = "watch"
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
