//! Reductions with a map applied on load, never materialised: sum of squares, the L2 norm
//! without overflow, mean and variance in one pass, min and max together. Each is a
//! [`ReduceOp`] whose `lift` is the map, so it runs in the one-launch reduction (one read of
//! the input, deterministic, the same bits on every GPU and the simulator). A user's own map is
//! written the same way (`examples/minmax`).

use crate::gpu::ShflValue;
use crate::ops::{Num, ReduceOp};

/// Sum of squares. For f32 the accumulator is f64: the square of an f32 is exact in f64 (a
/// 48-bit product) and cannot overflow (at most 1.2e77), so `sqrt` of the result is the L2
/// norm of any f32 data, with the sum rounded like [`SumCompensated`](crate::ops::SumCompensated).
/// For f64 it is f64 (overflows to `inf` past |x| ~ 1e154: use [`ScaledSsq`] for the norm).
#[derive(Clone, Copy, Debug, Default)]
pub struct SumSquares;

impl ReduceOp<f32> for SumSquares {
    type Acc = f64;
    #[inline(always)]
    fn identity() -> f64 {
        0.0
    }
    #[inline(always)]
    fn lift(x: f32, _: u64) -> f64 {
        let x = x as f64;
        x * x
    }
    #[inline(always)]
    fn combine(a: f64, b: f64) -> f64 {
        a + b
    }
}

impl ReduceOp<f64> for SumSquares {
    type Acc = f64;
    #[inline(always)]
    fn identity() -> f64 {
        0.0
    }
    #[inline(always)]
    fn lift(x: f64, _: u64) -> f64 {
        x * x
    }
    #[inline(always)]
    fn combine(a: f64, b: f64) -> f64 {
        a + b
    }
}

/// A sum of squares kept as `scale² · ssq` (LAPACK's `dnrm2` representation): no square of a
/// large element is ever formed, so the norm `scale · sqrt(ssq)` of f64 data does not
/// overflow unless the norm itself does. `scale` is the largest |x| seen; an all-zero (or
/// empty) input is `{0, 0}`; a NaN anywhere gives NaN.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct ScaledSsq {
    /// The largest magnitude combined so far.
    pub scale: f64,
    /// Sum of (|x| / scale)².
    pub ssq: f64,
}

impl ShflValue for ScaledSsq {
    const WORDS: usize = 4;
    #[inline(always)]
    fn to_words(self) -> [u32; 4] {
        let (a, b) = (self.scale.to_words(), self.ssq.to_words());
        [a[0], a[1], b[0], b[1]]
    }
    #[inline(always)]
    fn from_words(w: [u32; 4]) -> Self {
        Self {
            scale: f64::from_words([w[0], w[1], 0, 0]),
            ssq: f64::from_words([w[2], w[3], 0, 0]),
        }
    }
    #[inline(always)]
    fn canonical(self) -> Self {
        Self {
            scale: self.scale.canonical(),
            ssq: self.ssq.canonical(),
        }
    }
}

impl ReduceOp<f64> for ScaledSsq {
    type Acc = ScaledSsq;
    #[inline(always)]
    fn identity() -> ScaledSsq {
        ScaledSsq {
            scale: 0.0,
            ssq: 0.0,
        }
    }
    #[inline(always)]
    fn lift(x: f64, _: u64) -> ScaledSsq {
        // |x| by clearing the sign bit (no libm in core).
        let a = f64::from_bits(x.to_bits() & !(1u64 << 63));
        ScaledSsq {
            scale: a,
            ssq: if a == 0.0 { 0.0 } else { 1.0 },
        }
    }
    #[inline(always)]
    fn combine(a: ScaledSsq, b: ScaledSsq) -> ScaledSsq {
        // The larger scale stays (a NaN compares false and stays where it is: the ratio below
        // is then NaN, and so is the result).
        let (big, small) = if a.scale < b.scale { (b, a) } else { (a, b) };
        if small.ssq == 0.0 {
            return big;
        }
        // Equal scales (inf included) have ratio 1, not inf/inf.
        let r = if small.scale == big.scale {
            1.0
        } else {
            small.scale / big.scale
        };
        ScaledSsq {
            scale: big.scale,
            ssq: big.ssq + small.ssq * r * r,
        }
    }
}

