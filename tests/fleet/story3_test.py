#!/usr/bin/env python3
"""Story 3 end to end: a fleet of 204 nodes of two server models, gated twice, and the fleet
report that must name exactly the nodes that drifted.

The fleet (every node a fake-NVML scenario and a --root tree that gives it its host name):
  model A  120 x "8 x L40S" (tests/scenarios/fleet-model-a.json): GPUs under one PCIe
           switch are PIX with P2P OK.
  model B   84 x "4 x H100, NVLink between the GPUs" (tests/scenarios/4gpu-nvlink-direct.json).
Drift in round 2:
  board revision  12 nodes of model A whose switched pairs now cross SYS and lost P2P (NS);
  x8 link          3 other nodes (2 of model B, 1 of model A): one GPU at PCIe x8 instead of
                   x16, so its host<->device bandwidth is about half.
Everything else differs only by noise: every bandwidth is scaled by a seeded random +-2 %.

Each node gets a `gpuvet.bench/1` document (the shape `gpuvet bench --json` writes) with h2d
and d2h per GPU and peer reads per pair. Per model, `gpuvet baseline capture` on one healthy
node makes the baseline, floors at 90 % of its bandwidth. Round 1 (every node healthy) and
round 2 (with the drift) gate every node with the real binary; then `gpuvet fleet ingest`
takes both rounds and `gpuvet fleet report --json` must name exactly the 15 drifted nodes,
with the right kinds, and no other.

A node is gated in two steps: `gpuvet facts --json` reads it live (the fake NVML, --root),
then `gpuvet gate --from FACTS --bench BENCH --profile full` judges it. A live gate takes no
saved bench (`--profile full` measures, which needs CUDA), so the saved bench goes with the
saved facts. The gate's `collected_unix` is the facts' (the system clock, nothing sets it),
so round 1 is only seconds older than round 2: the test waits for the clock's second to turn
between the rounds, so every round-2 report is strictly later, and ingests round 1 first.

Usage: story3_test.py GPUVET FAKE_NVML_LIB SOURCE_DIR
(GPUVET_STORY3_KEEP=1 keeps the temporary directory and prints where it is.)
"""
import concurrent.futures
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

SEED = 20261203
COUNT_A, COUNT_B = 120, 84
BOARD_REVISION_NODES = 12  # of model A
X8_NODES_B, X8_NODES_A = 2, 1
WORKERS = 2  # the CI machine has 2 cores
NOISE = 0.02  # bandwidth varies by +-2 % between healthy nodes and runs
MIB64 = 64 << 20

gpuvet, fake_nvml, src = (os.path.abspath(a) for a in sys.argv[1:4])
failures = []


def check(ok, what, detail=""):
    if not ok:
        failures.append(what + (("\n    " + detail.replace("\n", "\n    ")) if detail else ""))
    return ok


def run(argv, env=None, timeout=60):
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)


# --- the fleet -------------------------------------------------------------------------------

MODELS = {
    "A": {
        "scenario": os.path.join(src, "tests", "scenarios", "fleet-model-a.json"),
        "gpu_model": "NVIDIA L40S",
        # PCIe Gen4 x16 through the copy engine; peers with P2P through their switch (PIX)
        # or the socket's root complex (NODE), across the sockets through host memory.
        "h2d": 26.2, "d2h": 26.6, "link": 26.9, "peer": 25.1, "peer_node": 21.4,
        "via_host": 12.4,
        "numa": ["0-31,64-95", "32-63,96-127"],
    },
    "B": {
        "scenario": os.path.join(src, "tests", "scenarios", "4gpu-nvlink-direct.json"),
        "gpu_model": "NVIDIA H100 80GB HBM3",
        # PCIe Gen5 x16 to the host; 6 NVLink 4 links to each peer.
        "h2d": 55.3, "d2h": 55.2, "link": 53.6, "peer": 131.0, "peer_node": 131.0,
        "via_host": 24.0,
        "numa": ["0-31,64-95", "32-63,96-127"],
    },
}
SWITCHED = ((0, 1), (2, 3), (4, 5), (6, 7))  # model A's PIX pairs


