#!/usr/bin/env bash
# Runs everything on a GPU machine that has the NVIDIA driver but no Rust toolchain:
# the GPU tests, then `host reduce`. Logs go to $OUT (or ./out); a short table is printed last.
set -u -o pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-$here/out}"
mkdir -p "$out"
N="${N:-$((1 << 26))}"
ITERS="${ITERS:-100}"

{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } \
    >"$out/device.txt" 2>&1
cat "$out/device.txt"
"$here/bin/host" info 2>&1 | tee "$out/info.txt"

tests_rc=0
for t in "$here"/bin/test-*; do
    # --include-ignored: the GPU tests and the simulator tests, on the same machine.
    echo "== $(basename "$t")"
    "$t" --include-ignored --test-threads=1 2>&1 | tee -a "$out/gpu-tests.log" || tests_rc=1
done

reduce_rc=0
for n in 1000000 "$N"; do
    echo "== host reduce --n $n --iters $ITERS"
    "$here/bin/host" reduce --n "$n" --iters "$ITERS" 2>&1 | tee -a "$out/reduce.log" || reduce_rc=1
done

echo
echo "| step | result |"
echo "|---|---|"
echo "| device | $(head -2 "$out/device.txt" | tail -1) |"
echo "| GPU tests | $(grep -h '^test result' "$out/gpu-tests.log" | tr '\n' ' ') rc=$tests_rc |"
grep -h '^n = \|^time:' "$out/reduce.log" | sed 's/^/| reduce | /; s/$/ |/'
[ "$tests_rc" = 0 ] && [ "$reduce_rc" = 0 ]
