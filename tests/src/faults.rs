//! Faults and races a library meets in a user's program (issue 35): threads racing the first
//! call of every family (lazy module loading and workspace creation) on one context and across
//! contexts.

use gpu_reduce::{Context, Reduction, ScanKind, Segments};

use crate::stress::bytes;

/// Every family once on `ctx`, the results as bytes (the same input every time).
pub fn every_family_once(ctx: &Context) -> Vec<Vec<u8>> {
    let n = 100_003;
    let f: Vec<f32> = crate::random_f32(n, 77);
    let d: Vec<f64> = f.iter().map(|&v| v as f64 * 3.0).collect();
    let i: Vec<i32> = (0..n as i32)
        .map(|k| k.wrapping_mul(2_654_435_761u32 as i32))
        .collect();
    let keys: Vec<u32> = (0..n as u32).map(|k| k / 13).collect();
    let offsets: Vec<u64> = (0..=97u64).map(|k| k * 1000).collect();
    let h: Vec<half::f16> = f.iter().map(|&v| half::f16::from_f32(v)).collect();
    let (xf, xd, xi) = (
        ctx.htod(&f).unwrap(),
        ctx.htod(&d).unwrap(),
        ctx.htod(&i).unwrap(),
    );
    let mut out = Vec::new();
    out.push(bytes(&[ctx.sum(&xf).unwrap()]));
    out.push(bytes(&[ctx.reduce(&xd, Reduction::Max).unwrap()]));
    out.push(bytes(&[ctx.argmin(&xi).unwrap().unwrap().0]));
    let mut s = ctx.alloc_zeros::<i32>(n).unwrap();
    ctx.scan(&xi, &mut s, Reduction::Sum, ScanKind::Exclusive)
        .unwrap();
    out.push(bytes(&ctx.dtoh(&s).unwrap()));
    let mut s = ctx.alloc_zeros::<f32>(n).unwrap();
    ctx.scan(&xf, &mut s, Reduction::Sum, ScanKind::Inclusive)
        .unwrap();
    out.push(bytes(&ctx.dtoh(&s).unwrap()));
    let off = ctx.htod(&offsets).unwrap();
    let mut seg = ctx.alloc_zeros::<f64>(97).unwrap();
    ctx.segmented_reduce(&xd, Segments::csr(&off), &mut seg, Reduction::Sum)
        .unwrap();
    out.push(bytes(&ctx.dtoh(&seg).unwrap()));
    let k = ctx.htod(&keys).unwrap();
    let (mut uk, mut agg) = (
        ctx.alloc_zeros::<u32>(n).unwrap(),
        ctx.alloc_zeros::<f32>(n).unwrap(),
    );
    let runs = ctx
        .reduce_by_key(&k, &xf, &mut uk, &mut agg, Reduction::Sum)
        .unwrap() as usize;
    out.push(bytes(&ctx.dtoh(&agg).unwrap()[..runs]));
    let mut sk = ctx.alloc_zeros::<f32>(n).unwrap();
    ctx.scan_by_key(&k, &xf, &mut sk, Reduction::Sum, ScanKind::Inclusive)
        .unwrap();
    out.push(bytes(&ctx.dtoh(&sk).unwrap()));
    out.push(bytes(&[ctx.dot(&xf, &xf).unwrap()]));
    let m = ctx.mean_var(&xf).unwrap().unwrap();
    out.push(bytes(&[m.mean, m.variance]));
    let (lo, hi) = ctx.min_max(&xd).unwrap().unwrap();
    out.push(bytes(&[lo, hi]));
    out.push(bytes(&[ctx.norm2(&xd).unwrap()]));
    out.push(bytes(&[ctx.sum(&ctx.htod(&h).unwrap()).unwrap()]));
    out
}

/// `threads` threads released at once call every family for the first time: all on one
/// context (the process's first loads of those kernels, when nothing ran before), then each on
/// a context of its own (each context's first workspaces). Every thread's results equal a
/// reference run's (made after the first race, so that the race is the first use), bit for bit.
pub fn check_first_calls_race(make: &(dyn Fn() -> Context + Sync), threads: usize) {
    let shared = make();
    let mut reference: Option<Vec<Vec<u8>>> = None;
    for own in [false, true] {
        let barrier = std::sync::Barrier::new(threads);
        let results: Vec<Vec<Vec<u8>>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let (barrier, shared) = (&barrier, &shared);
                    s.spawn(move || {
                        let mine = own.then(make);
                        let ctx = mine.as_ref().unwrap_or(shared);
                        barrier.wait();
                        every_family_once(ctx)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a racing thread panicked"))
                .collect()
        });
        let want = reference.get_or_insert_with(|| every_family_once(&make()));
        for (t, got) in results.iter().enumerate() {
            for (k, (g, w)) in got.iter().zip(want.iter()).enumerate() {
                assert!(
                    g == w,
                    "thread {t} (own context: {own}): result {k} differs"
                );
            }
        }
    }
}
