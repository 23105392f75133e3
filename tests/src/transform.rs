//! Maps applied on load: sum of squares, norm, mean and variance, min and max together.
//! Bodies shared by the simulator tests (CI) and the GPU tests.

use gpu_reduce::{Context, MomentsAcc};
use rand::{Rng, SeedableRng, rngs::SmallRng};

fn uniform_f32(n: usize, seed: u64, center: f32, half_width: f32) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| center + rng.random_range(-half_width..half_width))
        .collect()
}

/// Sum of squares and norm of f32 (f64 accumulation: no overflow) and f64 (scaled: no
/// overflow of the norm), against f64 / rescaled CPU references.
pub fn check_squares_and_norm(ctx: &Context, n: usize) {
    for &(scale, seed) in &[(1.0f32, 1u64), (1e30, 2), (1e-30, 3)] {
        let x: Vec<f32> = uniform_f32(n, seed, 0.0, 1.0)
            .iter()
            .map(|v| v * scale)
            .collect();
        let b = ctx.htod(&x).unwrap();
        let want: f64 = x.iter().map(|&v| (v as f64) * (v as f64)).sum();
        let got = ctx.sum_of_squares(&b).unwrap();
        // f64 sums of exact squares, in two orders: n·2^-53 relative at most.
        assert!(
            (got - want).abs() <= want * n as f64 * 1.2e-16,
            "scale {scale}: {got} vs {want}"
        );
        let norm = ctx.norm2(&b).unwrap();
        assert!(
            ((norm as f64) - want.sqrt()).abs() <= want.sqrt() * 1.2e-7,
            "scale {scale}: norm {norm} vs {}",
            want.sqrt()
        );
        assert!(norm.is_finite());
    }
    // f64 near the top of the range: the squares overflow, the scaled norm does not.
    let x: Vec<f64> = uniform_f32(n, 4, 0.0, 1.0)
        .iter()
        .map(|&v| v as f64 * 1e300)
        .collect();
    let b = ctx.htod(&x).unwrap();
    let want = 1e300 * x.iter().map(|v| (v / 1e300).powi(2)).sum::<f64>().sqrt();
    let got = ctx.norm2(&b).unwrap();
    // Two sums of n positive terms in different orders (the reference's own rounding
    // included): n·2^-52 relative covers both.
    assert!(
        (got - want).abs() <= want * n as f64 * f64::EPSILON,
        "{got} vs {want}"
    );
    assert_eq!(ctx.sum_of_squares(&b).unwrap(), f64::INFINITY);
    // Edges: empty, zeros, NaN, infinity.
    let e = ctx.alloc_zeros::<f64>(0).unwrap();
    assert_eq!(ctx.norm2(&e).unwrap(), 0.0);
    let z = ctx.htod(&[0.0f64, -0.0, 0.0]).unwrap();
    assert_eq!(ctx.norm2(&z).unwrap(), 0.0);
    let nan = ctx.htod(&[1.0f64, f64::NAN, 2.0]).unwrap();
    assert!(ctx.norm2(&nan).unwrap().is_nan());
    let inf = ctx.htod(&[1.0f32, f32::NEG_INFINITY]).unwrap();
    assert_eq!(ctx.norm2(&inf).unwrap(), f32::INFINITY);
}

