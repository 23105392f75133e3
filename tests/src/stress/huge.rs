//! The stress's cases above 2^32 elements (GPU only: 17 GB per `i32` array): random sizes in
//! `2^32 .. 2^32 + 2^16`, random offsets, random data; each case a reduction of every
//! operator and argmin/argmax, a scan (inclusive or exclusive) or a segmented sum over random
//! CSR segments (one of them longer than 2^32), checked exactly against the CPU (integer
//! arithmetic wraps the same everywhere). One at a time (the device holds one such case), the
//! CPU work on every core.

use gpu_reduce::{Context, Reduction, ScanKind, Segments};
use rand::{Rng, SeedableRng, rngs::SmallRng};

/// `f` over `len` indices cut into one chunk per core, in parallel; results in chunk order.
fn par_chunks<R: Send>(len: usize, f: impl Fn(std::ops::Range<usize>) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(8, |t| t.get());
    let chunk = len.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let f = &f;
        let hs: Vec<_> = (0..len.div_ceil(chunk))
            .map(|k| s.spawn(move || f(k * chunk..((k + 1) * chunk).min(len))))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Random `i32` (full range) from `seed`, in chunks of 2^24 each seeded by its index (the
/// same data on every machine), generated on every core.
fn random_i32(n: usize, seed: u64) -> Vec<i32> {
    const CHUNK: usize = 1 << 24;
    let mut v = vec![0i32; n];
    let threads = std::thread::available_parallelism().map_or(8, |t| t.get());
    let mut work: Vec<Vec<(usize, &mut [i32])>> = (0..threads).map(|_| Vec::new()).collect();
    for (k, part) in v.chunks_mut(CHUNK).enumerate() {
        work[k % threads].push((k, part));
    }
    std::thread::scope(|s| {
        for parts in work {
            s.spawn(move || {
                for (k, part) in parts {
                    let mut r =
                        SmallRng::seed_from_u64(seed ^ (k as u64).wrapping_mul(0x9e37_79b9));
                    part.iter_mut().for_each(|x| *x = r.random());
                }
            });
        }
    });
    v
}

fn wrapping_sum(x: &[i32]) -> i32 {
    par_chunks(x.len(), |r| {
        x[r].iter().fold(0i32, |a, &b| a.wrapping_add(b))
    })
    .into_iter()
    .fold(0, i32::wrapping_add)
}

/// `cases` cases from `seed` on `ctx`, of `base .. base + 2^16` elements (`2^32` on a GPU; the
/// simulator test checks the checks on small sizes); returns the elements covered. Panics (one
/// line with the case's seed) on a mismatch.
pub fn check_huge_cases(ctx: &Context, cases: usize, seed: u64, base: usize) -> u64 {
    let mut covered = 0;
    for id in 0..cases {
        let case_seed = seed.wrapping_add(id as u64);
        let mut rng = SmallRng::seed_from_u64(case_seed);
        let n = base + rng.random_range(0..1usize << 16);
        let offset = rng.random_range(0..4usize);
        let what = rng.random_range(0..3);
        let host = random_i32(n + offset, case_seed);
        let x_host = &host[offset..];
        let whole = ctx.htod(&host).unwrap();
        let x = whole.view(offset..).unwrap();
        let tag = format!("huge stress case seed {case_seed:#x}: n={n} offset={offset}");
        match what {
            0 => {
                let sum = ctx.reduce(x, Reduction::Sum).unwrap();
                assert_eq!(sum, wrapping_sum(x_host), "{tag}: sum");
                let (min, max) = par_chunks(n, |r| {
                    let s = &x_host[r];
                    (*s.iter().min().unwrap(), *s.iter().max().unwrap())
                })
                .into_iter()
                .fold((i32::MAX, i32::MIN), |a, b| (a.0.min(b.0), a.1.max(b.1)));
                assert_eq!(ctx.reduce(x, Reduction::Min).unwrap(), min, "{tag}: min");
                assert_eq!(ctx.reduce(x, Reduction::Max).unwrap(), max, "{tag}: max");
                // The first occurrence of each: past 2^32 only when the data puts it there.
                let first = |v: i32| x_host.iter().position(|&e| e == v).unwrap() as u64;
                assert_eq!(ctx.argmin(x).unwrap(), Some((first(min), min)), "{tag}");
                assert_eq!(ctx.argmax(x).unwrap(), Some((first(max), max)), "{tag}");
            }
            1 => {
                let kind = if rng.random_bool(0.5) {
                    ScanKind::Inclusive
                } else {
                    ScanKind::Exclusive
                };
                let mut out = ctx.alloc_zeros::<i32>(n).unwrap();
                ctx.scan(x, &mut out, Reduction::Sum, kind).unwrap();
                drop(whole);
                let got = ctx.dtoh(&out).unwrap();
                drop(out);
                // Each chunk's exclusive prefix from the chunk totals, then every chunk checked
                // in parallel (the same chunks both times).
                let totals = par_chunks(n, |r| {
                    x_host[r].iter().fold(0i32, |a, &b| a.wrapping_add(b))
                });
                let starts: Vec<i32> = totals
                    .iter()
                    .scan(0i32, |acc, &t| {
                        let before = *acc;
                        *acc = acc.wrapping_add(t);
                        Some(before)
                    })
                    .collect();
                let chunk_of = par_chunks(n, |r| r);
                let first_bad = par_chunks(n, |r| {
                    let k = chunk_of.iter().position(|c| c.start == r.start).unwrap();
                    let mut acc = starts[k];
                    r.into_iter().find(|&i| {
                        let incl = acc.wrapping_add(x_host[i]);
                        let want = if kind == ScanKind::Inclusive {
                            incl
                        } else {
                            acc
                        };
                        acc = incl;
                        got[i] != want
                    })
                })
                .into_iter()
                .flatten()
                .min();
                assert!(
                    first_bad.is_none(),
                    "{tag}: {} first differs at {first_bad:?}",
                    kind.name()
                );
            }
            _ => {
                // 1..=6 segments, one of them longer than 2^32 (cuts near the ends).
                // Cuts within `near` of either end leave a middle segment of at least
                // n - 2 near elements: above 2^32 on a GPU.
                let near = match (n as u64).checked_sub(1 << 32) {
                    Some(spare) if spare >= 2 => spare / 2,
                    _ => (n as u64 / 4).min(1 << 15) + 1,
                };
                let mut cuts: Vec<u64> = (0..rng.random_range(0..=5))
                    .map(|_| {
                        if rng.random_bool(0.5) {
                            rng.random_range(0..near)
                        } else {
                            n as u64 - rng.random_range(0..near)
                        }
                    })
                    .collect();
                cuts.extend([0, n as u64]);
                cuts.sort_unstable();
                let offsets = ctx.htod(&cuts).unwrap();
                let mut out = ctx.alloc_zeros::<i32>(cuts.len() - 1).unwrap();
                ctx.segmented_reduce(x, Segments::csr(&offsets), &mut out, Reduction::Sum)
                    .unwrap();
                let want: Vec<i32> = cuts
                    .windows(2)
                    .map(|w| wrapping_sum(&x_host[w[0] as usize..w[1] as usize]))
                    .collect();
                assert_eq!(ctx.dtoh(&out).unwrap(), want, "{tag}: segments {cuts:?}");
            }
        }
        covered += n as u64;
    }
    covered
}
