#!/usr/bin/env python3
"""Record PyTorch profiler (Kineto) Chrome traces of workloads with a known shape.

Runs on one CUDA GPU with torch alone (no other package, no network):

    python3 scripts/gpu/job/record_traces.py OUT_DIR [--only NAME[,NAME...]]

Writes into OUT_DIR (plain JSON, nothing else):

  compute_bound.json    bf16 MLP training step of 8192x8192 matmuls; one loss.item()
                        per step (the usual logging sync), GPU busy > 90 %.
  input_starved.json    DataLoader (num_workers=0) over a Dataset whose __getitem__
                        sleeps; the loader dominates each step, GPU idle most of it.
  launch_bound.json     many tiny Linear(64, 64) layers on batch 8, forward+backward:
                        hundreds of microsecond kernels per step, launch latency rules.
  item_sync.json        forward in pieces with .item() after each piece, loss.item()
                        and torch.cuda.synchronize() every step: many host syncs.
  ddp_gloo_rank0.json   2-process DistributedDataParallel, gloo backend, both ranks on
  ddp_gloo_rank1.json   cuda:0; rank 1 straggles (extra matmuls + ~30 ms sleep) before
                        backward, so rank 0 waits in the gloo all-reduce.  Each trace
                        carries distributedInfo.

Every trace uses the same schedule (wait=1, warmup=1, active=5, repeat=1), activities
CPU+CUDA, record_shapes=False, and is written by on_trace_ready through
export_chrome_trace.  The CUDA stream is synchronised once at the end of the warmup
step (not recorded) so the first recorded step starts on an idle GPU.  One line per
trace is printed: file, size, ProfilerStep count and a few sanity figures.
Uses only long-stable torch APIs (torch.profiler.profile/schedule/ProfilerActivity/
record_function, torch.utils.data, torch.distributed with gloo, DDP).
"""
import argparse
import datetime
import json
import math
import os
import socket
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function, schedule

WAIT, WARMUP, ACTIVE = 1, 1, 5
# One step past the active window, so on_trace_ready has certainly fired.
TOTAL_STEPS = WAIT + WARMUP + ACTIVE + 1
SINGLE = ["compute_bound", "input_starved", "launch_bound", "item_sync"]
ALL = SINGLE + ["ddp_gloo"]
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


# ----------------------------------------------------------------------------- helpers
def log(msg):
    print(msg, flush=True)


def run_profiled(step_fn, out_path, device):
    """Run TOTAL_STEPS calls of step_fn(i) under the fixed schedule; write out_path."""
    written = []

    def on_ready(prof):
        prof.export_chrome_trace(out_path)
        written.append(out_path)

    prof = profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
        on_trace_ready=on_ready,
        record_shapes=False,
        profile_memory=False,
        with_stack=False,
    )
    with prof:
        for i in range(TOTAL_STEPS):
            step_fn(i)
            if i == WAIT + WARMUP - 1:
                torch.cuda.synchronize(device)  # end of warmup: start the record on an idle GPU
            prof.step()
    torch.cuda.synchronize(device)
    if not written:
        raise RuntimeError(f"profiler never called on_trace_ready for {out_path}")


