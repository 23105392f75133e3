//! Stress family "histogram": even bins and bins between edges, every element type, u32 and
//! u64 counts, 1 to 5000 bins (striped, shared and global counters), ranges from the data
//! (floats: specials, denormals, ranges across zero), against the CPU count for count.

use gpu_reduce::{Context, HistogramSample};
use rand::Rng;

use super::{Case, Family, bytes, make};
use crate::histogram::{TestWeight, as_u64, edges_ref, even_bin, even_ref, weighted_ref, weights};
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

/// Stress family "histogram weighted": weighted sums of every sample type, f32 or f64 weights
/// (NaN and infinities among them), 1 to 5000 bins (shared and global digit sums), even bins
/// or edges, against the exact sums rounded once, bit for bit, and on every replica.
fn weighted_case<T: TestElem + HistogramSample + PartialOrd>(c: &mut Case) -> u64 {
    let n = c.size(&[1, 2, 31, 33, 1023, 1024, 1025, 4096 * 4 + 3, 1 << 16]);
    let dist = c.dist();
    let data = make::<T>(&mut c.rng, n, dist);
    let bins = if c.rng.random_bool(0.5) {
        [1, 2, 16, 255, 256, 1023, 1024, 1025, 5000][c.rng.random_range(0..9)]
    } else {
        c.rng.random_range(1..=5000)
    };
    let by_edges = c.rng.random_bool(0.3);
    let wide = c.rng.random_bool(0.5);
    let specials = c.rng.random_bool(0.3);
    let seed = c.rng.random::<u64>();
    c.note(format!(
        "{} n={n} bins={bins} edges={by_edges} f64 weights={wide} specials={specials}",
        T::DTYPE
    ));
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
    let (lo, hi, edges) = if by_edges {
        let mut e: Vec<T> = (0..=bins).map(|_| pick(c)).collect();
        e.sort_by(|a, b| a.partial_cmp(b).unwrap());
        (e[0], e[bins], e)
    } else {
        loop {
            let (a, b) = (pick(c), pick(c));
            if a < b && (b.to_f64() - a.to_f64()).is_finite() {
                break (a, b, vec![]);
            }
        }
    };
    fn one<T: TestElem + HistogramSample + PartialOrd, W: TestWeight>(
        ctx: &Context,
        x: &[T],
        w: &[W],
        edges: &[T],
        (lo, hi, bins): (T, T, usize),
    ) -> Vec<u64> {
        let (dx, dw, de) = (
            ctx.htod(x).unwrap(),
            ctx.htod(w).unwrap(),
            ctx.htod(edges).unwrap(),
        );
        let mut sums = ctx.alloc_zeros::<W>(bins).unwrap();
        if edges.is_empty() {
            ctx.histogram_even_weighted(&dx, &dw, &mut sums, lo, hi)
                .unwrap();
        } else {
            ctx.histogram_edges_weighted(&dx, &dw, &de, &mut sums)
                .unwrap();
        }
        ctx.dtoh(&sums).unwrap().into_iter().map(W::bits).collect()
    }
    let bin = |v: T| {
        if by_edges {
            (edges[0] <= v && v < edges[bins]).then(|| edges.iter().rposition(|&e| e <= v).unwrap())
        } else {
            even_bin(v, lo, hi, bins)
        }
    };
    macro_rules! weighted {
        ($w:ty) => {{
            let wf = weights::<$w>(n, seed, specials);
            let w: Vec<$w> = wf
                .iter()
                .map(|&v| <$w as TestWeight>::from_f64(v))
                .collect();
            let want = bytes(&weighted_ref::<T, $w>(&data, &wf, bins, bin));
            let run = |ctx: &Context| bytes(&one(ctx, &data, &w, &edges, (lo, hi, bins)));
            let got = run(c.ctx);
            c.check_replicas(n, &got, &|ctx| run(ctx));
            (got, want)
        }};
    }
    let (got, want) = if wide { weighted!(f64) } else { weighted!(f32) };
    assert!(got == want, "{}: differs from the exact sums", c.what);
    n as u64
}

fn run_weighted(c: &mut Case) -> u64 {
    super::any_element_type!(c, weighted_case)
}

inventory::submit! { Family { name: "histogram weighted", run: run_weighted } }
