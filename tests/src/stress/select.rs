//! Stress family "select": compaction by a built-in predicate (values, indices, both, a
//! partition, three ways), by a byte mask, unique consecutive, run-length encoding and the
//! non-trivial runs, every element type, against the CPU bit for bit.

use gpu_reduce::{Context, Predicate, SelectElement};
use rand::Rng;

use super::{Case, Family, bytes, make};
use crate::reductions::TestElem;
use crate::select::{keeps, nontrivial_runs_ref, runs_ref, unique_ref};

fn case<T: TestElem + SelectElement + PartialOrd>(c: &mut Case) -> u64 {
    let t = crate::select::tile(size_of::<T>());
    let n = c.size(&[1, 2, 31, 33, t - 1, t, t + 1, 2 * t + 1, 7 * t]);
    let (offset, dist) = (c.offset(), c.dist());
    let data = make::<T>(&mut c.rng, n, dist);
    let mut padded = make::<T>(&mut c.rng, offset, dist);
    padded.extend_from_slice(&data);
    let pick = |c: &mut Case| {
        if n == 0 {
            T::ZERO
        } else {
            data[c.rng.random_range(0..n)]
        }
    };
    let (a, b) = (pick(c), pick(c));
    let preds = [
        Predicate::Lt(a),
        Predicate::Le(a),
        Predicate::Gt(a),
        Predicate::Ge(a),
        Predicate::Eq(a),
        Predicate::Ne(a),
        Predicate::InRange(a, b),
        Predicate::NonZero,
        Predicate::Finite,
        Predicate::NotNan,
    ];
    let pred = preds[c.rng.random_range(0..preds.len())];
    // The second predicate of a three-way partition.
    let q = preds[c.rng.random_range(0..preds.len())];
    let call = c.rng.random_range(0..9u32);
    let keep_p = c.rng.random_range(0.0..1.0);
    let mask: Vec<u8> = (0..n)
        .map(|_| c.rng.random_bool(keep_p) as u8 * c.rng.random_range(1..=255u8))
        .collect();
    c.note(format!(
        "{} n={n} offset={offset} {dist:?} call={call} {pred:?} (then {q:?})",
        T::DTYPE
    ));
    // Values (and the rest, for a partition) as the CPU has them.
    let (want, rest): (Vec<T>, Vec<T>) = match call {
        3 => (
            data.iter()
                .zip(&mask)
                .filter(|p| *p.1 != 0)
                .map(|p| *p.0)
                .collect(),
            vec![],
        ),
        4 => (unique_ref(&data), vec![]),
        5 => (runs_ref(&data).0, vec![]),
        _ => data.iter().partition(|&&v| keeps(pred, v)),
    };
    let want_ix: Vec<u64> = (0..n as u64)
        .filter(|&i| keeps(pred, data[i as usize]))
        .collect();
    let run = |ctx: &Context| -> Vec<u8> {
        let x = ctx.htod(&padded).unwrap();
        let dx = x.view(offset..).unwrap();
        let mut out = ctx.alloc_zeros::<T>(n.max(1)).unwrap();
        match call {
            0 => {
                let k = ctx.select(dx, &mut out, pred).unwrap() as usize;
                bytes(&ctx.dtoh(&out).unwrap()[..k])
            }
            1 => {
                let mut ix = ctx.alloc_zeros::<u64>(n.max(1)).unwrap();
                let k = ctx.select_indices(dx, &mut ix, pred).unwrap() as usize;
                bytes(&ctx.dtoh(&ix).unwrap()[..k])
            }
            2 => {
                let mut r = ctx.alloc_zeros::<T>(n.max(1)).unwrap();
                let k = ctx.partition(dx, &mut out, &mut r, pred).unwrap() as usize;
                let mut v = bytes(&ctx.dtoh(&out).unwrap()[..k]);
                v.extend(bytes(&ctx.dtoh(&r).unwrap()[..n - k]));
                v
            }
            3 => {
                let m = ctx.htod(&mask).unwrap();
                let k = ctx.select_flagged(dx, &m, &mut out).unwrap() as usize;
                bytes(&ctx.dtoh(&out).unwrap()[..k])
            }
            4 => {
                let k = ctx.unique(dx, &mut out).unwrap() as usize;
                bytes(&ctx.dtoh(&out).unwrap()[..k])
            }
            6 => {
                let mut ix = ctx.alloc_zeros::<u64>(n.max(1)).unwrap();
                let k = ctx
                    .select_with_indices(dx, &mut out, &mut ix, pred)
                    .unwrap() as usize;
                let mut v = bytes(&ctx.dtoh(&out).unwrap()[..k]);
                v.extend(bytes(&ctx.dtoh(&ix).unwrap()[..k]));
                v
            }
            8 => {
                let (mut mid, mut r) = (
                    ctx.alloc_zeros::<T>(n.max(1)).unwrap(),
                    ctx.alloc_zeros::<T>(n.max(1)).unwrap(),
                );
                let (a, b) = ctx
                    .partition_three_way(dx, &mut out, &mut mid, &mut r, pred, q)
                    .unwrap();
                let (a, b) = (a as usize, b as usize);
                let mut v = bytes(&[a as u64, b as u64]);
                v.extend(bytes(&ctx.dtoh(&out).unwrap()[..a]));
                v.extend(bytes(&ctx.dtoh(&mid).unwrap()[..b]));
                v.extend(bytes(&ctx.dtoh(&r).unwrap()[..n - a - b]));
                v
            }
            7 => {
                let mut offs = ctx.alloc_zeros::<u64>(n.max(1)).unwrap();
                let mut lens = ctx.alloc_zeros::<u64>(n.max(1)).unwrap();
                let k = ctx.non_trivial_runs(dx, &mut offs, &mut lens).unwrap() as usize;
                let mut v = bytes(&ctx.dtoh(&offs).unwrap()[..k]);
                v.extend(bytes(&ctx.dtoh(&lens).unwrap()[..k]));
                v
            }
            _ => {
                let mut lens = ctx.alloc_zeros::<u64>(n.max(1)).unwrap();
                let k = ctx.run_length_encode(dx, &mut out, &mut lens).unwrap() as usize;
                let mut v = bytes(&ctx.dtoh(&out).unwrap()[..k]);
                v.extend(bytes(&ctx.dtoh(&lens).unwrap()[..k]));
                v
            }
        }
    };
    let got = run(c.ctx);
    let expected = match call {
        1 => bytes(&want_ix),
        2 => {
            let mut v = bytes(&want);
            v.extend(bytes(&rest));
            v
        }
        5 => {
            let mut v = bytes(&want);
            v.extend(bytes(&runs_ref(&data).1));
            v
        }
        6 => {
            let mut v = bytes(&want);
            v.extend(bytes(&want_ix));
            v
        }
        8 => {
            let part = |v: T| {
                if keeps(pred, v) {
                    0
                } else if keeps(q, v) {
                    1
                } else {
                    2
                }
            };
            let parts: Vec<Vec<T>> = (0..3)
                .map(|p| data.iter().copied().filter(|&v| part(v) == p).collect())
                .collect();
            let mut v = bytes(&[parts[0].len() as u64, parts[1].len() as u64]);
            for p in &parts {
                v.extend(bytes(p));
            }
            v
        }
        7 => {
            let (o, l) = nontrivial_runs_ref(&data);
            let mut v = bytes(&o);
            v.extend(bytes(&l));
            v
        }
        _ => bytes(&want),
    };
    assert!(got == expected, "{}: differs from the CPU", c.what);
    c.check_replicas(n, &got, &|ctx| run(ctx));
    n as u64
}

fn run(c: &mut Case) -> u64 {
    super::any_element_type!(c, case)
}

inventory::submit! { Family { name: "select", run } }
