//! A user's own operators on top of `gpu_reduce`: the device code is in the `minmax-kernels`
//! crate (./kernels), built to PTX by this crate's build script and embedded as [`LIB`]; here
//! are typed, safe wrappers and CPU references.
//!
//! ```
//! # fn main() -> gpu_reduce::Result<()> {
//! use gpu_reduce::{Context, ScanKind};
//! let ctx = Context::sim()?; // or Context::auto(0)?
//! let x = ctx.htod(&[2.0f32, -7.0, 5.0, -7.0])?;
//! let mm = minmax_example::min_max(&ctx, &x)?.unwrap();
//! assert_eq!((mm.min, mm.argmin, mm.max, mm.argmax), (-7.0, 1, 5.0, 2));
//! let sm = minmax_example::softmax_stats(&ctx, &x)?;
//! assert_eq!(sm.max, 5.0);
//! let mut out = ctx.alloc_zeros::<f32>(4)?;
//! minmax_example::max_abs_scan(&ctx, &x, &mut out, ScanKind::Inclusive)?;
//! assert_eq!(ctx.dtoh(&out)?, [2.0, 7.0, 7.0, 7.0]);
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

use gpu_reduce::{Context, DeviceView, DeviceViewMut, Error, KernelLibrary, Result, ScanKind};
pub use minmax_kernels::{
    CheckedSum, MaxAbs, MinMax, MinMaxAcc, NO_INDEX, OnlineSoftmax, Outlier, SoftmaxAcc,
};

pub mod cpu;

/// This crate's kernels (the PTX of `minmax-kernels`, one module per kernel), loaded on first
/// use into each context.
pub static LIB: KernelLibrary = gpu_reduce::include_kernels!("minmax-example", "minmax_kernels.rs");

/// The smallest and largest value and the index of the first occurrence of each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MinMaxResult {
    /// The minimum (NaN if the input holds a NaN; `-0.0 < +0.0`).
    pub min: f32,
    /// Index of its first occurrence (of the first NaN, if any).
    pub argmin: u64,
    /// The maximum (NaN if the input holds a NaN).
    pub max: f32,
    /// Index of its first occurrence (of the first NaN, if any).
    pub argmax: u64,
}

/// Min and max of `x` with their indices, in one pass and one launch; `None` for empty input.
/// Semantics of `MinMax` (a NaN wins both; ties go to the first index). At most `u32::MAX`
/// elements (the accumulator's indices are 32-bit, to fit its 16 bytes).
pub fn min_max<'a>(
    ctx: &Context,
    x: impl Into<DeviceView<'a, f32>>,
) -> Result<Option<MinMaxResult>> {
    let x = x.into();
    if x.len() as u64 > NO_INDEX as u64 {
        return Err(Error::TooLarge {
            what: "the elements of min_max (32-bit indices)".into(),
            size: x.len() as u64,
            limit: NO_INDEX as u64,
        });
    }
    let a = ctx.reduce_custom::<f32, MinMax>(&LIB, x)?;
    Ok((a.argmin != NO_INDEX).then_some(MinMaxResult {
        min: a.min,
        argmin: a.argmin as u64,
        max: a.max,
        argmax: a.argmax as u64,
    }))
}

/// The softmax normaliser of `x`: `max` and `sum_exp = sum of exp(x_i - max)`, in one pass,
/// overflow-free for any range; `softmax(x)_i = exp(x_i - max) / sum_exp`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SoftmaxStats {
    /// The largest element (`-inf` for empty or all-`-inf` input; NaN if there is a NaN).
    pub max: f32,
    /// `sum of exp(x_i - max)`: >= 1 for a finite max, 0 when there is no finite element;
    /// with `+inf` elements, their count.
    pub sum_exp: f32,
}

impl SoftmaxStats {
    /// `ln(sum of exp(x_i))` = `max + ln(sum_exp)` (`-inf` for empty input).
    pub fn log_sum_exp(&self) -> f32 {
        if self.sum_exp == 0.0 {
            f32::NEG_INFINITY
        } else {
            self.max + self.sum_exp.ln()
        }
    }
}

/// [`SoftmaxStats`] of `x` through the online-softmax reduction ([`OnlineSoftmax`]). On a GPU
/// each `exp` is one `ex2.approx` (relative error ~2^-22); `sum_exp` is within ~1e-5
/// (relative) of the exact value, `max` is exact.
pub fn softmax_stats<'a>(ctx: &Context, x: impl Into<DeviceView<'a, f32>>) -> Result<SoftmaxStats> {
    let a = ctx.reduce_custom::<f32, OnlineSoftmax>(&LIB, x)?;
    Ok(SoftmaxStats {
        max: a.m,
        sum_exp: a.s,
    })
}

/// The running maximum of `|x|` into `out[..x.len()]`: inclusive `out[i] = max |x_0..=i|`,
/// exclusive `max |x_0..i|` (0 at `i = 0`). One pass; exact; a NaN propagates to every later
/// output.
pub fn max_abs_scan<'a, 'b>(
    ctx: &Context,
    x: impl Into<DeviceView<'a, f32>>,
    out: impl Into<DeviceViewMut<'b, f32>>,
    kind: ScanKind,
) -> Result<()> {
    ctx.scan_custom::<f32, MaxAbs>(&LIB, x, out, kind)
}

/// The elements of `x` with `|x| > 3` ([`Outlier`], a user predicate), in order, to `out`;
/// returns how many. One pass.
pub fn outliers<'a, 'b>(
    ctx: &Context,
    x: impl Into<DeviceView<'a, f32>>,
    out: impl Into<DeviceViewMut<'b, f32>>,
) -> Result<u64> {
    ctx.select_custom::<f32, Outlier>(&LIB, x, out)
}

/// The sum of `x`, asserting on the device that no element is NaN ([`CheckedSum`]): an
/// operator whose own check fails. A NaN makes the kernel trap: on a GPU the call returns
/// [`Error::KernelFault`] and that device's CUDA context is lost for the rest of the process
/// (every later call on it fails; other GPUs are unaffected); on the simulator it returns
/// [`Error::Sim`] naming the block and thread, and the context stays usable.
pub fn checked_sum<'a>(ctx: &Context, x: impl Into<DeviceView<'a, f32>>) -> Result<f32> {
    ctx.reduce_custom::<f32, CheckedSum>(&LIB, x)
}

/// Deterministic pseudo-random f32 in `[lo, hi]` from a 64-bit LCG (Knuth's MMIX constants):
/// test and demo data without a `rand` dependency.
pub fn lcg_f32(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            // The top 24 bits: exactly representable in [0, 1).
            let u = (s >> 40) as f32 / (1u64 << 24) as f32;
            // Not `lo + (hi - lo) * u`: `hi - lo` overflows for ranges wider than f32::MAX.
            lo * (1.0 - u) + hi * u
        })
        .collect()
}
