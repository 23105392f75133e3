//! Test bodies shared by the simulator tests (`minmax_sim.rs`, run everywhere, CI included) and
//! the GPU tests (`minmax_gpu.rs`, `#[ignore]`d: `cargo xtask test --gpu`). Each takes the
//! context to run on.

// Each test binary uses a part of these.
#![allow(dead_code)]

use gpu_reduce::{Context, ScanKind};
use minmax_example::{cpu, lcg_f32, max_abs_scan, min_max, outliers, softmax_stats};

/// Sizes around a warp, a block and several tiles (300 000 f32: 147 reduction tiles of 2048
/// elements, 19 scan tiles of 16 384).
pub const SIZES: [usize; 7] = [0, 1, 31, 32, 33, 1000, 300_000];

/// Relative tolerance of `sum_exp` against the f64 reference: each GPU `exp` is
/// `ex2.approx(x * log2 e)` (relative error ~2^-22, plus ~|x| * 2^-24 from rounding the
/// product, and the terms that matter have |x| < ~20), then an f32 tree sum of depth ~30.
pub const SOFTMAX_RTOL: f64 = 1e-5;

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn check_min_max_of(ctx: &Context, data: &[f32], what: &str) {
    let x = ctx.htod(data).unwrap();
    let got = min_max(ctx, &x).unwrap();
    let want = cpu::min_max(data);
    match (got, want) {
        (None, None) => {}
        (Some(g), Some(w)) => assert!(
            same(g.min, w.0) && g.argmin == w.1 && same(g.max, w.2) && g.argmax == w.3,
            "{what} (n = {}): got {g:?}, want {w:?}",
            data.len()
        ),
        _ => panic!("{what} (n = {}): got {got:?}, want {want:?}", data.len()),
    }
}

fn check_softmax_of(ctx: &Context, data: &[f32], what: &str) {
    let x = ctx.htod(data).unwrap();
    let got = softmax_stats(ctx, &x).unwrap();
    let (m, s) = cpu::softmax_stats(data);
    let ctx_of = || format!("{what} (n = {}): got {got:?}, want ({m}, {s})", data.len());
    if m.is_nan() {
        assert!(got.max.is_nan() && got.sum_exp.is_nan(), "{}", ctx_of());
        return;
    }
    assert_eq!(got.max as f64, m, "{}", ctx_of());
    if s == 0.0 {
        assert_eq!(got.sum_exp, 0.0, "{}", ctx_of());
        assert_eq!(got.log_sum_exp(), f32::NEG_INFINITY, "{}", ctx_of());
    } else {
        let rel = (got.sum_exp as f64 - s).abs() / s;
        assert!(rel <= SOFTMAX_RTOL, "{} (relative error {rel:e})", ctx_of());
    }
}

fn check_max_abs_of(ctx: &Context, data: &[f32], what: &str) {
    let x = ctx.htod(data).unwrap();
    for kind in [ScanKind::Inclusive, ScanKind::Exclusive] {
        let mut out = ctx.alloc_zeros::<f32>(data.len().max(1)).unwrap();
        max_abs_scan(ctx, &x, &mut out, kind).unwrap();
        let got = ctx.dtoh(&out).unwrap();
        let want = cpu::max_abs_scan(data, kind == ScanKind::Inclusive);
        if let Some(i) = (0..data.len()).find(|&i| !same(got[i], want[i])) {
            panic!(
                "{what} {kind:?} (n = {}): out[{i}] = {}, want {}",
                data.len(),
                got[i],
                want[i]
            );
        }
    }
}

fn check_outliers_of(ctx: &Context, data: &[f32], what: &str) {
    let x = ctx.htod(data).unwrap();
    let mut out = ctx.alloc_zeros::<f32>(data.len().max(1)).unwrap();
    let k = outliers(ctx, &x, &mut out).unwrap() as usize;
    let want: Vec<u32> = data
        .iter()
        .filter(|v| v.abs() > 3.0)
        .map(|v| v.to_bits())
        .collect();
    let got: Vec<u32> = ctx.dtoh(&out).unwrap()[..k]
        .iter()
        .map(|v| v.to_bits())
        .collect();
    assert_eq!(got, want, "{what} outliers (n = {})", data.len());
}