class Node:
    def __init__(self, host, model):
        self.host = host
        self.model = model
        self.drift = None  # None, "board-revision" or "x8"
        self.x8_gpu = None
        self.base = None  # the healthy scenario (dict), with this node's identities


def make_fleet(rng):
    models = ["A"] * COUNT_A + ["B"] * COUNT_B
    rng.shuffle(models)  # the two models interleave in host-name order
    nodes = [Node(f"node{i + 1:03d}", m) for i, m in enumerate(models)]
    of = {m: [n for n in nodes if n.model == m] for m in MODELS}
    for n in rng.sample(of["A"], BOARD_REVISION_NODES):
        n.drift = "board-revision"
    x8 = rng.sample(of["B"], X8_NODES_B) + rng.sample(
        [n for n in of["A"] if not n.drift], X8_NODES_A)
    for n in x8:
        n.drift = "x8"
        n.x8_gpu = rng.randrange(8 if n.model == "A" else 4)
    bases = {m: json.load(open(MODELS[m]["scenario"])) for m in MODELS}
    for n in nodes:
        s = copy.deepcopy(bases[n.model])
        s["description"] = f"{n.host}: fleet model {n.model}"
        for g in s["gpus"]:
            g["uuid"] = "GPU-" + str(uuid.UUID(int=rng.getrandbits(128)))
            g["serial"] = str(rng.randrange(10**12, 10**13))
        n.base = s
    return nodes


def scenario(node, drifted):
    s = copy.deepcopy(node.base)
    if not drifted or not node.drift:
        return s
    if node.drift == "board-revision":
        # The replacement board routes each switched pair through the sockets' link.
        for p in s["pairs"]:
            if (p["a"], p["b"]) in SWITCHED:
                p["level"] = "SYS"
                p["p2p"] = "NOT_SUPPORTED"
    else:
        s["gpus"][node.x8_gpu]["pcie"]["width"] = 8
    return s


def p2p_pairs(node, drifted):
    """The pairs with working P2P (peer reads measured directly; the others via host)."""
    count = 8 if node.model == "A" else 4
    if node.model == "B":
        return {(a, b) for a in range(count) for b in range(a + 1, count)}
    same_socket = {(a, b) for a in range(count) for b in range(a + 1, count) if a // 4 == b // 4}
    if drifted and node.drift == "board-revision":
        return same_socket - set(SWITCHED)
    return same_socket


def bench_doc(node, drifted, rng):
    """A gpuvet.bench/1 document as `gpuvet bench --json` writes it (src/report/bench.cc)."""
    m = MODELS[node.model]
    count = 8 if node.model == "A" else 4
    slow = node.x8_gpu if (drifted and node.drift == "x8") else None

    def cell(value, expected, via_host=False):
        return {"value": round(value, 6), "spread_pct": round(rng.uniform(0.1, 1.2), 3),
                "expected": expected, "error": None, "via_host": via_host, "verified": True}

    def noisy(v):
        return v * rng.uniform(1 - NOISE, 1 + NOISE)

    def host_matrix(key, title, nominal):
        cells = []
        for g in range(count):
            half = 0.5 if g == slow else 1.0
            cells.append([cell(noisy(nominal * half), round(m["link"] * half, 4))])
        return {"key": key, "title": title, "unit": "GB/s",
                "rows": [f"GPU{g}" for g in range(count)], "cols": ["host"],
                "row_gpu": list(range(count)), "col_gpu": [-1], "size_bytes": MIB64,
                "cells": cells, "skipped": None, "error": None,
                "notes": ["pinned host memory; timed with CUDA events behind a start hold"],
                "wall_ms": round(rng.uniform(90, 220), 3)}

    direct = p2p_pairs(node, drifted)
    peer_cells = []
    for r in range(count):
        row = []
        for c in range(count):
            if r == c:
                row.append({"value": None, "spread_pct": None, "expected": None, "error": None,
                            "via_host": False, "verified": False})
            elif (min(r, c), max(r, c)) in direct:
                # A PCIe peer read crosses both GPUs' links: an x8 GPU halves it.
                half = 0.5 if node.model == "A" and slow in (r, c) else 1.0
                nominal = m["peer"] if node.model == "B" or r // 2 == c // 2 else m["peer_node"]
                row.append(cell(noisy(nominal * half), None))
            else:
                row.append(cell(noisy(m["via_host"]), None, via_host=True))
        peer_cells.append(row)
    peer = {"key": "device_to_device_read_ce", "title": "device_to_device_memcpy_read_ce",
            "unit": "GB/s", "rows": [f"GPU{g}" for g in range(count)],
            "cols": [f"GPU{g}" for g in range(count)], "row_gpu": list(range(count)),
            "col_gpu": list(range(count)), "size_bytes": MIB64, "cells": peer_cells,
            "skipped": None, "error": None, "notes": [], "wall_ms": round(rng.uniform(400, 900), 3)}
    results = [host_matrix("host_to_device_ce", "host_to_device_memcpy_ce", m["h2d"]),
               host_matrix("device_to_host_ce", "device_to_host_memcpy_ce", m["d2h"]), peer]
    return {"schema": "gpuvet.bench/1", "tool": {"name": "gpuvet", "version": "0.1.0"},
            "cuda_available": True, "nccl_version": None,
            "wall_ms": round(sum(r["wall_ms"] for r in results), 3), "results": results,
            "p2p_truth": [], "notes": [f"CUDA driver 13.0, runtime 13.0, {count} GPU(s)"]}


def make_root(path, node):
    """The node's /proc and /sys as gpuvet reads them under --root: its host name, kernel,
    uptime and the two NUMA nodes. No /sys/bus/pci: the GPUs' CPU affinity comes from NVML."""
    files = {"proc/sys/kernel/hostname": node.host + "\n",
             "proc/sys/kernel/osrelease": "6.1.0-28-amd64\n",
             "proc/uptime": "864000.00 1700000.00\n"}
    for i, cpus in enumerate(MODELS[node.model]["numa"]):
        files[f"sys/devices/system/node/node{i}/cpulist"] = cpus + "\n"
    for rel, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(path, rel)), exist_ok=True)
        with open(os.path.join(path, rel), "w") as f:
            f.write(text)


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)


