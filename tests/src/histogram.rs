//! Histograms (`histogram_even`, `histogram_edges`) against a CPU reference, count for count.

use gpu_reduce::{Context, Error, HistogramCount, HistogramSample};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::reductions::TestElem;
use crate::select::data;

/// The CPU's bin of `x` among `bins` even bins over `[lo, hi)`, the kernels' rule: integers
/// exactly, floats `(x - lo) * (bins / (hi - lo))` in f64, truncated, at most `bins - 1`.
pub fn even_bin<T: TestElem + HistogramSample + PartialOrd>(
    x: T,
    lo: T,
    hi: T,
    bins: usize,
) -> Option<usize> {
    if !(lo <= x && x < hi) {
        return None;
    }
    if T::IS_FLOAT {
        let scale = bins as f64 / (hi.to_f64() - lo.to_f64());
        Some((((x.to_f64() - lo.to_f64()) * scale) as usize).min(bins - 1))
    } else {
        // Integers of up to 64 bits as i128: exact.
        let (x, lo, hi) = (int(x), int(lo), int(hi));
        Some(((x - lo) as u128 * bins as u128 / (hi - lo) as u128) as usize)
    }
}

/// An integer sample's value (through its bits and signedness).
fn int<T: TestElem>(x: T) -> i128 {
    let b = x.bits();
    match (T::DTYPE.starts_with('i'), size_of::<T>()) {
        (true, 4) => b as u32 as i32 as i128,
        (true, _) => b as i64 as i128,
        _ => b as i128,
    }
}

/// The CPU's histogram of `x` (even bins).
pub fn even_ref<T: TestElem + HistogramSample + PartialOrd>(
    x: &[T],
    lo: T,
    hi: T,
    bins: usize,
) -> Vec<u64> {
    let mut c = vec![0u64; bins];
    for &v in x {
        if let Some(b) = even_bin(v, lo, hi, bins) {
            c[b] += 1;
        }
    }
    c
}

/// The CPU's histogram of `x` between ascending `edges`.
pub fn edges_ref<T: TestElem + PartialOrd>(x: &[T], edges: &[T]) -> Vec<u64> {
    let bins = edges.len() - 1;
    let mut c = vec![0u64; bins];
    for &v in x {
        // The last edge at or below v, if v lies below the last edge.
        if !(edges[0] <= v && v < edges[bins]) {
            continue;
        }
        let b = edges.iter().rposition(|&e| e <= v).unwrap();
        c[b] += 1;
    }
    c
}

pub fn as_u64<C: HistogramCount + Into<u64>>(v: Vec<C>) -> Vec<u64> {
    v.into_iter().map(Into::into).collect()
}

/// One input against the reference: even bins over `[lo, hi)` and the same bins as edges
/// (plus random ascending edges), counts of `C`, from element `offset` of a buffer (odd
/// offsets take the kernel's unaligned path).
fn check_one<T, C>(ctx: &Context, x: &[T], offset: usize, lo: T, hi: T, bins: usize, seed: u64)
where
    T: TestElem + HistogramSample + PartialOrd,
    C: HistogramCount + Into<u64> + std::fmt::Debug,
{
    let mut padded = vec![T::ZERO; offset];
    padded.extend_from_slice(x);
    let buf = ctx.htod(&padded).unwrap();
    let view = buf.view(offset..).unwrap();
    // The edges' call below finds these counts nonzero: each call overwrites them.
    let mut counts = ctx.alloc_zeros::<C>(bins).unwrap();
    ctx.histogram_even(view, &mut counts, lo, hi).unwrap();
    let got = as_u64(ctx.dtoh(&counts).unwrap());
    assert_eq!(
        got,
        even_ref(x, lo, hi, bins),
        "histogram_even of {} {} into {} {} bins over [{lo:?}, {hi:?}), offset {offset}",
        x.len(),
        T::DTYPE,
        bins,
        C::NAME
    );
    // Random ascending edges from the data (duplicates allowed: empty bins).
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut edges: Vec<T> = (0..=bins)
        .map(|_| {
            if x.is_empty() || rng.random_bool(0.2) {
                T::random(&mut rng)
            } else {
                x[rng.random_range(0..x.len())]
            }
        })
        .filter(|v| v.partial_cmp(v).is_some())
        .collect();
    while edges.len() < bins + 1 {
        edges.push(T::random(&mut rng));
    }
    edges.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let e = ctx.htod(&edges).unwrap();
    let view = buf.view(offset..).unwrap();
    ctx.histogram_edges(view, &e, &mut counts).unwrap();
    let got = as_u64(ctx.dtoh(&counts).unwrap());
    assert_eq!(
        got,
        edges_ref(x, &edges),
        "histogram_edges of {} {} into {} {} bins, offset {offset}",
        x.len(),
        T::DTYPE,
        bins,
        C::NAME
    );
}

