#!/usr/bin/env bash
# Runs everything on a GPU machine that has the NVIDIA driver but no Rust toolchain:
# the GPU (and simulator) tests, `host reduce`, the reduction ladder, the benchmark sweep against
# CUB (whose shim is compiled here with nvcc when nvcc is found) and the memory limit, and seed
# 003's scan table (BIT, BCAO, decoupled look-back, CUB). Logs go to $OUT (or ./out), the
# sweep's JSON, table and plots to $OUT/bench; a short summary is printed last. STEPS (default
# "tests reduce ladder bench scan"; also "sanitize": every kernel under compute-sanitizer's
# memcheck, racecheck, synccheck and initcheck; "guard": the speed guard against the bundle's
# baseline/h100.json (README, Contributing); "coldstart": `host info --verbose` in fresh
# processes, three with the driver's JIT cache emptied first, then three with it warm; "ab": the
# bundle's host and AB_HOSTS, other builds' host binaries, each `host bench $AB_ARGS`, in order
# then reversed, the medians side by side in $OUT/ab.md) picks steps;
# TESTS (globs, default *) picks the test binaries bin/test-$TESTS ("segmented_gpu select_gpu");
# BENCH_ARGS and SCAN_ARGS are passed to `host bench` and `host scan`. RUN_SECONDS fits the run
# in a time limit (a device run's): a test binary or guard group starts only with 30 s left, and
# is stopped when the time is up; each says SKIPPED or STOPPED, never passed. When the bundle
# carries CCCL's headers (cccl/, from `cargo xtask bundle --cccl DIR`) or GPU_REDUCE_CCCL names
# a CCCL checkout, `host bench` also builds a CUB shim against them and times it next to the
# toolkit's CUB ("CUB(cccl)" rows and column); GPU_REDUCE_CCCL= (empty) leaves it out. The
# toolkit CUB's shim is built once into cache/ and reused.
set -u -o pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-$here/out}"
mkdir -p "$out"
N="${N:-$((1 << 26))}"
ITERS="${ITERS:-100}"
STEPS="${STEPS:-tests reduce ladder bench scan}"
SCAN_ARGS="${SCAN_ARGS:-}"
BENCH_ARGS="${BENCH_ARGS:-}"
has() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
started=$SECONDS
# Seconds left of RUN_SECONDS (a day without it).
left() { if [ -n "${RUN_SECONDS:-}" ]; then echo $((RUN_SECONDS - (SECONDS - started))); else echo 86400; fi; }
# `limited LOG LABEL COMMAND...`: COMMAND's output to LOG (and the screen) within RUN_SECONDS;
# not started (SKIPPED) with under 30 s left, STOPPED when the time runs out; rc=1 unless it passed.
limited() {
    local log="$1" label="$2"
    shift 2
    if [ "$(left)" -lt 30 ]; then
        echo "== $label: SKIPPED (RUN_SECONDS): not run" | tee -a "$log"
        rc=1
        return
    fi
    echo "== $label" | tee -a "$log"
    timeout "$(left)" "$@" 2>&1 | tee -a "$log"
    local code=${PIPESTATUS[0]}
    [ "$code" -ne 0 ] && rc=1
    [ "$code" -eq 124 ] && echo "== $label: STOPPED at RUN_SECONDS: not finished" | tee -a "$log"
}

{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } \
    >"$out/device.txt" 2>&1
cat "$out/device.txt"
"$here/bin/host" info 2>&1 | tee "$out/info.txt"

rc=0
if has tests; then
    skip=()
    gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')"
    if [ "${gpus:-0}" -lt 2 ]; then
        # Tests named *two_gpus need a second device.
        skip=(--skip two_gpus)
        echo "two-GPU tests: SKIPPED — ${gpus:-0} GPU on this machine (not run, not passed)" \
            | tee -a "$out/gpu-tests.log"
    fi
    for pattern in ${TESTS:-*}; do
        for t in "$here"/bin/test-$pattern; do
            # --include-ignored: the GPU tests and the simulator tests, on the same machine.
            limited "$out/gpu-tests.log" "$(basename "$t")" \
                "$t" --include-ignored --test-threads=1 "${skip[@]}"
        done
    done
fi
if has coldstart; then
    # A first sum and a first scan in a fresh process, cold (empty ~/.nv/ComputeCache, as on
    # every new machine or container) and warm.
    for run in cold1 cold2 cold3 warm1 warm2 warm3; do
        case "$run" in cold*) rm -rf "$HOME/.nv/ComputeCache" ;; esac
        echo "== host info --verbose ($run)"
        "$here/bin/host" info --verbose 2>&1 | tee -a "$out/coldstart.log" || rc=1
    done
