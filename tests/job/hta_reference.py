#!/usr/bin/env python3
"""Independent reference figures for PyTorch profiler (Kineto) Chrome-trace files.

Standard library only.  Usage:

    python3 tests/job/hta_reference.py TRACE.json[.gz] [TRACE2 ...] > out.md

For each trace it prints Markdown tables with
  * our own figures, for the whole trace and for each ProfilerStep#N span:
    step wall time, exclusive GPU buckets (compute / exposed communication /
    memory-only / idle) on the union of all streams of the trace's GPU, the
    communication union and the share of it overlapped by compute, kernel count
    and median kernel duration;
  * straggler inputs per step (NCCL kernel time, offset of the first NCCL
    kernel from the step start);
  * a re-computation of Holistic Trace Analysis' (HTA) own definitions
    (temporal breakdown, comm-comp overlap, idle time breakdown), as described
    in docs/job-definitions-hta.md.  This is our own code, not HTA's.
With several files it also prints one cross-rank straggler table.
Trace timestamps are microseconds; every figure is printed in ms unless noted.
"""
import gzip
import json
import math
import re
import statistics
import sys

STEP_RE = re.compile(r"^ProfilerStep#(\d+)")
MEM_CATS = {"gpu_memcpy", "gpu_memset", "memcpy", "memset"}
# HTA's kernel-type name rules (hta/common/types.py), restated as prefix / substring tests.
HTA_COMM_PREFIX = ("nccl", "hip", "hccl")
HTA_MEM_PREFIX = ("Memcpy", "Memset", "hipMemcpy", "hipMemset", "dma")
HTA_NOT_COMPUTE_PREFIX = ("nccl", "hip", "hccl", "Stream Wait Event", "runFunction", "job_exe", "packet",
                          "pe_exe", "cpum_exe_subgraph", "collective_subgraph_execution")
HTA_NOT_COMPUTE_SUBSTR = ("Memcpy", "Memset", "dma", "Sync")
HTA_IDLE_CATS = {"kernel", "Kernel", "gpu_memset", "Memset", "gpu_memcpy", "Memcpy", "mtia_ccp_events"}
HTA_KERNEL_DELAY = 30  # HTA's default consecutive_kernel_delay, in trace units (us)


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        doc = json.load(fh)
    return {"traceEvents": doc} if isinstance(doc, list) else doc


# ---------- interval arithmetic on sorted, disjoint [start, end) lists ----------
def union(ivs):
    out = []
    for s, e in sorted(iv for iv in ivs if iv[1] > iv[0]):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def intersect(a, b):
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append([s, e])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def length(ivs):
    return sum(e - s for s, e in ivs)


def clip(ivs, lo, hi):
    return intersect(ivs, [[lo, hi]])


# ---------- event helpers ----------
def is_complete(e):
    return isinstance(e, dict) and e.get("ph", "X") == "X" and isinstance(e.get("dur"), (int, float)) \
        and isinstance(e.get("ts"), (int, float)) and e["dur"] >= 0


def args(e):
    a = e.get("args")
    return a if isinstance(a, dict) else {}


def gpu_kind(e):
    """Our classification: 'comm', 'compute', 'memory' or None (not a GPU activity)."""
    cat = str(e.get("cat", "")).lower()
    if cat == "kernel":
        return "comm" if "nccl" in str(e.get("name", "")).lower() else "compute"
    if cat in MEM_CATS:
        return "memory"
    return None


def ms(us):
    return us / 1000.0


def fmt(x, nd=3):
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def pfmt(x, nd=1, missing="n/a"):
    return missing if x is None or math.isnan(x) else f"{x:.{nd}f}%"


def pct(part, whole):
    return None if not whole else 100.0 * part / whole


# ---------- our own figures ----------
def window_figures(gpu, lo, hi):
    comp = clip(gpu["compute"], lo, hi)
    comm = clip(gpu["comm"], lo, hi)
    mem = clip(gpu["memory"], lo, hi)
    comp_comm = union(comp + comm)
    busy = union(comp_comm + mem)
    wall = hi - lo
    overlap = length(intersect(comm, comp))
    durs = sorted(d for s, d in gpu["kernel_starts"] if lo <= s < hi)
    return {
        "wall": wall, "compute": length(comp), "exposed_comm": length(comm) - overlap,
        "mem_only": length(busy) - length(comp_comm), "idle": wall - length(busy),
        "comm": length(comm), "overlap_share": pct(overlap, length(comm)),
        "kernels": len(durs), "median_kernel": statistics.median(durs) if durs else None,
    }


