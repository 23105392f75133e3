//! Stress family "segmented": one value per segment (every operator, argmin/argmax) over
//! random layouts: mixed short and long, power-law, empty segments around one huge one, every
//! length 1, overlapping and out-of-order begin/end, and the rows of a matrix.

use gpu_reduce::{Context, Segments};
use rand::Rng;

use super::{Case, Family, bytes, make, pick};
use crate::segmented::{SegElem, check_fixed_rows, check_ranges};

/// Begin/end ranges over `n` elements in one of the layouts, and the layout's name.
fn layout(c: &mut Case, n: usize) -> (Vec<(usize, usize)>, &'static str) {
    let rng = &mut c.rng;
    let back_to_back = |lens: &mut dyn FnMut() -> usize| {
        let mut v = Vec::new();
        let mut at = 0;
        while at < n && v.len() < 4096 {
            let l = lens().min(n - at);
            v.push((at, at + l));
            at += l;
        }
        v
    };
    match rng.random_range(0..6) {
        0 => (
            back_to_back(&mut || {
                if rng.random_bool(0.1) {
                    rng.random_range(1025..20_000)
                } else {
                    rng.random_range(0..600)
                }
            }),
            "mixed",
        ),
        1 => (
            back_to_back(&mut || {
                // Power law: P(len > x) ~ 1/x.
                let u: f64 = rng.random_range(1e-6..1.0);
                (1.0 / u) as usize - 1
            }),
            "power-law",
        ),
        2 => {
            let mut v = vec![(0, 0); rng.random_range(0..50)];
            v.push((0, n));
            v.extend(vec![(n, n); rng.random_range(0..50)]);
            (v, "empty around one huge")
        }
        3 => (back_to_back(&mut || 1), "every length 1"),
        _ => {
            // At most 4n elements in all: the CPU model stays linear in n.
            let k = rng.random_range(1..300usize);
            let v = (0..k)
                .map(|_| {
                    let a = rng.random_range(0..=n);
                    let len = rng.random_range(0..=(n - a).min(4 * n / k));
                    (a, a + len)
                })
                .collect();
            (v, "overlapping, any order")
        }
    }
}

fn case<T: SegElem>(c: &mut Case) -> u64 {
    // The exact CPU model runs every operator over every segment: inputs up to 2^22 keep a
    // case within seconds (longer segments: segmented_gpu's huge-segment test).
    let n = c.size(&crate::boundary_sizes(c.max)).min(1 << 22);
    if c.rng.random_bool(0.15) {
        let row_len = c.rng.random_range(1..=n.clamp(1, 40_000));
        let rows = (n / row_len).clamp(1, 64);
        c.note(format!("{} rows {rows} x {row_len}", T::DTYPE));
        check_fixed_rows::<T>(c.ctx, rows, row_len);
        return (rows * row_len) as u64;
    }
    let (ranges, name) = layout(c, n);
    c.note(format!(
        "{} n={n} {} segments {name}",
        T::DTYPE,
        ranges.len()
    ));
    // Every operator and argmin/argmax against the exact model and an order-free reference.
    check_ranges::<T>(c.ctx, &ranges, n, &c.what);

    // One operator on this case's distribution, again on the replicas: the same bits.
    let dist = c.dist();
    let data = make::<T>(&mut c.rng, n, dist);
    let op = pick(&mut c.rng, &super::ORDERED_OPS);
    c.note(format!("{dist:?} {}", op.name()));
    let begin: Vec<u64> = ranges.iter().map(|r| r.0 as u64).collect();
    let end: Vec<u64> = ranges.iter().map(|r| r.1 as u64).collect();
    let k = ranges.len();
    let run = |ctx: &Context| -> Vec<u8> {
        let (x, b, e) = (
            ctx.htod(&data).unwrap(),
            ctx.htod(&begin).unwrap(),
            ctx.htod(&end).unwrap(),
        );
        let mut out = ctx.alloc_zeros::<T>(k).unwrap();
        ctx.segmented_reduce(&x, Segments::offsets(&b, &e), &mut out, op)
            .unwrap();
        let (mut ix, mut v) = (
            ctx.alloc_zeros::<u64>(k).unwrap(),
            ctx.alloc_zeros::<T>(k).unwrap(),
        );
        ctx.segmented_argmax(&x, Segments::offsets(&b, &e), &mut ix, &mut v)
            .unwrap();
        [
            bytes(&ctx.dtoh(&out).unwrap()),
            bytes(&ctx.dtoh(&ix).unwrap()),
            bytes(&ctx.dtoh(&v).unwrap()),
        ]
        .concat()
    };
    c.replicated(n, &run);
    n as u64
}

fn run(c: &mut Case) -> u64 {
    super::any_element_type!(c, case)
}

inventory::submit! { Family { name: "segmented", run } }
