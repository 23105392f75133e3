//! Randomized stress against the CPU reference: random operator, type, size (biased to the
//! boundaries of warps, blocks, tiles and grids), offset into the buffer (misaligned for vector
//! loads) and data distribution, for reductions and scans; also several host threads, each
//! with its own context and stream, at once. Every case is checked (a mismatch panics with the
//! case's description), so a passing run means zero mismatches.

use gpu_reduce::ScanElement;
use gpu_reduce::{Context, Reduction, ScanKind};
use rand::{Rng, SeedableRng, rngs::SmallRng};

use crate::boundary_sizes;
use crate::lookback::{check_scan_result, scan_boundary_sizes};
use crate::reductions::{TestElem, check_all_ops_at};

/// What a stress run covered.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StressCount {
    pub reduce_cases: usize,
    pub scan_cases: usize,
    pub elements: u64,
}

impl std::ops::AddAssign for StressCount {
    fn add_assign(&mut self, o: Self) {
        self.reduce_cases += o.reduce_cases;
        self.scan_cases += o.scan_cases;
        self.elements += o.elements;
    }
}

/// Data distributions of the cases.
#[derive(Debug, Clone, Copy)]
enum Dist {
    Random,
    AllEqual,
    Sorted,
    ReverseSorted,
    /// Random with a NaN (floats) at a random place.
    WithSpecial,
}

fn make<T: TestElem>(rng: &mut SmallRng, n: usize, dist: Dist) -> Vec<T> {
    let mut v: Vec<T> = (0..n).map(|_| T::random(rng)).collect();
    let cmp = |a: &T, b: &T| {
        if T::total_lt(*a, *b) {
            std::cmp::Ordering::Less
        } else if T::total_lt(*b, *a) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    };
    match dist {
        Dist::Random => {}
        Dist::AllEqual => {
            if let Some(&x) = v.first() {
                v.iter_mut().for_each(|y| *y = x);
            }
        }
        Dist::Sorted => v.sort_unstable_by(cmp),
        Dist::ReverseSorted => {
            v.sort_unstable_by(cmp);
            v.reverse();
        }
        Dist::WithSpecial => {
            if n > 0
                && let Some(nan) = T::nan()
            {
                let i = rng.random_range(0..n);
                v[i] = nan;
            }
        }
    }
    v
}

/// A size up to `max`: half the time one near a boundary, otherwise log-uniform.
fn pick_size(rng: &mut SmallRng, max: usize, boundaries: &[usize]) -> usize {
    if rng.random_bool(0.5) && !boundaries.is_empty() {
        boundaries[rng.random_range(0..boundaries.len())]
    } else {
        let bits = usize::BITS - max.leading_zeros();
        let hi = 1usize << rng.random_range(0..=bits);
        rng.random_range(0..=hi.min(max))
    }
}

fn case<T: TestElem + ScanElement>(
    ctx: &Context,
    rng: &mut SmallRng,
    max: usize,
    sizes: (&[usize], &[usize]),
    id: usize,
) -> StressCount {
    let dists = [
        Dist::Random,
        Dist::AllEqual,
        Dist::Sorted,
        Dist::ReverseSorted,
        Dist::WithSpecial,
    ];
    let dist = dists[rng.random_range(0..dists.len())];
    let offset = rng.random_range(0..4usize);
    let scan = rng.random_bool(0.5);
    let n = pick_size(rng, max, if scan { sizes.1 } else { sizes.0 });
    let data = make::<T>(rng, n, dist);
    let what = format!("case {id}: {} n={n} offset={offset} {dist:?}", T::DTYPE);
    if !scan {
        check_all_ops_at(ctx, &data, offset, &what);
        return StressCount {
            reduce_cases: 1,
            scan_cases: 0,
            elements: n as u64,
        };
    }
    let ops = [Reduction::Sum, Reduction::Min, Reduction::Max];
    let op = ops[rng.random_range(0..ops.len())];
    let kind = if rng.random_bool(0.5) {
        ScanKind::Inclusive
    } else {
        ScanKind::Exclusive
    };
    // NaN in a float sum makes every later prefix NaN: fine for min/max, not for the bound.
    let data = if matches!(dist, Dist::WithSpecial) && op == Reduction::Sum {
        make::<T>(rng, n, Dist::Random)
    } else {
        data
    };
    let mut padded: Vec<T> = (0..offset).map(|_| T::random(rng)).collect();
    padded.extend_from_slice(&data);
    let whole = ctx.htod(&padded).unwrap();
    let mut out = ctx.alloc_zeros::<T>(n.max(1)).unwrap();
    ctx.scan(whole.view(offset..).unwrap(), &mut out, op, kind)
        .unwrap();
    let got = ctx.dtoh(&out).unwrap();
    check_scan_result(
        &got[..n],
        &data,
        op,
        kind,
        &format!("{what} {op:?} {kind:?}"),
    );
    StressCount {
        reduce_cases: 0,
        scan_cases: 1,
        elements: n as u64,
    }
}

