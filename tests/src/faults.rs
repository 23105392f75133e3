//! Faults and races a library meets in a user's program (issue 35): threads racing the first
//! call of every family (lazy module loading and workspace creation) on one context and across
//! contexts; the device's memory running out in the middle of a call.

use gpu_reduce::{Context, DeviceBuffer, Error, Predicate, Reduction, ScanKind, Segments};

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
    ("partition i32", |c, x| {
        let (mut yes, mut no) = (c.alloc_zeros::<i32>(x.n)?, c.alloc_zeros::<i32>(x.n)?);
        let k = c.partition(&x.i, &mut yes, &mut no, Predicate::Gt(0))? as usize;
        let mut v = bytes(&c.dtoh(&yes)?[..k]);
        v.extend(bytes(&c.dtoh(&no)?[..x.n - k]));
        Ok(v)
    }),
    ("histogram f32", |c, x| {
        let mut counts = c.alloc_zeros::<u32>(100)?;
        c.histogram_even(&x.f, &mut counts, -1.0, 1.0)?;
        Ok(bytes(&c.dtoh(&counts)?))
    }),
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

/// Captures a program gives up on: (1) every family's stream-ordered form captured into a
/// graph that is never launched; (2) a capture invalidated halfway by a call that must block
/// (`NotCapturable`, not a hang), then ended. After each, every family on the same context
/// gives the bits it gave before. GPU only (the simulator has no graphs).
pub fn check_abandoned_captures(make: &dyn Fn() -> Context) {
    use gpu_reduce::cudarc::driver::sys;
    let ctx = make();
    let want = every_family_once(&ctx);
    let (_, stream) = ctx.cuda().expect("a CUDA context");
    let stream = stream.clone();
    let x = Inputs::new(&ctx);
    let mut value = ctx.alloc_zeros::<f32>(1).unwrap();
    let mut scanned = ctx.alloc_zeros::<f32>(x.n).unwrap();
    let mut seg = ctx.alloc_zeros::<f64>(97).unwrap();
    let (mut uk, mut agg) = (
        ctx.alloc_zeros::<u32>(x.n).unwrap(),
        ctx.alloc_zeros::<f32>(x.n).unwrap(),
    );
    let mut runs = ctx.alloc_zeros::<u64>(1).unwrap();
    let check = ctx.offset_check().unwrap();
    let mut queued = |then_block: bool| -> Result<(), Error> {
        ctx.reduce_into(&x.f, &mut value, Reduction::Sum)?;
        ctx.scan(&x.f, &mut scanned, Reduction::Sum, ScanKind::Inclusive)?;
        ctx.segmented_reduce(
            &x.d,
            Segments::csr(&x.offsets).check_later(&check),
            &mut seg,
            Reduction::Sum,
        )?;
        ctx.reduce_by_key_into(&x.keys, &x.f, &mut uk, &mut agg, &mut runs, Reduction::Sum)?;
        if then_block {
            // Must read back: refused under capture.
            match ctx.sum(&x.f) {
                Err(Error::NotCapturable { .. }) => {}
                other => panic!("a blocking call under capture: {other:?}"),
            }
        }
        Ok(())
    };
    for (round, then_block) in [(0, false), (1, true), (2, false)] {
        stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .unwrap();
        let r = queued(then_block);
        // Never launched (or invalidated): dropped either way.
        let _ = stream.end_capture(
            sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
        );
        r.unwrap_or_else(|e| panic!("capture {round}: {e}"));
        let got = every_family_once(&ctx);
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                g == w,
                "after abandoned capture {round}: {} differs",
                FAMILIES[k].0
            );
        }
    }
}