fi
if has reduce; then
    for n in 1000000 "$N"; do
        echo "== host reduce --n $n --iters $ITERS"
        "$here/bin/host" reduce --n "$n" --iters "$ITERS" 2>&1 | tee -a "$out/reduce.log" || rc=1
    done
fi
if has ladder; then
    for dt in f32 i32 f64; do
        echo "== host reduce --ladder --dtype $dt --n $N"
        "$here/bin/host" reduce --ladder --dtype "$dt" --n "$N" --iters "$ITERS" 2>&1 \
            | tee -a "$out/ladder.md" || rc=1
    done
fi
lib=""
# The CCCL checkout for the second CUB: $GPU_REDUCE_CCCL if set (even empty), else the bundle's.
cccl="${GPU_REDUCE_CCCL-}"
if [ -z "${GPU_REDUCE_CCCL+set}" ] && [ -d "$here/cccl" ]; then
    cccl="$here/cccl"
fi
if has bench || has scan || has guard || has ab; then
    # The toolkit's CUB (GPU_REDUCE_CCCL emptied: build.sh would take it). Built once into the
    # bundle (~70 s of nvcc) and kept there: a later run on the same machine reuses it.
    shim="$here/cache/libcub_shim.so"
    if [ -f "$shim" ]; then
        echo "CUB shim: $shim (built by an earlier run on this machine)" >"$out/cub-build.log"
        lib="$shim"
    elif mkdir -p "$here/cache" &&
        GPU_REDUCE_CCCL="" bash "$here/cub/build.sh" "$shim" >"$out/cub-build.log" 2>&1; then
        lib="$shim"
    else
        rm -f "$shim"
        echo "CUB shim did not build (see cub-build.log): CUB columns will say n/a"
    fi
fi
if has bench; then
    echo "== host bench $BENCH_ARGS"
    # results.json, results.md and the plots (PNG + SVG) go to $out/bench; the CUB(cccl) shim
    # is built into $out/bench/cub-cccl.
    # No CCCL: the variable unset (host reads an empty one as a missing --cccl value).
    cccl_env=(-u GPU_REDUCE_CCCL)
    [ -n "$cccl" ] && cccl_env=(GPU_REDUCE_CCCL="$cccl")
    # shellcheck disable=SC2086
    env "${cccl_env[@]}" GPU_REDUCE_CUB_LIB="$lib" "$here/bin/host" bench --backend cuda \
        --quiet $BENCH_ARGS --out "$out/bench" 2>&1 | tee "$out/bench.log" || rc=1
