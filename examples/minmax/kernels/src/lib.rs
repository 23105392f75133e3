//! A user's own operators over f32, turned into GPU kernels by the library's macros:
//!
//! - [`MinMax`]: the smallest and the largest value with the index of each (one pass, one
//!   launch), a reduction whose accumulator ([`MinMaxAcc`]) is not the element type;
//! - [`OnlineSoftmax`]: the online-softmax combine (running max `m`, sum of `exp(x - m)`), the
//!   normaliser of a softmax in one pass with no overflow;
//! - [`MaxAbs`]: the running maximum of `|x|`, as a scan;
//! - [`CheckedSum`]: a sum that asserts its input holds no NaN (what an operator's failing
//!   check does: the kernel traps).
//!
//! Built to PTX by `ptx-builder` from the host crate's build script (each kernel is a PTX
//! entry); on the host the same source runs on the library's CPU simulator.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

use kernels::gpu::ShflValue;
use kernels::ops::{Num, ReduceOp};

/// "No element": the index of an empty [`MinMaxAcc`].
pub const NO_INDEX: u32 = u32::MAX;

/// The accumulator of [`MinMax`]: 16 bytes, the most an accumulator may hold (four 32-bit
/// words through each shuffle), so the indices are 32-bit: inputs of up to `u32::MAX`
/// elements (the host wrapper checks). `argmin == NO_INDEX` means "no element" (the identity).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct MinMaxAcc {
    pub min: f32,
    pub max: f32,
    pub argmin: u32,
    pub argmax: u32,
}

/// How a warp shuffle moves a [`MinMaxAcc`]: as its four words.
impl ShflValue for MinMaxAcc {
    const WORDS: usize = 4;
    #[inline(always)]
    fn to_words(self) -> [u32; 4] {
        [
            self.min.to_bits(),
            self.max.to_bits(),
            self.argmin,
            self.argmax,
        ]
    }
    #[inline(always)]
    fn from_words(w: [u32; 4]) -> Self {
        MinMaxAcc {
            min: f32::from_bits(w[0]),
            max: f32::from_bits(w[1]),
            argmin: w[2],
            argmax: w[3],
        }
    }
}

/// Min and max of f32 with the index of their first occurrence, in one pass. The library's
/// semantics of `ArgMin`/`ArgMax`: `-0.0 < +0.0`; a NaN wins over every number, both as the
/// min and as the max, and the first NaN's index is returned for both; ties go to the lower
/// index. Empty input: `min = +inf`, `max = -inf`, both indices [`NO_INDEX`].
#[derive(Clone, Copy, Debug, Default)]
pub struct MinMax;

/// One side of the [`MinMax`] combine: `(value, index)` of `a` or of `b`, whichever wins.
/// `b_better`/`a_better` say which value is strictly better (smaller for the min).
#[inline(always)]
fn pick(a: (f32, u32), b: (f32, u32), b_better: bool, a_better: bool) -> (f32, u32) {
    let (an, bn) = (a.0.is_nan(), b.0.is_nan());
    let take_b = if an || bn {
        bn && (!an || b.1 < a.1)
    } else if b_better {
        true
    } else if a_better {
        false
    } else {
        b.1 < a.1
    };
    if take_b { b } else { a }
}

