//! f16/bf16 scans against a CPU reference: the sum accumulated in f32 from left to right, each
//! output its f32 prefix rounded to the type (the `half` crate's conversion: nearest even,
//! overflow to inf); min and max in the type (NaN wins, `-0.0 < +0.0`). Bodies shared by the
//! simulator tests (CI) and the GPU tests.
//!
//! The device adds in another order than the reference (a tree within a tile, then the
//! look-back), so bit-for-bit comparisons use data whose every f32 partial sum is exact
//! (multiples of 1/8, or small integers, few enough): then every order gives the same f32, and
//! the outputs, rounded once, must match bit for bit. Every NaN output must be the
//! canonical NaN (f16 `0x7e00`, bf16 `0x7fc0`), whatever the input's NaNs were.

use gpu_reduce::{Context, Error, Reduction, ScanElement, ScanKind};
use rand::{Rng, SeedableRng, rngs::SmallRng};

use crate::half::Half;

/// Elements per tile of the 16-bit scans.
pub fn tile() -> usize {
    kernels::scan::policy::ACTIVE.half_tile_elems() as usize
}

/// Lengths at the edges of the vector (4), the warp's row and 1, 2 and 3 tiles, each ±1.
pub fn sizes() -> Vec<usize> {
    let t = tile();
    vec![
        0,
        1,
        2,
        3,
        4,
        5,
        127,
        128,
        129,
        t - 1,
        t,
        t + 1,
        2 * t - 1,
        2 * t + 1,
        3 * t - 1,
        3 * t,
        3 * t + 1,
    ]
}

/// The reference scan of `x`.
pub fn scan_ref<T: Half>(x: &[T], op: Reduction, kind: ScanKind) -> Vec<T> {
    let mut out = Vec::with_capacity(x.len());
    match op {
        Reduction::Sum => {
            let mut acc = 0.0f32;
            for &v in x {
                if kind == ScanKind::Exclusive {
                    out.push(T::from_f32(acc));
                }
                acc += v.to_f32();
                if kind == ScanKind::Inclusive {
                    out.push(T::from_f32(acc));
                }
            }
        }
        Reduction::Min | Reduction::Max => {
            let min = op == Reduction::Min;
            let mut acc = T::from_f32(if min {
                f32::INFINITY
            } else {
                f32::NEG_INFINITY
            });
            for &v in x {
                if kind == ScanKind::Exclusive {
                    out.push(acc);
                }
                let better = if min { lt(v, acc) } else { lt(acc, v) };
                if !is_nan(acc) && (is_nan(v) || better) {
                    acc = v;
                }
                if kind == ScanKind::Inclusive {
                    out.push(acc);
                }
            }
        }
        _ => panic!("no {} scan", op.name()),
    }
    out
}

fn is_nan<T: Half>(x: T) -> bool {
    x.to_f32().is_nan()
}

/// `a < b` with `-0.0 < +0.0` (numbers only).
fn lt<T: Half>(a: T, b: T) -> bool {
    let (x, y) = (a.to_f32(), b.to_f32());
    x < y || (x == 0.0 && y == 0.0 && x.is_sign_negative() && !y.is_sign_negative())
}

/// `got` against the reference: bits, and every NaN the canonical one (f16 `0x7e00`, bf16
/// `0x7fc0`), whichever NaN the input held.
pub fn compare<T: Half>(
    got: &[T],
    x: &[T],
    op: Reduction,
    kind: ScanKind,
    what: &str,
) -> Result<(), String> {
    let want = scan_ref(x, op, kind);
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} outputs, {} expected",
            got.len(),
            want.len()
        ));
    }
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        let canonical = if T::DTYPE == "f16" { 0x7e00 } else { 0x7fc0 };
        let ok = if is_nan(w) {
            g.to_bits() == canonical
        } else {
            g.to_bits() == w.to_bits()
        };
        if !ok {
            return Err(format!(
                "{what} ({} {} {}): output {i} is {:#06x} ({}), expected {:#06x} ({})",
                kind.name(),
                op.name(),
                T::DTYPE,
                g.to_bits(),
                g.to_f32(),
                w.to_bits(),
                w.to_f32()
            ));
        }
    }
    Ok(())
}