/// Mean and variance against a two-pass f64 reference. Documented bound (checked here):
/// |mean - m| <= 4·2^-24·max|x|, and |variance - v| <= 4·log2(n)·2^-24·(1 + m²/v)·v +
/// 2^-46·(v + (x[0] - m)²) — the first term the pairwise tree's error in f32, which grows with
/// the data's condition number m²/v (Chan, Golub, LeVeque 1983; the one-pass textbook
/// formula's grows with n instead), the second the kernel's f64 sums around its shift x[0]
/// (below the first for any data up to n = 2^29, by Samuelson's inequality).
pub fn check_mean_var(ctx: &Context, n: usize) {
    // The last cases put an outlier first: the shift of the kernel's first tile and of the
    // whole input (its first element) is then ~10^4 (~10^6) standard deviations from the
    // other elements' mean, and as far from the mean as Samuelson's inequality lets one
    // element be (the sums around it lose the most to cancellation).
    for &(center, width, seed, first) in &[
        (0.0f32, 1.0f32, 5u64, None),
        (1000.0, 1.0, 6, None),
        (-3.0e4, 50.0, 7, None),
        (0.0, 1.0, 8, Some(1.0e4f32)),
        (0.0, 1.0, 9, Some(-1.0e6)),
    ] {
        let mut x = uniform_f32(n, seed, center, width);
        if let Some(v) = first {
            x[0] = v;
        }
        let b = ctx.htod(&x).unwrap();
        let m = ctx.mean_var(&b).unwrap().expect("non-empty");
        // The same accumulator left on the device.
        let mut acc = ctx.alloc_zeros::<MomentsAcc>(1).unwrap();
        ctx.mean_var_into(&b, &mut acc).unwrap();
        assert_eq!(ctx.dtoh(&acc).unwrap()[0].moments(), Some(m));
        let nf = n as f64;
        let mean: f64 = x.iter().map(|&v| v as f64).sum::<f64>() / nf;
        let var: f64 = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / nf;
        let eps = 2f64.powi(-24);
        let max_abs = x.iter().fold(0f64, |a, &v| a.max((v as f64).abs()));
        assert_eq!(m.count, n as u64);
        assert!(
            (m.mean as f64 - mean).abs() <= 4.0 * eps * max_abs,
            "center {center}: mean {} vs {mean}",
            m.mean
        );
        let shift = (x[0] as f64 - mean).powi(2);
        let bound = 4.0 * nf.log2() * eps * (1.0 + mean * mean / var) * var
            + 2f64.powi(-46) * (var + shift);
        assert!(
            (m.variance as f64 - var).abs() <= bound,
            "center {center}: variance {} vs {var} (bound {bound})",
            m.variance
        );
        let sample = var * nf / (nf - 1.0);
        assert!((m.sample_variance as f64 - sample).abs() <= bound * 1.01);
    }
    let e = ctx.alloc_zeros::<f32>(0).unwrap();
    assert_eq!(ctx.mean_var(&e).unwrap(), None);
    let mut acc = ctx
        .htod(&[MomentsAcc {
            count: 7,
            mean: 1.0,
            m2: 1.0,
        }])
        .unwrap();
    ctx.mean_var_into(&e, &mut acc).unwrap();
    assert_eq!(ctx.dtoh(&acc).unwrap()[0], MomentsAcc::default());
    let mut none = ctx.alloc_zeros::<MomentsAcc>(0).unwrap();
    assert!(matches!(
        ctx.mean_var_into(&b_one(ctx), &mut none),
        Err(gpu_reduce::Error::OutputTooSmall {
            needed: 1,
            got: 0,
            ..
        })
    ));
    let one = ctx.htod(&[2.5f32]).unwrap();
    let m = ctx.mean_var(&one).unwrap().unwrap();
    assert_eq!((m.count, m.mean, m.variance), (1, 2.5, 0.0));
    assert!(m.sample_variance.is_nan());
}

fn b_one(ctx: &Context) -> gpu_reduce::DeviceBuffer<f32> {
    ctx.htod(&[1.0f32]).unwrap()
}

/// Min and max together, every type, with the full reduce's semantics.
pub fn check_min_max(ctx: &Context, n: usize) {
    let f = uniform_f32(n, 8, 0.0, 100.0);
    let b = ctx.htod(&f).unwrap();
    let (lo, hi) = ctx.min_max(&b).unwrap().unwrap();
    assert_eq!(lo, f.iter().copied().fold(f32::INFINITY, f32::min));
    assert_eq!(hi, f.iter().copied().fold(f32::NEG_INFINITY, f32::max));
    let i: Vec<i64> = f.iter().map(|&v| (v * 1e6) as i64).collect();
    let bi = ctx.htod(&i).unwrap();
    assert_eq!(
        ctx.min_max(&bi).unwrap(),
        Some((*i.iter().min().unwrap(), *i.iter().max().unwrap()))
    );
    let u: Vec<u32> = i.iter().map(|&v| v as u32).collect();
    let bu = ctx.htod(&u).unwrap();
    assert_eq!(
        ctx.min_max(&bu).unwrap(),
        Some((*u.iter().min().unwrap(), *u.iter().max().unwrap()))
    );
    let mut g: Vec<f64> = f.iter().map(|&v| v as f64).collect();
    g[n / 2] = f64::NAN;
    let bg = ctx.htod(&g).unwrap();
    let (a, z) = ctx.min_max(&bg).unwrap().unwrap();
    assert!(a.is_nan() && z.is_nan(), "a NaN wins both");
    let zeros = ctx.htod(&[0.0f32, -0.0]).unwrap();
    let (a, z) = ctx.min_max(&zeros).unwrap().unwrap();
    assert_eq!(
        (a.to_bits(), z.to_bits()),
        ((-0.0f32).to_bits(), 0.0f32.to_bits())
    );
    let e = ctx.alloc_zeros::<i32>(0).unwrap();
    assert_eq!(ctx.min_max(&e).unwrap(), None);
}