impl ReduceOp<f32> for MinMax {
    type Acc = MinMaxAcc;
    #[inline(always)]
    fn identity() -> MinMaxAcc {
        MinMaxAcc {
            min: f32::INFINITY,
            max: f32::NEG_INFINITY,
            argmin: NO_INDEX,
            argmax: NO_INDEX,
        }
    }
    #[inline(always)]
    fn lift(x: f32, index: u64) -> MinMaxAcc {
        let i = index as u32;
        MinMaxAcc {
            min: x,
            max: x,
            argmin: i,
            argmax: i,
        }
    }
    #[inline(always)]
    fn combine(a: MinMaxAcc, b: MinMaxAcc) -> MinMaxAcc {
        // An empty side loses (both of its indices are NO_INDEX).
        if a.argmin == NO_INDEX {
            return b;
        }
        if b.argmin == NO_INDEX {
            return a;
        }
        // `Num::lt` is the library's order: `-0.0 < +0.0`, false for NaN.
        let (min, argmin) = pick(
            (a.min, a.argmin),
            (b.min, b.argmin),
            Num::lt(b.min, a.min),
            Num::lt(a.min, b.min),
        );
        let (max, argmax) = pick(
            (a.max, a.argmax),
            (b.max, b.argmax),
            Num::lt(a.max, b.max),
            Num::lt(b.max, a.max),
        );
        MinMaxAcc {
            min,
            max,
            argmin,
            argmax,
        }
    }
}

/// `2^x`. On the GPU one `ex2.approx.ftz.f32` (the SFU's `MUFU.EX2`: relative error about
/// 2^-22, subnormal results flushed to zero; `ex2(-inf) = +0`); on the host, `f32::exp2`.
#[inline(always)]
pub fn exp2(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let y: u32;
        // SAFETY: a register-to-register instruction, no memory.
        unsafe {
            core::arch::asm!(
                "ex2.approx.ftz.f32 {y}, {x};",
                y = out(reg32) y,
                x = in(reg32) x.to_bits(),
                options(pure, nomem, nostack)
            )
        };
        f32::from_bits(y)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.exp2()
    }
}

/// `e^x = 2^(x log2 e)`: the same formula on both backends (`mul.f32` then `ex2` in PTX, as
/// CUDA's `__expf`). Relative error about `2^-22 + |x| * 2^-24`: for the softmax, where
/// `x = m_i - m <= 0`, the terms that matter (`x > -20`) are within ~2e-6.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    exp2(x * core::f32::consts::LOG2_E)
}

/// The online-softmax state: `m` the largest value seen, `s = sum of exp(x_i - m)`. The softmax
/// of the input is `exp(x_i - m) / s`, its log-sum-exp `m + ln(s)`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct SoftmaxAcc {
    pub m: f32,
    pub s: f32,
}

impl ShflValue for SoftmaxAcc {
    const WORDS: usize = 2;
    #[inline(always)]
    fn to_words(self) -> [u32; 4] {
        [self.m.to_bits(), self.s.to_bits(), 0, 0]
    }
    #[inline(always)]
    fn from_words(w: [u32; 4]) -> Self {
        SoftmaxAcc {
            m: f32::from_bits(w[0]),
            s: f32::from_bits(w[1]),
        }
    }
}

/// The online-softmax combine (Milakov & Gimelshein 2018): `m = max(a.m, b.m)`,
/// `s = a.s * exp(a.m - m) + b.s * exp(b.m - m)`. Every exponent is `<= 0`, so nothing
/// overflows whatever the input's range. Edge cases:
/// - identity `{m: -inf, s: 0}`; a `-inf` element lifts to the identity (it adds `e^-inf = 0`),
///   so an all-`-inf` (or empty) input gives `{-inf, 0}` (log-sum-exp `-inf`);
/// - a side whose `m` equals the new `m` is scaled by exactly 1, never by `exp(m - m)`: no
///   `(-inf) - (-inf)` or `inf - inf` NaN; with `+inf` elements, `m = +inf` and `s` counts them;
/// - a NaN element makes both `m` and `s` NaN.
#[derive(Clone, Copy, Debug, Default)]
pub struct OnlineSoftmax;

/// The factor that moves a side's sum from its own max `m_side` to the combined max `m`.
#[inline(always)]
fn rescale(m_side: f32, m: f32) -> f32 {
    if m_side == m { 1.0 } else { exp(m_side - m) }
}