/// Every sample type, both count types, `bins` of each of `bins`, at `sizes`: data over the
/// type's range (floats with NaN and infinities), a sub-range, every sample in one bin.
pub fn check_histogram(ctx: &Context, sizes: &[usize], bins: &[usize]) {
    fn each<T: TestElem + HistogramSample + PartialOrd>(
        ctx: &Context,
        sizes: &[usize],
        bins: &[usize],
    ) {
        for (k, &n) in sizes.iter().enumerate() {
            let x = data::<T>(n, 0x4157 + k as u64);
            let (lo, hi) = range::<T>(&x, k as u64);
            for (j, &b) in bins.iter().enumerate() {
                let seed = (k * 31 + j) as u64;
                check_one::<T, u32>(ctx, &x, 0, lo, hi, b, seed);
                check_one::<T, u64>(ctx, &x, 1 + (k + j) % 3, lo, hi, b, seed + 7);
            }
            // Every sample in one bin (the runs of one value: one atomic a run).
            let one = vec![lo; n];
            check_one::<T, u32>(ctx, &one, 0, lo, hi, bins[0], k as u64);
        }
    }
    each::<i32>(ctx, sizes, bins);
    each::<u32>(ctx, sizes, bins);
    each::<i64>(ctx, sizes, bins);
    each::<u64>(ctx, sizes, bins);
    each::<f32>(ctx, sizes, bins);
    each::<f64>(ctx, sizes, bins);
}

/// A range `[lo, hi)` for `x`: the type's whole span for some seeds, else two of its values.
fn range<T: TestElem + PartialOrd>(x: &[T], seed: u64) -> (T, T) {
    let mut rng = SmallRng::seed_from_u64(seed);
    if T::IS_FLOAT && seed.is_multiple_of(2) {
        return (T::from_f64(-1.0).unwrap(), T::from_f64(1.0).unwrap());
    }
    loop {
        // A sample of x, unless it is NaN (x may hold nothing else).
        let a = match x.get(rng.random_range(0..x.len().max(1))) {
            Some(&v) if v.partial_cmp(&v).is_some() => v,
            _ => T::random(&mut rng),
        };
        let b = T::random(&mut rng);
        if a < b {
            return (a, b);
        }
        if b < a {
            return (b, a);
        }
    }
}

/// Bad bins: typed errors, nothing written.
pub fn check_histogram_errors(ctx: &Context) {
    let x = ctx.htod(&[1.0f32, 2.0]).unwrap();
    let mut none = ctx.alloc_zeros::<u32>(0).unwrap();
    assert!(matches!(
        ctx.histogram_even(&x, &mut none, 0.0, 1.0),
        Err(Error::BadBins { .. })
    ));
    let mut c = ctx.alloc_zeros::<u32>(4).unwrap();
    for (lo, hi) in [(1.0, 1.0), (2.0, 1.0), (f32::NAN, 1.0), (0.0, f32::NAN)] {
        let e = ctx.histogram_even(&x, &mut c, lo, hi).unwrap_err();
        assert!(matches!(e, Error::BadBins { .. }), "{e}");
        assert!(e.to_string().contains("empty"), "{e}");
    }
    let e = ctx
        .histogram_even(&ctx.htod(&[1.0f64]).unwrap(), &mut c, -f64::MAX, f64::MAX)
        .unwrap_err();
    assert!(matches!(e, Error::BadBins { .. }), "{e}");
    let edges = ctx.htod(&[0.0f32, 1.0, 2.0]).unwrap();
    let e = ctx.histogram_edges(&x, &edges, &mut c).unwrap_err();
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                expected: 5,
                got: 3,
                ..
            }
        ),
        "{e}"
    );
    // Edges out of order or NaN (not checked: other counts, but nothing written past the
    // counts, and no sample counted twice), through the table (7, 256, 1000 bins) and the
    // plain search (5000).
    let mut rng = SmallRng::seed_from_u64(0xbad);
    let xs: Vec<f32> = (0..20_011).map(|_| rng.random_range(-2.0..2.0)).collect();
    let dx = ctx.htod(&xs).unwrap();
    for bins in [7usize, 256, 1000, 5000] {
        let sorted: Vec<f32> = (0..=bins)
            .map(|i| i as f32 / bins as f32 * 3.0 - 1.5)
            .collect();
        let mut reversed = sorted.clone();
        reversed.reverse();
        let mut shuffled = sorted.clone();
        shuffled.swap(1, bins - 1);
        shuffled.swap(0, bins / 2);
        let mut nan = sorted.clone();
        nan[bins / 3] = f32::NAN;
        for edges in [reversed, shuffled, nan] {
            let mut all = ctx.htod(&vec![0xdead_beefu32; bins + 64]).unwrap();
            let counts = all.view_mut(..bins).unwrap();
            ctx.histogram_edges(&dx, &ctx.htod(&edges).unwrap(), counts)
                .unwrap();
            let got = ctx.dtoh(&all).unwrap();
            assert!(
                got[bins..].iter().all(|&w| w == 0xdead_beef),
                "{bins} bins: past the end"
            );
            let total: u64 = got[..bins].iter().map(|&c| c as u64).sum();
            assert!(total <= xs.len() as u64, "{bins} bins: {total} counts");
        }
    }
}