/// Same bits whatever the grid, like every reduction.
pub fn check_transform_deterministic(ctx: &Context, n: usize) {
    let x = uniform_f32(n, 9, 10.0, 3.0);
    let b = ctx.htod(&x).unwrap();
    let y: Vec<f64> = x.iter().map(|&v| v as f64 * 1e200).collect();
    let by = ctx.htod(&y).unwrap();
    let bits = |ctx: &Context| {
        let m = ctx.mean_var(&b).unwrap().unwrap();
        (
            m.mean.to_bits(),
            m.variance.to_bits(),
            ctx.sum_of_squares(&b).unwrap().to_bits(),
            ctx.norm2(&by).unwrap().to_bits(),
        )
    };
    let first = bits(ctx);
    for grid in [Some(1), Some(2), Some(7), Some(100), None] {
        ctx.set_reduce_grid_limit(grid);
        assert_eq!(bits(ctx), first, "grid {grid:?}");
    }
    ctx.set_reduce_grid_limit(None);
}

/// The dot product against an f64 reference: whole buffers (vector loads), views at the same
/// offset, views at different offsets (pair by pair), f64, empty, mismatched lengths.
pub fn check_dot(ctx: &Context, n: usize) {
    let x = uniform_f32(n + 3, 10, 0.0, 1.0);
    let y = uniform_f32(n + 3, 11, 0.5, 1.0);
    let (bx, by) = (ctx.htod(&x).unwrap(), ctx.htod(&y).unwrap());
    let reference = |a: &[f32], b: &[f32]| -> (f64, f64) {
        let exact: f64 = a.iter().zip(b).map(|(&u, &v)| u as f64 * v as f64).sum();
        let abs: f64 = a
            .iter()
            .zip(b)
            .map(|(&u, &v)| (u as f64 * v as f64).abs())
            .sum();
        (exact, abs)
    };
    for (ox, oy) in [(0usize, 0usize), (1, 1), (3, 3), (1, 0), (0, 3), (2, 1)] {
        let got = ctx
            .dot(bx.view(ox..ox + n).unwrap(), by.view(oy..oy + n).unwrap())
            .unwrap() as f64;
        let (want, abs) = reference(&x[ox..ox + n], &y[oy..oy + n]);
        // f64 sums of exact products, then one rounding to f32.
        let bound = want.abs() * 2f64.powi(-24) + n as f64 * 2f64.powi(-53) * abs;
        assert!(
            (got - want).abs() <= bound,
            "offsets {ox},{oy}: {got} vs {want}"
        );
    }
    let x64: Vec<f64> = x.iter().map(|&v| v as f64 * 1e100).collect();
    let y64: Vec<f64> = y.iter().map(|&v| v as f64 * 1e-90).collect();
    let (bx64, by64) = (ctx.htod(&x64).unwrap(), ctx.htod(&y64).unwrap());
    let got = ctx.dot(&bx64, &by64).unwrap();
    let want: f64 = x64.iter().zip(&y64).map(|(a, b)| a * b).sum();
    let abs: f64 = x64.iter().zip(&y64).map(|(a, b)| (a * b).abs()).sum();
    assert!(
        (got - want).abs() <= 2.0 * n as f64 * 2f64.powi(-53) * abs,
        "{got} vs {want}"
    );
    let e = ctx.alloc_zeros::<f32>(0).unwrap();
    assert_eq!(ctx.dot(&e, &e).unwrap(), 0.0);
    match ctx.dot(bx.view(..n).unwrap(), by.view(..n - 1).unwrap()) {
        Err(e @ gpu_reduce::Error::LengthMismatch { .. }) => {
            let m = e.to_string();
            assert!(m.contains("different lengths"), "{m}");
            // The user's call, never a kernel's name.
            assert!(m.contains("dot(x, y)") && !m.contains("reduce_dot"), "{m}");
            assert!(
                matches!(e, gpu_reduce::Error::LengthMismatch { expected, got, .. } if got + 1 == expected),
                "{e:?}"
            );
        }
        other => panic!("expected a length error, got {other:?}"),
    }
    // Same bits whatever the grid, with vector loads and pair by pair.
    let mis = || {
        ctx.dot(bx.view(1..).unwrap(), by.view(..n + 2).unwrap())
            .unwrap()
            .to_bits()
    };
    let first = (ctx.dot(&bx, &by).unwrap().to_bits(), mis());
    for grid in [Some(1), Some(2), Some(5), None] {
        ctx.set_reduce_grid_limit(grid);
        let now = (ctx.dot(&bx, &by).unwrap().to_bits(), mis());
        assert_eq!(now, first, "grid {grid:?}");
    }
    ctx.set_reduce_grid_limit(None);
}

