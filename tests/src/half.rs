//! f16 and bf16 reductions (sum in f32, min, max, argmin, argmax) against CPU references built
//! with the `half` crate. Bodies shared by the simulator tests (CI) and the GPU tests.

use gpu_reduce::{Context, DeviceElement, Error, Reduction};
use half::{bf16, f16};
use rand::{Rng, SeedableRng, rngs::SmallRng};

/// What the tests need of a 16-bit float.
pub trait Half: DeviceElement<Sum = f32> + PartialEq {
    fn from_f32(x: f32) -> Self;
    fn to_f32(self) -> f32;
    fn to_bits(self) -> u16;
    fn from_bits(b: u16) -> Self;
    /// The largest finite value.
    const MAX: Self;
    /// Integers in [-LIM, LIM] are exact in the type.
    const LIM: i32;
}
macro_rules! half_impl {
    ($t:ty, $lim:expr) => {
        impl Half for $t {
            fn from_f32(x: f32) -> Self {
                <$t>::from_f32(x)
            }
            fn to_f32(self) -> f32 {
                <$t>::to_f32(self)
            }
            fn to_bits(self) -> u16 {
                <$t>::to_bits(self)
            }
            fn from_bits(b: u16) -> Self {
                <$t>::from_bits(b)
            }
            const MAX: Self = <$t>::MAX;
            const LIM: i32 = $lim;
        }
    };
}
half_impl!(f16, 2048);
half_impl!(bf16, 256);

/// Sizes around the 2-byte types' tile (256 threads x 16 elements = 4096) and vector (8).
pub const SIZES: [usize; 14] = [
    0, 1, 7, 8, 9, 15, 4095, 4096, 4097, 8191, 8192, 8193, 12_289, 70_001,
];

fn is_nan<T: Half>(x: T) -> bool {
    x.to_f32().is_nan()
}

/// `a < b` with `-0.0 < +0.0` (numbers only).
fn lt<T: Half>(a: T, b: T) -> bool {
    let (x, y) = (a.to_f32(), b.to_f32());
    x < y || (x == 0.0 && y == 0.0 && x.is_sign_negative() && !y.is_sign_negative())
}

/// CPU argmin (`min = true`) or argmax: first NaN, else the first best value.
fn arg_ref<T: Half>(x: &[T], min: bool) -> Option<(u64, T)> {
    if let Some(i) = x.iter().position(|&v| is_nan(v)) {
        return Some((i as u64, x[i]));
    }
    let mut best: Option<(u64, T)> = None;
    for (i, &v) in x.iter().enumerate() {
        let better = match best {
            None => true,
            Some((_, b)) => {
                if min {
                    lt(v, b)
                } else {
                    lt(b, v)
                }
            }
        };
        if better {
            best = Some((i as u64, v));
        }
    }
    best
}

fn same<T: Half>(a: T, b: T) -> bool {
    (is_nan(a) && is_nan(b)) || a.to_bits() == b.to_bits()
}

/// Random small integers (every partial sum exact in f32) with specials sprinkled in by `mix`.
fn data<T: Half>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| T::from_f32(rng.random_range(-T::LIM..=T::LIM) as f32))
        .collect()
}

