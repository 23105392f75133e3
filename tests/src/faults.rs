//! Faults and races a library meets in a user's program (issue 35): threads racing the first
//! call of every family (lazy module loading and workspace creation) on one context and across
//! contexts; the device's memory running out in the middle of a call.

use gpu_reduce::{Context, DeviceBuffer, Error, Reduction, ScanKind, Segments};

use crate::stress::bytes;

type R = Result<Vec<u8>, Error>;

/// The inputs of [`FAMILIES`], uploaded once.
pub struct Inputs {
    n: usize,
    f: DeviceBuffer<f32>,
    d: DeviceBuffer<f64>,
    i: DeviceBuffer<i32>,
    keys: DeviceBuffer<u32>,
    offsets: DeviceBuffer<u64>,
    h: DeviceBuffer<half::f16>,
}

impl Inputs {
    pub fn new(ctx: &Context) -> Self {
        let n = 100_003;
        let f: Vec<f32> = crate::random_f32(n, 77);
        let d: Vec<f64> = f.iter().map(|&v| v as f64 * 3.0).collect();
        let i: Vec<i32> = (0..n as i32)
            .map(|k| k.wrapping_mul(2_654_435_761u32 as i32))
            .collect();
        let keys: Vec<u32> = (0..n as u32).map(|k| k / 13).collect();
        let offsets: Vec<u64> = (0..=97u64).map(|k| k * 1000).collect();
        let h: Vec<half::f16> = f.iter().map(|&v| half::f16::from_f32(v)).collect();
        Inputs {
            n,
            f: ctx.htod(&f).unwrap(),
            d: ctx.htod(&d).unwrap(),
            i: ctx.htod(&i).unwrap(),
            keys: ctx.htod(&keys).unwrap(),
            offsets: ctx.htod(&offsets).unwrap(),
            h: ctx.htod(&h).unwrap(),
        }
    }
}

/// One call of every family on inputs of the same context, its result as bytes.
#[allow(clippy::type_complexity)]
pub const FAMILIES: &[(&str, fn(&Context, &Inputs) -> R)] = &[
    ("sum f32", |c, x| Ok(bytes(&[c.sum(&x.f)?]))),
    ("max f64", |c, x| {
        Ok(bytes(&[c.reduce(&x.d, Reduction::Max)?]))
    }),
    ("argmin i32", |c, x| {
        Ok(bytes(&[c.argmin(&x.i)?.map_or(u64::MAX, |p| p.0)]))
    }),
    ("exclusive scan i32", |c, x| {
        let mut s = c.alloc_zeros::<i32>(x.n)?;
        c.scan(&x.i, &mut s, Reduction::Sum, ScanKind::Exclusive)?;
        Ok(bytes(&c.dtoh(&s)?))
    }),
    ("inclusive scan f32", |c, x| {
        let mut s = c.alloc_zeros::<f32>(x.n)?;
        c.scan(&x.f, &mut s, Reduction::Sum, ScanKind::Inclusive)?;
        Ok(bytes(&c.dtoh(&s)?))
    }),
    ("segmented sum f64", |c, x| {
        let mut seg = c.alloc_zeros::<f64>(97)?;
        c.segmented_reduce(&x.d, Segments::csr(&x.offsets), &mut seg, Reduction::Sum)?;
        Ok(bytes(&c.dtoh(&seg)?))
    }),
    ("reduce by key", |c, x| {
        let (mut uk, mut agg) = (c.alloc_zeros::<u32>(x.n)?, c.alloc_zeros::<f32>(x.n)?);
        let runs = c.reduce_by_key(&x.keys, &x.f, &mut uk, &mut agg, Reduction::Sum)? as usize;
        Ok(bytes(&c.dtoh(&agg)?[..runs]))
    }),
    ("scan by key", |c, x| {
        let mut sk = c.alloc_zeros::<f32>(x.n)?;
        c.scan_by_key(&x.keys, &x.f, &mut sk, Reduction::Sum, ScanKind::Inclusive)?;
        Ok(bytes(&c.dtoh(&sk)?))
    }),
    ("dot", |c, x| Ok(bytes(&[c.dot(&x.f, &x.f)?]))),
    ("mean_var", |c, x| {
        let m = c.mean_var(&x.f)?.expect("non-empty");
        Ok(bytes(&[m.mean, m.variance]))
    }),
    ("min_max", |c, x| {
        let (lo, hi) = c.min_max(&x.d)?.expect("non-empty");
        Ok(bytes(&[lo, hi]))
    }),
    ("norm2", |c, x| Ok(bytes(&[c.norm2(&x.d)?]))),
    ("sum f16", |c, x| Ok(bytes(&[c.sum(&x.h)?]))),
];

/// Every family once on `ctx`, the results as bytes (the same input every time).
pub fn every_family_once(ctx: &Context) -> Vec<Vec<u8>> {
    let x = Inputs::new(ctx);
    FAMILIES
        .iter()
        .map(|(name, f)| f(ctx, &x).unwrap_or_else(|e| panic!("{name}: {e}")))
        .collect()
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
                    "thread {t} (own context: {own}): {} differs",
                    FAMILIES[k].0
                );
            }
        }
    }
}

/// The device's memory runs out in the middle of calls: on a fresh context (no workspace yet)
/// whose inputs are uploaded, the rest of the device is filled; then every family either
/// returns its correct result (it needed no new device memory) or `OutOfMemory`, never another
/// error, a panic or a wrong result; once the memory is freed, the same context gives every
/// result. Returns the families that ran out of memory. GPU only (the simulator's memory is the
/// host's).
pub fn check_out_of_memory_every_family(make: &dyn Fn() -> Context) -> Vec<&'static str> {
    let want = every_family_once(&make());
    let ctx = make();
    let x = Inputs::new(&ctx);
    let mut hog: Vec<DeviceBuffer<u8>> = Vec::new();
    for chunk in [1usize << 30, 1 << 26, 1 << 20, 1 << 14] {
        loop {
            match ctx.alloc_zeros::<u8>(chunk) {
                Ok(b) => hog.push(b),
                Err(Error::OutOfMemory { .. }) => break,
                Err(e) => panic!("filling the device: {e}"),
            }
        }
    }
    let mut out_of_memory = Vec::new();
    for ((name, f), w) in FAMILIES.iter().zip(&want) {
        match f(&ctx, &x) {
            Ok(got) => assert!(&got == w, "{name}: a wrong result on a full device"),
            Err(Error::OutOfMemory { .. }) => out_of_memory.push(*name),
            Err(e) => panic!("{name} on a full device: {e} (expected OutOfMemory)"),
        }
    }
    drop(hog);
    for ((name, f), w) in FAMILIES.iter().zip(&want) {
        let got = f(&ctx, &x).unwrap_or_else(|e| panic!("{name} after freeing: {e}"));
        assert!(&got == w, "{name}: a wrong result after freeing");
    }
    out_of_memory
}
