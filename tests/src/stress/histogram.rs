//! Stress family "histogram": even bins and bins between edges, every element type, u32 and
//! u64 counts, 1 to 5000 bins (striped, shared and global counters), ranges from the data
//! (floats: specials, denormals, ranges across zero), against the CPU count for count.

use gpu_reduce::{Context, HistogramSample};
use rand::Rng;

use super::{Case, Family, bytes, make};
use crate::histogram::{as_u64, edges_ref, even_ref};
use crate::reductions::TestElem;

fn case<T: TestElem + HistogramSample + PartialOrd>(c: &mut Case) -> u64 {
    let n = c.size(&[1, 2, 31, 33, 1023, 1024, 1025, 4096 * 4 + 3, 1 << 16]);
    let (offset, dist) = (c.offset(), c.dist());
    let data = make::<T>(&mut c.rng, n, dist);
    let mut padded = make::<T>(&mut c.rng, offset, dist);
    padded.extend_from_slice(&data);
    let bins = if c.rng.random_bool(0.5) {
        [1, 2, 16, 255, 256, 257, 4095, 4096, 4097, 5000][c.rng.random_range(0..10)]
    } else {
        c.rng.random_range(1..=5000)
    };
    // Two ordered, non-NaN values (from the data half the time).
    let pick = |c: &mut Case| loop {
        let v = if n > 0 && c.rng.random_bool(0.5) {
            data[c.rng.random_range(0..n)]
        } else {
            T::random(&mut c.rng)
        };
        if v.partial_cmp(&v).is_some() {
            return v;
        }
    };
    let by_edges = c.rng.random_bool(0.3);
    let wide = c.rng.random_bool(0.5);
    c.note(format!(
        "{} n={n} offset={offset} {dist:?} bins={bins} edges={by_edges} u64 counts={wide}",
        T::DTYPE
    ));
    let (lo, hi, edges) = if by_edges {
        let mut e: Vec<T> = (0..=bins).map(|_| pick(c)).collect();
        e.sort_by(|a, b| a.partial_cmp(b).unwrap());
        (e[0], e[bins], e)
    } else {
        let (a, b) = loop {
            let (a, b) = (pick(c), pick(c));
            if a < b {
                break (a, b);
            }
            if b < a {
                break (b, a);
            }
        };
        (a, b, vec![])
    };
    let want = if by_edges {
        edges_ref(&data, &edges)
    } else {
        even_ref(&data, lo, hi, bins)
    };
    let run = |ctx: &Context| -> Vec<u8> {
        let x = ctx.htod(&padded).unwrap();
        let dx = x.view(offset..).unwrap();
        let e = ctx.htod(&edges).unwrap();
        macro_rules! counted {
            ($c:ty) => {{
                let mut counts = ctx.alloc_zeros::<$c>(bins).unwrap();
                let r = if by_edges {
                    ctx.histogram_edges(dx, &e, &mut counts)
                } else {
                    ctx.histogram_even(dx, &mut counts, lo, hi)
                };
                // A range wider than f64 (the f64 extremes) is refused, typed.
                match r {
                    Ok(()) => as_u64(ctx.dtoh(&counts).unwrap()),
                    Err(gpu_reduce::Error::BadBins { .. }) => vec![],
                    Err(e) => panic!("{e}"),
                }
            }};
        }
        bytes(&if wide { counted!(u64) } else { counted!(u32) })
    };
    let got = run(c.ctx);
    let refused = got.is_empty();
    assert!(
        refused && !by_edges && !(hi.to_f64() - lo.to_f64()).is_finite() || got == bytes(&want),
        "{}: differs from the CPU",
        c.what
    );
    c.check_replicas(n, &got, &|ctx| run(ctx));
    n as u64
}

fn run(c: &mut Case) -> u64 {
    super::any_element_type!(c, case)
}

inventory::submit! { Family { name: "histogram", run } }