# --- gating ----------------------------------------------------------------------------------

def gate_node(t, node, rnd, baseline):
    """One node's gate in round `rnd`: the facts live, then the gate on them with the bench.
    Returns (host, exit code, gate document or None, error text, seconds)."""
    start = time.monotonic()
    d = os.path.join(t, "nodes", node.host)
    env = dict(os.environ, GPUVET_FAKE_NVML_SCENARIO=os.path.join(d, f"round{rnd}.scenario.json"))
    env.pop("GPUVET_NVML_LIBRARY", None)
    facts = os.path.join(t, "facts", f"round{rnd}", node.host + ".json")
    p = run([gpuvet, "facts", "--json", "--nvml", fake_nvml, "--no-kernel-log",
             "--sample-window", "0", "--root", os.path.join(d, "root")], env=env)
    if p.returncode != 0:
        return node.host, p.returncode, None, "facts: " + p.stderr, time.monotonic() - start
    with open(facts, "w") as f:
        f.write(p.stdout)
    out = os.path.join(t, "gates", f"round{rnd}", node.host + ".json")
    p = run([gpuvet, "gate", "--baseline", baseline, "--profile", "full", "--from", facts,
             "--bench", os.path.join(d, f"round{rnd}.bench.json"), "--json"], env=env)
    with open(out, "w") as f:
        f.write(p.stdout)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = None
    return node.host, p.returncode, doc, p.stderr, time.monotonic() - start


def gate_round(t, nodes, rnd, baselines):
    os.makedirs(os.path.join(t, "facts", f"round{rnd}"))
    os.makedirs(os.path.join(t, "gates", f"round{rnd}"))
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = [pool.submit(gate_node, t, n, rnd, baselines[n.model]) for n in nodes]
        results = {}
        for f in futures:
            host, rc, doc, err, secs = f.result()
            results[host] = (rc, doc, err, secs)
    return results, time.monotonic() - start


def deviations(doc, key_part):
    return [d for d in doc.get("deviations", []) if key_part in json.dumps(d)]


