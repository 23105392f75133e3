//! Histograms (CUB's `DeviceHistogram::HistogramEven` / `HistogramRange`, PyTorch's
//! `histc` / `bincount`): how many samples fall in each bin, in one launch.
//!
//! | call | bins |
//! | --- | --- |
//! | [`Context::histogram_even`]`(samples, counts, lo, hi)` | `counts.len()` even bins over `[lo, hi)` |
//! | [`Context::histogram_edges`]`(samples, edges, counts)` | `edges[b] <= x < edges[b + 1]` (`counts.len() + 1` ascending edges) |
//!
//! Samples of every element type (f16/bf16 with the `f16` feature); counts `u32` or `u64`.
//! A sample outside the bins (below the first, at or above the last) or NaN is not counted.
//! Even bins: integers `(x - lo) * bins / (hi - lo)` exactly; floats `(x - lo) * (bins / (hi -
//! lo))` in f64, truncated, at most the last bin. `bincount` of integers `0..bins` is
//! `histogram_even(x, counts, 0, bins)`. Counts are integers, so every run gives the same
//! counts. Stream-ordered: the call zeroes `counts` and launches; it never blocks, and can be
//! captured into a CUDA graph.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use kernels::Kernel;
use kernels::gpu::ShflValue;
use kernels::histogram::{
    BLOCK, BLOCKS_PER_SM, Counts, HistogramInstance, HistogramParams, MAX_BLOCK_SAMPLES, Sample,
    SimHistogramFn, shared_bytes, vecs,
};
use kernels::select::predicate::Ordered;

use crate::error::{Error, Result};
use crate::reduce::DeviceElement;
use crate::runtime::{Context, DeviceView, DeviceViewMut, KernelLibrary, LaunchShape};

/// A histogram kernel as the host calls it.
pub type HistogramKernel<T, C> = Kernel<SimHistogramFn<T, C>>;

/// Sample types of the built-in histograms: every type of the kernels' built-in table.
#[diagnostic::on_unimplemented(
    message = "no built-in histogram of `{Self}` samples",
    note = "histograms take i32, u32, i64, u64, f32, f64 (and half::f16, half::bf16 with the `f16` feature)"
)]
pub trait HistogramSample: DeviceElement + ShflValue + Ordered + Sample {
    #[doc(hidden)]
    fn kernel_u32() -> HistogramKernel<Self, u32>;
    #[doc(hidden)]
    fn kernel_u64() -> HistogramKernel<Self, u64>;
}

/// Count types of the histograms: `u32` (a bin wraps past `u32::MAX`: calls over more samples
/// are refused) or `u64`.
pub trait HistogramCount: DeviceRepr + ValidAsZeroBits + Copy + 'static {
    /// The most samples a call may count.
    #[doc(hidden)]
    const MAX_SAMPLES: u64;
    #[doc(hidden)]
    const NAME: &'static str;
    #[doc(hidden)]
    fn kernel<T: HistogramSample>() -> HistogramKernel<T, Self>;
}
impl HistogramCount for u32 {
    const MAX_SAMPLES: u64 = u32::MAX as u64;
    const NAME: &'static str = "u32";
    fn kernel<T: HistogramSample>() -> HistogramKernel<T, Self> {
        T::kernel_u32()
    }
}
impl HistogramCount for u64 {
    const MAX_SAMPLES: u64 = u64::MAX;
    const NAME: &'static str = "u64";
    fn kernel<T: HistogramSample>() -> HistogramKernel<T, Self> {
        T::kernel_u64()
    }
}

macro_rules! histogram_sample {
    ($t:ident $ops:tt) => {
        impl HistogramSample for kernels::builtin_elem!($t) {
            fn kernel_u32() -> HistogramKernel<Self, u32> {
                <Counts as HistogramInstance<Self, u32>>::KERNEL
            }
            fn kernel_u64() -> HistogramKernel<Self, u64> {
                <Counts as HistogramInstance<Self, u64>>::KERNEL
            }
        }
    };
}
kernels::builtin_table!(types histogram_sample! {} int float);
#[cfg(feature = "f16")]
kernels::builtin_table!(types histogram_sample! {} half);

/// Tuning overrides of the histograms.
#[derive(Default)]
struct HistogramTuning {
    /// Blocks per SM of the grid (None: `BLOCKS_PER_SM`).
    blocks_per_sm: Option<u32>,
}