/// Multiples of 1/8 in [-16, 16] (exact in both types); every f32 partial sum of up to 2^17 of
/// them is exact, and prefixes past 256 (f16) or 32 (bf16) must round.
pub fn eighths<T: Half>(n: usize, seed: u64) -> Vec<T> {
    assert!(n <= 1 << 17, "partial sums must stay exact in f32");
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| T::from_f32(rng.random_range(-128..=128) as f32 / 8.0))
        .collect()
}

/// Integers in [-1, 1]: exact partial sums up to 2^24 elements.
pub fn small_integers<T: Half>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| T::from_f32(rng.random_range(-1..=1) as f32))
        .collect()
}

/// Scan `x` on the device (input view at element `in_off`, output view at `out_off`, so views
/// start mid-vector) and compare.
pub fn run_and_compare<T: Half + ScanElement>(
    ctx: &Context,
    x: &[T],
    op: Reduction,
    kind: ScanKind,
    in_off: usize,
    out_off: usize,
) -> Result<(), String> {
    let n = x.len();
    let mut padded = vec![T::from_f32(7.0); in_off];
    padded.extend_from_slice(x);
    let input = ctx.htod(&padded).unwrap();
    // The output's padding must survive: a guard value before and after.
    let guard = T::from_bits(0x1234);
    let mut out = ctx.htod(&vec![guard; out_off + n + 3]).unwrap();
    ctx.scan(
        input.view(in_off..in_off + n).unwrap(),
        out.view_mut(out_off..out_off + n).unwrap(),
        op,
        kind,
    )
    .map_err(|e| format!("scan: {e}"))?;
    let back = ctx.dtoh(&out).unwrap();
    let what = format!("n {n} in_off {in_off} out_off {out_off}");
    if back[..out_off]
        .iter()
        .chain(&back[out_off + n..])
        .any(|g| g.to_bits() != 0x1234)
    {
        return Err(format!("{what}: written outside the output view"));
    }
    compare(&back[out_off..out_off + n], x, op, kind, &what)
}

/// Every operator and kind at every length of [`sizes`], aligned and at offsets that break
/// the 8-byte vectors (input, output, both).
pub fn check_sizes_and_offsets<T: Half + ScanElement>(ctx: &Context) {
    for (k, &n) in sizes().iter().enumerate() {
        let x = eighths::<T>(n, 100 + k as u64);
        for op in Reduction::SCAN {
            for kind in ScanKind::ALL {
                for (i, o) in [(0, 0), (1, 0), (0, 3), (2, 2), (4, 4)] {
                    // Offsets on the two extreme sizes only: they cost a whole scan each.
                    if (i, o) != (0, 0) && n != 5 && n != 2 * tile() + 1 {
                        continue;
                    }
                    run_and_compare(ctx, &x, op, kind, i, o).unwrap();
                }
            }
        }
    }
}

/// Many tiles (the look-back across them): integer data, every kind of the sum.
pub fn check_many_tiles<T: Half + ScanElement>(ctx: &Context, n: usize) {
    let x = small_integers::<T>(n, 5);
    for kind in ScanKind::ALL {
        run_and_compare(ctx, &x, Reduction::Sum, kind, 0, 0).unwrap();
    }
    run_and_compare(ctx, &x, Reduction::Max, ScanKind::Inclusive, 1, 0).unwrap();
}

