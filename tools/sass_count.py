#!/usr/bin/env python3
"""Static SASS of the kernels' PTX modules, counted by opcode, to compare two builds without a GPU.

    python3 tools/sass_count.py DIR [BASE_DIR] [--arch sm_90] [--ops LD,ST,LDS,STS] [--top 20]

DIR (and BASE_DIR) hold one `.ptx` per kernel module, as the library's build writes them
(`target/release/build/gpu-reduce/*/out/ptx/sm_90/kernels/modules`, or `cargo xtask build-ptx`'s
`target/ptx/sm_90/kernels/modules`). Each module is assembled with `ptxas` (`$PTXAS`, else on
PATH) and disassembled with `nvdisasm` (`$NVDISASM`, else on PATH; the PyPI wheel
`nvidia-cuda-nvdisasm` has one). Prints the total instructions and the `--ops` opcodes (the
mnemonic before its first `.`: `LD` is a generic load, `LDS` a shared one) of all modules, and
with BASE_DIR the kernels whose instruction count moved most. Static counts only: how often an
instruction runs, and so any speed, is the GPU's to measure.
"""
import argparse
import collections
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

INSN = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)")
FUNC = re.compile(r"^\s*\.text\.(\S+):")


def tool(env, name):
    path = os.environ.get(env) or shutil.which(name)
    if not path:
        sys.exit(f"{name} not found: set {env} or put it on PATH")
    return path


def count_module(ptx, arch, ptxas, nvdisasm):
    """{kernel: Counter(opcode)} of one PTX module."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "m.cubin")
        subprocess.run([ptxas, f"-arch={arch}", "-O3", ptx, "-o", cubin], check=True)
        text = subprocess.run([nvdisasm, "-c", cubin], check=True, capture_output=True,
                              text=True).stdout
    kernels, current = {}, None
    for line in text.splitlines():
        f = FUNC.match(line)
        if f:
            current = kernels.setdefault(f.group(1), collections.Counter())
            continue
        m = INSN.match(line)
        if m and current is not None:
            current[m.group(1)] += 1
    return kernels


def count_dir(d, arch, ptxas, nvdisasm):
    mods = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".ptx"))
    if not mods:
        sys.exit(f"no .ptx module in {d}")
    out = {}
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        for kernels in pool.map(lambda m: count_module(m, arch, ptxas, nvdisasm), mods):
            out.update(kernels)
    return out


def summary(name, kernels, ops):
    total = collections.Counter()
    for c in kernels.values():
        total.update(c)
    cols = " ".join(f"{op} {total[op]:,}" for op in ops)
    print(f"{name}: {len(kernels)} kernels, {sum(total.values()):,} instructions; {cols}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("base", nargs="?")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--ops", default="LD,ST,LDS,STS,LDG,STG,BAR")
    ap.add_argument("--top", type=int, default=20)
    a = ap.parse_args()
    ptxas, nvdisasm = tool("PTXAS", "ptxas"), tool("NVDISASM", "nvdisasm")
    ops = a.ops.split(",")
    new = count_dir(a.dir, a.arch, ptxas, nvdisasm)
    if a.base:
        base = count_dir(a.base, a.arch, ptxas, nvdisasm)
        summary("base", base, ops)
    summary("this", new, ops)
    if a.base:
        moved = [(sum(new[k].values()) - sum(base[k].values()), k)
                 for k in new if k in base]
        moved.sort(key=lambda x: (-abs(x[0]), x[1]))
        print(f"\nkernels whose instruction count moved most (of {len(moved)} in both):")
        for d, k in moved[:a.top]:
            if d:
                print(f"  {k}: {sum(base[k].values()):,} -> {sum(new[k].values()):,} ({d:+,})")


if __name__ == "__main__":
    main()