fi
if has guard; then
    # The speed guard: the committed baseline's cells again, each against its run-to-run spread
    # (README, Contributing); GUARD_BASELINE picks another baseline, GUARD_SAVE saves this run,
    # GUARD_CELLS=PATTERN runs only the cells whose name contains it ("P1;P2": one guard for
    # each, a verdict each, so that a device run's time limit can take the groups it fits).
    base="${GUARD_BASELINE:-$here/baseline/h100.json}"
    IFS=';' read -r -a patterns <<<"${GUARD_CELLS:-}"
    [ ${#patterns[@]} -eq 0 ] && patterns=("")
    : >"$out/guard.log"
    for p in "${patterns[@]}"; do
        args=()
        save="${GUARD_SAVE:-}"
        # Several groups: a baseline file each (FILE.<pattern>).
        [ -n "$save" ] && [ ${#patterns[@]} -gt 1 ] && save="$save.${p// /_}"
        [ -n "$save" ] && args+=(--save-baseline "$save")
        [ -n "$p" ] && args+=(--cells "$p")
        GPU_REDUCE_CUB_LIB="$lib" limited "$out/guard.log" "host bench --compare $base ${args[*]}" \
            "$here/bin/host" bench --backend cuda --quiet --compare "$base" "${args[@]}" \
            --out "$out/guard"
    done
fi
if has ab; then
    # A/B of builds in one run: the bundle's host and each host of AB_HOSTS (paths to other
    # builds' `host` binaries), `host bench $AB_ARGS` each, in order then in reverse order (a
    # drift of the machine hits both ends); the medians side by side in $out/ab.md.
    hosts=("$here/bin/host")
    for h in ${AB_HOSTS:-}; do hosts+=("$(cd "$(dirname "$h")" && pwd)/$(basename "$h")"); done
    rounds=("${hosts[@]}")
    for ((j = ${#hosts[@]} - 1; j >= 0; j--)); do rounds+=("${hosts[j]}"); done
    : >"$out/ab.tsv"
    for ((j = 0; j < ${#rounds[@]}; j++)); do
        h="${rounds[j]}"
        name="$([ "$h" = "$here/bin/host" ] && echo bundle || basename "$h")#$((j / ${#hosts[@]} + 1))"
        # The shim built above: without one, each `host bench` would build its own with nvcc.
        # shellcheck disable=SC2086
        GPU_REDUCE_CUB_LIB="$lib" limited "$out/ab.log" "ab: $name: host bench $AB_ARGS" "$h" \
            bench --backend cuda --quiet $AB_ARGS --out "$out/ab/$j"
        # op | dtype | n | method | median: one line a measurement but the limits'.
        [ -f "$out/ab/$j/results.md" ] && awk -F' *[|] *' -v b="$name" \
            '$2 != "" && $2 != "op" && $2 != "memory" && $2 !~ /^-/ && NF > 6 {print $2 " " $3 " " $4 " " $5 "\t" b "\t" $6}' \
            "$out/ab/$j/results.md" >>"$out/ab.tsv"
    done
    # One row a measurement, one column a build and round.
    awk -F'\t' '!($2 in c) {c[$2]; cols[++nc] = $2} !($1 in r) {r[$1]; rows[++nr] = $1}
        {v[$1, $2] = $3}
        END {
            printf "| measurement |"; for (i = 1; i <= nc; i++) printf " %s |", cols[i]; print ""
            printf "|---|"; for (i = 1; i <= nc; i++) printf "---|"; print ""
            for (j = 1; j <= nr; j++) {
                printf "| %s |", rows[j]
                for (i = 1; i <= nc; i++) printf " %s |", v[rows[j], cols[i]]
                print ""
            }
        }' "$out/ab.tsv" >"$out/ab.md"
fi
if has scan; then
    for dt in i32 f32; do
        echo "== host scan --dtype $dt $SCAN_ARGS"
        # shellcheck disable=SC2086
        GPU_REDUCE_CUB_LIB="$lib" "$here/bin/host" scan --backend cuda --dtype "$dt" $SCAN_ARGS \
            --out "$out/scan-$dt.md" 2>&1 | tee -a "$out/scan.log" || rc=1
    done
fi
if has sanitize; then
    # Every kernel on small and odd sizes (test sanitize_gpu) under each compute-sanitizer tool;
    # a tool's verdict is its "ERROR SUMMARY" line.
    san="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)"
    if [ -z "$san" ]; then
        echo "compute-sanitizer not found: sanitize step SKIPPED" | tee "$out/sanitize.log"
    else
        for tool in memcheck racecheck synccheck initcheck; do
            echo "== compute-sanitizer --tool $tool"
            timeout "${SANITIZE_TIMEOUT:-300}" "$san" --tool "$tool" --error-exitcode 9 \
                "$here/bin/test-sanitize_gpu" --include-ignored --test-threads=1 \
                >"$out/sanitize-$tool.log" 2>&1
            code=$?
            [ $code -ne 0 ] && rc=1
            echo "$tool: exit $code; $(grep -hE '(ERROR|RACECHECK) SUMMARY' "$out/sanitize-$tool.log" | tail -1)" \
                | tee -a "$out/sanitize.log"
        done
    fi
fi
rm -f "$out/bench/cub-cccl/libcub_shim_cccl.so"

echo
echo "== summary (rc=$rc)"
head -2 "$out/device.txt"
[ -f "$out/gpu-tests.log" ] && grep -hE '^== test-|^test result|SKIPPED' "$out/gpu-tests.log"
[ -f "$out/sanitize.log" ] && cat "$out/sanitize.log"
[ -f "$out/coldstart.log" ] && grep -hE '^== host info|driver init|Context::new|first sum|first scan|kernel loads' "$out/coldstart.log"
[ -f "$out/reduce.log" ] && grep -h '^n = \|^time:' "$out/reduce.log"
[ -f "$out/bench.log" ] && grep -hE '^CUB(\(cccl\))?: |CUB(\(cccl\))? not available' "$out/bench.log"
[ -f "$out/ab.md" ] && cat "$out/ab.md"
[ -f "$out/bench/results.md" ] && cat "$out/bench/results.md"
for f in "$out"/scan-*.md; do [ -f "$f" ] && cat "$f"; done
[ -f "$out/guard.log" ] && grep -hE '^== host bench --compare|SLOWER|missing|^guard: ' "$out/guard.log"
exit $rc
