//! Stress family "topk": every element type, largest or smallest, sorted (k <= 2048) or not,
//! k from 1 to n, every distribution (runs of equal values: many ties), unaligned views,
//! against the CPU bit for bit, and on every replica.

use gpu_reduce::{Context, TopK, TopkElement};
use rand::Rng;

use super::{Case, Family, bytes, make};
use crate::reductions::TestElem;
use crate::topk::{run_topk, topk_ref};

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