/// Sum (exact: integer data), min, max, argmin, argmax at every size of [`SIZES`] and every
/// alignment offset 0..8 (views that start mid-vector).
pub fn check_basic<T: Half>(ctx: &Context) {
    for (k, &n) in SIZES.iter().enumerate() {
        let x = data::<T>(n + 8, 10 + k as u64);
        let buf = ctx.htod(&x).unwrap();
        for off in 0..8 {
            let xs = &x[off..off + n];
            let v = buf.view(off..off + n).unwrap();
            let want: f64 = xs.iter().map(|&e| e.to_f32() as f64).sum();
            assert_eq!(
                ctx.sum(v).unwrap() as f64,
                want,
                "{} n {n} off {off}",
                T::DTYPE
            );
            let inf = T::from_f32(f32::INFINITY);
            let min = xs.iter().fold(inf, |a, &b| if lt(b, a) { b } else { a });
            let max = xs.iter().fold(
                T::from_f32(f32::NEG_INFINITY),
                |a, &b| {
                    if lt(a, b) { b } else { a }
                },
            );
            let got = ctx.reduce(v, Reduction::Min).unwrap();
            assert!(same(got, min), "{} min n {n} off {off}", T::DTYPE);
            let got = ctx.reduce(v, Reduction::Max).unwrap();
            assert!(same(got, max), "{} max n {n} off {off}", T::DTYPE);
            let (a, b) = (ctx.argmin(v).unwrap(), arg_ref(xs, true));
            assert_eq!(
                a.map(|p| p.0),
                b.map(|p| p.0),
                "{} argmin n {n} off {off}",
                T::DTYPE
            );
            let (a, b) = (ctx.argmax(v).unwrap(), arg_ref(xs, false));
            assert_eq!(
                a.map(|p| p.0),
                b.map(|p| p.0),
                "{} argmax n {n} off {off}",
                T::DTYPE
            );
        }
    }
}

/// Non-integer data: the f32 sum within the bound of an f32 tree sum of exact values.
pub fn check_sum_accuracy<T: Half>(ctx: &Context, n: usize) {
    let mut rng = SmallRng::seed_from_u64(7);
    let x: Vec<T> = (0..n)
        .map(|_| T::from_f32(rng.random_range(-1.0f32..1.0)))
        .collect();
    let b = ctx.htod(&x).unwrap();
    let exact: f64 = x.iter().map(|&e| e.to_f32() as f64).sum();
    let abs: f64 = x.iter().map(|&e| (e.to_f32() as f64).abs()).sum();
    let got = ctx.sum(&b).unwrap() as f64;
    // Tree depth well under 64 levels of f32 rounding.
    assert!(
        (got - exact).abs() <= 64.0 * abs * f32::EPSILON as f64 / 2.0,
        "{}: {got} vs {exact}",
        T::DTYPE
    );
}