def union_length(intervals):
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def summarize(path, expect_dist=False):
    """One line about a written trace; returns True if it looks complete."""
    size = os.path.getsize(path)
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    # CPU-side step spans only (Kineto also writes a gpu_user_annotation copy of each).
    steps = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
             and e.get("cat") != "gpu_user_annotation"]
    gpu = [(float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))) for e in events
           if e.get("ph") == "X" and e.get("cat") in GPU_CATS]
    kernels = [float(e.get("dur", 0)) for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    line = f"trace {os.path.basename(path)} bytes={size} steps={len(steps)} events={len(events)}"
    if steps:
        t0 = min(float(e["ts"]) for e in steps)
        t1 = max(float(e["ts"]) + float(e.get("dur", 0)) for e in steps)
        span = max(t1 - t0, 1e-9)
        clipped = [(max(s, t0), min(e, t1)) for s, e in gpu if e > t0 and s < t1]
        busy = union_length(clipped) / span
        kernels_sorted = sorted(kernels)
        median = kernels_sorted[len(kernels_sorted) // 2] if kernels_sorted else float("nan")
        line += (f" step_ms={span / len(steps) / 1000.0:.2f} gpu_busy_in_steps={busy:.3f}"
                 f" kernels_per_step={len(kernels) / len(steps):.0f} median_kernel_us={median:.1f}")
    has_dist = isinstance(doc, dict) and "distributedInfo" in doc
    if expect_dist or has_dist:
        info = doc.get("distributedInfo") if isinstance(doc, dict) else None
        line += f" distributedInfo={json.dumps(info, separators=(',', ':')) if info else 'MISSING'}"
    log(line)
    ok = len(steps) == ACTIVE and (has_dist or not expect_dist)
    if not ok:
        log(f"WARNING {os.path.basename(path)}: expected {ACTIVE} ProfilerStep spans"
            + (" and distributedInfo" if expect_dist else ""))
    return ok


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------- scenarios
def scenario_compute_bound(out_dir, dev):
    """4 x Linear(8192, 8192) bf16 MLP, batch 8192: ~12 TFLOP per step (~15-20 ms on an H100)."""
    torch.manual_seed(0)
    hidden, batch, depth = 8192, 8192, 4
    blocks = []
    for _ in range(depth):
        blocks += [nn.Linear(hidden, hidden, bias=False), nn.GELU()]
    model = nn.Sequential(*blocks).to(device=dev, dtype=torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(batch, hidden, device=dev, dtype=torch.bfloat16)
    target = torch.randn(batch, hidden, device=dev, dtype=torch.bfloat16)

    def step(i):
        with record_function("forward"):
            loss = F.mse_loss(model(x), target)
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
        with record_function("log_loss"):
            value = loss.item()  # one host sync per step, as a logging loop does
        if not math.isfinite(value):
            raise RuntimeError(f"compute_bound: loss became {value}")

    for i in range(2):  # cuBLAS handles, allocator, kernel selection
        step(-1)
    torch.cuda.synchronize(dev)
    path = os.path.join(out_dir, "compute_bound.json")
    run_profiled(step, path, dev)
    return [path]


class SlowDataset(torch.utils.data.Dataset):
    """Each sample costs `delay_s` of host time (a stand-in for decode/augment)."""

    def __init__(self, n, dim, classes, delay_s):
        self.n, self.dim, self.classes, self.delay_s = n, dim, classes, delay_s

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        time.sleep(self.delay_s)
        g = torch.Generator().manual_seed(int(idx))
        x = torch.randn(self.dim, generator=g)
        y = int(torch.randint(0, self.classes, (1,), generator=g).item())
        return x, y


def scenario_input_starved(out_dir, dev):
    """batch 32 x 1.5 ms per sample = ~48 ms of loading per step; <1 ms of GPU work."""
    torch.manual_seed(0)
    dim, classes, batch = 1024, 10, 32
    data = SlowDataset(n=batch * (TOTAL_STEPS + 4), dim=dim, classes=classes, delay_s=0.0015)
    loader = torch.utils.data.DataLoader(data, batch_size=batch, shuffle=False, num_workers=0, drop_last=True)
    model = nn.Sequential(nn.Linear(dim, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                          nn.Linear(4096, classes)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    it = iter(loader)

    def step(i):
        x, y = next(it)  # the profiler names this enumerate(DataLoader)#...__next__
        with record_function("h2d"):
            x, y = x.to(dev), y.to(dev)
        with record_function("forward"):
            loss = F.cross_entropy(model(x), y)
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)

    for _ in range(2):
        step(-1)
    torch.cuda.synchronize(dev)
    path = os.path.join(out_dir, "input_starved.json")
    run_profiled(step, path, dev)
    return [path]


def scenario_launch_bound(out_dir, dev, layers):
    """`layers` x Linear(64, 64) on batch 8, forward+backward+SGD: ~4 kernels per layer."""
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(64, 64) for _ in range(layers)]).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(8, 64, device=dev)

    def step(i):
        with record_function("forward"):
            loss = model(x).square().mean()
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step(-1)
    torch.cuda.synchronize(dev)
    path = os.path.join(out_dir, "launch_bound.json")
    run_profiled(step, path, dev)
    return [path]


def scenario_item_sync(out_dir, dev):
    """8 bf16 blocks of Linear(2048, 2048) on batch 2048 (~40 us of matmul each), with a
    host read-back after every block, loss.item() and torch.cuda.synchronize() per step."""
    torch.manual_seed(0)
    hidden, batch, depth = 2048, 2048, 8
    blocks = nn.ModuleList([nn.Sequential(nn.Linear(hidden, hidden), nn.GELU()) for _ in range(depth)])
    blocks = blocks.to(device=dev, dtype=torch.bfloat16)
    opt = torch.optim.SGD(blocks.parameters(), lr=1e-4)
    x = torch.randn(batch, hidden, device=dev, dtype=torch.bfloat16)
    target = torch.randn(batch, hidden, device=dev, dtype=torch.bfloat16)
    stats = {}

    def step(i):
        h = x
        for k, blk in enumerate(blocks):
            with record_function(f"block{k}"):
                h = blk(h)
            with record_function(f"check_block{k}"):
                stats[k] = h.float().abs().mean().item()  # host sync between forward pieces
                time.sleep(0.0001)  # a little host bookkeeping (logging, checks)
        with record_function("loss"):
            loss = F.mse_loss(h, target)
        with record_function("backward"):
            loss.backward()
        with record_function("loss_item"):
            stats["loss"] = loss.item()
        with record_function("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
        with record_function("explicit_synchronize"):
            torch.cuda.synchronize(dev)
        if not all(math.isfinite(v) for v in stats.values()):
            raise RuntimeError(f"item_sync: non-finite statistic {stats}")

    for _ in range(2):
        step(-1)
    torch.cuda.synchronize(dev)
    path = os.path.join(out_dir, "item_sync.json")
    run_profiled(step, path, dev)
    return [path]


def _ddp_worker(rank, world, port, out_dir, straggle_s):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dev = torch.device("cuda:0")  # both ranks share the one GPU
    torch.cuda.set_device(dev)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=90))
    try:
        torch.manual_seed(1234 + rank)
        hidden, batch, depth = 1024, 256, 4  # ~4.2 M params = one ~17 MB gradient bucket
        layers = []
        for _ in range(depth):
            layers += [nn.Linear(hidden, hidden), nn.ReLU()]
        model = nn.Sequential(*layers).to(dev)
        ddp = DDP(model, device_ids=[0], output_device=0)
        opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
        x = torch.randn(batch, hidden, device=dev)
        a = torch.randn(4096, 4096, device=dev)
        b = torch.randn(4096, 4096, device=dev)

        def step(i):
            with record_function("forward"):
                loss = ddp(x).square().mean()
            if rank == 1:
                with record_function("straggler_extra_work"):
                    y = a
                    for _ in range(4):
                        y = torch.mm(y, b) * 1e-3
                    torch.cuda.synchronize(dev)
                    time.sleep(straggle_s)
            with record_function("backward"):
                loss.backward()  # DDP all-reduces the gradient bucket through gloo here
            with record_function("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)

        for _ in range(2):  # DDP rebuilds its buckets after the first iteration
            step(-1)
        torch.cuda.synchronize(dev)
        path = os.path.join(out_dir, f"ddp_gloo_rank{rank}.json")
        run_profiled(step, path, dev)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def scenario_ddp_gloo(out_dir, straggle_s):
    import torch.multiprocessing as mp

    port = free_port()
    log(f"ddp_gloo: world_size=2 backend=gloo device=cuda:0 port={port} straggle_s={straggle_s}")
    mp.spawn(_ddp_worker, args=(2, port, out_dir, straggle_s), nprocs=2, join=True)
    return [os.path.join(out_dir, f"ddp_gloo_rank{r}.json") for r in range(2)]


# ----------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--only", default=",".join(ALL), help=f"comma-separated subset of {','.join(ALL)}")
    ap.add_argument("--launch-layers", type=int, default=100,
                    help="Linear(64,64) layers in launch_bound (100 keeps the file near 3-4 MB)")
    ap.add_argument("--straggle-ms", type=float, default=30.0, help="rank 1's sleep per step in ddp_gloo")
    args = ap.parse_args()
    wanted = [s for s in args.only.split(",") if s]
    unknown = [s for s in wanted if s not in ALL]
    if unknown:
        ap.error(f"unknown scenario(s) {unknown}; choose from {ALL}")
    if not torch.cuda.is_available():
        log("ERROR: torch.cuda.is_available() is False")
        return 2
    os.makedirs(args.out_dir, exist_ok=True)
    dev = torch.device("cuda:0")
    torch.cuda.set_device(dev)
    nccl = getattr(torch.cuda, "nccl", None)
    try:
        nccl_v = ".".join(str(p) for p in nccl.version()) if nccl is not None else "n/a"
    except Exception as exc:  # noqa: BLE001 - informational only
        nccl_v = f"n/a ({exc})"
    log(f"torch {torch.__version__} cuda {torch.version.cuda} nccl {nccl_v} "
        f"gpu '{torch.cuda.get_device_name(dev)}' python {sys.version.split()[0]}")

    failed = 0
    for name in wanted:
        t0 = time.time()
        log(f"== {name}")
        try:
            if name == "compute_bound":
                paths = scenario_compute_bound(args.out_dir, dev)
            elif name == "input_starved":
                paths = scenario_input_starved(args.out_dir, dev)
            elif name == "launch_bound":
                paths = scenario_launch_bound(args.out_dir, dev, args.launch_layers)
            elif name == "item_sync":
                paths = scenario_item_sync(args.out_dir, dev)
            else:
                paths = scenario_ddp_gloo(args.out_dir, args.straggle_ms / 1000.0)
        except Exception as exc:  # noqa: BLE001 - report and go on with the next scenario
            log(f"ERROR {name}: {type(exc).__name__}: {exc}")
            failed += 1
            continue
        for p in paths:
            if not os.path.exists(p):
                log(f"ERROR {name}: {p} was not written")
                failed += 1
            elif not summarize(p, expect_dist=(name == "ddp_gloo")):
                failed += 1
        log(f"== {name} done in {time.time() - t0:.1f} s")
        torch.cuda.empty_cache()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