/// Every operator on pseudo-random data of every size in [`SIZES`].
pub fn check_all_sizes(ctx: &Context) {
    for (k, &n) in SIZES.iter().enumerate() {
        let data = lcg_f32(n, k as u64, -50.0, 50.0);
        check_min_max_of(ctx, &data, "random");
        check_softmax_of(ctx, &data, "random");
        check_max_abs_of(ctx, &data, "random");
        let narrow = lcg_f32(n, k as u64 + 7, -4.0, 4.0);
        check_outliers_of(ctx, &narrow, "random in [-4, 4]");
    }
}

/// MinMax: NaN, infinities, signed zeros, ties across tiles, offsets, the empty input.
pub fn check_min_max_edges(ctx: &Context) {
    let nan = f32::NAN;
    let inf = f32::INFINITY;
    for (data, what) in [
        (vec![1.0, nan, -5.0, nan], "NaN wins both, first NaN"),
        (
            vec![inf, -inf, 0.0, -inf, inf],
            "infinities, first occurrence",
        ),
        (vec![0.0, -0.0, 0.0, -0.0], "-0.0 < +0.0"),
        (vec![-0.0, 0.0], "-0.0 < +0.0, reversed"),
        (vec![3.0; 33], "all equal: index 0"),
        (vec![-inf], "one -inf"),
        (vec![nan], "one NaN"),
    ] {
        check_min_max_of(ctx, &data, what);
    }
    let n = 300_000;
    let mut data = lcg_f32(n, 7, -1.0, 1.0);
    // Ties in different tiles and blocks: the first one wins.
    for i in [150_001, 2_047, 290_000] {
        data[i] = -2.0;
    }
    for i in [299_999, 4_096, 77_777] {
        data[i] = 2.0;
    }
    check_min_max_of(ctx, &data, "ties across tiles");
    let r = min_max(ctx, &ctx.htod(&data).unwrap()).unwrap().unwrap();
    assert_eq!((r.argmin, r.argmax), (2_047, 4_096));
    data[250_000] = nan;
    data[123_456] = nan;
    data[299_000] = nan;
    check_min_max_of(ctx, &data, "NaNs across tiles");
    // Offsets: a view whose start is not 16-byte aligned (the kernel's scalar head); indices
    // count from the view's start.
    let x = ctx.htod(&data).unwrap();
    for off in [1, 2, 3, 5] {
        let v = x.view(off..).unwrap();
        let got = min_max(ctx, v).unwrap().unwrap();
        let w = cpu::min_max(&data[off..]).unwrap();
        assert!(
            same(got.min, w.0) && got.argmin == w.1 && same(got.max, w.2) && got.argmax == w.3,
            "offset {off}: {got:?} vs {w:?}"
        );
    }
    assert_eq!(
        min_max(ctx, &ctx.alloc_zeros::<f32>(0).unwrap()).unwrap(),
        None
    );
}

