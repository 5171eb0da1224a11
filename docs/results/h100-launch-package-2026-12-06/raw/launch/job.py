import os, sys, time, torch
seconds, fail_rank = float(sys.argv[1]), sys.argv[2]
rank = os.environ["GPUVET_LOCAL_RANK"]
print(f"rank {rank}: CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']} "
      f"device_count={torch.cuda.device_count()} affinity={sorted(os.sched_getaffinity(0))}",
      flush=True)
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = a.clone()
end = time.time() + seconds
while time.time() < end:
    t = time.time()
    for _ in range(50):
        a @ b
    torch.cuda.synchronize()
    print(f"{50 * 2 * 8192**3 / (time.time() - t) / 1e12:.1f} TFLOP/s", flush=True)
    if rank == fail_rank and time.time() > end - seconds + 5:
        print(f"rank {rank}: giving up on purpose", flush=True)
        sys.exit(3)
