//! Randomized differential stress over every family: each case draws a family (they register
//! themselves with [`inventory`], one file each: a new family adds its file, nothing else), and
//! the family draws its element type, operator, size (biased to the boundaries of warps,
//! blocks, tiles and grids, else log-uniform), offset into the buffer (misaligned for vector
//! loads), data distribution and, for segments and keys, the layout. Every case checks the
//! result against a CPU reference (exactly where the result is exact, within the documented
//! bound where it is a float sum), and its bits against a second call on another context
//! (another stream, another grid limit) and, for a sample on a GPU, the simulator. A mismatch
//! (or any panic) fails with one line naming the family and the case's seed, which
//! `STRESS_REPRO=<family>:<seed>` replays alone (`stress_sim`'s `replay` test).

use gpu_reduce::{Context, Reduction, ScanKind};
use rand::{Rng, SeedableRng, rngs::SmallRng};

use crate::reductions::TestElem;

mod by_key;
mod graph;
mod half;
mod histogram;
pub mod huge;
mod multi;
mod reduce;
mod scan;
mod segmented;
mod select;
mod topk;
mod transform;

/// One family of the stress: `run` draws and checks one case and returns the elements it
/// covered (a panic is a mismatch).
pub struct Family {
    pub name: &'static str,
    pub run: fn(&mut Case) -> u64,
}

inventory::collect!(Family);

/// The families, by name (the order cases draw from).
pub fn families() -> Vec<&'static Family> {
    let mut f: Vec<&'static Family> = inventory::iter::<Family>.into_iter().collect();
    f.sort_by_key(|f| f.name);
    f
}

/// What one case has to work with.
pub struct Case<'a> {
    /// The context of the call under test.
    pub ctx: &'a Context,
    /// Another context (its own stream, another grid limit): the same call there must give the
    /// same bits.
    pub other: &'a Context,
    /// The simulator, for a sample of the small cases when `ctx` is a GPU.
    pub sim: Option<&'a Context>,
    /// More contexts of the same backend (the multi-GPU family's ranks).
    pub make: &'a (dyn Fn() -> Context + Sync),
    pub rng: SmallRng,
    /// Largest size drawn.
    pub max: usize,
    /// One-line description for the failure message (families add to it).
    pub what: String,
}

impl<'a> Case<'a> {
    /// A size up to `max`: half the time one near a boundary of `boundaries`, else log-uniform.
    pub fn size(&mut self, boundaries: &[usize]) -> usize {
        let max = self.max;
        if self.rng.random_bool(0.5) && !boundaries.is_empty() {
            boundaries[self.rng.random_range(0..boundaries.len())].min(max)
        } else {
            let bits = usize::BITS - max.leading_zeros();
            let hi = 1usize << self.rng.random_range(0..=bits);
            self.rng.random_range(0..=hi.min(max))
        }
    }

    /// Elements of junk before the data (0..4: misaligned for 16-byte vectors).
    pub fn offset(&mut self) -> usize {
        self.rng.random_range(0..4usize)
    }

    pub fn dist(&mut self) -> Dist {
        DISTS[self.rng.random_range(0..DISTS.len())]
    }