/// Buffers and contexts dropped while kernels still use them: the input of a pending
/// reduction and the pending value itself dropped unwaited, a scan's input and output dropped
/// right after the launch, a whole second context dropped with its work queued. Run `rounds`
/// times on `n` elements; returns the device memory not given back (0 expected) once the
/// device is idle. Under compute-sanitizer's memcheck, a use after free would show.
pub fn dropped_in_flight_leak(make: &dyn Fn() -> Context, n: usize, rounds: usize) -> i64 {
    let ctx = make();
    let host: Vec<f32> = crate::random_f32(n, 5);
    let round = |ctx: &Context| {
        let x = ctx.htod(&host).unwrap();
        let pending = ctx.reduce_async(&x, Reduction::Sum).unwrap();
        drop(x);
        drop(pending);
        let x = ctx.htod(&host).unwrap();
        let mut out = ctx.alloc_zeros::<f32>(n).unwrap();
        ctx.scan(&x, &mut out, Reduction::Sum, ScanKind::Exclusive)
            .unwrap();
        drop(x);
        drop(out);
        let other = make();
        let y = other.htod(&host).unwrap();
        let mut z = other.alloc_zeros::<f32>(n).unwrap();
        other
            .scan(&y, &mut z, Reduction::Max, ScanKind::Inclusive)
            .unwrap();
        let _ = other.argmax_async(&y).unwrap();
        drop(z);
        drop(y);
        drop(other);
    };
    let idle = |ctx: &Context| {
        if let Some((c, _)) = ctx.cuda() {
            c.synchronize().unwrap();
        }
    };
    round(&ctx);
    idle(&ctx);
    let before = ctx.free_memory().unwrap() as i64;
    for _ in 0..rounds {
        round(&ctx);
    }
    idle(&ctx);
    // The context still gives every result.
    let x = ctx.htod(&host).unwrap();
    let want: f64 = host.iter().map(|&v| v as f64).sum();
    let got = ctx.sum(&x).unwrap() as f64;
    assert!((got - want).abs() <= 1e-3 * n as f64, "{got} vs {want}");
    drop(x);
    idle(&ctx);
    before - ctx.free_memory().unwrap() as i64
}

/// One thread captures a graph while others open new contexts of the same device and run
/// calls on them: both sides work (opening a context once synchronised the whole device,
/// which broke the capture and failed the open). GPU only.
pub fn check_capture_while_contexts_open(make: &(dyn Fn() -> Context + Sync)) {
    use gpu_reduce::cudarc::driver::sys;
    let ctx = make();
    let host: Vec<f32> = (0..1_000_003).map(|i| (i % 11) as f32).collect();
    let x = ctx.htod(&host).unwrap();
    let mut out = ctx.alloc_zeros::<f32>(1).unwrap();
    ctx.reduce_into(&x, &mut out, Reduction::Sum).unwrap();
    let want = ctx.dtoh(&out).unwrap()[0];
    let (_, stream) = ctx.cuda().expect("a CUDA context");
    let (capturing, opened) = (std::sync::Barrier::new(5), std::sync::Barrier::new(5));
    std::thread::scope(|s| {
        // Each side reaches both barriers whatever fails, so a failure is reported, not a hang.
        let openers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    capturing.wait();
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let other = make();
                        let y = other.htod(&host).unwrap();
                        assert_eq!(other.sum(&y).unwrap(), want);
                    }));
                    opened.wait();
                    r
                })
            })
            .collect();
        let began =
            stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        let r = began
            .is_ok()
            .then(|| ctx.reduce_into(&x, &mut out, Reduction::Sum));
        capturing.wait();
        opened.wait();
        began.unwrap();
        let graph = stream
            .end_capture(
                sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
            )
            .expect("the capture survives other threads opening contexts")
            .expect("a graph");
        r.expect("captured").unwrap();
        for t in openers {
            if let Err(e) = t.join().unwrap() {
                std::panic::resume_unwind(e);
            }
        }
        ctx.htod_into(&[0.0f32], &mut out).unwrap();
        graph.launch().unwrap();
        assert_eq!(ctx.dtoh(&out).unwrap()[0], want);
    });
}
