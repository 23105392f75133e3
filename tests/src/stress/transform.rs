//! Stress family "transform": reductions of a map (sum of squares, 2-norm, dot product, mean
//! and variance, min and max in one pass, the compensated f32 sum), each against an f64
//! reference within its documented bound, min/max exactly.

use gpu_reduce::{DotElement, MinMaxElement, NormElement};
use rand::Rng;

use super::{Case, Dist, Family, bytes, make};
use crate::reductions::TestElem;

/// A finite distribution (the sums' bounds are for finite data; min/max take every one).
fn finite(c: &mut Case) -> Dist {
    match c.dist() {
        Dist::Specials => Dist::Random,
        d => d,
    }
}

fn squares<T: TestElem + NormElement>(c: &mut Case, n: usize) {
    let dist = finite(c);
    let x = make::<T>(&mut c.rng, n, dist);
    c.note(format!("sum_of_squares/norm2 {} n={n} {dist:?}", T::DTYPE));
    let want: f64 = x.iter().map(|v| v.to_f64() * v.to_f64()).sum();
    let b = c.ctx.htod(&x).unwrap();
    let got = c.ctx.sum_of_squares(&b).unwrap();
    // f64 sums of n non-negative terms (exact squares for f32) in two orders.
    let bound = want * n as f64 * 2.3e-16 + 1e-300;
    assert!((got - want).abs() <= bound, "{}: {got} vs {want}", c.what);
    let norm = c.ctx.norm2(&b).unwrap().to_f64();
    let rel = if T::EPS > 1e-10 {
        1.2e-7
    } else {
        n as f64 * f64::EPSILON
    };
    assert!(
        (norm - want.sqrt()).abs() <= want.sqrt() * rel + 1e-300,
        "{}: norm {norm} vs {}",
        c.what,
        want.sqrt()
    );
    c.replicated(n, &|ctx| {
        let b = ctx.htod(&x).unwrap();
        [
            bytes(&[ctx.sum_of_squares(&b).unwrap()]),
            bytes(&[ctx.norm2(&b).unwrap()]),
        ]
        .concat()
    });
}

fn dot<T: TestElem + DotElement>(c: &mut Case, n: usize) {
    let (dx, dy) = (finite(c), finite(c));
    let x = make::<T>(&mut c.rng, n, dx);
    let y = make::<T>(&mut c.rng, n, dy);
    c.note(format!("dot {} n={n} {dx:?}/{dy:?}", T::DTYPE));
    let exact: f64 = x.iter().zip(&y).map(|(a, b)| a.to_f64() * b.to_f64()).sum();
    let abs: f64 = x
        .iter()
        .zip(&y)
        .map(|(a, b)| (a.to_f64() * b.to_f64()).abs())
        .sum();
    let got = c
        .ctx
        .dot(&c.ctx.htod(&x).unwrap(), &c.ctx.htod(&y).unwrap())
        .unwrap()
        .to_f64();
    // f32: exact products summed in f64, one final rounding; f64: rounded products and sums.
    let bound = if T::EPS > 1e-10 {
        exact.abs() * 2f64.powi(-24) + 2.0 * n as f64 * 2f64.powi(-53) * abs
    } else {
        2.0 * n as f64 * f64::EPSILON * abs
    } + 1e-300;
    assert!((got - exact).abs() <= bound, "{}: {got} vs {exact}", c.what);
    c.replicated(n, &|ctx| {
        bytes(&[ctx
            .dot(&ctx.htod(&x).unwrap(), &ctx.htod(&y).unwrap())
            .unwrap()])
    });
}