/// f16 and bf16 samples (even bins and edges) against the f64 rule, NaN and infinities among
/// them, at `n` samples.
pub fn check_histogram_half(ctx: &Context, n: usize) {
    macro_rules! each {
        ($h:ty) => {{
            let mut rng = SmallRng::seed_from_u64(0x16 + n as u64);
            let x: Vec<$h> = (0..n)
                .map(|_| match rng.random_range(0..20) {
                    0 => <$h>::NAN,
                    1 => <$h>::INFINITY,
                    2 => <$h>::NEG_INFINITY,
                    _ => <$h>::from_f64(rng.random_range(-2.5..2.5)),
                })
                .collect();
            let (lo, hi) = (<$h>::from_f64(-2.0), <$h>::from_f64(1.75));
            let bins = 37;
            let dx = ctx.htod(&x).unwrap();
            let mut counts = ctx.alloc_zeros::<u64>(bins).unwrap();
            ctx.histogram_even(&dx, &mut counts, lo, hi).unwrap();
            let scale = bins as f64 / (hi.to_f64() - lo.to_f64());
            let mut want = vec![0u64; bins];
            for v in &x {
                if lo <= *v && *v < hi {
                    want[(((v.to_f64() - lo.to_f64()) * scale) as usize).min(bins - 1)] += 1;
                }
            }
            assert_eq!(
                ctx.dtoh(&counts).unwrap(),
                want,
                "even bins of {}",
                stringify!($h)
            );
            let edges: Vec<$h> = [-3.0, -1.0, -0.5, 0.0, 0.0, 0.25, 2.0]
                .map(<$h>::from_f64)
                .to_vec();
            let de = ctx.htod(&edges).unwrap();
            let mut counts = ctx.alloc_zeros::<u32>(edges.len() - 1).unwrap();
            ctx.histogram_edges(&dx, &de, &mut counts).unwrap();
            let mut want = vec![0u32; edges.len() - 1];
            for v in &x {
                if edges[0] <= *v && *v < edges[edges.len() - 1] {
                    want[edges.iter().rposition(|e| e <= v).unwrap()] += 1;
                }
            }
            assert_eq!(
                ctx.dtoh(&counts).unwrap(),
                want,
                "edges of {}",
                stringify!($h)
            );
        }};
    }
    each!(half::f16);
    each!(half::bf16);
}