    /// The contexts a result must be reproduced on, bit for bit: `other`, and the simulator
    /// for some cases of at most 2^16 elements.
    pub fn replicas(&mut self, n: usize) -> Vec<&'a Context> {
        let mut v = vec![self.other];
        if let Some(sim) = self.sim
            && n <= 1 << 16
            && self.rng.random_bool(0.05)
        {
            v.push(sim);
        }
        v
    }

    /// `run` (a call and its result as bytes) on the case's context, then on every replica
    /// ([`Case::replicas`]): the same bytes everywhere. Returns the first run's bytes.
    pub fn replicated(&mut self, n: usize, run: &dyn Fn(&Context) -> Vec<u8>) -> Vec<u8> {
        let want = run(self.ctx);
        self.check_replicas(n, &want, run);
        want
    }

    /// `run` on every replica gives `want` (the bytes of the case's own run).
    pub fn check_replicas(&mut self, n: usize, want: &[u8], run: &dyn Fn(&Context) -> Vec<u8>) {
        for r in self.replicas(n) {
            let got = run(r);
            // The bytes themselves (short results whole) say which part differs.
            let show = |b: &[u8]| format!("{:02x?}", &b[..b.len().min(64)]);
            assert!(
                got == want,
                "{}: bits differ on another context: {} there, {} here",
                self.what,
                show(&got),
                show(want)
            );
        }
    }

    pub fn note(&mut self, s: impl AsRef<str>) {
        self.what.push(' ');
        self.what.push_str(s.as_ref());
    }
}

/// Data distributions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dist {
    Random,
    AllEqual,
    Sorted,
    ReverseSorted,
    /// Random, with NaN and infinities (floats) at random places.
    Specials,
    /// Random, a quarter of it denormal (floats).
    Denormals,
}

const DISTS: [Dist; 6] = [
    Dist::Random,
    Dist::AllEqual,
    Dist::Sorted,
    Dist::ReverseSorted,
    Dist::Specials,
    Dist::Denormals,
];

/// `n` values of `dist`.
pub fn make<T: TestElem>(rng: &mut SmallRng, n: usize, dist: Dist) -> Vec<T> {
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
        Dist::Specials => {
            if n > 0 {
                for s in [
                    T::nan(),
                    T::from_f64(f64::INFINITY),
                    T::from_f64(f64::NEG_INFINITY),
                ]
                .into_iter()
                .flatten()
                {
                    let i = rng.random_range(0..n);
                    v[i] = s;
                }
            }
        }
        Dist::Denormals => {
            if T::IS_FLOAT {
                let tiny = T::MIN_POSITIVE / 1024.0;
                for x in v.iter_mut() {
                    if rng.random_bool(0.25) {
                        *x = T::from_f64(x.to_f64() * tiny).unwrap_or(*x);
                    }
                }
            }
        }
    }
    v
}

/// The bytes of a slice of device elements (plain data), for bit-for-bit comparisons.
pub fn bytes<T: Copy>(v: &[T]) -> Vec<u8> {
    // SAFETY: device element types are plain data without padding (DeviceRepr).
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
        .to_vec()
}

/// What a stress run covered: cases per family, and elements.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct StressCount {
    pub cases: std::collections::BTreeMap<&'static str, usize>,
    pub elements: u64,
}

impl StressCount {
    pub fn total(&self) -> usize {
        self.cases.values().sum()
    }
}

impl std::ops::AddAssign for StressCount {
    fn add_assign(&mut self, o: Self) {
        for (k, v) in o.cases {
            *self.cases.entry(k).or_default() += v;
        }
        self.elements += o.elements;
    }
}

/// The seed of case `id` of a run seeded `seed` (splitmix64: neighbouring ids far apart).
fn case_seed(seed: u64, id: usize) -> u64 {
    let mut z = seed.wrapping_add((id as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Run one case of `family` from `seed`; a mismatch panics with one line that replays it.
pub fn run_one(family: &Family, seed: u64, contexts: &Contexts, max: usize) -> u64 {
    let mut case = Case {
        ctx: &contexts.ctx,
        other: &contexts.other,
        sim: contexts.sim.as_ref(),
        make: contexts.make,
        rng: SmallRng::seed_from_u64(seed),
        max,
        what: String::new(),
    };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (family.run)(&mut case)));
    match r {
        Ok(n) => n,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            panic!(
                "stress mismatch: STRESS_REPRO={}:{seed:#x} STRESS_MAX={max} replays it \
                 ({}): {msg}",
                family.name,
                case.what.trim()
            )
        }
    }
}