/// Every value-returning call's three forms agree bit for bit: the blocking value, the `_into`
/// result read back from the device, and the `_async` value (sum, argmin, argmax, reduce,
/// sum_compensated, sum_of_squares, norm2, mean_var, min_max, dot, reduce by key's run count);
/// empty inputs included.
pub fn check_value_forms(ctx: &Context, n: usize) {
    use gpu_reduce::{ArgValue, MinMaxPair, Reduction, ScaledSumSquares};
    let f = uniform_f32(n, 11, 0.5, 2.0);
    let g = uniform_f32(n, 12, -0.5, 3.0);
    let d: Vec<f64> = f.iter().map(|&v| v as f64 * 1e200).collect();
    let i: Vec<i32> = f.iter().map(|&v| (v * 1000.0) as i32).collect();
    for len in [0, 1, n] {
        let (x, y) = (ctx.htod(&f[..len]).unwrap(), ctx.htod(&g[..len]).unwrap());
        let xd = ctx.htod(&d[..len]).unwrap();
        let xi = ctx.htod(&i[..len]).unwrap();
        let what = format!("n={len}");

        let mut o32 = ctx.alloc_zeros::<f32>(1).unwrap();
        let mut o64 = ctx.alloc_zeros::<f64>(1).unwrap();
        let s = ctx.sum(&x).unwrap();
        ctx.sum_into(&x, &mut o32).unwrap();
        assert_eq!(
            ctx.dtoh(&o32).unwrap()[0].to_bits(),
            s.to_bits(),
            "sum {what}"
        );
        assert_eq!(
            ctx.sum_async(&x).unwrap().wait().unwrap().to_bits(),
            s.to_bits()
        );

        let r = ctx.reduce(&xi, Reduction::Max).unwrap();
        assert_eq!(
            ctx.reduce_async(&xi, Reduction::Max)
                .unwrap()
                .wait()
                .unwrap(),
            r
        );
        let mut oi = ctx.alloc_zeros::<i32>(1).unwrap();
        ctx.reduce_into(&xi, &mut oi, Reduction::Max).unwrap();
        assert_eq!(ctx.dtoh(&oi).unwrap()[0], r, "reduce {what}");

        let mut arg = ctx.alloc_zeros::<ArgValue<i32>>(1).unwrap();
        let m = ctx.argmin(&xi).unwrap();
        ctx.argmin_into(&xi, &mut arg).unwrap();
        assert_eq!(ctx.dtoh(&arg).unwrap()[0].get(), m, "argmin {what}");
        assert_eq!(ctx.argmin_async(&xi).unwrap().wait().unwrap(), m);
        let m = ctx.argmax(&xi).unwrap();
        ctx.argmax_into(&xi, &mut arg).unwrap();
        assert_eq!(ctx.dtoh(&arg).unwrap()[0].get(), m, "argmax {what}");
        assert_eq!(ctx.argmax_async(&xi).unwrap().wait().unwrap(), m);

        let c = ctx.sum_compensated(&x).unwrap();
        let ca = ctx.sum_compensated_async(&x).unwrap().wait().unwrap();
        assert_eq!(ca.to_bits(), c.to_bits(), "sum_compensated {what}");

        let q = ctx.sum_of_squares(&x).unwrap();
        ctx.sum_of_squares_into(&x, &mut o64).unwrap();
        assert_eq!(
            ctx.dtoh(&o64).unwrap()[0].to_bits(),
            q.to_bits(),
            "ssq {what}"
        );
        let qa = ctx.sum_of_squares_async(&x).unwrap().wait().unwrap();
        assert_eq!(qa.to_bits(), q.to_bits());

        let nf = ctx.norm2(&x).unwrap();
        ctx.norm2_into(&x, &mut o64).unwrap();
        assert_eq!(
            (ctx.dtoh(&o64).unwrap()[0].sqrt() as f32).to_bits(),
            nf.to_bits()
        );
        assert_eq!(
            ctx.norm2_async(&x).unwrap().wait().unwrap().to_bits(),
            nf.to_bits()
        );
        let nd = ctx.norm2(&xd).unwrap();
        let mut acc = ctx.alloc_zeros::<ScaledSumSquares>(1).unwrap();
        ctx.norm2_into(&xd, &mut acc).unwrap();
        assert_eq!(
            ctx.dtoh(&acc).unwrap()[0].norm().to_bits(),
            nd.to_bits(),
            "norm2 f64 {what}"
        );
        assert_eq!(
            ctx.norm2_async(&xd).unwrap().wait().unwrap().to_bits(),
            nd.to_bits()
        );

        let mv = ctx.mean_var(&x).unwrap();
        let mut mo = ctx.alloc_zeros::<MomentsAcc>(1).unwrap();
        ctx.mean_var_into(&x, &mut mo).unwrap();
        // Debug text: the same bits (a NaN sample variance for one element included).
        let mv = format!("{mv:?}");
        let got = ctx.dtoh(&mo).unwrap()[0].moments();
        assert_eq!(format!("{got:?}"), mv, "mean_var {what}");
        let got = ctx.mean_var_async(&x).unwrap().wait().unwrap();
        assert_eq!(format!("{got:?}"), mv);

        let mm = ctx.min_max(&xi).unwrap();
        let mut mp = ctx.alloc_zeros::<MinMaxPair<i32>>(1).unwrap();
        ctx.min_max_into(&xi, &mut mp).unwrap();
        assert_eq!(ctx.dtoh(&mp).unwrap()[0].get(), mm, "min_max {what}");
        assert_eq!(ctx.min_max_async(&xi).unwrap().wait().unwrap(), mm);

        let dt = ctx.dot(&x, &y).unwrap();
        ctx.dot_into(&x, &y, &mut o64).unwrap();
        assert_eq!(
            (ctx.dtoh(&o64).unwrap()[0] as f32).to_bits(),
            dt.to_bits(),
            "dot {what}"
        );
        assert_eq!(
            ctx.dot_async(&x, &y).unwrap().wait().unwrap().to_bits(),
            dt.to_bits()
        );

        let keys: Vec<u32> = (0..len as u32).map(|k| k / 7).collect();
        let dk = ctx.htod(&keys).unwrap();
        let (mut uk, mut agg) = (
            ctx.alloc_zeros::<u32>(len).unwrap(),
            ctx.alloc_zeros::<i32>(len).unwrap(),
        );
        let runs = ctx
            .reduce_by_key(&dk, &xi, &mut uk, &mut agg, Reduction::Sum)
            .unwrap();
        let first = ctx.dtoh(&agg).unwrap();
        let pending = ctx
            .reduce_by_key_async(&dk, &xi, &mut uk, &mut agg, Reduction::Sum)
            .unwrap();
        assert_eq!(pending.wait().unwrap(), runs, "reduce_by_key_async {what}");
        assert_eq!(ctx.dtoh(&agg).unwrap(), first);
        assert_eq!(runs, (len as u64).div_ceil(7));
        if runs > 1 {
            // Too little room: the error comes at the wait.
            let mut small = ctx.alloc_zeros::<i32>(1).unwrap();
            let e = ctx
                .reduce_by_key_async(&dk, &xi, &mut uk, &mut small, Reduction::Sum)
                .unwrap()
                .wait()
                .unwrap_err();
            assert!(
                matches!(e, gpu_reduce::Error::OutputTooSmall { needed, got: 1, .. } if needed == runs),
                "{e}"
            );
        }
    }
    // Operators a family lacks are typed errors, before any launch.
    let x = ctx.htod(&i[..8]).unwrap();
    let mut out = ctx.alloc_zeros::<i32>(8).unwrap();
    for (op, e) in [
        (
            Reduction::Product,
            ctx.scan(
                &x,
                &mut out,
                Reduction::Product,
                gpu_reduce::ScanKind::Inclusive,
            ),
        ),
        (
            Reduction::Xor,
            ctx.scan_in_place(&mut out, Reduction::Xor, gpu_reduce::ScanKind::Exclusive),
        ),
    ] {
        assert!(
            matches!(&e, Err(gpu_reduce::Error::Unsupported { dtype: "i32", .. })),
            "{} scan: {e:?}",
            op.name()
        );
    }
    let k = ctx.htod(&[1u32; 8]).unwrap();
    let mut uk = ctx.alloc_zeros::<u32>(8).unwrap();
    let e = ctx.reduce_by_key(&k, &x, &mut uk, &mut out, Reduction::And);
    assert!(
        matches!(e, Err(gpu_reduce::Error::Unsupported { .. })),
        "{e:?}"
    );
    let mut o2 = ctx.alloc_zeros::<i32>(8).unwrap();
    let e = ctx.scan_by_key(
        &k,
        &x,
        &mut o2,
        Reduction::Product,
        gpu_reduce::ScanKind::Inclusive,
    );
    assert!(
        matches!(e, Err(gpu_reduce::Error::Unsupported { .. })),
        "{e:?}"
    );
}