impl Context {
    /// Override the histograms' blocks per SM (`None`: `kernels::histogram::BLOCKS_PER_SM`;
    /// else 1 to 32). For tuning runs; counts do not depend on it.
    pub fn set_histogram_blocks(&self, per_sm: Option<u32>) {
        let ws = self.workspace::<HistogramTuning>();
        ws.lock().unwrap_or_else(|p| p.into_inner()).blocks_per_sm = per_sm.map(|b| b.clamp(1, 32));
    }

    /// Count `samples` into `counts.len()` even bins over `[lo, hi)`: bin `b` holds the `x`
    /// with `lo + b * w <= x < lo + (b + 1) * w`, `w = (hi - lo) / bins` (integers exactly;
    /// floats by `(x - lo) * (bins / (hi - lo))` in f64, truncated, the last bin at most).
    /// Samples outside `[lo, hi)` and NaN are not counted. `counts` is overwritten.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[0.5f32, 1.5, 1.7, 3.9, 4.0, -1.0, f32::NAN])?;
    /// let mut counts = ctx.alloc_zeros::<u32>(4)?;
    /// ctx.histogram_even(&x, &mut counts, 0.0, 4.0)?;
    /// assert_eq!(ctx.dtoh(&counts)?, [1, 2, 0, 1]);
    /// # Ok(()) }
    /// ```
    pub fn histogram_even<'a, 'b, T: HistogramSample, C: HistogramCount>(
        &self,
        samples: impl Into<DeviceView<'a, T>>,
        counts: impl Into<DeviceViewMut<'b, C>>,
        lo: T,
        hi: T,
    ) -> Result<()> {
        const CALL: &str = "histogram_even";
        let (samples, counts) = (samples.into(), counts.into());
        let bins = Self::histogram_bins::<T, C>(CALL, samples.len(), counts.len())?;
        if !Ordered::lt(lo, hi) {
            return Err(Error::BadBins {
                call: CALL,
                reason: format!("the range [{lo:?}, {hi:?}) is empty (lo must be below hi)"),
            });
        }
        let (scale, mul) = T::even_rule(lo, hi, bins);
        if !(scale.is_finite() && scale > 0.0) {
            return Err(Error::BadBins {
                call: CALL,
                reason: format!("the range [{lo:?}, {hi:?}) is wider than f64's largest"),
            });
        }
        let word = |v: T| {
            let w = v.to_words();
            w[0] as u64 | (w[1] as u64) << 32
        };
        self.launch_histogram(
            &crate::BUILTIN,
            C::kernel::<T>(),
            samples,
            None,
            counts,
            bins,
            (word(lo), word(hi), scale, mul),
        )
    }