/// Samples on and beside every bin's edge (`lo + b * (hi - lo) / bins` and the floats next to
/// it), where the f32 estimate and the f64 rule part ways if any: f32 samples over ranges
/// across zero, tiny and huge, each against the f64 rule, u32 and u64 counts.
pub fn check_histogram_bin_edges(ctx: &Context) {
    for (k, &(lo, hi, bins)) in [
        (-1.0f32, 1.0f32, 4096usize),
        (0.1, 0.7, 1000),
        (-3.0e38, 3.0e38, 256),
        (1.0, 1.000_001, 33),
        (-1e-40, 1e-40, 7),
        (0.0, 10.0, 10),
    ]
    .iter()
    .enumerate()
    {
        let w = (hi as f64 - lo as f64) / bins as f64;
        let mut x = Vec::new();
        for b in 0..=bins {
            let e = (lo as f64 + b as f64 * w) as f32;
            let (mut d, mut u) = (e, e);
            x.push(e);
            for _ in 0..3 {
                d = d.next_down();
                u = u.next_up();
                x.extend([d, u]);
            }
        }
        x.extend([
            lo,
            hi,
            -0.0,
            0.0,
            f32::NAN,
            f32::INFINITY,
            f32::MIN_POSITIVE,
        ]);
        check_one::<f32, u32>(ctx, &x, 0, lo, hi, bins, k as u64);
        check_one::<f32, u64>(ctx, &x, 1, lo, hi, bins, k as u64);
    }
}

/// A weight type of the weighted histograms, for the reference.
pub trait TestWeight: gpu_reduce::HistogramWeight + std::fmt::Debug + PartialEq {
    const NAME: &'static str;
    /// `k * 2^s` (exact for the tests' `|k| < 2^21`, `|s| <= 12`).
    fn scaled(k: i64, s: i32) -> Self;
    fn from_f64(v: f64) -> Self;
    /// The exact integer sum `units * 2^-UNIT_BITS` rounded once to this type.
    fn round(units: i128) -> Self;
    fn bits(self) -> u64;
    fn to_f64(self) -> f64;
}
/// The reference's unit: every test weight is a multiple of `2^-UNIT_BITS`.
const UNIT_BITS: i32 = 12;
impl TestWeight for f32 {
    const NAME: &'static str = "f32";
    fn scaled(k: i64, s: i32) -> Self {
        k as f32 * 2f32.powi(s)
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn round(units: i128) -> Self {
        // i128 to f32 rounds once, to nearest (ties even); the power of two is exact.
        units as f32 * 2f32.powi(-UNIT_BITS)
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}
impl TestWeight for f64 {
    const NAME: &'static str = "f64";
    fn scaled(k: i64, s: i32) -> Self {
        k as f64 * 2f64.powi(s)
    }
    fn from_f64(v: f64) -> Self {
        v
    }
    fn round(units: i128) -> Self {
        units as f64 * 2f64.powi(-UNIT_BITS)
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn to_f64(self) -> f64 {
        self
    }
}

/// The CPU's weighted sums: each bin's exact sum (the weights are multiples of
/// `2^-UNIT_BITS`, summed as integers) rounded once; NaN where a NaN or both infinities fell
/// (the canonical NaN's bits), else the infinity; `bin(x)` each sample's bin.
pub fn weighted_ref<T: Copy, W: TestWeight>(
    x: &[T],
    w: &[f64],
    bins: usize,
    bin: impl Fn(T) -> Option<usize>,
) -> Vec<u64> {
    let mut units = vec![0i128; bins];
    let mut flags = vec![(false, false, false); bins];
    for (&v, &wt) in x.iter().zip(w) {
        let Some(b) = bin(v) else { continue };
        if wt.is_nan() {
            flags[b].0 = true;
        } else if wt == f64::INFINITY {
            flags[b].1 = true;
        } else if wt == f64::NEG_INFINITY {
            flags[b].2 = true;
        } else {
            let u = wt * 2f64.powi(UNIT_BITS);
            assert_eq!(u, u.trunc(), "a test weight off the unit grid");
            units[b] += u as i128;
        }
    }
    (0..bins)
        .map(|b| match flags[b] {
            (true, _, _) | (_, true, true) => W::from_f64(f64::NAN).bits() | canonical_nan::<W>(),
            (_, true, _) => W::from_f64(f64::INFINITY).bits(),
            (_, _, true) => W::from_f64(f64::NEG_INFINITY).bits(),
            _ => W::round(units[b]).bits(),
        })
        .collect()
}

/// The library's canonical NaN bits past the type's quiet NaN (f32: `0x7fffffff`).
fn canonical_nan<W: TestWeight>() -> u64 {
    if W::NAME == "f32" { 0x7fff_ffff } else { 0 }
}

/// Random weights `k * 2^s` (`|k| < 2^20`, `s` in `-UNIT_BITS..=12`), some of them NaN or
/// infinite when `specials`.
pub fn weights<W: TestWeight>(n: usize, seed: u64, specials: bool) -> Vec<f64> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            if specials && rng.random_range(0..500) == 0 {
                [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][rng.random_range(0..3)]
            } else {
                let k = rng.random_range(-(1i64 << 20)..1 << 20);
                let s = rng.random_range(-UNIT_BITS..=12);
                W::scaled(k, s).to_f64()
            }
        })
        .collect()
}