def not_passing(results, hosts):
    """'host: why' for each host whose gate did not pass with exit 0."""
    out = []
    for h in hosts:
        rc, doc, err, _ = results[h]
        if rc != 0 or not doc or doc.get("verdict") != "pass":
            worst = [f"{f.get('id')} {f.get('severity')} {f.get('subjects')}"
                     for f in (doc or {}).get("findings", [])
                     if f.get("severity") in ("warning", "critical")]
            out.append(f"{h}: exit {rc}, verdict {doc and doc.get('verdict')}, reason "
                       f"'{doc and doc.get('reason')}' {err.strip()[:300]} {worst[:4]}")
    return out


def check_round2_gates(nodes, results):
    bad = not_passing(results, [n.host for n in nodes if not n.drift])
    check(not bad, f"round 2: every healthy node's gate passes with exit 0 ({len(bad)} do not)",
          "\n".join(bad[:20]))
    for n in nodes:
        if not n.drift:
            continue
        rc, doc, err, _ = results[n.host]
        if not check(doc is not None, f"round 2 {n.host}: gate printed a JSON document",
                     f"exit {rc}: {err.strip()}"):
            continue
        verdict, reason = doc.get("verdict"), doc.get("reason", "")
        devs = json.dumps(doc.get("deviations", []))
        check(verdict == "fail" and rc == 2,
              f"round 2 {n.host} ({n.drift}): gate fails with exit 2",
              f"verdict {verdict}, exit {rc}, reason '{reason}'")
        check(reason.startswith("gpuvet: ") and len(reason) <= 80,
              f"round 2 {n.host}: reason is one line of at most 80 characters", repr(reason))
        if n.drift == "board-revision":
            check("SYS" in reason, f"round 2 {n.host}: reason names the SYS path", reason)
            for a, b in SWITCHED:
                subject = f"GPU{a}-GPU{b}"
                path = [d for d in doc["deviations"]
                        if subject in d.get("subjects", []) and d.get("found") == "SYS"]
                p2p = [d for d in doc["deviations"]
                       if subject in d.get("subjects", []) and d.get("found") == "NS"]
                check(path and p2p, f"round 2 {n.host}: deviations {subject} path SYS and P2P NS",
                      devs[:1200])
        else:
            gpu = f"GPU{n.x8_gpu}"
            check("x8" in reason, f"round 2 {n.host}: reason names the x8 link", reason)
            width = [d for d in doc["deviations"]
                     if gpu in d.get("subjects", []) and "8" in str(d.get("found"))
                     and "width" in json.dumps(d)]
            check(width, f"round 2 {n.host}: a deviation for {gpu}'s PCIe width x8", devs[:1200])
            floor = [d for d in doc["deviations"]
                     if d.get("key") == f"floor.h2d.{gpu}" and gpu in d.get("subjects", [])]
            check(floor, f"round 2 {n.host}: {gpu}'s h2d below its floor", devs[:1200])


# --- the fleet report ------------------------------------------------------------------------