    /// Count `samples` into the bins between `edges`: bin `b` holds the `x` with `edges[b] <= x
    /// < edges[b + 1]`; `edges` holds `counts.len() + 1` ascending values (not checked: other
    /// edges give other counts, never a write outside `counts`). Samples below the first edge,
    /// at or above the last and NaN are not counted. `counts` is overwritten.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[1u32, 5, 9, 10, 99, 100])?;
    /// let edges = ctx.htod(&[0u32, 5, 10, 100])?;
    /// let mut counts = ctx.alloc_zeros::<u64>(3)?;
    /// ctx.histogram_edges(&x, &edges, &mut counts)?;
    /// assert_eq!(ctx.dtoh(&counts)?, [1, 2, 2]);
    /// # Ok(()) }
    /// ```
    pub fn histogram_edges<'a, 'e, 'b, T: HistogramSample, C: HistogramCount>(
        &self,
        samples: impl Into<DeviceView<'a, T>>,
        edges: impl Into<DeviceView<'e, T>>,
        counts: impl Into<DeviceViewMut<'b, C>>,
    ) -> Result<()> {
        const CALL: &str = "histogram_edges";
        let (samples, edges, counts) = (samples.into(), edges.into(), counts.into());
        let bins = Self::histogram_bins::<T, C>(CALL, samples.len(), counts.len())?;
        if edges.len() as u64 != bins as u64 + 1 {
            return Err(Error::LengthMismatch {
                what: format!("{CALL}: the edges (one more than the counts' {bins} bins)"),
                expected: bins as u64 + 1,
                got: edges.len() as u64,
            });
        }
        self.launch_histogram(
            &crate::BUILTIN,
            C::kernel::<T>(),
            samples,
            Some(edges),
            counts,
            bins,
            (0, 0, 0.0, 0),
        )
    }

    /// The bins of a call with `n` samples and `len` counts, or its error.
    fn histogram_bins<T: DeviceElement, C: HistogramCount>(
        call: &'static str,
        n: usize,
        len: usize,
    ) -> Result<u32> {
        if len == 0 {
            return Err(Error::BadBins {
                call,
                reason: "the counts are empty (one count a bin, at least one bin)".into(),
            });
        }
        let bins = u32::try_from(len).ok().filter(|&b| b < i32::MAX as u32);
        let Some(bins) = bins else {
            return Err(Error::TooLarge {
                what: format!("{call}: the bins"),
                size: len as u64,
                limit: i32::MAX as u64 - 1,
            });
        };
        if n as u64 > C::MAX_SAMPLES {
            return Err(Error::Unsupported {
                op: format!("{call} of {n} samples into {} counts", C::NAME),
                dtype: T::DTYPE,
                reason: "a bin could pass u32::MAX and wrap; count into u64",
            });
        }
        Ok(bins)
    }

    /// Zero `counts` and launch `k` over `samples` (`edges`, or even bins `(lo, hi, scale, mul)`).
    #[allow(clippy::too_many_arguments)] // the kernel's arguments, passed straight through
    fn launch_histogram<T: HistogramSample, C: HistogramCount>(
        &self,
        lib: &'static KernelLibrary,
        k: HistogramKernel<T, C>,
        samples: DeviceView<'_, T>,
        edges: Option<DeviceView<'_, T>>,
        mut counts: DeviceViewMut<'_, C>,
        bins: u32,
        (lo, hi, scale, mul): (u64, u64, f64, u64),
    ) -> Result<()> {
        let n = samples.len() as u64;
        let count_bytes = counts.len() * size_of::<C>();
        let (cp, _c_write) = self.write(&mut counts)?;
        // Zero: the kernel adds (stream-ordered, before the launch).
        self.memset_raw(cp, count_bytes)?;
        if n == 0 {
            return Ok(());
        }
        let (sp, _s_read) = self.read(&samples)?;
        let (ep, _e_read) = match &edges {
            Some(e) => {
                let (a, r) = self.read(e)?;
                (a, Some(r))
            }
            None => (0, None),
        };
        let per_step = BLOCK as u64 * vecs(size_of::<T>()) as u64 * (16 / size_of::<T>()) as u64;
        let per_sm = {
            let ws = self.workspace::<HistogramTuning>();
            let t = ws.lock().unwrap_or_else(|p| p.into_inner());
            t.blocks_per_sm.unwrap_or(BLOCKS_PER_SM)
        };
        let full = self.info().multiprocessors as u64 * per_sm as u64;
        let grid = n
            .div_ceil(per_step)
            .min(full)
            .max(n.div_ceil(MAX_BLOCK_SAMPLES))
            .max(1);
        let grid = u32::try_from(grid).map_err(|_| Error::TooLarge {
            what: "histogram samples".into(),
            size: n,
            limit: MAX_BLOCK_SAMPLES * u32::MAX as u64,
        })?;
        let params = HistogramParams::<T, C> {
            input: sp as *const T,
            counts: cp as *mut C,
            edges: ep as *const T,
            n,
            bins,
            lo,
            hi,
            scale,
            mul,
        };
        let smem = shared_bytes(bins, size_of::<T>(), edges.is_some());
        // SAFETY: addresses of this context's memory: `n` samples, `bins` counts (zeroed above,
        // in stream order), `bins + 1` edges when given.
        unsafe { self.launch_kernel(lib, &k, LaunchShape::linear(grid, BLOCK, smem), params) }
    }
}

/// Every built-in histogram kernel's name (the embedded-index test).
#[cfg(test)]
pub(crate) fn kernel_names() -> Vec<&'static str> {
    fn of<T: HistogramSample>(names: &mut Vec<&'static str>) {
        names.push(T::kernel_u32().name);
        names.push(T::kernel_u64().name);
    }
    let mut names = Vec::new();
    macro_rules! each {
        ($t:ident $ops:tt) => {
            of::<kernels::builtin_elem!($t)>(&mut names)
        };
    }
    kernels::builtin_table!(types each! {} int float);
    #[cfg(feature = "f16")]
    kernels::builtin_table!(types each! {} half);
    names
}