/// The contexts of a stress run: the one under test, the second (other grid limits, its own
/// stream), the simulator when the first is a GPU, and how to make more.
pub struct Contexts<'a> {
    pub ctx: Context,
    pub other: Context,
    pub sim: Option<Context>,
    pub make: &'a (dyn Fn() -> Context + Sync),
}

impl<'a> Contexts<'a> {
    /// Two contexts from `make` (the second with small grid limits: another grid, the same
    /// bits) and, with `with_sim`, the simulator.
    pub fn new(make: &'a (dyn Fn() -> Context + Sync), with_sim: bool) -> Self {
        let (ctx, other) = (make(), make());
        other.set_reduce_grid_limit(Some(3));
        other.set_segmented_grid_limit(Some(5));
        Contexts {
            ctx,
            other,
            sim: with_sim.then(crate::sim),
            make,
        }
    }
}

/// Replay `family:seed` (the `STRESS_REPRO` form).
pub fn replay(spec: &str, contexts: &Contexts, max: usize) {
    let (name, seed) = spec.split_once(':').expect("STRESS_REPRO=<family>:<seed>");
    let seed = u64::from_str_radix(seed.trim_start_matches("0x"), 16).expect("a hex seed");
    let family = families()
        .into_iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no stress family {name}"));
    run_one(family, seed, contexts, max);
}