/// NaN, ±inf, subnormals, signed zeros, and sums past the type's range.
pub fn check_specials<T: Half + ScanElement>(ctx: &Context) {
    let h = T::from_f32;
    let t = tile();
    let nan = T::from_bits(0x7fff); // a NaN in both formats
    // A signalling NaN (quiet bit clear, a payload): every NaN output is still the canonical one.
    let snan = T::from_bits(if T::DTYPE == "f16" { 0x7d01 } else { 0x7f81 });
    assert!(is_nan(snan));
    let all = |x: &[T]| {
        for op in Reduction::SCAN {
            for kind in ScanKind::ALL {
                run_and_compare(ctx, x, op, kind, 0, 0).unwrap();
            }
        }
    };
    // One NaN, early, at a tile's edge, late; two NaNs (one NaN out either way).
    for pos in [0, 3, t - 1, t, t + 700] {
        let mut x = eighths::<T>(t + 701, 9);
        x[pos] = nan;
        all(&x);
        x[t + 700] = snan;
        all(&x);
    }
    // +inf, then -inf: inf from the first on, NaN from the second.
    let mut x = eighths::<T>(2 * t + 9, 10);
    x[5] = h(f32::INFINITY);
    all(&x);
    x[t + 3] = h(f32::NEG_INFINITY);
    all(&x);
    // Signed zeros: the sum of -0.0s is -0.0 (starting from +0.0: +0.0), min finds the -0.0.
    let mut x = vec![h(0.0); 300];
    x[17] = h(-0.0);
    all(&x);
    all(&[h(-0.0); 300]);
    // Subnormals: exact in f32; their prefixes round back (f16: into the normal range).
    let subs: Vec<T> = (0..3000u32)
        .map(|i| T::from_bits((i % 0x7f + 1) as u16 | if i % 5 == 0 { 0x8000 } else { 0 }))
        .collect();
    all(&subs);
    // Past the range: the f16 outputs become inf while the f32 prefix goes on, and come back.
    // (bf16 shares f32's range: its MAX twice is inf in f32 already, and with both signs the
    // result would depend on the order of the additions; positive only, then.)
    let big = T::MAX;
    let mut x = vec![big; 5];
    if T::DTYPE == "f16" {
        x.extend(vec![T::from_bits(big.to_bits() | 0x8000); 5]);
    }
    x.extend(eighths::<T>(t, 11));
    all(&x);
    let back = scan_on_device(ctx, &x, Reduction::Sum, ScanKind::Inclusive);
    if T::DTYPE == "f16" {
        assert_eq!(back[0].to_bits(), big.to_bits());
        assert_eq!(back[1].to_bits(), 0x7c00, "65504 * 2 is inf in f16");
        assert_eq!(back[9].to_bits(), 0, "and the f32 prefix comes back to 0");
    }
    // The smallest f32 prefix that rounds to inf (f16: 65520 = MAX + half an ulp, a tie that
    // rounds to even, i.e. up) and the largest that does not.
    if T::DTYPE == "f16" {
        let x = [h(65504.0), h(15.0), h(1.0)];
        let back = scan_on_device(ctx, &x, Reduction::Sum, ScanKind::Inclusive);
        assert_eq!(
            back.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            [0x7bff, 0x7bff, 0x7c00]
        );
    }
}

/// Inclusive scan of `x` on the device, as a vector.
pub fn scan_on_device<T: Half + ScanElement>(
    ctx: &Context,
    x: &[T],
    op: Reduction,
    kind: ScanKind,
) -> Vec<T> {
    let input = ctx.htod(x).unwrap();
    let mut out = ctx.alloc_zeros::<T>(x.len()).unwrap();
    ctx.scan(&input, &mut out, op, kind).unwrap();
    ctx.dtoh(&out).unwrap()
}

/// Random values in [-1, 1) (inexact partial sums): each output within the type's rounding
/// of the exact prefix plus the f32 scan's own error.
pub fn check_accuracy<T: Half + ScanElement>(ctx: &Context, n: usize) {
    let mut rng = SmallRng::seed_from_u64(21);
    let x: Vec<T> = (0..n)
        .map(|_| T::from_f32(rng.random_range(-1.0f32..1.0)))
        .collect();
    let got = scan_on_device(ctx, &x, Reduction::Sum, ScanKind::Inclusive);
    let (mut exact, mut abs) = (0.0f64, 0.0f64);
    // Unit roundoff of the type: 2^-11 (f16), 2^-8 (bf16).
    let u = if T::DTYPE == "f16" {
        2f64.powi(-11)
    } else {
        2f64.powi(-8)
    };
    let depth = 2.0 * (n as f64).log2() + 64.0;
    for (i, (&g, &v)) in got.iter().zip(&x).enumerate() {
        exact += v.to_f32() as f64;
        abs += (v.to_f32() as f64).abs();
        let f32_err = depth * f32::EPSILON as f64 / 2.0 * abs;
        // Rounding to the type: half an ulp, relative, or half the smallest subnormal step.
        let bound = u * (exact.abs() + f32_err) + f32_err + 2f64.powi(-25);
        let g = g.to_f32() as f64;
        assert!(
            (g - exact).abs() <= bound,
            "{} output {i}: {g} vs exact {exact} (bound {bound})",
            T::DTYPE
        );
    }
}