/// NaN, ±inf, subnormals, -0.0, and sums past the 16-bit range.
pub fn check_specials<T: Half>(ctx: &Context) {
    let h = T::from_f32;
    let nan = T::from_bits(0x7fff); // a NaN in both formats
    assert!(is_nan(nan));
    let (inf, ninf) = (h(f32::INFINITY), h(f32::NEG_INFINITY));
    for n in [5usize, 4097, 20_000] {
        for pos in [0, n / 2, n - 1] {
            let mut x = data::<T>(n, 3);
            x[pos] = nan;
            let b = ctx.htod(&x).unwrap();
            assert!(
                ctx.sum(&b).unwrap().is_nan(),
                "NaN propagates through the sum"
            );
            assert!(is_nan(ctx.reduce(&b, Reduction::Min).unwrap()));
            assert!(is_nan(ctx.reduce(&b, Reduction::Max).unwrap()));
            assert_eq!(ctx.argmin(&b).unwrap().unwrap().0, pos as u64);
            assert_eq!(ctx.argmax(&b).unwrap().unwrap().0, pos as u64);
        }
        let mut x = data::<T>(n, 4);
        x[1] = inf;
        let b = ctx.htod(&x).unwrap();
        assert_eq!(ctx.sum(&b).unwrap(), f32::INFINITY);
        assert_eq!(ctx.argmax(&b).unwrap().unwrap().0, 1);
        x[n - 2] = ninf;
        let b = ctx.htod(&x).unwrap();
        assert!(ctx.sum(&b).unwrap().is_nan(), "+inf + -inf is NaN");
        assert_eq!(ctx.argmin(&b).unwrap().unwrap().0, n as u64 - 2);
    }
    // -0.0 < +0.0 for min and max, whichever comes first.
    for first_neg in [false, true] {
        let mut x = vec![h(0.0); 10_000];
        x[if first_neg { 17 } else { 9_000 }] = h(-0.0);
        let b = ctx.htod(&x).unwrap();
        assert_eq!(ctx.reduce(&b, Reduction::Min).unwrap().to_bits(), 0x8000);
        assert_eq!(ctx.reduce(&b, Reduction::Max).unwrap().to_bits(), 0);
        let neg = x.iter().position(|v| v.to_bits() == 0x8000).unwrap() as u64;
        assert_eq!(ctx.argmin(&b).unwrap().unwrap().0, neg);
        assert_eq!(ctx.argmax(&b).unwrap().unwrap().0, 0);
        assert_eq!(ctx.sum(&b).unwrap(), 0.0);
    }
    // Subnormals: exact in f32, ordered below the normals.
    let subs: Vec<T> = (1..=1000u16).map(|b| T::from_bits(b % 0x7f + 1)).collect();
    let b = ctx.htod(&subs).unwrap();
    let want: f64 = subs.iter().map(|&e| e.to_f32() as f64).sum();
    assert_eq!(ctx.sum(&b).unwrap() as f64, want);
    assert_eq!(ctx.reduce(&b, Reduction::Min).unwrap().to_bits(), 1);
    assert_eq!(ctx.argmax(&b).unwrap().unwrap(), (125, T::from_bits(0x7f)));
    // Past the 16-bit range: the f32 sum, not inf.
    let x = vec![T::MAX; 3000];
    let b = ctx.htod(&x).unwrap();
    let want = T::MAX.to_f32() as f64 * 3000.0;
    let got = ctx.sum(&b).unwrap();
    if want <= f32::MAX as f64 {
        // f16: 65504 * 3000 (exact in f32).
        assert_eq!(got as f64, want, "{}", T::DTYPE);
    } else {
        // bf16 shares f32's exponent range: past f32::MAX the f32 sum is inf.
        assert_eq!(got, f32::INFINITY, "{}", T::DTYPE);
        let x = [T::MAX, h(1e36)];
        let got = ctx.sum(&ctx.htod(&x).unwrap()).unwrap();
        assert!(
            got.is_finite() && got > T::MAX.to_f32(),
            "bf16 past MAX: {got}"
        );
    }
    // Empty input.
    let e = ctx.alloc_zeros::<T>(0).unwrap();
    assert_eq!(ctx.sum(&e).unwrap(), 0.0);
    assert_eq!(ctx.argmin(&e).unwrap(), None);
    assert_eq!(ctx.reduce(&e, Reduction::Min).unwrap(), inf);
}

/// The same bits whatever the physical grid.
pub fn check_deterministic<T: Half>(ctx: &Context, n: usize) {
    let mut rng = SmallRng::seed_from_u64(11);
    let x: Vec<T> = (0..n)
        .map(|_| T::from_f32(rng.random_range(-100.0f32..100.0)))
        .collect();
    let b = ctx.htod(&x).unwrap();
    let first = ctx.sum(b.view(3..).unwrap()).unwrap().to_bits();
    for grid in [Some(1), Some(3), Some(7), None] {
        ctx.set_reduce_grid_limit(grid);
        assert_eq!(ctx.sum(b.view(3..).unwrap()).unwrap().to_bits(), first);
    }
    ctx.set_reduce_grid_limit(None);
}

/// Transfers, and the operators a 16-bit type does not have.
pub fn check_api<T: Half>(ctx: &Context) {
    let mut z = ctx.alloc_zeros::<T>(33).unwrap();
    assert!(ctx.dtoh(&z).unwrap().iter().all(|v| v.to_bits() == 0));
    let x = data::<T>(33, 5);
    ctx.htod_into(&x, &mut z).unwrap();
    let back = ctx.dtoh(&z).unwrap();
    assert!(back.iter().zip(&x).all(|(a, b)| a.to_bits() == b.to_bits()));
    for op in [Reduction::Sum, Reduction::Product, Reduction::And] {
        assert!(matches!(ctx.reduce(&z, op), Err(Error::Unsupported { .. })));
    }
}
