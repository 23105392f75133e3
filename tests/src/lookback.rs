//! Test bodies of the production single-pass (decoupled look-back) scan and the scan by key,
//! shared by the simulator tests and their GPU twins.

use gpu_reduce::{Context, Error, Reduction, ScanKind};
use gpu_reduce::{ScanByKeyElement, ScanElement};
use gpu_reduce_tools::conformance::Conformance;
use gpu_reduce_tools::cpu::{cpu_scan, cpu_scan_by_key};
use rand::{Rng, SeedableRng, rngs::SmallRng};

use crate::reductions::{TestElem, data};

/// Check a device scan against the CPU: integers and float min/max bit for bit (NaN equal to
/// NaN), float sums with `approx` against an f64 scan, within a bound that grows with the
/// depth of the device's combining tree and the prefix's sum of magnitudes.
pub fn check_scan_result<T: TestElem>(
    got: &[T],
    input: &[T],
    op: Reduction,
    kind: ScanKind,
    what: &str,
) {
    assert_eq!(got.len(), input.len(), "{what}: length");
    if !(T::IS_FLOAT && op == Reduction::Sum) {
        let want = cpu_scan(input, op, kind);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let same = g.bits() == w.bits() || (g.to_f64().is_nan() && w.to_f64().is_nan());
            assert!(
                same,
                "{what}: element {i} of {}: got {g:?}, want {w:?}",
                got.len()
            );
        }
        return;
    }
    let tiles = input.len() as f64 / 1024.0;
    let depth = 64.0 + tiles + (input.len() as f64 + 1.0).log2();
    // Compensated reference prefixes: a plain f64 running sum of f64 data errs as much as the
    // device may (seen with all-equal data).
    let (sums, abss) = crate::scans::f64_prefixes(input);
    for (i, &g) in got.iter().enumerate().take(input.len()) {
        let (exact, abs) = (sums[i], abss[i]);
        let (before, before_abs) = if i == 0 {
            (0.0, 0.0)
        } else {
            (sums[i - 1], abss[i - 1])
        };
        let (want, mag) = match kind {
            ScanKind::Inclusive => (exact, abs),
            ScanKind::Exclusive => (before, before_abs),
        };
        let bound = depth * T::EPS * mag + f64::MIN_POSITIVE;
        assert!(
            approx::abs_diff_eq!(g.to_f64(), want, epsilon = bound),
            "{what}: element {i} of {}: got {g:?}, want {want} (bound {bound:e})",
            got.len()
        );
    }
}

fn one_scan<T: TestElem + ScanElement>(
    ctx: &Context,
    input: &[T],
    op: Reduction,
    kind: ScanKind,
    what: &str,
) {
    let d = ctx.htod(input).unwrap();
    let mut out = ctx.alloc_zeros::<T>(input.len().max(1)).unwrap();
    ctx.scan(&d, &mut out, op, kind).unwrap();
    let got = ctx.dtoh(&out).unwrap();
    check_scan_result(&got[..input.len()], input, op, kind, what);
}

/// Every type × operator × kind at `sizes` (random data, a NaN among floats for min/max).
pub fn check_scan_every_op_and_type(ctx: &Context, sizes: &[usize]) {
    fn each<T: TestElem + ScanElement>(ctx: &Context, sizes: &[usize]) {
        for (s, &n) in sizes.iter().enumerate() {
            for op in Reduction::SCAN {
                for kind in ScanKind::ALL {
                    let specials = op != Reduction::Sum && s % 2 == 1;
                    let x: Vec<T> = data(n, 1000 + s as u64, specials);
                    let what = format!("{} {} {} n={n}", T::DTYPE, op.name(), kind.name());
                    one_scan(ctx, &x, op, kind, &what);
                }
            }
        }
    }
    each::<i32>(ctx, sizes);
    each::<u32>(ctx, sizes);
    each::<i64>(ctx, sizes);
    each::<u64>(ctx, sizes);
    each::<f32>(ctx, sizes);
    each::<f64>(ctx, sizes);
}