/// Online softmax: huge ranges (no overflow where a plain sum of `exp` would), `-inf`, `+inf`
/// and NaN elements, all against the f64 reference within [`SOFTMAX_RTOL`].
pub fn check_softmax_edges(ctx: &Context) {
    let n = 300_000;
    let nan = f32::NAN;
    let (inf, ninf) = (f32::INFINITY, f32::NEG_INFINITY);
    let huge = lcg_f32(n, 1, -1e30, 1e30);
    check_softmax_of(ctx, &huge, "values in [-1e30, 1e30]");
    let extreme = lcg_f32(n, 2, -f32::MAX, f32::MAX);
    check_softmax_of(
        ctx,
        &extreme,
        "values in [-MAX, MAX] (x - m overflows to -inf)",
    );
    // A plain sum of exp(x) overflows f32 from x = 89 on; exp(x - m) never does.
    let wide = lcg_f32(n, 3, -200.0, 200.0);
    check_softmax_of(ctx, &wide, "values in [-200, 200]");
    // Shift invariance: values far from 0, a few dozen apart.
    let shifted: Vec<f32> = lcg_f32(n, 4, -30.0, 30.0).iter().map(|v| v + 1e4).collect();
    check_softmax_of(ctx, &shifted, "1e4 + [-30, 30]");
    // Clustered at the max: sum_exp is large, every term matters.
    let flat = lcg_f32(n, 5, 0.0, 1e-3);
    check_softmax_of(ctx, &flat, "values in [0, 1e-3]");
    // -inf entries add nothing.
    let mut holes = lcg_f32(n, 6, -10.0, 10.0);
    for v in holes.iter_mut().step_by(7) {
        *v = ninf;
    }
    check_softmax_of(ctx, &holes, "every 7th element -inf");
    for (data, what) in [
        (vec![ninf; 1000], "all -inf"),
        (vec![ninf], "one -inf"),
        (vec![], "empty"),
        (vec![1.0, inf, 2.0, inf, ninf], "+inf elements: their count"),
        (vec![inf], "one +inf"),
        (vec![1.0, nan, 3.0], "NaN"),
        (vec![ninf, nan], "NaN after -inf"),
        (vec![0.0, -0.0], "signed zeros"),
        (vec![88.0, 89.0, 100.0], "beyond exp's f32 range"),
    ] {
        check_softmax_of(ctx, &data, what);
    }
    let mut one_nan = lcg_f32(n, 8, -1.0, 1.0);
    one_nan[200_001] = nan;
    check_softmax_of(ctx, &one_nan, "one NaN among 300 000");
}

/// MaxAbs scan, exactly: signs, a NaN mid-way, infinities, the first element negative.
pub fn check_max_abs_edges(ctx: &Context) {
    let nan = f32::NAN;
    let inf = f32::INFINITY;
    for (data, what) in [
        (vec![-3.0], "one negative element: its magnitude"),
        (vec![-0.0, 0.0, -0.0], "signed zeros: +0.0"),
        (vec![1.0, -inf, 2.0], "-inf: +inf after it"),
        (vec![1.0, -2.0, nan, 5.0], "NaN propagates"),
    ] {
        check_max_abs_of(ctx, &data, what);
    }
    let n = 300_000;
    // Decreasing magnitudes with alternating signs: the running max stays at |x_0|; rising:
    // it changes at every element (each tile's prefix matters).
    let falling: Vec<f32> = (0..n)
        .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 } * (n - i) as f32)
        .collect();
    check_max_abs_of(ctx, &falling, "falling magnitudes");
    let rising: Vec<f32> = falling.iter().rev().copied().collect();
    check_max_abs_of(ctx, &rising, "rising magnitudes");
    let mut data = lcg_f32(n, 9, -1.0, 1.0);
    data[100_000] = nan;
    check_max_abs_of(ctx, &data, "a NaN at 100 000");
}

/// A user operator whose own check fails ([`minmax_example::checked_sum`] on input with a
/// NaN): the call returns the backend's fault error, never hangs and never a value. Inputs
/// without a NaN sum exactly (small integers). Returns the fault's error.
pub fn check_failing_operator(ctx: &Context) -> gpu_reduce::Error {
    use minmax_example::checked_sum;
    let n = 300_000;
    let clean: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let x = ctx.htod(&clean).unwrap();
    let want: f32 = clean.iter().map(|&v| v as f64).sum::<f64>() as f32;
    assert_eq!(checked_sum(ctx, &x).unwrap(), want);
    let mut bad = clean.clone();
    bad[123_457] = f32::NAN;
    let y = ctx.htod(&bad).unwrap();
    let started = std::time::Instant::now();
    let e = checked_sum(ctx, &y).expect_err("a NaN must fail the operator's check");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "the fault took {:?} to report",
        started.elapsed()
    );
    e
}

/// The check's clean input again: the exact sum (a context that survived a fault).
pub fn check_failing_operator_free(ctx: &Context) {
    let clean: Vec<f32> = (0..300_000).map(|i| (i % 7) as f32).collect();
    let x = ctx.htod(&clean).unwrap();
    let want: f32 = clean.iter().map(|&v| v as f64).sum::<f64>() as f32;
    assert_eq!(minmax_example::checked_sum(ctx, &x).unwrap(), want);
}