def fleet_part(t, nodes):
    p = run([gpuvet, "fleet", "--help"])
    if p.returncode != 0 or "unknown command" in p.stdout + p.stderr:
        check(False, "gpuvet fleet is missing",
              f"`gpuvet fleet --help` exited {p.returncode}: {(p.stdout + p.stderr).strip()}")
        return
    db = os.path.join(t, "fleet.sqlite")
    rounds = [os.path.join(t, "gates", "round1"), os.path.join(t, "gates", "round2")]
    start = time.monotonic()
    p = run([gpuvet, "fleet", "ingest", db] + rounds, timeout=300)
    ingest_s = time.monotonic() - start
    if not check(p.returncode == 0, "fleet ingest of both rounds exits 0",
                 f"exit {p.returncode}: {(p.stdout + p.stderr).strip()[-2000:]}"):
        return

    def report():
        r = run([gpuvet, "fleet", "report", db, "--json"], timeout=300)
        try:
            return r.returncode, json.loads(r.stdout), r.stderr
        except ValueError:
            return r.returncode, None, r.stdout[-1000:] + r.stderr[-1000:]

    start = time.monotonic()
    rc, first, err = report()
    report_s = time.monotonic() - start
    print(f"fleet: ingest of {2 * len(nodes)} gate documents {ingest_s:.2f} s, "
          f"report {report_s:.2f} s")
    if not check(first is not None, "fleet report --json prints a JSON document",
                 f"exit {rc}: {err}"):
        return
    p = run([gpuvet, "fleet", "ingest", db] + rounds, timeout=300)
    check(p.returncode == 0, "a second ingest of the same files exits 0",
          f"exit {p.returncode}: {(p.stdout + p.stderr).strip()[-2000:]}")
    rc, doc, err = report()
    if not check(doc is not None, "fleet report --json after the second ingest",
                 f"exit {rc}: {err}"):
        return
    for key in ("nodes", "groups", "outliers"):
        check(doc.get(key) == first.get(key),
              f"the second ingest adds nothing: report's {key} unchanged",
              f"before {json.dumps(first.get(key))[:800]}\nafter {json.dumps(doc.get(key))[:800]}")

    check(doc.get("schema") == "gpuvet.fleet/1", "report schema gpuvet.fleet/1",
          str(doc.get("schema")))
    check(rc == 2, "fleet report exits 2 (a categorical outlier)", f"exit {rc}")
    check(doc.get("nodes") == len(nodes), f"report counts {len(nodes)} nodes",
          str(doc.get("nodes")))
    groups = {(g.get("gpu_model"), g.get("gpu_count")): g.get("nodes")
              for g in doc.get("groups", [])}
    want_groups = {(MODELS["A"]["gpu_model"], 8): COUNT_A, (MODELS["B"]["gpu_model"], 4): COUNT_B}
    check(groups == want_groups, "two groups: 120 x 8 L40S and 84 x 4 H100",
          json.dumps(doc.get("groups"))[:1500])

    by_host = {n.host: n for n in nodes}
    outliers = {}
    for o in doc.get("outliers", []):
        check(o.get("host") not in outliers, f"{o.get('host')} is listed once")
        outliers[o.get("host")] = o
    want = {n.host for n in nodes if n.drift}
    extra = sorted(set(outliers) - want)
    missing = sorted(want - set(outliers))
    check(not extra, f"no healthy node among the outliers ({len(extra)} are)",
          "\n".join(f"{h} (model {by_host[h].model if h in by_host else '?'}): kinds "
                    f"{outliers[h].get('kinds')}, reasons {outliers[h].get('reasons')}"
                    for h in extra))
    check(not missing, f"every drifted node is an outlier ({len(missing)} are not)",
          "\n".join(f"{h}: {by_host[h].drift}"
                    + (f" GPU{by_host[h].x8_gpu}" if by_host[h].x8_gpu is not None else "")
                    for h in missing))
    for h in sorted(want & set(outliers)):
        n, o = by_host[h], outliers[h]
        kinds = set(o.get("kinds", []))
        reasons = o.get("reasons", [])
        said = f"kinds {sorted(kinds)}, reasons {reasons}, " \
               f"changed_since_last_pass {o.get('changed_since_last_pass')}"
        check(isinstance(o.get("drain"), bool), f"{h}: drain is true or false", said)
        check(o.get("changed_since_last_pass") is True,
              f"{h} ({n.drift}): changed since its last pass (round 1 passed)", said)
        if n.drift == "board-revision":
            check({"topology", "p2p"} <= kinds, f"{h} (board revision): kinds topology and p2p",
                  said)
            check(any("SYS" in r for r in reasons), f"{h} (board revision): a reason says SYS",
                  said)
            check(any("P2P" in r for r in reasons), f"{h} (board revision): a reason says P2P",
                  said)
        else:
            gpu = f"GPU{n.x8_gpu}"
            check({"links", "bandwidth"} <= kinds, f"{h} (x8 {gpu}): kinds links and bandwidth",
                  said)
            check(any("x8" in r and gpu in r for r in reasons),
                  f"{h} (x8 {gpu}): a reason names {gpu} at x8", said)
            check(any("h2d" in r and gpu in r for r in reasons),
                  f"{h} (x8 {gpu}): a reason names {gpu}'s h2d", said)


# --- the story -------------------------------------------------------------------------------

