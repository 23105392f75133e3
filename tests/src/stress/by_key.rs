//! Stress families "reduce_by_key" and "scan_by_key": runs of equal keys in random layouts
//! (every run length 1, short, long, one run, power-law), u32 and u64 keys, every scan
//! operator.

use gpu_reduce::{
    Context, DeviceElement, ReduceByKeyElement, Reduction, ScanByKeyElement, SelectElement,
};
use gpu_reduce_tools::cpu::cpu_scan_by_key;
use rand::Rng;

use super::{Case, Dist, Family, bytes, kind, make, pick};
use crate::by_key::cpu_reduce_by_key;
use crate::lookback::{check_scan_result, scan_boundary_sizes};
use crate::reductions::TestElem;

/// Keys of `n` elements in runs drawn from a random layout.
fn keys<K: From<u32>>(c: &mut Case, n: usize) -> Vec<K> {
    let layout = c.rng.random_range(0..5);
    let names = [
        "every run 1",
        "runs <= 3",
        "runs <= 20000",
        "one run",
        "power-law runs",
    ];
    c.note(names[layout]);
    let mut keys = Vec::with_capacity(n);
    let mut k = c.rng.random::<u32>() >> 8;
    while keys.len() < n {
        let run = match layout {
            0 => 1,
            1 => c.rng.random_range(1..=3),
            2 => c.rng.random_range(1..=20_000),
            3 => n,
            _ => {
                let u: f64 = c.rng.random_range(1e-6..1.0);
                (1.0 / u) as usize
            }
        };
        k = k.wrapping_add(c.rng.random_range(1..4));
        keys.extend(std::iter::repeat_n(k, run.min(n - keys.len())).map(K::from));
    }
    keys
}

/// Run lengths of `keys`.
fn runs<K: PartialEq>(keys: &[K]) -> Vec<usize> {
    let mut lens: Vec<usize> = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        if i == 0 || keys[i - 1] != *k {
            lens.push(1);
        } else if let Some(l) = lens.last_mut() {
            *l += 1;
        }
    }
    lens
}

fn values<T: TestElem>(c: &mut Case, n: usize, op: Reduction) -> Vec<T> {
    let mut dist = c.dist();
    // Specials make float sums NaN/inf run-wide: the reduce family checks them.
    if T::IS_FLOAT && op == Reduction::Sum && dist == Dist::Specials {
        dist = Dist::Random;
    }
    c.note(format!("{dist:?}"));
    make::<T>(&mut c.rng, n, dist)
}

fn reduce_case<K, T>(c: &mut Case) -> u64
where
    K: SelectElement + From<u32> + PartialEq,
    T: TestElem + ReduceByKeyElement<K>,
{
    let n = c.size(&scan_boundary_sizes(c.max));
    let op = pick(&mut c.rng, &Reduction::SCAN);
    c.note(format!(
        "{} keys, {} values, n={n} {}",
        K::DTYPE,
        T::DTYPE,
        op.name()
    ));
    // A quarter of the cases: unique by key (each run's first value) instead.
    let unique = c.rng.random_bool(0.25);
    if unique {
        c.note("(unique_by_key)");
    }
    let keys: Vec<K> = keys(c, n);
    let vals: Vec<T> = values(c, n, op);
    let run = |ctx: &Context| {
        let (dk, dv) = (ctx.htod(&keys).unwrap(), ctx.htod(&vals).unwrap());
        let mut uk = ctx.alloc_zeros::<K>(n.max(1)).unwrap();
        let mut agg = ctx.alloc_zeros::<T>(n.max(1)).unwrap();
        let r = if unique {
            ctx.unique_by_key(&dk, &dv, &mut uk, &mut agg).unwrap()
        } else {
            ctx.reduce_by_key(&dk, &dv, &mut uk, &mut agg, op).unwrap()
        } as usize;
        (
            r,
            ctx.dtoh(&uk).unwrap()[..r].to_vec(),
            ctx.dtoh(&agg).unwrap()[..r].to_vec(),
        )
    };
    let (r, got_k, got_a) = run(c.ctx);
    let (want_k, want_a) = if unique {
        // The first value of each run: a copy, its bits kept (a NaN's payload too), as every
        // compaction's (ARCHITECTURE.md, "One NaN").
        let first = (0..n).filter(|&i| i == 0 || keys[i - 1] != keys[i]);
        first.map(|i| (keys[i], vals[i])).unzip()
    } else {
        cpu_reduce_by_key(&keys, &vals, op)
    };
    let what = &c.what.clone();
    assert_eq!(r, want_k.len(), "{what}: run count");
    assert!(got_k == want_k, "{what}: unique keys");
    if T::IS_FLOAT && op == Reduction::Sum && !unique {
        let mut start = 0;
        for (i, len) in runs(&keys).into_iter().enumerate() {
            let run = &vals[start..start + len];
            let exact: f64 = run.iter().map(|x| x.to_f64()).sum();
            let abs: f64 = run.iter().map(|x| x.to_f64().abs()).sum();
            let bound = len as f64 * T::EPS * abs + f64::MIN_POSITIVE;
            let g = got_a[i].to_f64();
            assert!(
                (g - exact).abs() <= bound,
                "{what}: run {i} (len {len}): {g} vs {exact}"
            );
            start += len;
        }
    } else {
        for i in 0..r {
            assert!(
                got_a[i].bits() == want_a[i].bits(),
                "{what}: run {i}: {:?} vs {:?}",
                got_a[i],
                want_a[i]
            );
        }
    }
    let all = |(r, k, a): (usize, Vec<K>, Vec<T>)| [bytes(&[r]), bytes(&k), bytes(&a)].concat();
    c.check_replicas(n, &all((r, got_k, got_a)), &|ctx| all(run(ctx)));
    n as u64
}

