# JIT cost of PTX modules of different granularity, cold (CUDA_CACHE_DISABLE=1).
import ctypes, gzip, re, sys, time, os
cu = ctypes.CDLL("libcuda.so.1")
def chk(r, what):
    if r != 0: raise SystemExit(f"{what}: CUresult {r}")
t0 = time.perf_counter()
chk(cu.cuInit(0), "cuInit")
dev = ctypes.c_int(); chk(cu.cuDeviceGet(ctypes.byref(dev), 0), "dev")
ctx = ctypes.c_void_p(); chk(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "retain")
chk(cu.cuCtxSetCurrent(ctx), "set")
free = ctypes.c_size_t(); tot = ctypes.c_size_t(); chk(cu.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(tot)), "meminfo")
print(f"context init: {time.perf_counter()-t0:.3f} s")
ptx = gzip.open(sys.argv[1], "rt").read()
# split: header = everything before the first '// .globl'; entries = Begin..End function blocks; funcs kept always
lines = ptx.split("\n")
first = next(i for i,l in enumerate(lines) if "-- Begin function" in l)
header = "\n".join(lines[:first])
blocks = {}; funcs = []
buf = []
for l in lines[first:]:
    buf.append(l)
    if l == "}" and len(buf) > 1 and "-- End function" in buf[-2]:
        chunk = "\n".join(buf); buf = []
        m = re.search(r"\.entry (\w+)", chunk)
        if m: blocks[m.group(1)] = chunk
        else: funcs.append(chunk)
tail = "\n".join(buf)
# the forward declarations of the .funcs sit in the first chunk, between its .globl comment and its .entry
fn0 = next(iter(blocks)); c = blocks[fn0].split("\n")
e = next(i for i,l in enumerate(c) if l.startswith(".visible .entry"))
header += "\n" + "\n".join(c[1:e]); blocks[fn0] = "\n".join([c[0]] + c[e:])
print(len(blocks), "entries,", len(funcs), "funcs")
def module(names):
    return header + "\n" + "\n".join(blocks[n] for n in names) + "\n" + "\n".join(funcs) + "\n" + tail
def load(src, label):
    b = src.encode() + b"\0"
    mod = ctypes.c_void_p()
    t = time.perf_counter()
    chk(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(b)), "load " + label)
    dt = time.perf_counter() - t
    cu.cuModuleUnload(mod)
    print(f"{label:40s} {len(b)/1e3:9.0f} kB  {dt*1e3:9.1f} ms", flush=True)
    return dt
names = list(blocks)
fam = lambda p: [n for n in names if re.match(p, n)]
load(module(["reduce_sum_f32"]), "reduce_sum_f32")
load(module(["reduce_sum_i32"]), "reduce_sum_i32")
load(module(["reduce_argmax_f64"]), "reduce_argmax_f64")
load(module(fam(r"reduce_.*_f32$")), "reduce_*_f32 (7)")
load(module(fam(r"reduce_")), "reduce family (49)")
load(module(["scan_inclusive_sum_f32"]), "scan_inclusive_sum_f32")
load(module(["scan_inclusive_sum_f64"]), "scan_inclusive_sum_f64")
load(module(fam(r"scan_(in|ex)clusive_.*_f32$")), "scan_*_f32 (6)")
load(module(fam(r"scan_(in|ex)clusive_")), "scan family (36)")
load(module(["scan_by_key_inclusive_sum_u32_f32"]), "scan_by_key_inclusive_sum_u32_f32")
load(module(["scan_by_key_inclusive_sum_u64_f64"]), "scan_by_key_inclusive_sum_u64_f64")
if "--all" in sys.argv:
    load(ptx, "whole module (280)")