/// `cases` random cases of at most `max` elements on `ctx`, from `seed`.
pub fn check_random_cases(ctx: &Context, cases: usize, max: usize, seed: u64) -> StressCount {
    let mut rng = SmallRng::seed_from_u64(seed);
    let (rb, sb) = (boundary_sizes(max), scan_boundary_sizes(max));
    let mut count = StressCount::default();
    let start = std::time::Instant::now();
    for id in 0..cases {
        // Progress on long runs (shown with --nocapture): where a slow run stands.
        if id > 0 && id % 125 == 0 {
            eprintln!(
                "stress seed {seed:#x}: {id}/{cases} cases, {:.1} s",
                start.elapsed().as_secs_f64()
            );
        }
        let s = (rb.as_slice(), sb.as_slice());
        count += match rng.random_range(0..6) {
            0 => case::<i32>(ctx, &mut rng, max, s, id),
            1 => case::<u32>(ctx, &mut rng, max, s, id),
            2 => case::<i64>(ctx, &mut rng, max, s, id),
            3 => case::<u64>(ctx, &mut rng, max, s, id),
            4 => case::<f32>(ctx, &mut rng, max, s, id),
            _ => case::<f64>(ctx, &mut rng, max, s, id),
        };
    }
    count
}

/// [`check_random_cases`] on `threads` host threads at once, each with its own context (and so
/// its own stream) from `make_ctx`: reductions and scans run concurrently on the device.
pub fn check_random_cases_threads(
    make_ctx: impl Fn() -> Context + Sync,
    threads: usize,
    cases_per_thread: usize,
    max: usize,
    seed: u64,
) -> StressCount {
    let mut total = StressCount::default();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let make_ctx = &make_ctx;
                s.spawn(move || {
                    let ctx = make_ctx();
                    check_random_cases(&ctx, cases_per_thread, max, seed ^ (t as u64) << 32)
                })
            })
            .collect();
        for h in handles {
            total += h
                .join()
                .expect("a stress thread found a mismatch (see its panic)");
        }
    });
    total
}

/// Device memory freed after `calls` library calls (reductions, scans, their uploads and
/// results) once the context's reusable workspaces exist: the free memory after minus before,
/// in bytes (0 when nothing leaks).
pub fn leaked_bytes(ctx: &Context, calls: usize) -> i64 {
    let data: Vec<f32> = (0..100_003).map(|i| (i % 97) as f32 - 48.0).collect();
    let round = |k: usize| {
        let x = ctx.htod(&data[..data.len() - k % 7]).unwrap();
        match k % 4 {
            0 => {
                ctx.sum(&x).unwrap();
            }
            1 => {
                ctx.argmax(&x).unwrap();
            }
            2 => {
                let mut out = ctx.alloc_zeros::<f32>(data.len()).unwrap();
                ctx.scan(&x, &mut out, Reduction::Sum, ScanKind::Inclusive)
                    .unwrap();
            }
            _ => {
                let mut y = ctx.htod(&data[..1000 + k % 5]).unwrap();
                ctx.scan_in_place(&mut y, Reduction::Max, ScanKind::Exclusive)
                    .unwrap();
            }
        }
    };
    // Warm-up: the scan and reduce workspaces are allocated once and then reused.
    for k in 0..8 {
        round(k);
    }
    ctx.synchronize().unwrap();
    let before = ctx.free_memory().unwrap() as i64;
    for k in 0..calls {
        round(k);
    }
    ctx.synchronize().unwrap();
    let after = ctx.free_memory().unwrap() as i64;
    before - after
}