def analyse_own(events):
    xs = [e for e in events if is_complete(e)]
    # choose the GPU: device id (args.device, else pid) with the most GPU activities
    devs = {}
    for e in xs:
        if gpu_kind(e):
            d = args(e).get("device", e.get("pid"))
            devs[d] = devs.get(d, 0) + 1
    device = max(devs, key=devs.get) if devs else None
    raw = {"compute": [], "comm": [], "memory": []}
    gpu = {"kernel_starts": [], "comm_kernels": [], "device": device, "devices": devs}
    for e in xs:
        k = gpu_kind(e)
        if not k or args(e).get("device", e.get("pid")) != device:
            continue
        iv = [e["ts"], e["ts"] + e["dur"]]
        raw[k].append(iv)
        if k != "memory":
            gpu["kernel_starts"].append((e["ts"], e["dur"]))
        if k == "comm":
            gpu["comm_kernels"].append(e)
    for k, v in raw.items():
        gpu[k] = union(v)
    steps = {}
    for e in xs:
        m = STEP_RE.match(str(e.get("name", "")))
        if m and str(e.get("cat", "")).lower() in ("user_annotation", "cpu_op"):
            prev = steps.get(e["name"])
            if prev is None or e["ts"] < prev["ts"]:
                steps[e["name"]] = e
    steps = sorted(steps.values(), key=lambda e: e["ts"])
    lo = min(e["ts"] for e in xs) if xs else 0
    hi = max(e["ts"] + e["dur"] for e in xs) if xs else 0
    # launch time of each GPU activity: CPU-side event with the same args.correlation
    launch = {}
    for e in xs:
        if gpu_kind(e) is None and str(e.get("cat", "")).lower() in ("cuda_runtime", "runtime", "cuda_driver"):
            c = args(e).get("correlation")
            if c is not None:
                launch[c] = e["ts"]
    return gpu, steps, (lo, hi), launch


def straggler_row(gpu, step, launch):
    s0, s1 = step["ts"], step["ts"] + step["dur"]
    ks = []
    for k in gpu["comm_kernels"]:
        t = launch.get(args(k).get("correlation"), k["ts"])  # launched in the step; else starts in it
        if s0 <= t < s1:
            ks.append(k)
    if not ks:
        return {"n": 0, "sum": 0.0, "union": 0.0, "first": None, "last_end": None}
    return {"n": len(ks), "sum": sum(k["dur"] for k in ks),
            "union": length(union([[k["ts"], k["ts"] + k["dur"]] for k in ks])),
            "first": min(k["ts"] for k in ks) - s0,
            "last_end": max(k["ts"] + k["dur"] for k in ks) - s0}


# ---------- HTA's definitions, re-implemented ----------
def hta_merge(ivs):
    """Like HTA's merge_kernel_intervals: sort by start, a new group starts when
    start > running max of earlier ends; each group is (min start, max end)."""
    groups = []
    run_max = None
    for s, e in sorted(ivs, key=lambda x: x[0]):
        if groups and not s > run_max:
            groups[-1][1] = max(groups[-1][1], e)
        else:
            groups.append([s, e])
        run_max = e if run_max is None else max(run_max, e)
    return groups


def hta_kernel_type(name):
    if name.startswith(HTA_COMM_PREFIX) or "ncclKernel" in name:
        return "COMMUNICATION"
    if name.startswith(HTA_MEM_PREFIX):
        return "MEMORY"
    launch_like = name.startswith("cuda") and "LaunchKernel" in name[4:]
    if not (name.startswith(HTA_NOT_COMPUTE_PREFIX) or launch_like
            or any(x in name for x in HTA_NOT_COMPUTE_SUBSTR)):
        return "COMPUTATION"
    return "OTHER"