fn mean_var(c: &mut Case, n: usize) {
    let dist = finite(c);
    let center = [0.0f32, 1000.0, -3.0e4][c.rng.random_range(0..3)];
    let x: Vec<f32> = make::<f32>(&mut c.rng, n, dist)
        .iter()
        .map(|v| v + center)
        .collect();
    c.note(format!("mean_var n={n} {dist:?} center {center}"));
    let b = c.ctx.htod(&x).unwrap();
    let got = c.ctx.mean_var(&b).unwrap();
    if n == 0 {
        assert!(got.is_none(), "{}: empty input", c.what);
        return;
    }
    let m = got.expect("non-empty");
    let nf = n as f64;
    let mean: f64 = x.iter().map(|&v| v as f64).sum::<f64>() / nf;
    let var: f64 = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / nf;
    let eps = 2f64.powi(-24);
    let max_abs = x.iter().fold(0f64, |a, &v| a.max((v as f64).abs()));
    assert_eq!(m.count, n as u64, "{}", c.what);
    assert!(
        (m.mean as f64 - mean).abs() <= 4.0 * eps * max_abs,
        "{}: mean {} vs {mean}",
        c.what,
        m.mean
    );
    // The documented bound (RELIABILITY.md, Determinism; tests/src/transform.rs).
    let cond = if var > 0.0 {
        1.0 + mean * mean / var
    } else {
        1.0
    };
    let first = (x[0] as f64 - mean).powi(2);
    let bound =
        4.0 * nf.log2().max(1.0) * eps * cond * var + 2f64.powi(-46) * (var + first) + 1e-30;
    assert!(
        (m.variance as f64 - var).abs() <= bound,
        "{}: variance {} vs {var} (bound {bound})",
        c.what,
        m.variance
    );
    c.replicated(n, &|ctx| {
        let m = ctx.mean_var(&ctx.htod(&x).unwrap()).unwrap().unwrap();
        bytes(&[m.mean, m.variance, m.sample_variance])
    });
}

fn min_max<T: TestElem + MinMaxElement>(c: &mut Case, n: usize) {
    let dist = c.dist();
    let x = make::<T>(&mut c.rng, n, dist);
    c.note(format!("min_max {} n={n} {dist:?}", T::DTYPE));
    let got = c.ctx.min_max(&c.ctx.htod(&x).unwrap()).unwrap();
    // A NaN anywhere gives the library's one NaN, whatever the input's payloads (f32: CUDA's
    // canonical `0x7fffffff`; f64: `f64::NAN`).
    let want = if x.is_empty() {
        None
    } else if x.iter().any(|v| v.to_f64().is_nan()) {
        let nan = if size_of::<T>() == 4 {
            0x7fff_ffff
        } else {
            T::nan().expect("a float").bits()
        };
        Some((nan, nan))
    } else {
        let lo = x
            .iter()
            .copied()
            .reduce(|a, b| if T::total_lt(b, a) { b } else { a });
        let hi = x
            .iter()
            .copied()
            .reduce(|a, b| if T::total_lt(a, b) { b } else { a });
        Some((lo.unwrap().bits(), hi.unwrap().bits()))
    };
    assert_eq!(
        got.map(|(a, b)| (a.bits(), b.bits())),
        want,
        "{}: {got:?}",
        c.what
    );
    c.replicated(n, &|ctx| {
        let r = ctx.min_max(&ctx.htod(&x).unwrap()).unwrap();
        r.map_or(vec![], |(a, b)| bytes(&[a, b]))
    });
}

fn compensated(c: &mut Case, n: usize) {
    let dist = finite(c);
    let x = make::<f32>(&mut c.rng, n, dist);
    c.note(format!("sum_compensated n={n} {dist:?}"));
    let exact: f64 = x.iter().map(|&v| v as f64).sum();
    let abs: f64 = x.iter().map(|&v| (v as f64).abs()).sum();
    let got = c.ctx.sum_compensated(&c.ctx.htod(&x).unwrap()).unwrap() as f64;
    // f64 accumulation, one rounding to f32.
    let bound = exact.abs() * 2f64.powi(-24) + n as f64 * 2f64.powi(-53) * abs + 1e-45;
    assert!((got - exact).abs() <= bound, "{}: {got} vs {exact}", c.what);
    c.replicated(n, &|ctx| {
        bytes(&[ctx.sum_compensated(&ctx.htod(&x).unwrap()).unwrap()])
    });
}

fn run(c: &mut Case) -> u64 {
    let n = c.size(&crate::boundary_sizes(c.max));
    match c.rng.random_range(0..12) {
        0 => squares::<f32>(c, n),
        1 => squares::<f64>(c, n),
        2 => dot::<f32>(c, n),
        3 => dot::<f64>(c, n),
        4 | 5 => mean_var(c, n),
        6 => min_max::<i32>(c, n),
        7 => min_max::<u64>(c, n),
        8 => min_max::<f32>(c, n),
        9 => min_max::<f64>(c, n),
        _ => compensated(c, n),
    }
    n as u64
}

inventory::submit! { Family { name: "transform", run } }