/// In place, and the errors a scan reports (never a panic).
pub fn check_in_place_and_errors<T: Half + ScanElement>(ctx: &Context) {
    let n = tile() + 3;
    let x = eighths::<T>(n, 12);
    for op in Reduction::SCAN {
        for kind in ScanKind::ALL {
            let mut d = ctx.htod(&x).unwrap();
            ctx.scan_in_place(&mut d, op, kind).unwrap();
            compare(&ctx.dtoh(&d).unwrap(), &x, op, kind, "in place").unwrap();
            // In place on a view that starts mid-vector.
            let mut d = ctx.htod(&x).unwrap();
            ctx.scan_in_place(d.view_mut(1..n).unwrap(), op, kind)
                .unwrap();
            let back = ctx.dtoh(&d).unwrap();
            assert_eq!(back[0].to_bits(), x[0].to_bits());
            compare(&back[1..], &x[1..], op, kind, "in place, offset 1").unwrap();
        }
    }
    let input = ctx.htod(&x).unwrap();
    let mut short = ctx.alloc_zeros::<T>(n - 1).unwrap();
    match ctx.scan(&input, &mut short, Reduction::Sum, ScanKind::Inclusive) {
        Err(e @ Error::OutputTooSmall { .. }) => assert!(e.to_string().contains("output"), "{e}"),
        r => panic!("a short output must be an error, got {r:?}"),
    }
    // Empty: nothing to do, nothing written.
    let e = ctx.alloc_zeros::<T>(0).unwrap();
    let mut out = ctx.htod(&[T::from_bits(0x1234)]).unwrap();
    ctx.scan(&e, &mut out, Reduction::Sum, ScanKind::Exclusive)
        .unwrap();
    assert_eq!(ctx.dtoh(&out).unwrap()[0].to_bits(), 0x1234);
    // `inclusive_sum` is the inclusive f32-accumulated sum too.
    let mut out = ctx.alloc_zeros::<T>(n).unwrap();
    ctx.inclusive_sum(&input, &mut out).unwrap();
    compare(
        &ctx.dtoh(&out).unwrap(),
        &x,
        Reduction::Sum,
        ScanKind::Inclusive,
        "inclusive_sum",
    )
    .unwrap();
}

/// Every 16-bit kernel once or a few times on small and odd sizes, each result checked (the
/// sanitizer's workload): the reductions (sum in f32, min, max, argmin, argmax) and every scan,
/// aligned and at offsets that break the vectors.
pub fn check_small_every_kernel<T: Half + ScanElement>(ctx: &Context) {
    use gpu_reduce::Reduction;
    for n in [1usize, 1000, tile() + 3] {
        let x = eighths::<T>(n, n as u64);
        let d = ctx.htod(&x).unwrap();
        let exact: f64 = x.iter().map(|v| v.to_f32() as f64).sum();
        assert_eq!(ctx.sum(&d).unwrap() as f64, exact, "{} sum n {n}", T::DTYPE);
        let want_min = scan_ref(&x, Reduction::Min, ScanKind::Inclusive)[n - 1];
        let want_max = scan_ref(&x, Reduction::Max, ScanKind::Inclusive)[n - 1];
        assert_eq!(
            ctx.reduce(&d, Reduction::Min).unwrap().to_bits(),
            want_min.to_bits()
        );
        assert_eq!(
            ctx.reduce(&d, Reduction::Max).unwrap().to_bits(),
            want_max.to_bits()
        );
        let first = |w: T| x.iter().position(|v| v.to_bits() == w.to_bits()).unwrap() as u64;
        assert_eq!(ctx.argmin(&d).unwrap().map(|p| p.0), Some(first(want_min)));
        assert_eq!(ctx.argmax(&d).unwrap().map(|p| p.0), Some(first(want_max)));
        for op in Reduction::SCAN {
            for kind in ScanKind::ALL {
                for (i, o) in [(0, 0), (1, 3)] {
                    run_and_compare(ctx, &x, op, kind, i, o).unwrap();
                }
            }
        }
    }
}