def analyse_hta(events):
    evs = [e for e in events if isinstance(e, dict)]
    # HTA rounds every timestamp when the ts column is not integral (any float or missing ts)
    rounding = any(not isinstance(e.get("ts"), int) or isinstance(e.get("ts"), bool) for e in evs)
    rows = []
    for e in evs:
        if e.get("dur") is None or e.get("cat") is None or e.get("cat") == "Trace":
            continue
        ts, dur = e.get("ts"), e["dur"]
        if not isinstance(ts, (int, float)):
            continue
        if rounding:
            end = math.floor(ts + dur)
            ts = math.ceil(ts)
            dur = end - ts
        a = args(e)
        try:
            stream = int(a.get("stream", -1))
        except (TypeError, ValueError):
            stream = -1
        corr = a.get("correlation", -1)
        name = str(e.get("name", ""))
        gpu = (stream >= 0 and isinstance(corr, (int, float)) and corr >= 0) or name in ("Event Sync", "Context Sync")
        rows.append({"ts": ts, "end": ts + dur, "stream": stream, "corr": corr, "name": name,
                     "cat": e["cat"], "gpu": gpu})
    step_names = {r["name"] for r in rows if STEP_RE.match(r["name"])}
    filtered = len(step_names) >= 2
    if filtered:  # drop the last ProfilerStep and everything launched from it or later
        cpu = [r for r in rows if not r["gpu"]]
        ps = [r["ts"] for r in cpu if r["name"] in step_names]
        last_start = max(ps) if ps else min(r["ts"] for r in cpu)
        cpu = [r for r in cpu if r["ts"] < last_start]
        corrs = {r["corr"] for r in cpu}
        rows = [r for r in rows if r["gpu"] and r["corr"] in corrs] + cpu
    ks = [r for r in rows if r["stream"] != -1]
    out = {"filtered": filtered, "rounded": rounding, "kernels": len(ks)}
    if not ks:
        return out
    merged = hta_merge([(r["ts"], r["end"]) for r in ks])
    kernel_time = merged[-1][1] - merged[0][0]
    idle = kernel_time - sum(e - s for s, e in merged)
    types = {}
    for r in ks:
        types.setdefault(hta_kernel_type(r["name"]), []).append((r["ts"], r["end"]))
    comp = hta_merge(types.get("COMPUTATION", []))
    comm = hta_merge(types.get("COMMUNICATION", []))
    compute = sum(e - s for s, e in comp)
    comm_len = sum(e - s for s, e in comm)
    overlap = length(intersect(comm, comp))
    out.update(kernel_time=kernel_time, idle=idle, compute=compute,
               non_compute=kernel_time - compute - idle,
               overlap_pct=pct(overlap, comm_len) if comm_len else float("nan"),
               types={t: len(v) for t, v in types.items()})
    # idle time breakdown per stream (host wait / kernel wait / other)
    launch = {}
    for r in rows:
        if not r["gpu"] and r["corr"] != -1:
            launch[r["corr"]] = r["ts"]  # the last CPU event with that correlation wins, as in HTA
    per_stream = {}
    for r in sorted((r for r in ks if r["cat"] in HTA_IDLE_CATS), key=lambda r: r["ts"]):
        st = per_stream.setdefault(r["stream"], {"host_wait": 0, "kernel_wait": 0, "other": 0, "prev": None})
        if st["prev"] is not None:
            gap = r["ts"] - st["prev"]
            rt = launch.get(r["corr"])
            if rt is not None and rt > st["prev"]:
                st["host_wait"] += gap
            elif gap < HTA_KERNEL_DELAY:
                st["kernel_wait"] += gap
            else:
                st["other"] += gap
        st["prev"] = r["end"]
    out["idle_breakdown"] = per_stream
    return out


