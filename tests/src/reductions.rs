//! Every operator x type of the production reduction against independent CPU references.

use gpu_reduce::{Context, DeviceElement, Reduction};
use gpu_reduce_tools::cpu;
use rand::{Rng, SeedableRng, rngs::SmallRng};

/// What the reference needs per type.
pub trait TestElem: DeviceElement + PartialEq {
    const IS_FLOAT: bool;
    const EPS: f64;
    fn to_f64(self) -> f64;
    /// Random data typical of the type (full range for integers, [-1, 1) for floats).
    fn random(rng: &mut SmallRng) -> Self;
    /// Values near 1, so long products neither overflow nor vanish.
    fn near_one(rng: &mut SmallRng) -> Self;
    fn wrapping_sum(xs: &[Self]) -> Self;
    fn wrapping_product(xs: &[Self]) -> Self;
    fn bits(self) -> u64;
    fn nan() -> Option<Self>;
    fn total_lt(a: Self, b: Self) -> bool;
    fn bitwise(xs: &[Self], op: Reduction) -> Option<Self>;
    /// `x` as this type (floats only: infinities, denormals).
    fn from_f64(x: f64) -> Option<Self>;
    /// The smallest positive normal value (floats; 0 for integers).
    const MIN_POSITIVE: f64;
}

