#!/usr/bin/env python3
"""PyTorch's times for the rows of `host bench` that it has an op for (issue 37's reference
column): histograms (`torch.histc`, `torch.bincount`, with weights) and top-k (`torch.topk`).

    python3 tools/torch_ref.py [--sizes 2^24,2^28] [--iters 30] [--warmup 5] [--json out.json]

Measured as METHOD.md says: CUDA events, warm-up, the median of `--iters`, inputs made once per
size and rotated over copies larger than the L2. Prints one markdown row per case.
"""
import argparse
import json

import torch


def size(s):
    s = s.strip()
    if s.startswith("2^"):
        return 1 << int(s[2:])
    return int(float(s))


def timed(fn, copies, warmup, iters):
    for i in range(warmup):
        fn(copies[i % len(copies)])
    torch.cuda.synchronize()
    times = []
    for i in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(copies[i % len(copies)])
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def n_copies(nbytes):
    # Enough copies that one pass over them misses the 50 MB L2.
    return max(2, -(-256 << 20) // max(nbytes, 1)) if nbytes < (256 << 20) else 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2^24,2^28")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    dev = torch.device("cuda")
    rows = []

    def row(op, dtype, n, case, ms):
        rows.append({"op": op, "dtype": dtype, "n": n, "case": case, "median_ms": ms})
        print(f"| {op} | {dtype} | {n} | {case} | {ms:.4f} |", flush=True)

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print("| op | dtype | n | case | median ms |\n|---|---|---|---|---|")
    for n in [size(s) for s in a.sizes.split(",")]:
        k = n_copies(n * 8)
        g = torch.Generator(device=dev).manual_seed(n)
        # histc: f32 uniform on [0, 1), 256 bins (its only form: even bins of floats).
        xs = [torch.rand(n, device=dev, generator=g) for _ in range(k)]
        row("histogram", "f32", n, "torch.histc, 256 bins", timed(lambda x: torch.histc(x, 256, 0.0, 1.0), xs, a.warmup, a.iters))
        del xs
        # bincount: int32 ids uniform in [0, 256), without and with f32 weights.
        ids = [torch.randint(0, 256, (n,), device=dev, dtype=torch.int32, generator=g) for _ in range(k)]
        row("histogram", "i32", n, "torch.bincount, 256 bins", timed(lambda x: torch.bincount(x, minlength=256), ids, a.warmup, a.iters))
        ws = [torch.rand(n, device=dev, generator=g) for _ in range(k)]
        pairs = list(zip(ids, ws))
        row("histogram", "i32", n, "torch.bincount, 256 bins, f32 weights", timed(lambda p: torch.bincount(p[0], weights=p[1], minlength=256), pairs, a.warmup, a.iters))
        del ids, ws, pairs
        # topk: f32 uniform, k = 1000 of the whole array; rows of 32,000 with k = 50.
        xs = [torch.rand(n, device=dev, generator=g) for _ in range(k)]
        row("topk", "f32", n, "torch.topk, k = 1000", timed(lambda x: torch.topk(x, 1000), xs, a.warmup, a.iters))
        r = n // 32000
        rs = [x[: r * 32000].view(r, 32000) for x in xs]
        row("topk", "f32", r * 32000, f"torch.topk, {r} rows of 32,000, k = 50", timed(lambda x: torch.topk(x, 50, dim=1), rs, a.warmup, a.iters))
        del xs, rs
        torch.cuda.empty_cache()
    rows_n = 64 * 32000
    xs = [torch.rand(64, 32000, device=dev) for _ in range(n_copies(rows_n * 4))]
    row("topk", "f32", rows_n, "torch.topk, 64 rows of 32,000, k = 50", timed(lambda x: torch.topk(x, 50, dim=1), xs, a.warmup, a.iters))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