/// Count, mean and sum of squared deviations (`m2`; variance = m2 / count) in one pass,
/// merged with Chan, Golub and LeVeque's pairwise update: `n = na + nb`, `δ = mean_b - mean_a`,
/// `mean = mean_a + δ·nb/n`, `m2 = m2_a + m2_b + δ²·na·nb/n`. The reduction's fixed tree of
/// merges keeps the error of `m2` at about `log2(n)·ε·m2` (plus `n·ε²` terms), not the
/// `n·ε·(sum x²)` of the one-pass textbook formula (Chan et al. 1983; Higham ch. 1.9). The
/// library's f32 mean and variance kernel (`moments.rs`) produces this accumulator but adds
/// shifted f64 sums instead of merging (faster; its own bound).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct MeanVarAcc {
    /// Elements combined (at most 2^32 - 1).
    pub count: u32,
    /// Their mean.
    pub mean: f32,
    /// Sum of squared deviations from the mean.
    pub m2: f32,
}

impl ShflValue for MeanVarAcc {
    const WORDS: usize = 3;
    #[inline(always)]
    fn to_words(self) -> [u32; 4] {
        [self.count, self.mean.to_bits(), self.m2.to_bits(), 0]
    }
    #[inline(always)]
    fn from_words(w: [u32; 4]) -> Self {
        Self {
            count: w[0],
            mean: f32::from_bits(w[1]),
            m2: f32::from_bits(w[2]),
        }
    }
    #[inline(always)]
    fn canonical(self) -> Self {
        Self {
            mean: self.mean.canonical(),
            m2: self.m2.canonical(),
            ..self
        }
    }
}

/// Mean and variance of f32 data in one pass ([`MeanVarAcc`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct MeanVar;

impl ReduceOp<f32> for MeanVar {
    type Acc = MeanVarAcc;
    #[inline(always)]
    fn identity() -> MeanVarAcc {
        MeanVarAcc {
            count: 0,
            mean: 0.0,
            m2: 0.0,
        }
    }
    #[inline(always)]
    fn lift(x: f32, _: u64) -> MeanVarAcc {
        MeanVarAcc {
            count: 1,
            mean: x,
            m2: 0.0,
        }
    }
    #[inline(always)]
    fn combine(a: MeanVarAcc, b: MeanVarAcc) -> MeanVarAcc {
        if a.count == 0 {
            return b;
        }
        if b.count == 0 {
            return a;
        }
        let n = a.count + b.count;
        let delta = b.mean - a.mean;
        // Equal counts (every merge of the pairs and quadruples a thread folds from a vector
        // load, and most of the tree) skip the division: nb / (2·nb) is exactly 0.5 in f32, so
        // the bits are those of the division. Without this the f32 variance was compute-bound,
        // the divisions in the per-element merges costing more than the memory (CHANGELOG.md,
        // issue 15).
        let wb = if a.count == b.count {
            0.5
        } else {
            b.count as f32 / n as f32
        };
        MeanVarAcc {
            count: n,
            mean: a.mean + delta * wb,
            m2: a.m2 + b.m2 + delta * delta * (a.count as f32) * wb,
        }
    }
}

/// The smallest and the largest element together.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct MinMaxAcc<T> {
    /// The minimum (`Min`'s semantics: NaN wins, `-0.0 < +0.0`).
    pub min: T,
    /// The maximum (`Max`'s semantics).
    pub max: T,
}

impl<T: ShflValue> ShflValue for MinMaxAcc<T> {
    const WORDS: usize = 2 * T::WORDS;
    #[inline(always)]
    fn to_words(self) -> [u32; 4] {
        let (a, b) = (self.min.to_words(), self.max.to_words());
        if T::WORDS == 1 {
            [a[0], b[0], 0, 0]
        } else {
            [a[0], a[1], b[0], b[1]]
        }
    }
    #[inline(always)]
    fn from_words(w: [u32; 4]) -> Self {
        if T::WORDS == 1 {
            Self {
                min: T::from_words([w[0], 0, 0, 0]),
                max: T::from_words([w[1], 0, 0, 0]),
            }
        } else {
            Self {
                min: T::from_words([w[0], w[1], 0, 0]),
                max: T::from_words([w[2], w[3], 0, 0]),
            }
        }
    }
    /// As `reduce` with `Min` and `Max`: a NaN result is the canonical NaN.
    #[inline(always)]
    fn canonical(self) -> Self {
        Self {
            min: self.min.canonical(),
            max: self.max.canonical(),
        }
    }
}