/// Sizes around the row, tile and multi-tile boundaries of both element sizes, up to `max`.
pub fn scan_boundary_sizes(max: usize) -> Vec<usize> {
    let mut v = vec![
        0, 1, 2, 3, 4, 5, 31, 32, 33, 63, 64, 65, 127, 128, 129, 511, 512, 513,
    ];
    let t4 = kernels::scan::policy::ACTIVE.tile_elems(4) as usize;
    let t8 = kernels::scan::policy::ACTIVE.tile_elems(8) as usize;
    // The scan by key's tiles (policy `by_key_rows`, `by_key_rows_narrow`).
    let k4 = kernels::scan::policy::ACTIVE.by_key_tile_elems(4) as usize;
    let k8 = kernels::scan::policy::ACTIVE.by_key_tile_elems(8) as usize;
    for t in [k8, k4, 2 * k4, t8, t4, 2 * t4, 3 * t4, 33 * t4] {
        v.extend([t - 1, t, t + 1]);
    }
    v.sort_unstable();
    v.dedup();
    v.retain(|&n| n <= max);
    v
}

/// In place, at offsets into a larger buffer (misaligned for vector loads), and errors.
pub fn check_scan_in_place_offsets_and_errors(ctx: &Context) {
    let x: Vec<i32> = data(10_000, 7, false);
    let mut d = ctx.htod(&x).unwrap();
    ctx.scan_in_place(&mut d, Reduction::Sum, ScanKind::Inclusive)
        .unwrap();
    check_scan_result(
        &ctx.dtoh(&d).unwrap(),
        &x,
        Reduction::Sum,
        ScanKind::Inclusive,
        "in place",
    );
    let mut d = ctx.htod(&x).unwrap();
    ctx.scan_in_place(&mut d, Reduction::Max, ScanKind::Exclusive)
        .unwrap();
    check_scan_result(
        &ctx.dtoh(&d).unwrap(),
        &x,
        Reduction::Max,
        ScanKind::Exclusive,
        "in place max",
    );

    let all = ctx.htod(&x).unwrap();
    for off in [1usize, 2, 3, 5] {
        let n = 9000 - off;
        let mut out = ctx.alloc_zeros::<i32>(n).unwrap();
        ctx.scan(
            all.view(off..off + n).unwrap(),
            &mut out,
            Reduction::Sum,
            ScanKind::Exclusive,
        )
        .unwrap();
        check_scan_result(
            &ctx.dtoh(&out).unwrap(),
            &x[off..off + n],
            Reduction::Sum,
            ScanKind::Exclusive,
            &format!("offset {off}"),
        );
    }

    // Empty input: a no-op, even into an empty output.
    let empty = ctx.alloc_zeros::<f64>(0).unwrap();
    let mut out0 = ctx.alloc_zeros::<f64>(0).unwrap();
    ctx.scan(&empty, &mut out0, Reduction::Min, ScanKind::Inclusive)
        .unwrap();
    // Output too short: a clear error, nothing launched.
    let mut short = ctx.alloc_zeros::<i32>(9).unwrap();
    let e = ctx
        .scan(&all, &mut short, Reduction::Sum, ScanKind::Inclusive)
        .unwrap_err();
    assert!(
        matches!(e, Error::OutputTooSmall { .. }) && e.to_string().contains("output"),
        "{e}"
    );
}

/// Keys in runs of random length (1 to `max_run`), so segments start anywhere: inside a
/// thread's elements, at row/warp/tile boundaries, and span several tiles.
pub fn run_keys<K: From<u32>>(n: usize, max_run: usize, seed: u64) -> Vec<K> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut keys = Vec::with_capacity(n);
    let mut k = 0u32;
    while keys.len() < n {
        let run = rng.random_range(1..=max_run);
        k = k.wrapping_add(rng.random_range(1..4));
        keys.extend(std::iter::repeat_n(k, run.min(n - keys.len())).map(K::from));
    }
    keys
}