impl ReduceOp<f32> for OnlineSoftmax {
    type Acc = SoftmaxAcc;
    #[inline(always)]
    fn identity() -> SoftmaxAcc {
        SoftmaxAcc {
            m: f32::NEG_INFINITY,
            s: 0.0,
        }
    }
    #[inline(always)]
    fn lift(x: f32, _: u64) -> SoftmaxAcc {
        if x == f32::NEG_INFINITY {
            Self::identity()
        } else {
            SoftmaxAcc { m: x, s: 1.0 }
        }
    }
    #[inline(always)]
    fn combine(a: SoftmaxAcc, b: SoftmaxAcc) -> SoftmaxAcc {
        // NaN-propagating, -0.0 < +0.0 (so the result does not depend on the order).
        let m = Num::max2(a.m, b.m);
        SoftmaxAcc {
            m,
            s: a.s * rescale(a.m, m) + b.s * rescale(b.m, m),
        }
    }
}

/// The running maximum of `|x|`, as a scan: `out[i] = max(|x_0|, ..., |x_i|)` (inclusive).
/// A scan combines the elements themselves (`Acc = f32`; `lift` is not called), so `combine`
/// takes `|.|` of both sides: `combine(0, x) = |x|`, and the scan's first output is already a
/// magnitude. NaN-propagating (a NaN makes every later output NaN, with the sign bit clear).
/// Identity `0.0` (the exclusive scan's first output). Exact: a max does not round.
#[derive(Clone, Copy, Debug, Default)]
pub struct MaxAbs;

impl ReduceOp<f32> for MaxAbs {
    type Acc = f32;
    #[inline(always)]
    fn identity() -> f32 {
        0.0
    }
    #[inline(always)]
    fn lift(x: f32, _: u64) -> f32 {
        x.abs()
    }
    #[inline(always)]
    fn combine(a: f32, b: f32) -> f32 {
        // With the sign bit cleared, IEEE 754 bit patterns order like the magnitudes, and every
        // NaN lies above +inf: one integer max (`max.u32`) is the NaN-propagating max of |a| and
        // |b|, without branches. (Branches here kept LLVM from unrolling the scan's row loops,
        // and the tile then lived in local memory.)
        const MAGNITUDE: u32 = 0x7fff_ffff;
        f32::from_bits((a.to_bits() & MAGNITUDE).max(b.to_bits() & MAGNITUDE))
    }
}

/// The f32 sum with the user's own check: `assert!` that no element is NaN. A failed check
/// panics in the kernel, which traps on a GPU (the call returns `Error::KernelFault`) and is a
/// fault naming the block and thread on the simulator (`Error::Sim`).
#[derive(Clone, Copy, Debug, Default)]
pub struct CheckedSum;

impl ReduceOp<f32> for CheckedSum {
    type Acc = f32;
    #[inline(always)]
    fn identity() -> f32 {
        0.0
    }
    #[inline(always)]
    fn lift(x: f32, _: u64) -> f32 {
        assert!(!x.is_nan(), "CheckedSum: a NaN in the input");
        x
    }
    #[inline(always)]
    fn combine(a: f32, b: f32) -> f32 {
        a + b
    }
}

/// A user predicate for the compaction: keep `|x| > 3` (outliers of a unit-scale signal; a
/// NaN is not kept). The launch's built-in bounds are ignored.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outlier;

impl kernels::select::Predicate<f32> for Outlier {
    #[inline(always)]
    fn select(x: f32, _: &kernels::select::Bound<f32>) -> bool {
        x.abs() > 3.0
    }
}

// The kernels: one PTX entry per line (and, on the host, a simulator function), registered
// with the library's `ReduceInstance`/`ScanInstance` so that the host finds them by type.
kernels::reduce_kernels! {
    minmax_reduce_f32: f32, MinMax;
    minmax_softmax_f32: f32, OnlineSoftmax;
    minmax_checked_sum_f32: f32, CheckedSum;
}