/// One weighted call of each kind (even bins, the same bins' edges) against the reference,
/// and the same call over the samples shuffled: the same bits.
fn check_weighted_one<T, W>(ctx: &Context, x: &[T], w: &[f64], lo: T, hi: T, bins: usize)
where
    T: TestElem + HistogramSample + PartialOrd,
    W: TestWeight,
{
    let wt: Vec<W> = w.iter().map(|&v| W::from_f64(v)).collect();
    let (dx, dw) = (ctx.htod(x).unwrap(), ctx.htod(&wt).unwrap());
    let mut sums = ctx.alloc_zeros::<W>(bins).unwrap();
    ctx.histogram_even_weighted(&dx, &dw, &mut sums, lo, hi)
        .unwrap();
    let got: Vec<u64> = ctx.dtoh(&sums).unwrap().into_iter().map(W::bits).collect();
    let want = weighted_ref::<T, W>(x, w, bins, |v| even_bin(v, lo, hi, bins));
    let what = format!(
        "histogram_even_weighted of {} {} with {} weights into {bins} bins over [{lo:?}, {hi:?})",
        x.len(),
        T::DTYPE,
        W::NAME
    );
    for b in 0..bins {
        assert_eq!(got[b], want[b], "{what}: bin {b}");
    }
    // Shuffled (samples with their weights): the same bits, whatever the order.
    let mut rng = SmallRng::seed_from_u64(x.len() as u64 ^ bins as u64);
    let mut order: Vec<usize> = (0..x.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    let sx: Vec<T> = order.iter().map(|&i| x[i]).collect();
    let sw: Vec<W> = order.iter().map(|&i| wt[i]).collect();
    let (dsx, dsw) = (ctx.htod(&sx).unwrap(), ctx.htod(&sw).unwrap());
    ctx.histogram_even_weighted(&dsx, &dsw, &mut sums, lo, hi)
        .unwrap();
    let again: Vec<u64> = ctx.dtoh(&sums).unwrap().into_iter().map(W::bits).collect();
    assert!(again == got, "{what}: shuffled, other bits");
    // The same bins as edges (integers: lo + (b * range) / bins rounded up, which are the
    // even bins' edges exactly; floats: a few random edges instead).
    let mut edges: Vec<T> = (0..=bins.min(9))
        .map(|_| {
            x.get(rng.random_range(0..x.len().max(1)))
                .copied()
                .unwrap_or(lo)
        })
        .filter(|v| v.partial_cmp(v).is_some())
        .collect();
    edges.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if edges.len() < 2 {
        return;
    }
    let de = ctx.htod(&edges).unwrap();
    let nb = edges.len() - 1;
    let mut sums = ctx.alloc_zeros::<W>(nb).unwrap();
    ctx.histogram_edges_weighted(&dx, &dw, &de, &mut sums)
        .unwrap();
    let got: Vec<u64> = ctx.dtoh(&sums).unwrap().into_iter().map(W::bits).collect();
    let want = weighted_ref::<T, W>(x, w, nb, |v| {
        (edges[0] <= v && v < edges[nb]).then(|| edges.iter().rposition(|&e| e <= v).unwrap())
    });
    assert_eq!(
        got,
        want,
        "histogram_edges_weighted of {} {}",
        x.len(),
        T::DTYPE
    );
}

/// Weighted histograms: i32, u32, f32, f64 samples, f32 and f64 weights (NaN and infinities
/// among them for some sizes), `bins` of each of `bins` (past `WEIGHTED_SHARED_BINS`: global
/// atomics), at `sizes`; each bin's sum exact, rounded once; the same bits shuffled.
pub fn check_histogram_weighted(ctx: &Context, sizes: &[usize], bins: &[usize]) {
    fn each<T: TestElem + HistogramSample + PartialOrd>(
        ctx: &Context,
        sizes: &[usize],
        bins: &[usize],
    ) {
        for (k, &n) in sizes.iter().enumerate() {
            let x = data::<T>(n, 0x3e1 + k as u64);
            let (lo, hi) = range::<T>(&x, k as u64);
            for (j, &b) in bins.iter().enumerate() {
                let seed = (k * 131 + j) as u64;
                let specials = (k + j) % 2 == 1;
                check_weighted_one::<T, f32>(
                    ctx,
                    &x,
                    &weights::<f32>(n, seed, specials),
                    lo,
                    hi,
                    b,
                );
                check_weighted_one::<T, f64>(
                    ctx,
                    &x,
                    &weights::<f64>(n, seed, specials),
                    lo,
                    hi,
                    b,
                );
            }
        }
    }
    each::<i32>(ctx, sizes, bins);
    each::<u32>(ctx, sizes, bins);
    each::<f32>(ctx, sizes, bins);
    each::<f64>(ctx, sizes, bins);
}

/// Sums an in-order float addition gets wrong: cancellation (`1.2e18 + 1 - 1.2e18`), a bin's tiny
/// weights beside another bin's huge ones, subnormal sums, an overflowing sum (inf), both
/// infinities (NaN), zero sums (+0); bad calls are typed errors.
pub fn check_histogram_weighted_exact(ctx: &Context) {
    let x = ctx.htod(&[0u32, 0, 0, 1, 1, 2, 2, 3, 3, 3, 4, 4]).unwrap();
    let w = [
        1.2e18f32,
        1.0,
        -1.2e18, // bin 0: 1 (within 2^69 of the bin's largest)
        1e-30,
        3e-30, // bin 1: 4e-30, beside bin 0's 1e30
        f32::MAX,
        f32::MAX, // bin 2: past f32::MAX: inf
        f32::INFINITY,
        f32::NEG_INFINITY,
        1.0, // bin 3: NaN
        1e-45,
        -1e-45, // bin 4: 0
    ];
    let dw = ctx.htod(&w).unwrap();
    let mut sums = ctx.alloc_zeros::<f32>(5).unwrap();
    ctx.histogram_even_weighted(&x, &dw, &mut sums, 0, 5)
        .unwrap();
    let got = ctx.dtoh(&sums).unwrap();
    assert_eq!(got[0], 1.0, "{got:?}");
    assert_eq!(
        got[1],
        (1e-30f32 as f64 + 3e-30f32 as f64) as f32,
        "{got:?}"
    );
    assert_eq!(got[2], f32::INFINITY, "{got:?}");
    assert_eq!(got[3].to_bits(), 0x7fff_ffff, "{got:?}");
    assert_eq!(got[4].to_bits(), 0, "{got:?}");
    // f64: subnormal weights sum exactly; 2^1000 beside 2^-1000 in another bin.
    let x = ctx.htod(&[0i64, 0, 1, 2, 2]).unwrap();
    let tiny = f64::from_bits(1);
    let w = ctx
        .htod(&[tiny, tiny * 3.0, 2f64.powi(1000), 2f64.powi(-1000), 1.0])
        .unwrap();
    let mut sums = ctx.alloc_zeros::<f64>(3).unwrap();
    ctx.histogram_even_weighted(&x, &w, &mut sums, 0, 3)
        .unwrap();
    assert_eq!(
        ctx.dtoh(&sums).unwrap(),
        [tiny * 4.0, 2f64.powi(1000), 1.0 + 2f64.powi(-1000)]
    );
    // Bad calls.
    let w1 = ctx.htod(&[1.0f32]).unwrap();
    let x2 = ctx.htod(&[1u32, 2]).unwrap();
    let mut s2 = ctx.alloc_zeros::<f32>(2).unwrap();
    let e = ctx
        .histogram_even_weighted(&x2, &w1, &mut s2, 0, 3)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                expected: 2,
                got: 1,
                ..
            }
        ),
        "{e}"
    );
    let e = ctx
        .histogram_even_weighted(&x2, &w1, &mut s2, 3, 3)
        .unwrap_err();
    assert!(
        matches!(e, Error::BadBins { .. } | Error::LengthMismatch { .. }),
        "{e}"
    );
    let edges = ctx.htod(&[0u32, 1]).unwrap();
    let w2 = ctx.htod(&[1.0f32, 2.0]).unwrap();
    let e = ctx
        .histogram_edges_weighted(&x2, &w2, &edges, &mut s2)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                expected: 3,
                got: 2,
                ..
            }
        ),
        "{e}"
    );
}