# ---------- report ----------
def report(path):
    doc = load(path)
    events = doc.get("traceEvents", [])
    dist = doc.get("distributedInfo", {}) or {}
    gpu, steps, (lo, hi), launch = analyse_own(events)
    props = {p.get("id"): p.get("name") for p in doc.get("deviceProperties", []) or [] if isinstance(p, dict)}
    print(f"### `{path}`\n")
    print(f"rank {dist.get('rank', '?')} of world_size {dist.get('world_size', '?')}, backend "
          f"{dist.get('backend', '?')}, nccl_version {dist.get('nccl_version', 'absent')}; "
          f"GPU device {gpu['device']} = {props.get(gpu['device'], 'no deviceProperties')}; "
          f"{len(events)} events, {len(steps)} ProfilerStep spans; GPU activities per device {gpu['devices']}\n")
    print("Own figures (ms; shares in % of the window; compute + exposed comm + mem-only + idle = wall):\n")
    print("| window | wall | compute | exposed comm | mem-only | idle | comm union | comm∩comp / comm | kernels | median kernel (us) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = [("whole trace", window_figures(gpu, lo, hi))]
    rows += [(s["name"], window_figures(gpu, s["ts"], s["ts"] + s["dur"])) for s in steps]
    for label, f in rows:
        print(f"| {label} | {fmt(ms(f['wall']))} | " + " | ".join(
            f"{fmt(ms(f[k]))} ({pfmt(pct(f[k], f['wall']))})" for k in ("compute", "exposed_comm", "mem_only", "idle"))
            + f" | {fmt(ms(f['comm']))} | {pfmt(f['overlap_share'])} | {f['kernels']} | {fmt(f['median_kernel'], 2)} |")
    if len(rows) > 1:
        sf = [f for _, f in rows[1:]]

        def med(k):
            vals = [f[k] for f in sf if f[k] is not None]
            return statistics.median(vals) if vals else None
        m = {k: med(k) for k in sf[0]}
        print(f"| median over steps | {fmt(ms(m['wall']))} | " + " | ".join(
            f"{fmt(ms(m[k]))} ({pfmt(pct(m[k], m['wall']))})" for k in ("compute", "exposed_comm", "mem_only", "idle"))
            + f" | {fmt(ms(m['comm']))} | {pfmt(m['overlap_share'])} | {fmt(m['kernels'], 1)} | {fmt(m['median_kernel'], 2)} |")
    print()
    strag = {}
    if steps:
        print("Straggler inputs (NCCL kernels launched inside the step's CPU span; offsets from the step start, ms):\n")
        print("| step | NCCL kernels | NCCL sum | NCCL union | first NCCL start | last NCCL end |")
        print("|---|---|---|---|---|---|")
        for s in steps:
            r = straggler_row(gpu, s, launch)
            strag[s["name"]] = (s, r)
            print(f"| {s['name']} | {r['n']} | {fmt(ms(r['sum']))} | {fmt(ms(r['union']))} | "
                  f"{fmt(None if r['first'] is None else ms(r['first']))} | "
                  f"{fmt(None if r['last_end'] is None else ms(r['last_end']))} |")
        print()
    h = analyse_hta(events)
    print(f"HTA definitions (re-implemented; last-step filter applied: {h['filtered']}, "
          f"ns rounding applied: {h['rounded']}, kernels kept: {h['kernels']}):\n")
    if "kernel_time" in h:
        kt = h["kernel_time"]
        print("| kernel_time | idle | compute | non-compute | comm-comp overlap | kernel types |")
        print("|---|---|---|---|---|---|")
        print(f"| {fmt(ms(kt))} | {fmt(ms(h['idle']))} ({pfmt(pct(h['idle'], kt), 2)}) | "
              f"{fmt(ms(h['compute']))} ({pfmt(pct(h['compute'], kt), 2)}) | "
              f"{fmt(ms(h['non_compute']))} ({pfmt(pct(h['non_compute'], kt), 2)}) | "
              f"{pfmt(h['overlap_pct'], 2, 'NaN (no comm kernels)')} | {h['types']} |\n")
        print("HTA idle time breakdown (ms, threshold 30 us):\n")
        print("| stream | host wait | kernel wait | other |")
        print("|---|---|---|---|")
        for st, v in sorted(h["idle_breakdown"].items()):
            print(f"| {st} | {fmt(ms(v['host_wait']))} | {fmt(ms(v['kernel_wait']))} | {fmt(ms(v['other']))} |")
        print()
    return dist.get("rank", path), strag


def main(paths):
    if not paths:
        sys.exit(__doc__)
    per_rank = [report(p) for p in paths]
    if len(per_rank) > 1:
        print("### Cross-rank straggler view (step start = CPU ProfilerStep ts, us since the epoch of each trace's clock)\n")
        print("| step | rank | step start (us) | step wall (ms) | NCCL sum (ms) | first NCCL start (ms after step start) |")
        print("|---|---|---|---|---|---|")
        names = sorted({n for _, s in per_rank for n in s}, key=lambda n: int(STEP_RE.match(n).group(1)))
        for n in names:
            for rank, s in per_rank:
                if n in s:
                    st, r = s[n]
                    print(f"| {n} | {rank} | {st['ts']} | {fmt(ms(st['dur']))} | {fmt(ms(r['sum']))} | "
                          f"{fmt(None if r['first'] is None else ms(r['first']))} |")
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