fn scan_case<K, T>(c: &mut Case) -> u64
where
    K: DeviceElement + From<u32> + PartialEq,
    T: TestElem + ScanByKeyElement<K>,
{
    let n = c.size(&scan_boundary_sizes(c.max));
    let op = pick(&mut c.rng, &Reduction::SCAN);
    let kind = kind(&mut c.rng);
    c.note(format!(
        "{} keys, {} values, n={n} {} {}",
        K::DTYPE,
        T::DTYPE,
        op.name(),
        kind.name()
    ));
    let keys: Vec<K> = keys(c, n);
    let vals: Vec<T> = values(c, n, op);
    let run = |ctx: &Context| {
        let (dk, dv) = (ctx.htod(&keys).unwrap(), ctx.htod(&vals).unwrap());
        let mut out = ctx.alloc_zeros::<T>(n.max(1)).unwrap();
        ctx.scan_by_key(&dk, &dv, &mut out, op, kind).unwrap();
        ctx.dtoh(&out).unwrap()[..n].to_vec()
    };
    let got = run(c.ctx);
    let what = &c.what.clone();
    if T::IS_FLOAT && op == Reduction::Sum {
        let mut start = 0;
        for len in runs(&keys) {
            let r = start..start + len;
            check_scan_result(&got[r.clone()], &vals[r], op, kind, what);
            start += len;
        }
    } else {
        let want = cpu_scan_by_key(&keys, &vals, op, kind);
        for i in 0..n {
            let same = got[i].bits() == want[i].bits()
                || (got[i].to_f64().is_nan() && want[i].to_f64().is_nan());
            assert!(same, "{what}: element {i}: {:?} vs {:?}", got[i], want[i]);
        }
    }
    c.check_replicas(n, &bytes(&got), &|ctx| bytes(&run(ctx)));
    n as u64
}

fn reduce_by_key(c: &mut Case) -> u64 {
    match c.rng.random_range(0..8) {
        0 => reduce_case::<u32, i32>(c),
        1 => reduce_case::<u32, f32>(c),
        2 => reduce_case::<u64, u64>(c),
        3 => reduce_case::<u64, f64>(c),
        4 => reduce_case::<u32, i64>(c),
        5 => reduce_case::<u64, u32>(c),
        6 => reduce_case::<u32, f64>(c),
        _ => reduce_case::<u64, f32>(c),
    }
}

fn scan_by_key(c: &mut Case) -> u64 {
    match c.rng.random_range(0..6) {
        0 => scan_case::<u32, i32>(c),
        1 => scan_case::<u32, f32>(c),
        2 => scan_case::<u64, u64>(c),
        3 => scan_case::<u64, f64>(c),
        4 => scan_case::<u32, i64>(c),
        _ => scan_case::<u64, u32>(c),
    }
}

inventory::submit! { Family { name: "reduce_by_key", run: reduce_by_key } }
inventory::submit! { Family { name: "scan_by_key", run: scan_by_key } }