kernels::scan_kernels! {
    minmax_scan_inclusive_maxabs_f32, minmax_scan_exclusive_maxabs_f32: f32, MaxAbs;
}

kernels::select_kernels! {
    minmax_select_outlier_f32: f32, Outlier;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold<O: ReduceOp<f32>>(xs: &[f32]) -> O::Acc {
        xs.iter().enumerate().fold(O::identity(), |a, (i, &x)| {
            O::combine(a, O::lift(x, i as u64))
        })
    }

    #[test]
    fn min_max_first_occurrence_nan_and_zeros() {
        let a = fold::<MinMax>(&[3.0, 1.0, 9.0, 1.0, 9.0]);
        assert_eq!((a.min, a.argmin, a.max, a.argmax), (1.0, 1, 9.0, 2));
        let a = fold::<MinMax>(&[0.0, -0.0, 0.0]);
        assert_eq!((a.min.to_bits(), a.argmin), ((-0.0f32).to_bits(), 1));
        assert_eq!((a.max.to_bits(), a.argmax), (0.0f32.to_bits(), 0));
        let a = fold::<MinMax>(&[1.0, f32::NAN, -5.0, f32::NAN]);
        assert!(a.min.is_nan() && a.max.is_nan() && a.argmin == 1 && a.argmax == 1);
        assert_eq!(fold::<MinMax>(&[]), MinMax::identity());
        let w = MinMaxAcc {
            min: -0.0,
            max: f32::NAN,
            argmin: 7,
            argmax: u32::MAX - 1,
        };
        let back = MinMaxAcc::from_words(w.to_words());
        assert_eq!(back.to_words(), w.to_words());
    }

    #[test]
    fn min_max_combine_commutes() {
        let accs = [
            MinMax::lift(2.0, 5),
            MinMax::lift(2.0, 3),
            MinMax::lift(f32::NAN, 9),
            MinMax::lift(f32::NAN, 4),
            MinMax::lift(-0.0, 8),
            MinMax::lift(0.0, 1),
            MinMax::identity(),
        ];
        for &a in &accs {
            for &b in &accs {
                let (x, y) = (MinMax::combine(a, b), MinMax::combine(b, a));
                assert_eq!(x.to_words(), y.to_words(), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn softmax_edge_cases() {
        let id = OnlineSoftmax::identity();
        assert_eq!(fold::<OnlineSoftmax>(&[]), id);
        assert_eq!(
            fold::<OnlineSoftmax>(&[f32::NEG_INFINITY, f32::NEG_INFINITY]),
            id
        );
        let a = fold::<OnlineSoftmax>(&[f32::NEG_INFINITY, 2.0, f32::NEG_INFINITY]);
        assert_eq!((a.m, a.s), (2.0, 1.0));
        let a = fold::<OnlineSoftmax>(&[1.0, f32::INFINITY, 5.0, f32::INFINITY]);
        assert_eq!((a.m, a.s), (f32::INFINITY, 2.0));
        let a = fold::<OnlineSoftmax>(&[1e30, -1e30, 1e30]);
        assert_eq!((a.m, a.s), (1e30, 2.0));
        let a = fold::<OnlineSoftmax>(&[0.0, 0.0, 2.0f32.ln()]);
        assert!((a.s - 2.0).abs() < 1e-6, "{a:?}");
        let a = fold::<OnlineSoftmax>(&[1.0, f32::NAN]);
        assert!(a.m.is_nan() && a.s.is_nan());
    }

    #[test]
    fn max_abs_is_a_magnitude_from_the_first_element() {
        assert_eq!(MaxAbs::combine(MaxAbs::identity(), -3.0), 3.0);
        assert_eq!(MaxAbs::combine(-4.0, 3.0), 4.0);
        assert!(MaxAbs::combine(f32::NAN, 3.0).is_nan());
        assert!(MaxAbs::combine(3.0, f32::NAN).is_nan());
    }
}