/// Replay the case named by `STRESS_REPRO=<family>:<seed>` (sizes up to `STRESS_MAX`, default
/// `max`) on contexts from `make`; a visible note and nothing else when the variable is unset.
pub fn replay_from_env(make: &(dyn Fn() -> Context + Sync), with_sim: bool, max: usize) {
    let Ok(spec) = std::env::var("STRESS_REPRO") else {
        eprintln!("note: STRESS_REPRO not set: nothing to replay (skipped)");
        return;
    };
    let max = std::env::var("STRESS_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(max);
    replay(&spec, &Contexts::new(make, with_sim), max);
}

/// `cases` random cases of at most `max` elements, from `seed`, each of a family drawn at
/// random: on `ctx`, reproduced on `other` (and on `sim`, for a sample).
pub fn check_random_cases(contexts: &Contexts, cases: usize, max: usize, seed: u64) -> StressCount {
    let families = families();
    let mut count = StressCount::default();
    let start = std::time::Instant::now();
    for id in 0..cases {
        if id > 0 && id % 125 == 0 {
            eprintln!(
                "stress seed {seed:#x}: {id}/{cases} cases, {:.1} s",
                start.elapsed().as_secs_f64()
            );
        }
        let s = case_seed(seed, id);
        let family = families[(s % families.len() as u64) as usize];
        count.elements += run_one(family, s, contexts, max);
        *count.cases.entry(family.name).or_default() += 1;
    }
    count
}

/// [`check_random_cases`] on `threads` host threads at once, each with its own two contexts
/// from `make_ctx` (and the simulator when `with_sim`): every family concurrently on the device.
pub fn check_random_cases_threads(
    make_ctx: impl Fn() -> Context + Sync,
    with_sim: bool,
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
                    let contexts = Contexts::new(make_ctx, with_sim);
                    check_random_cases(&contexts, cases_per_thread, max, seed ^ (t as u64) << 32)
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

/// `$case::<T>($c)` for a random `T` of the six element types every family takes (i32, u32,
/// i64, u64, f32, f64): the families' one type draw.
macro_rules! any_element_type {
    ($c:expr, $case:ident) => {
        match $c.rng.random_range(0..6) {
            0 => $case::<i32>($c),
            1 => $case::<u32>($c),
            2 => $case::<i64>($c),
            3 => $case::<u64>($c),
            4 => $case::<f32>($c),
            _ => $case::<f64>($c),
        }
    };
}
pub(crate) use any_element_type;

/// A random operator among `ops`.
pub fn pick<T: Copy>(rng: &mut SmallRng, xs: &[T]) -> T {
    xs[rng.random_range(0..xs.len())]
}

/// A random scan kind.
pub fn kind(rng: &mut SmallRng) -> ScanKind {
    pick(rng, &ScanKind::ALL)
}

/// The operators every element type has.
pub const ORDERED_OPS: [Reduction; 3] = [Reduction::Sum, Reduction::Min, Reduction::Max];
/// Device memory not returned after `calls` library calls of every family (reductions and
/// their `_into`/`_async` forms, argmax, scans, segmented reductions, reduce and scan by key,
/// dot, norm, mean/variance, min/max, the compensated sum; their uploads and results) once the
/// context's reusable workspaces exist: the free memory before minus after, in bytes (0 when
/// nothing leaks).
pub fn leaked_bytes(ctx: &Context, calls: usize) -> i64 {
    use gpu_reduce::Segments;
    let data: Vec<f32> = (0..100_003).map(|i| (i % 97) as f32 - 48.0).collect();
    let keys: Vec<u32> = (0..100_003u32).map(|i| i / 7).collect();
    let offsets: Vec<u64> = (0..=100u64).map(|i| i * 990).collect();
    let round = |k: usize| {
        let x = ctx.htod(&data[..data.len() - k % 7]).unwrap();
        match k % 14 {
            0 => {
                let _ = ctx.sum(&x).unwrap();
            }
            1 => {
                let _ = ctx.argmax(&x).unwrap();
            }
            2 => {
                let mut out = ctx.alloc_zeros::<f32>(data.len()).unwrap();
                ctx.scan(&x, &mut out, Reduction::Sum, ScanKind::Inclusive)
                    .unwrap();
            }
            3 => {
                let mut y = ctx.htod(&data[..1000 + k % 5]).unwrap();
                ctx.scan_in_place(&mut y, Reduction::Max, ScanKind::Exclusive)
                    .unwrap();
            }
            4 => {
                let off = ctx.htod(&offsets).unwrap();
                let mut out = ctx.alloc_zeros::<f32>(100).unwrap();
                ctx.segmented_reduce(&x, Segments::csr(&off), &mut out, Reduction::Sum)
                    .unwrap();
                ctx.dtoh(&out).unwrap();
            }
            5 => {
                let kk = ctx.htod(&keys[..x.len()]).unwrap();
                let mut uk = ctx.alloc_zeros::<u32>(x.len()).unwrap();
                let mut agg = ctx.alloc_zeros::<f32>(x.len()).unwrap();
                ctx.reduce_by_key(&kk, &x, &mut uk, &mut agg, Reduction::Sum)
                    .unwrap();
            }
            6 => {
                let kk = ctx.htod(&keys[..x.len()]).unwrap();
                let mut out = ctx.alloc_zeros::<f32>(x.len()).unwrap();
                ctx.scan_by_key(&kk, &x, &mut out, Reduction::Sum, ScanKind::Exclusive)
                    .unwrap();
            }
            7 => {
                let _ = ctx.dot(&x, &x).unwrap();
            }
            8 => {
                let _ = ctx.mean_var(&x).unwrap();
            }
            9 => {
                let _ = ctx.min_max(&x).unwrap();
            }
            10 => {
                let _ = (ctx.norm2(&x).unwrap(), ctx.sum_of_squares(&x).unwrap());
            }
            11 => {
                let _ = ctx.sum_compensated(&x).unwrap();
            }
            12 => {
                let _ = ctx
                    .reduce_async(&x, Reduction::Min)
                    .unwrap()
                    .wait()
                    .unwrap();
            }
            _ => {
                let mut out = ctx.alloc_zeros::<f32>(1).unwrap();
                ctx.reduce_into(&x, &mut out, Reduction::Max).unwrap();
                ctx.dtoh(&out).unwrap();
            }
        }
    };
    // Warm-up: every family's workspaces are allocated once and then reused.
    for k in 0..28 {
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