/// Scan by key: every operator and kind, u32 and u64 keys, short and long runs.
pub fn check_scan_by_key(ctx: &Context, sizes: &[usize]) {
    fn each<K, T>(ctx: &Context, sizes: &[usize])
    where
        K: gpu_reduce::DeviceElement + From<u32> + PartialEq,
        T: TestElem + ScanByKeyElement<K>,
    {
        for (s, &n) in sizes.iter().enumerate() {
            for max_run in [3usize, 300, 20_000] {
                let keys: Vec<K> = run_keys(n, max_run, s as u64 * 31 + max_run as u64);
                let vals: Vec<T> = data(n, 77 + s as u64, false);
                let (dk, dv) = (ctx.htod(&keys).unwrap(), ctx.htod(&vals).unwrap());
                let mut out = ctx.alloc_zeros::<T>(n.max(1)).unwrap();
                for op in Reduction::SCAN {
                    for kind in ScanKind::ALL {
                        ctx.scan_by_key(&dk, &dv, &mut out, op, kind).unwrap();
                        let got = ctx.dtoh(&out).unwrap();
                        let want = cpu_scan_by_key(&keys, &vals, op, kind);
                        let what = format!(
                            "by key {} {} {} n={n} runs<={max_run}",
                            T::DTYPE,
                            op.name(),
                            kind.name()
                        );
                        if T::IS_FLOAT && op == Reduction::Sum {
                            // Per segment, against the float reference scan of that segment.
                            let mut start = 0;
                            while start < n {
                                let mut end = start + 1;
                                while end < n && keys[end] == keys[start] {
                                    end += 1;
                                }
                                check_scan_result(
                                    &got[start..end],
                                    &vals[start..end],
                                    op,
                                    kind,
                                    &what,
                                );
                                start = end;
                            }
                        } else {
                            for i in 0..n {
                                assert!(
                                    got[i].bits() == want[i].bits(),
                                    "{what}: element {i}: got {:?}, want {:?}",
                                    got[i],
                                    want[i]
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    each::<u32, i32>(ctx, sizes);
    each::<u32, f32>(ctx, sizes);
    each::<u64, u64>(ctx, sizes);
    each::<u64, f64>(ctx, sizes);
    each::<u32, i64>(ctx, sizes);
    each::<u64, u32>(ctx, sizes);
    // Mismatched lengths: a clear error.
    let k = ctx.htod(&[1u32, 1, 2]).unwrap();
    let v = ctx.htod(&[1i32, 2]).unwrap();
    let mut o = ctx.alloc_zeros::<i32>(3).unwrap();
    let e = ctx
        .scan_by_key(&k, &v, &mut o, Reduction::Sum, ScanKind::Inclusive)
        .unwrap_err();
    assert!(
        matches!(e, Error::LengthMismatch { .. }) && e.to_string().contains("keys"),
        "{e}"
    );
}

/// The look-back under contention: `reps` scans of `n` random i32 (many tiles waiting on each
/// other), every one checked exactly; the u64 sum of the last element also checked.
pub fn check_scan_stress(ctx: &Context, n: usize, reps: usize) {
    let mut rng = SmallRng::seed_from_u64(0x5ca7);
    let mut out = ctx.alloc_zeros::<i32>(n).unwrap();
    for r in 0..reps {
        let x: Vec<i32> = (0..n).map(|_| rng.random_range(-1000..1000)).collect();
        let d = ctx.htod(&x).unwrap();
        let kind = if r % 2 == 0 {
            ScanKind::Inclusive
        } else {
            ScanKind::Exclusive
        };
        ctx.scan(&d, &mut out, Reduction::Sum, kind).unwrap();
        let got = ctx.dtoh(&out).unwrap();
        let want = cpu_scan(&x, Reduction::Sum, kind);
        if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
            panic!(
                "stress run {r} ({}): element {i} of {n}: got {}, want {}",
                kind.name(),
                got[i],
                want[i]
            );
        }
    }
}

/// Integer scans are deterministic: the same input gives identical outputs run after run.
pub fn check_scan_integer_determinism(ctx: &Context, n: usize, reps: usize) {
    let x: Vec<u64> = data(n, 99, false);
    let d = ctx.htod(&x).unwrap();
    let mut out = ctx.alloc_zeros::<u64>(n).unwrap();
    ctx.scan(&d, &mut out, Reduction::Sum, ScanKind::Inclusive)
        .unwrap();
    let first = ctx.dtoh(&out).unwrap();
    for _ in 0..reps {
        ctx.scan(&d, &mut out, Reduction::Sum, ScanKind::Inclusive)
            .unwrap();
        assert_eq!(ctx.dtoh(&out).unwrap(), first);
    }
}

/// The look-back walk itself, over prepared tile states: 200 tiles, tile 0 an inclusive
/// prefix, a few others published as prefixes, the rest as aggregates only, stale words of an
/// older epoch never read as current. Values are (head, value) pairs under the segmented sum,
/// which is not commutative, so a window combined in the wrong order or a window dropped gives
/// a different answer. Several windows of 32 are walked for the far tiles.
pub fn check_lookback_walk(ctx: &Context) {
    let epoch = 5u32;
    let tiles = 200usize;
    let mut rng = SmallRng::seed_from_u64(0x100b);
    let seg = |a: (u32, u32), b: (u32, u32)| {
        (
            a.0 | b.0,
            if b.0 != 0 { b.1 } else { a.1.wrapping_add(b.1) },
        )
    };
    let aggs: Vec<(u32, u32)> = (0..tiles)
        .map(|_| {
            (
                u32::from(rng.random_ratio(1, 40)),
                rng.random_range(0..1000),
            )
        })
        .collect();
    let mut incl = vec![(0u32, 0u32); tiles];
    let mut acc = (0, 0);
    for t in 0..tiles {
        acc = seg(acc, aggs[t]);
        incl[t] = acc;
    }
    for published_prefix in [vec![0usize], vec![0, 10, 150]] {
        let mut flags = vec![(epoch << 2) | 1; tiles];
        let mut prefixes = vec![(7u32, 12345u32); tiles]; // junk unless published
        for &t in &published_prefix {
            flags[t] = (epoch << 2) | 2;
            prefixes[t] = incl[t];
        }
        for tile in [1u64, 2, 31, 32, 33, 64, 100, 151, 199] {
            let got = ctx
                .conformance_lookback(&flags, &aggs, &prefixes, tile, epoch)
                .unwrap();
            let want = incl[tile as usize - 1];
            assert_eq!(
                got, want,
                "tile {tile}, prefixes published at {published_prefix:?}"
            );
        }
    }
}

/// More than 2^32 elements (u8-sized values would not do: the kernels take 4- and 8-byte
/// types): 2^32 + 4099 i32 ones, exclusive sum in place, so element i must equal i (mod 2^32,
/// as i32 wraps). Needs ~17 GB; fails (does not pass silently) when the device has less.
pub fn check_scan_huge(ctx: &Context) {
    let n = (1usize << 32) + 4099;
    let ones = vec![1i32; n];
    let mut d = ctx
        .htod(&ones)
        .unwrap_or_else(|e| panic!("cannot place {n} i32 on the device: {e}"));
    drop(ones);
    ctx.scan_in_place(&mut d, Reduction::Sum, ScanKind::Exclusive)
        .unwrap();
    let got = ctx.dtoh(&d).unwrap();
    for i in (0..n).step_by(1 << 20).chain(n - 5000..n) {
        assert_eq!(got[i], i as u32 as i32, "element {i}");
    }
}
