//! Stress family "multi": one array sharded over 1..=4 ranks (contexts of the same backend; on
//! a one-GPU machine they share it, the sharding logic runs all the same) in random shard
//! lengths (empty shards, one element, misaligned cuts): reductions, argmin/argmax and scans
//! must give the bits one rank gives (the 1..N GPUs promise; scans: those of one context's
//! scan of the whole array too), integers those of the CPU.

use gpu_reduce::Reduction;
use gpu_reduce::multi::{MultiContext, ShardElement};
use rand::Rng;

use super::{Case, Family, bytes, kind, make, pick};
use crate::lookback::check_scan_result;
use crate::reductions::TestElem;

fn lengths(c: &mut Case, n: usize, ranks: usize) -> Vec<u64> {
    let mut cuts: Vec<usize> = (1..ranks).map(|_| c.rng.random_range(0..=n)).collect();
    cuts.sort_unstable();
    let mut prev = 0;
    let mut v: Vec<u64> = cuts
        .iter()
        .map(|&k| {
            let l = k - prev;
            prev = k;
            l as u64
        })
        .collect();
    v.push((n - prev) as u64);
    v
}

fn case<T>(c: &mut Case) -> u64
where
    T: TestElem + ShardElement,
{
    let n = c.size(&crate::boundary_sizes(c.max));
    let ranks = c.rng.random_range(1..=4);
    let layout = lengths(c, n, ranks);
    let scan = c.rng.random_bool(0.4);
    let mut dist = c.dist();
    // Infinities make float prefix sums NaN/inf from there on: the reduce family checks them.
    if scan && T::IS_FLOAT && dist == super::Dist::Specials {
        dist = super::Dist::Random;
    }
    let x = make::<T>(&mut c.rng, n, dist);
    c.note(format!("{} n={n} {dist:?} shards {layout:?}", T::DTYPE));
    let handle = |r: usize| MultiContext::new((0..r).map(|_| (c.make)()).collect()).unwrap();
    let (one, many) = (handle(1), handle(ranks));
    if scan {
        let op = pick(&mut c.rng, &super::ORDERED_OPS);
        let kind = kind(&mut c.rng);
        c.note(format!("scan {} {}", op.name(), kind.name()));
        let run = |m: &MultiContext, lens: &[u64]| {
            let mut b = m.htod(&x, lens).unwrap();
            m.scan_in_place(&mut b, op, kind).unwrap();
            m.dtoh(&b).unwrap()
        };
        let got = run(&many, &layout);
        check_scan_result(&got, &x, op, kind, &c.what);
        let single = run(&one, &[n as u64]);
        // One context's scan of the whole array: the bits every layout must give.
        let ctx = (c.make)();
        let mut out = ctx.alloc_zeros::<T>(n).unwrap();
        ctx.scan(&ctx.htod(&x).unwrap(), &mut out, op, kind)
            .unwrap();
        let whole = ctx.dtoh(&out).unwrap();
        assert!(
            bytes(&got) == bytes(&whole) && bytes(&single) == bytes(&whole),
            "{}: {ranks} ranks or one rank differ from one context's scan",
            c.what
        );
        return n as u64;
    }
    let op = pick(&mut c.rng, &super::ORDERED_OPS);
    c.note(format!("reduce {}", op.name()));
    let run = |m: &MultiContext, lens: &[u64]| {
        let b = m.htod(&x, lens).unwrap();
        let v = m.reduce(&b, op).unwrap();
        let (lo, hi) = (m.argmin(&b).unwrap(), m.argmax(&b).unwrap());
        (v, lo, hi)
    };
    let (v, lo, hi) = run(&many, &layout);
    let (v1, lo1, hi1) = run(&one, &[n as u64]);
    assert!(
        bytes(&[v]) == bytes(&[v1])
            && lo.map(|p| (p.0, p.1.bits())) == lo1.map(|p| (p.0, p.1.bits()))
            && hi.map(|p| (p.0, p.1.bits())) == hi1.map(|p| (p.0, p.1.bits())),
        "{}: {ranks} ranks {:?} differ from one rank {:?}",
        c.what,
        (v, lo, hi),
        (v1, lo1, hi1)
    );
    if !T::IS_FLOAT && op == Reduction::Sum {
        assert_eq!(v, T::wrapping_sum(&x), "{}: the CPU's sum", c.what);
    }
    n as u64
}

fn run(c: &mut Case) -> u64 {
    match c.rng.random_range(0..4) {
        0 => case::<i32>(c),
        1 => case::<u64>(c),
        2 => case::<f32>(c),
        _ => case::<f64>(c),
    }
}

inventory::submit! { Family { name: "multi", run } }