/// Min and max in one pass (the empty input gives `{MIN identity, MAX identity}`).
#[derive(Clone, Copy, Debug, Default)]
pub struct MinMax;

impl<T: Num> ReduceOp<T> for MinMax {
    type Acc = MinMaxAcc<T>;
    #[inline(always)]
    fn identity() -> MinMaxAcc<T> {
        MinMaxAcc {
            min: T::MIN_ID,
            max: T::MAX_ID,
        }
    }
    #[inline(always)]
    fn lift(x: T, _: u64) -> MinMaxAcc<T> {
        MinMaxAcc { min: x, max: x }
    }
    #[inline(always)]
    fn combine(a: MinMaxAcc<T>, b: MinMaxAcc<T>) -> MinMaxAcc<T> {
        MinMaxAcc {
            min: a.min.min2(b.min),
            max: a.max.max2(b.max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold<T: crate::ops::Element, O: ReduceOp<T>>(xs: &[T]) -> O::Acc {
        // A pairwise tree, like the kernels' (the order differs; the values agree).
        fn tree<T: crate::ops::Element, O: ReduceOp<T>>(xs: &[T], base: u64) -> O::Acc {
            match xs.len() {
                0 => O::identity(),
                1 => O::lift(xs[0], base),
                n => {
                    let h = n / 2;
                    O::combine(
                        tree::<T, O>(&xs[..h], base),
                        tree::<T, O>(&xs[h..], base + h as u64),
                    )
                }
            }
        }
        tree::<T, O>(xs, 0)
    }

    #[test]
    fn mean_var_matches_two_pass() {
        let xs: std::vec::Vec<f32> = (0..10_000)
            .map(|i| 1e4 + ((i * 7919) % 1000) as f32 * 1e-3)
            .collect();
        let a = fold::<f32, MeanVar>(&xs);
        let n = xs.len() as f64;
        let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n;
        let m2: f64 = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum();
        assert_eq!(a.count, 10_000);
        assert!((a.mean as f64 - mean).abs() <= 1e-6 * mean.abs());
        assert!((a.m2 as f64 - m2).abs() <= 1e-4 * m2, "{} vs {m2}", a.m2);
        // Merging with the identity changes nothing.
        assert_eq!(
            MeanVar::combine(a, <MeanVar as ReduceOp<f32>>::identity()),
            a
        );
    }

    #[test]
    fn scaled_ssq_does_not_overflow() {
        let xs = [1e300f64, -1e300, 3e299, 0.0];
        let a = fold::<f64, ScaledSsq>(&xs);
        let norm = a.scale * a.ssq.sqrt();
        let want = 1e300 * (2.0f64 + 0.09).sqrt();
        assert!((norm - want).abs() <= 1e-15 * want, "{norm} vs {want}");
        let z = fold::<f64, ScaledSsq>(&[0.0, -0.0]);
        assert_eq!((z.scale, z.ssq), (0.0, 0.0));
        assert!(fold::<f64, ScaledSsq>(&[1.0, f64::NAN, 2.0]).ssq.is_nan());
        let inf = fold::<f64, ScaledSsq>(&[f64::INFINITY, 1.0, f64::INFINITY]);
        assert_eq!(inf.scale * inf.ssq.sqrt(), f64::INFINITY);
    }

    #[test]
    fn min_max_and_squares() {
        let a = fold::<i32, MinMax>(&[3, -7, 5]);
        assert_eq!((a.min, a.max), (-7, 5));
        let f = fold::<f64, MinMax>(&[0.0, -0.0, 2.5]);
        assert_eq!((f.min.to_bits(), f.max), ((-0.0f64).to_bits(), 2.5));
        assert_eq!(fold::<f32, SumSquares>(&[3.0, 4.0]), 25.0);
        assert_eq!(
            fold::<f32, SumSquares>(&[f32::MAX, f32::MAX]),
            2.0 * (f32::MAX as f64).powi(2)
        );
        let w = MinMaxAcc {
            min: 1.5f64,
            max: 9.0,
        };
        assert_eq!(MinMaxAcc::<f64>::from_words(w.to_words()), w);
        let v = MinMaxAcc { min: -3i32, max: 7 };
        assert_eq!(MinMaxAcc::<i32>::from_words(v.to_words()), v);
    }
}
