#!/usr/bin/env python3
"""Writes RANKS PyTorch-profiler-shaped traces of about SIZE_MB each into DIR, for the 1 GB
measurement of `gpuvet diagnose --from DIR` (docs/results/issue38-*.md).

    python3 tests/job/make_big_traces.py DIR [--ranks 8] [--size-mb 128] [--slow-rank 5]

Each rank's steps hold a data-loader span, 64 operators with their launch and kernel, an NCCL
all-reduce every 8 operators; rank --slow-rank computes 30 % longer before its all-reduces,
so the others' all-reduce kernels are longer (they wait for it). Standard library only.
"""
import argparse
import os


def write_rank(path, rank, world, size, slow):
    layers = 64
    with open(path, "w") as out:
        out.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {"id": %d, "name": '
                  '"NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045379072}\n  ],\n'
                  '  "distributedInfo": {"backend": "nccl", "rank": %d, "world_size": %d, '
                  '"nccl_version": "2.21.5"},\n  "traceEvents": [\n' % (rank, rank, world))
        t = 1.7e15
        corr = 1
        step = 0
        written = 0
        first = True
        kern = 24.0 * (1.3 if slow else 1.0)
        while written < size:
            step += 1
            step_len = 800.0 + layers * 30.0 * (1.3 if slow else 1.0) + 400
            lines = []
            lines.append('{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", "pid": 4242, "tid": 4242, "ts": %.3f, "dur": %.3f, "args": {"External id": %d}}' % (step, t, step_len, corr))
            lines.append('{"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "pid": 4242, "tid": 4242, "ts": %.3f, "dur": 150.000, "args": {"External id": %d}}' % (t, corr + 1))
            corr += 2
            h = t + 200
            for l in range(layers):
                lines.append('{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 4242, "tid": 4242, "ts": %.3f, "dur": 12.500, "args": {"External id": %d, "Sequence number": %d}}' % (h, corr, corr))
                lines.append('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242, "ts": %.3f, "dur": 4.200, "args": {"External id": %d, "cbid": 211, "correlation": %d}}' % (h + 6, corr, corr))
                lines.append('{"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas", "pid": 0, "tid": 7, "ts": %.3f, "dur": %.3f, "args": {"External id": %d, "device": %d, "stream": 7, "correlation": %d, "grid": [132, 1, 1], "block": [384, 1, 1]}}' % (h + 10, kern, corr, rank, corr))
                corr += 1
                if l % 8 == 7:
                    # The slow rank's all-reduce starts late and runs short; the others wait.
                    wait = 0.0 if slow else 64.0 * 8 * 30.0 * 0.3 / 8
                    lines.append('{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "pid": 0, "tid": 20, "ts": %.3f, "dur": %.3f, "args": {"device": %d, "stream": 20, "correlation": %d}}' % (h + 40, 150.0 + wait, rank, corr))
                    corr += 1
                h += 30 * (1.3 if slow else 1.0)
            chunk = ("" if first else ",\n") + ",\n".join("  " + x for x in lines)
            first = False
            out.write(chunk)
            written += len(chunk)
            t += step_len
        out.write('\n  ],\n  "traceName": "rank%d.pt.trace.json"\n}\n' % rank)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--size-mb", type=int, default=128)
    ap.add_argument("--slow-rank", type=int, default=5)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    for r in range(a.ranks):
        write_rank(os.path.join(a.dir, "rank%d.pt.trace.json" % r), r, a.ranks, a.size_mb << 20,
                   r == a.slow_rank)


if __name__ == "__main__":
    main()
