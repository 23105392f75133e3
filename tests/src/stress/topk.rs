//! Stress family "topk": every element type, largest or smallest, sorted (k <= 2048) or not,
//! k from 1 to n, every distribution (runs of equal values: many ties), unaligned views,
//! against the CPU bit for bit, and on every replica.

use gpu_reduce::{Context, TopK, TopkElement};
use rand::Rng;

use super::{Case, Family, bytes, make};
use crate::reductions::TestElem;
use crate::topk::{run_topk, run_topk_rows, topk_ref};

fn case<T: TestElem + TopkElement>(c: &mut Case) -> u64 {
    let n = c.size(&[1, 2, 31, 33, 1023, 1024, 1025, 2048 * 3 + 5, 1 << 16]);
    let (offset, dist) = (c.offset(), c.dist());
    let data = make::<T>(&mut c.rng, n, dist);
    let mut padded = make::<T>(&mut c.rng, offset, dist);
    padded.extend_from_slice(&data);
    let k = match c.rng.random_range(0..4) {
        _ if n == 0 => 0,
        0 => 1,
        1 => n,
        2 => c.rng.random_range(1..=n.min(2048)),
        _ => c.rng.random_range(1..=n),
    };
    let largest = c.rng.random_bool(0.5);
    let sorted = k <= 2048 && c.rng.random_bool(0.5);
    let how = TopK { largest, sorted };
    c.note(format!(
        "{} n={n} offset={offset} {dist:?} k={k} {how:?}",
        T::DTYPE
    ));
    let want = topk_ref(&data, k, how);
    let run = |ctx: &Context| -> Vec<u8> {
        let x = ctx.htod(&padded).unwrap();
        let got = run_topk(ctx, x.view(offset..).unwrap(), k, how);
        bytes(&got.iter().flat_map(|&(a, b)| [a, b]).collect::<Vec<u64>>())
    };
    let got = run(c.ctx);
    let want = bytes(&want.iter().flat_map(|&(a, b)| [a, b]).collect::<Vec<u64>>());
    assert!(got == want, "{}: differs from the CPU", c.what);
    c.check_replicas(n, &got, &|ctx| run(ctx));
    n as u64
}

fn run(c: &mut Case) -> u64 {
    super::any_element_type!(c, case)
}

inventory::submit! { Family { name: "topk", run } }

/// Family "topk_rows": a matrix of 1 to 300 rows (up to 4 times the largest size in all;
/// columns of every size, so rows start
/// unaligned), k from 0 to the columns, against the CPU row by row, and on every replica.
fn rows_case<T: TestElem + TopkElement>(c: &mut Case) -> u64 {
    let cols = c
        .size(&[1, 2, 31, 33, 1023, 1024, 1025, 2048 * 3 + 5, 32_000])
        .max(1);
    let rows = c.rng.random_range(1..=(4 * c.max / cols).clamp(1, 300));
    let dist = c.dist();
    let data = make::<T>(&mut c.rng, rows * cols, dist);
    let k = match c.rng.random_range(0..4) {
        0 => 1,
        1 => cols,
        2 => c.rng.random_range(0..=cols.min(2048)),
        _ => c.rng.random_range(0..=cols),
    };
    let how = TopK {
        largest: c.rng.random_bool(0.5),
        sorted: k <= 2048 && c.rng.random_bool(0.5),
    };
    c.note(format!(
        "{} {rows} x {cols} {dist:?} k={k} {how:?}",
        T::DTYPE
    ));
    let want: Vec<u64> = data
        .chunks(cols)
        .flat_map(|r| topk_ref(r, k, how))
        .flat_map(|(a, b)| [a, b])
        .collect();
    let run = |ctx: &Context| -> Vec<u8> {
        let got = run_topk_rows(ctx, &data, cols, k, how);
        bytes(&got.iter().flat_map(|&(a, b)| [a, b]).collect::<Vec<u64>>())
    };
    let got = run(c.ctx);
    assert!(got == bytes(&want), "{}: differs from the CPU", c.what);
    c.check_replicas(rows * cols, &got, &|ctx| run(ctx));
    (rows * cols) as u64
}

fn run_rows(c: &mut Case) -> u64 {
    super::any_element_type!(c, rows_case)
}

inventory::submit! { Family { name: "topk_rows", run: run_rows } }