def story(t):
    rng = random.Random(SEED)
    nodes = make_fleet(rng)
    for n in nodes:
        d = os.path.join(t, "nodes", n.host)
        make_root(os.path.join(d, "root"), n)
        for rnd in (1, 2):
            write_json(os.path.join(d, f"round{rnd}.scenario.json"), scenario(n, rnd == 2))
            bench_rng = random.Random(f"{SEED}/{n.host}/round{rnd}")
            write_json(os.path.join(d, f"round{rnd}.bench.json"), bench_doc(n, rnd == 2, bench_rng))

    # One baseline per server model, from its first healthy node.
    baselines = {}
    for m in MODELS:
        n = next(x for x in nodes if x.model == m and not x.drift)
        d = os.path.join(t, "nodes", n.host)
        baselines[m] = os.path.join(t, f"model-{m.lower()}.toml")
        env = dict(os.environ, GPUVET_FAKE_NVML_SCENARIO=os.path.join(d, "round1.scenario.json"))
        env.pop("GPUVET_NVML_LIBRARY", None)
        p = run([gpuvet, "baseline", "capture", "--nvml", fake_nvml, "--no-kernel-log",
                 "--sample-window", "0", "--root", os.path.join(d, "root"), "--bench",
                 os.path.join(d, "round1.bench.json"), "--floor-fraction", "0.9", "-o",
                 baselines[m]], env=env)
        if not check(p.returncode == 0, f"baseline capture for model {m} on {n.host}",
                     (p.stdout + p.stderr).strip()):
            return
        text = open(baselines[m]).read()
        check("[floors" in text or "floor" in text, f"model {m}'s baseline has bandwidth floors",
              text[-1500:])

    total = time.monotonic()
    r1, r1_s = gate_round(t, nodes, 1, baselines)
    bad = not_passing(r1, [n.host for n in nodes])
    check(not bad, f"round 1: every node's gate passes with exit 0 ({len(bad)} do not)",
          "\n".join(bad[:20]))
    # Round 2 starts on a later second than every round-1 report.
    last = max((doc.get("collected_unix") or 0) for _, doc, _, _ in r1.values() if doc)
    while time.time() < last + 1:
        time.sleep(0.05)
    r2, r2_s = gate_round(t, nodes, 2, baselines)
    total = time.monotonic() - total
    runs = sorted(secs for _, _, _, secs in list(r1.values()) + list(r2.values()))
    print(f"gates: {len(runs)} node runs (facts + gate) on {WORKERS} workers: round 1 "
          f"{r1_s:.1f} s, round 2 {r2_s:.1f} s, total {total:.1f} s; per node run median "
          f"{runs[len(runs) // 2] * 1000:.0f} ms, max {runs[-1] * 1000:.0f} ms")
    for n in nodes:
        d1, d2 = r1[n.host][1], r2[n.host][1]
        if d1 and d2:
            check(d1.get("host") == n.host and d2.get("host") == n.host,
                  f"{n.host}: the gate reports its host name from --root",
                  f"{d1.get('host')}, {d2.get('host')}")
            check((d1.get("collected_unix") or 0) < (d2.get("collected_unix") or 0),
                  f"{n.host}: round 1 collected before round 2",
                  f"{d1.get('collected_unix')} vs {d2.get('collected_unix')}")
    check_round2_gates(nodes, r2)
    drifted = [n for n in nodes if n.drift]
    print(f"fleet: {len(nodes)} nodes ({COUNT_A} model A, {COUNT_B} model B); drifted: "
          + ", ".join(f"{n.host} {n.drift}" + (f" GPU{n.x8_gpu}" if n.drift == "x8" else "")
                      for n in drifted))
    fleet_part(t, nodes)


def main():
    t = tempfile.mkdtemp(prefix="gpuvet-story3-")
    try:
        story(t)
    finally:
        if os.environ.get("GPUVET_STORY3_KEEP"):  # for debugging: keep the fleet's files
            print(f"kept {t}")
        else:
            shutil.rmtree(t, ignore_errors=True)
    if failures:
        print(f"FAIL: {len(failures)} check(s) failed:")
        for f in failures:
            print("FAIL: " + f)
        return 1
    print("ok: the fleet report names exactly the drifted nodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
