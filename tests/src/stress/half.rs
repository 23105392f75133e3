//! Stress family "half": f16 and bf16 reductions (the sum in f32) and scans, every scan operator,
//! aligned or at offsets that break the 8-byte vectors. Sums take multiples of 1/8 (their f32
//! partial sums are exact up to 2^17 elements, so every summation order gives one answer to
//! check against); min/max take any values, NaN and signed zeros included.

use gpu_reduce::{Context, Reduction, ScanElement};
use rand::Rng;

use super::{Case, Family, bytes, kind, pick};
use crate::half::Half;
use crate::half_scan::{eighths, run_and_compare};

fn case<T: Half + ScanElement>(c: &mut Case) -> u64 {
    let n = c.size(&crate::half::SIZES).min(1 << 17);
    let op = pick(&mut c.rng, &super::ORDERED_OPS);
    let seed = c.rng.random();
    let mut x = eighths::<T>(n, seed);
    if op != Reduction::Sum && n > 0 && c.rng.random_bool(0.2) {
        let i = c.rng.random_range(0..n);
        x[i] = T::from_f32(f32::NAN);
    }
    let scan = c.rng.random_bool(0.5);
    let (in_off, out_off) = (c.rng.random_range(0..4), c.rng.random_range(0..4));
    c.note(format!(
        "{} n={n} {} {} offsets {in_off}/{out_off}",
        T::DTYPE,
        op.name(),
        if scan { "scan" } else { "reduce" }
    ));
    if scan {
        let kind = kind(&mut c.rng);
        c.note(kind.name());
        if let Err(e) = run_and_compare(c.ctx, &x, op, kind, in_off, out_off) {
            panic!("{}: {e}", c.what);
        }
        let run = |ctx: &Context| {
            let input = ctx.htod(&x).unwrap();
            let mut out = ctx.alloc_zeros::<T>(n.max(1)).unwrap();
            ctx.scan(&input, &mut out, op, kind).unwrap();
            bytes(&ctx.dtoh(&out).unwrap())
        };
        c.replicated(n, &run);
        return n as u64;
    }
    let mut padded = vec![T::from_f32(3.0); in_off];
    padded.extend_from_slice(&x);
    let run = |ctx: &Context| -> Vec<u8> {
        let whole = ctx.htod(&padded).unwrap();
        let v = whole.view(in_off..).unwrap();
        match op {
            Reduction::Sum => bytes(&[ctx.sum(v).unwrap()]),
            _ => bytes(&[ctx.reduce(v, op).unwrap()]),
        }
    };
    let got = run(c.ctx);
    let want = match op {
        // From +0.0: Rust's float `sum` starts at -0.0 (an empty sum is +0.0 here).
        Reduction::Sum => bytes(&[x.iter().fold(0.0f64, |a, v| a + v.to_f32() as f64) as f32]),
        _ => {
            let nan = x.iter().copied().find(|v| v.to_f32().is_nan());
            let lt = |a: T, b: T| {
                let (p, q) = (a.to_f32(), b.to_f32());
                p < q || (p == 0.0 && q == 0.0 && p.is_sign_negative() && !q.is_sign_negative())
            };
            let identity = if op == Reduction::Min {
                f32::INFINITY
            } else {
                f32::NEG_INFINITY
            };
            let best = nan.unwrap_or_else(|| {
                x.iter().copied().fold(T::from_f32(identity), |a, b| {
                    let better = if op == Reduction::Min {
                        lt(b, a)
                    } else {
                        lt(a, b)
                    };
                    if better { b } else { a }
                })
            });
            bytes(&[best])
        }
    };
    assert!(got == want, "{}: {got:?} vs {want:?} (bytes)", c.what);
    c.check_replicas(n, &got, &run);
    n as u64
}

fn run(c: &mut Case) -> u64 {
    if c.rng.random_bool(0.5) {
        case::<half::f16>(c)
    } else {
        case::<half::bf16>(c)
    }
}

inventory::submit! { Family { name: "half", run } }