macro_rules! int_elem {
    ($t:ty) => {
        impl TestElem for $t {
            const IS_FLOAT: bool = false;
            const EPS: f64 = 0.0;
            const MIN_POSITIVE: f64 = 0.0;
            fn from_f64(_: f64) -> Option<Self> {
                None
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn random(rng: &mut SmallRng) -> Self {
                rng.random()
            }
            fn near_one(rng: &mut SmallRng) -> Self {
                rng.random_range(1..=3)
            }
            fn wrapping_sum(xs: &[Self]) -> Self {
                xs.iter().fold(0, |a, &x| a.wrapping_add(x))
            }
            fn wrapping_product(xs: &[Self]) -> Self {
                xs.iter().fold(1, |a, &x| a.wrapping_mul(x))
            }
            fn bits(self) -> u64 {
                self as u64
            }
            fn nan() -> Option<Self> {
                None
            }
            fn total_lt(a: Self, b: Self) -> bool {
                a < b
            }
            fn bitwise(xs: &[Self], op: Reduction) -> Option<Self> {
                Some(match op {
                    Reduction::And => xs.iter().fold(!0, |a, &x| a & x),
                    Reduction::Or => xs.iter().fold(0, |a, &x| a | x),
                    Reduction::Xor => xs.iter().fold(0, |a, &x| a ^ x),
                    _ => return None,
                })
            }
        }
    };
}
macro_rules! float_elem {
    ($t:ty) => {
        impl TestElem for $t {
            const IS_FLOAT: bool = true;
            const EPS: f64 = <$t>::EPSILON as f64;
            const MIN_POSITIVE: f64 = <$t>::MIN_POSITIVE as f64;
            fn from_f64(x: f64) -> Option<Self> {
                Some(x as $t)
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn random(rng: &mut SmallRng) -> Self {
                rng.random_range(-1.0..1.0)
            }
            fn near_one(rng: &mut SmallRng) -> Self {
                rng.random_range(0.999..1.001)
            }
            fn wrapping_sum(xs: &[Self]) -> Self {
                xs.iter().sum()
            }
            fn wrapping_product(xs: &[Self]) -> Self {
                xs.iter().product()
            }
            fn bits(self) -> u64 {
                self.to_bits() as u64
            }
            fn nan() -> Option<Self> {
                Some(<$t>::NAN)
            }
            fn total_lt(a: Self, b: Self) -> bool {
                a.total_cmp(&b).is_lt()
            }
            fn bitwise(_: &[Self], _: Reduction) -> Option<Self> {
                None
            }
        }
    };
}
int_elem!(i32);
int_elem!(u32);
int_elem!(i64);
int_elem!(u64);
float_elem!(f32);
float_elem!(f64);

fn ref_min<T: TestElem>(xs: &[T], max: bool) -> Option<(usize, T)> {
    if let Some(i) = xs.iter().position(|x| x.to_f64().is_nan()) {
        return Some((i, xs[i]));
    }
    let mut best: Option<(usize, T)> = None;
    for (i, &x) in xs.iter().enumerate() {
        let better = match best {
            None => true,
            Some((_, b)) => {
                if max {
                    T::total_lt(b, x)
                } else {
                    T::total_lt(x, b)
                }
            }
        };
        if better {
            best = Some((i, x));
        }
    }
    best
}

/// Check every operator of `T` on `data` (any length, NaN/inf allowed for floats).
pub fn check_all_ops<T: TestElem>(ctx: &Context, data: &[T], what: &str) {
    check_all_ops_at(ctx, data, 0, what)
}

/// [`check_all_ops`] on a view that starts `offset` elements into its buffer (misaligned for
/// vector loads unless `offset * size` is a multiple of 16); the elements before it are junk.
pub fn check_all_ops_at<T: TestElem>(ctx: &Context, data: &[T], offset: usize, what: &str) {
    let mut padded = vec![T::random(&mut SmallRng::seed_from_u64(offset as u64)); offset];
    padded.extend_from_slice(data);
    let whole = ctx.htod(&padded).unwrap();
    let buf = whole.view(offset..).unwrap();
    let n = data.len();
    let tag = |op: &str| format!("{}/{op}/n={n}/{what}", T::DTYPE);
    let has_special = T::IS_FLOAT && data.iter().any(|x| !x.to_f64().is_finite());
    // Sum
    let got = ctx.reduce(buf, Reduction::Sum).unwrap();
    if T::IS_FLOAT {
        // Compensated: a plain f64 sum of f64 data errs as much as the device may.
        let (sums, abss) = crate::scans::f64_prefixes(data);
        let exact = sums.last().copied().unwrap_or(0.0);
        let sum_abs = abss.last().copied().unwrap_or(0.0);
        if has_special {
            // IEEE: NaN, or +inf with -inf, give NaN; else the infinity there is. (A
            // compensated reference turns a lone infinity into NaN: inf - inf.)
            let (nan, pos, neg) = data.iter().fold((false, false, false), |(a, p, q), x| {
                let v = x.to_f64();
                (
                    a || v.is_nan(),
                    p || v == f64::INFINITY,
                    q || v == f64::NEG_INFINITY,
                )
            });
            let want = if nan || (pos && neg) {
                f64::NAN
            } else if pos {
                f64::INFINITY
            } else {
                f64::NEG_INFINITY
            };
            let g = got.to_f64();
            assert!(
                (g.is_nan() && want.is_nan()) || g == want,
                "{}: {got:?} vs {want}",
                tag("sum")
            );
        } else {
            let bound = cpu::sum_bound(n as u64, std::mem::size_of::<T>() as u64, T::EPS, sum_abs);
            assert!(
                (got.to_f64() - exact).abs() <= bound,
                "{}: {got:?} vs {exact} (bound {bound})",
                tag("sum")
            );
        }
    } else {
        assert_eq!(got, T::wrapping_sum(data), "{}", tag("sum"));
    }
    // Min / Max / ArgMin / ArgMax: exact, bits included.
    for max in [false, true] {
        let op = if max { Reduction::Max } else { Reduction::Min };
        let got = ctx.reduce(buf, op).unwrap();
        let want = ref_min(data, max);
        match want {
            Some((_, w)) => {
                // A NaN result is the canonical NaN, whichever NaN the input held.
                let w = kernels::gpu::ShflValue::canonical(w);
                assert_eq!(got.bits(), w.bits(), "{}: {got:?} vs {w:?}", tag(op.name()))
            }
            None => {
                let id = if max { T::MAX_ID } else { T::MIN_ID };
                assert_eq!(got.bits(), id.bits(), "{}: empty", tag(op.name()));
            }
        }
        let arg = if max {
            ctx.argmax(buf).unwrap()
        } else {
            ctx.argmin(buf).unwrap()
        };
        assert_eq!(
            arg.map(|(i, v)| (i, v.bits())),
            want.map(|(i, v)| (i as u64, v.bits())),
            "{}",
            tag(if max { "argmax" } else { "argmin" })
        );
    }
    // Bitwise: integers exact; floats refuse with an error.
    for op in [Reduction::And, Reduction::Or, Reduction::Xor] {
        match T::bitwise(data, op) {
            Some(w) => assert_eq!(ctx.reduce(buf, op).unwrap(), w, "{}", tag(op.name())),
            None => assert!(ctx.reduce(buf, op).is_err(), "{}", tag(op.name())),
        }
    }
}

/// Products on values near one (integers wrap exactly; floats within (n-1)*eps relative: every
/// multiplication's rounding scales the whole product, whatever the tree).
pub fn check_product<T: TestElem>(ctx: &Context, n: usize, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let data: Vec<T> = (0..n).map(|_| T::near_one(&mut rng)).collect();
    let got = ctx
        .reduce(&ctx.htod(&data).unwrap(), Reduction::Product)
        .unwrap();
    if T::IS_FLOAT {
        let exact: f64 = data.iter().map(|x| x.to_f64()).product();
        let k = n.saturating_sub(1) as f64 * T::EPS;
        let rel = k / (1.0 - k);
        assert!(
            (got.to_f64() - exact).abs() <= rel * exact.abs(),
            "{} product n={n}: {got:?} vs {exact}",
            T::DTYPE
        );
    } else {
        assert_eq!(
            got,
            T::wrapping_product(&data),
            "{} product n={n}",
            T::DTYPE
        );
    }
}

/// Random data of `n` elements; floats get NaN/inf sprinkled in when `specials`.
pub fn data<T: TestElem>(n: usize, seed: u64, specials: bool) -> Vec<T> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut v: Vec<T> = (0..n).map(|_| T::random(&mut rng)).collect();
    if specials
        && n > 0
        && let Some(nan) = T::nan()
    {
        let i = rng.random_range(0..n);
        v[i] = nan;
    }
    v
}

/// Every type, every operator, at `sizes`, plus offsets into a larger buffer.
pub fn check_every_op_and_type(ctx: &Context, sizes: &[usize]) {
    fn one<T: TestElem>(ctx: &Context, sizes: &[usize]) {
        for (i, &n) in sizes.iter().enumerate() {
            check_all_ops::<T>(ctx, &data::<T>(n, i as u64, false), "random");
            check_product::<T>(ctx, n, 1000 + i as u64);
        }
        // Offsets: views starting at every element offset within a 16-byte vector.
        let n = *sizes.iter().max().unwrap_or(&0) + 7;
        let d = data::<T>(n, 77, false);
        let buf = ctx.htod(&d).unwrap();
        for off in 0..5usize.min(n) {
            for end in [n, n - 1, n.saturating_sub(3).max(off)] {
                let v = buf.view(off..end).unwrap();
                let want = ref_min(&d[off..end], false);
                assert_eq!(
                    ctx.argmin(v).unwrap().map(|(i, x)| (i, x.bits())),
                    want.map(|(i, x)| (i as u64, x.bits())),
                    "{} view {off}..{end}",
                    T::DTYPE
                );
                if !T::IS_FLOAT {
                    assert_eq!(
                        ctx.reduce(v, Reduction::Sum).unwrap(),
                        T::wrapping_sum(&d[off..end]),
                        "{} sum view {off}..{end}",
                        T::DTYPE
                    );
                }
            }
        }
    }
    one::<i32>(ctx, sizes);
    one::<u32>(ctx, sizes);
    one::<i64>(ctx, sizes);
    one::<u64>(ctx, sizes);
    one::<f32>(ctx, sizes);
    one::<f64>(ctx, sizes);
}

/// NaN and infinities in min/max/argmin/argmax and sums.
pub fn check_specials(ctx: &Context) {
    for (i, n) in [1usize, 2, 33, 1000, 4099].into_iter().enumerate() {
        check_all_ops::<f32>(ctx, &data::<f32>(n, 40 + i as u64, true), "nan");
        check_all_ops::<f64>(ctx, &data::<f64>(n, 50 + i as u64, true), "nan");
    }
    let inf = [1.0f32, f32::INFINITY, -2.0, f32::NEG_INFINITY, 3.0];
    let b = ctx.htod(&inf).unwrap();
    assert_eq!(ctx.reduce(&b, Reduction::Max).unwrap(), f32::INFINITY);
    assert_eq!(ctx.argmin(&b).unwrap(), Some((3, f32::NEG_INFINITY)));
    assert!(ctx.sum(&b).unwrap().is_nan(), "inf + -inf is NaN");
    let zeros = ctx.htod(&[0.0f32, -0.0, 0.0]).unwrap();
    assert_eq!(
        ctx.reduce(&zeros, Reduction::Min).unwrap().to_bits(),
        (-0.0f32).to_bits()
    );
    assert_eq!(ctx.argmin(&zeros).unwrap().map(|(i, _)| i), Some(1));
    // Empty input: identities, and None for arg reductions.
    let e = ctx.alloc_zeros::<f64>(0).unwrap();
    assert_eq!(ctx.sum(&e).unwrap(), 0.0);
    assert_eq!(ctx.reduce(&e, Reduction::Product).unwrap(), 1.0);
    assert_eq!(ctx.reduce(&e, Reduction::Min).unwrap(), f64::INFINITY);
    assert_eq!(ctx.argmax(&e).unwrap(), None);
    let e = ctx.alloc_zeros::<u32>(0).unwrap();
    assert_eq!(ctx.reduce(&e, Reduction::And).unwrap(), u32::MAX);
    assert_eq!(ctx.reduce(&e, Reduction::Max).unwrap(), 0);
}

/// Integer overflow wraps (documented).
pub fn check_wrapping(ctx: &Context) {
    let b = ctx.htod(&vec![i32::MAX; 4099]).unwrap();
    assert_eq!(ctx.sum(&b).unwrap(), i32::MAX.wrapping_mul(4099));
    let b = ctx.htod(&vec![u64::MAX; 1000]).unwrap();
    assert_eq!(ctx.sum(&b).unwrap(), u64::MAX.wrapping_mul(1000));
}

/// The compensated sum: within its (much tighter) bound where the plain sum is not exact.
pub fn check_compensated(ctx: &Context, n: usize) {
    let mut rng = SmallRng::seed_from_u64(9);
    // Ill-conditioned: large values that cancel, plus many small ones.
    let mut d: Vec<f32> = (0..n)
        .map(|_| rng.random_range(-1.0f32..1.0) * 1e-3)
        .collect();
    for i in (0..n).step_by(97) {
        d[i] = if i % 2 == 0 { 1e4 } else { -1e4 };
    }
    let buf = ctx.htod(&d).unwrap();
    let got = ctx.sum_compensated(&buf).unwrap() as f64;
    let (exact, sum_abs) = cpu::sum_f64(&d);
    let bound = cpu::compensated_f32_bound(n as u64, exact, sum_abs);
    assert!(
        (got - exact).abs() <= bound,
        "compensated n={n}: {got} vs {exact} (bound {bound})"
    );
    let plain = ctx.sum(&buf).unwrap() as f64;
    assert!(
        (got - exact).abs() <= (plain - exact).abs(),
        "compensated {got} worse than plain {plain} (exact {exact})"
    );
}

/// Same input, several physical grids and repeated runs: identical bits (the tiling and the
/// combining order do not depend on the grid).
pub fn check_deterministic(ctx: &Context, n: usize) {
    let d = data::<f32>(n, 5, false);
    let d64 = data::<f64>(n, 6, false);
    let a = ctx.htod(&d).unwrap();
    let a64 = ctx.htod(&d64).unwrap();
    let bits = |ctx: &Context| {
        (
            ctx.sum(&a).unwrap().to_bits(),
            ctx.sum_compensated(&a).unwrap().to_bits(),
            ctx.sum(&a64).unwrap().to_bits(),
            ctx.argmax(&a).unwrap(),
        )
    };
    let first = bits(ctx);
    for grid in [Some(1), Some(3), Some(64), Some(1000), None, None] {
        ctx.set_reduce_grid_limit(grid);
        assert_eq!(bits(ctx), first, "grid {grid:?}");
    }
    ctx.set_reduce_grid_limit(None);
    // The same values in another buffer at the same alignment (16 bytes in) give the same bits.
    let mut padded = vec![0.0f32; 4];
    padded.extend_from_slice(&d);
    let b = ctx.htod(&padded).unwrap();
    assert_eq!(ctx.sum(b.view(4..).unwrap()).unwrap().to_bits(), first.0);
}

/// Inputs of one to three tiles, at every alignment: the one-block fast paths (one tile; two
/// tiles with both loaded at once; one block running every tile) give the bits of the general
/// path (one block per tile, ticket, last block combines).
pub fn check_small_inputs_fast_paths(ctx: &Context) {
    let d = data::<f32>(7000, 11, false);
    let d64 = data::<f64>(3600, 12, false);
    let a = ctx.htod(&d).unwrap();
    let a64 = ctx.htod(&d64).unwrap();
    // f32 tiles hold 2048 elements, f64 tiles 1024.
    let sizes32 = [1, 5, 2047, 2048, 2049, 3000, 4093, 4096, 4097, 6000];
    let sizes64 = [1, 1023, 1024, 1025, 2040, 2048, 2049, 3000];
    for off in 0..4usize {
        for (n32, n64) in sizes32
            .iter()
            .zip(sizes64.iter().chain(std::iter::repeat(&1)))
        {
            let v = a.view(off..off + n32).unwrap();
            let v64 = a64.view(off..off + n64).unwrap();
            let bits = |ctx: &Context| {
                (
                    ctx.sum(v).unwrap().to_bits(),
                    ctx.sum_compensated(v).unwrap().to_bits(),
                    ctx.sum(v64).unwrap().to_bits(),
                    ctx.reduce(v, gpu_reduce::Reduction::Product)
                        .unwrap()
                        .to_bits(),
                    ctx.argmax(v).unwrap(),
                    ctx.argmin(v64).unwrap(),
                )
            };
            let auto = bits(ctx);
            for grid in [Some(1), Some(2), Some(3)] {
                ctx.set_reduce_grid_limit(grid);
                assert_eq!(bits(ctx), auto, "n {n32}/{n64} offset {off} grid {grid:?}");
            }
            ctx.set_reduce_grid_limit(None);
            let want: f64 = d[off..off + n32].iter().map(|&x| x as f64).sum();
            assert!(
                (f32::from_bits(auto.0) as f64 - want).abs() < 1e-3,
                "n {n32}: {} vs {want}",
                f32::from_bits(auto.0)
            );
        }
    }
}
