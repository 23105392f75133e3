//! Histograms (CUB's `DeviceHistogram::HistogramEven` / `HistogramRange`, PyTorch's
//! `histc` / `bincount`): how many samples fall in each bin, in one launch.
//!
//! | call | bins |
//! | --- | --- |
//! | [`Context::histogram_even`]`(samples, counts, lo, hi)` | `counts.len()` even bins over `[lo, hi)` |
//! | [`Context::histogram_edges`]`(samples, edges, counts)` | `edges[b] <= x < edges[b + 1]` (`counts.len() + 1` ascending edges) |
//! | [`Context::histogram_even_weighted`]`(samples, weights, sums, lo, hi)` | as `histogram_even`, each bin the sum of its samples' weights |
//! | [`Context::histogram_edges_weighted`]`(samples, weights, edges, sums)` | as `histogram_edges`, each bin the sum of its samples' weights |
//!
//! Samples of every element type (f16/bf16 with the `f16` feature); counts `u32` or `u64`.
//! A sample outside the bins (below the first, at or above the last) or NaN is not counted.
//! Even bins: integers `(x - lo) * bins / (hi - lo)` exactly; floats `(x - lo) * (bins / (hi -
//! lo))` in f64, truncated, at most the last bin. `bincount` of integers `0..bins` is
//! `histogram_even(x, counts, 0, bins)`. Counts are integers, so every run gives the same
//! counts. Weights and their sums are f32 or f64, each sum the exact sum of its bin's weights
//! rounded once (the same bits every run, whatever the order; see `histogram_even_weighted`). Stream-ordered: the call zeroes `counts` and launches; it never blocks, and can be
//! captured into a CUDA graph.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use kernels::Kernel;
use kernels::gpu::ShflValue;
use kernels::histogram::weighted::{
    FINISH_KERNEL, FinishParams, SimWeightedFn, WORDS_PER_BIN, WeightedParams,
    weighted_shared_bytes,
};
use kernels::histogram::{
    BLOCK, BLOCKS_PER_SM, Counts, HistogramInstance, HistogramParams, MAX_BLOCK_SAMPLES, Sample,
    SimHistogramFn, shared_bytes, vecs,
};
use kernels::select::predicate::Ordered;

use crate::error::{Error, Result};
use crate::reduce::DeviceElement;
use crate::runtime::{
    Context, DeviceBuffer, DeviceView, DeviceViewMut, KernelLibrary, LaunchShape,
};

/// A histogram kernel as the host calls it.
pub type HistogramKernel<T> = Kernel<SimHistogramFn<T>>;

/// Sample types of the built-in histograms: every type of the kernels' built-in table.
#[diagnostic::on_unimplemented(
    message = "no built-in histogram of `{Self}` samples",
    note = "histograms take i32, u32, i64, u64, f32, f64 (and half::f16, half::bf16 with the `f16` feature)"
)]
pub trait HistogramSample: DeviceElement + ShflValue + Ordered + Sample {
    #[doc(hidden)]
    fn histogram_kernel() -> HistogramKernel<Self>;
    #[doc(hidden)]
    fn weighted_kernel() -> Kernel<SimWeightedFn<Self>>;
}

/// Weight (and sum) types of the weighted histograms: `f32` or `f64`.
#[diagnostic::on_unimplemented(
    message = "no weighted histogram with `{Self}` weights",
    note = "weights and their sums are f32 or f64"
)]
pub trait HistogramWeight: DeviceRepr + ValidAsZeroBits + Copy + 'static {
    #[doc(hidden)]
    const WIDE: bool;
}
impl HistogramWeight for f32 {
    const WIDE: bool = false;
}
impl HistogramWeight for f64 {
    const WIDE: bool = true;
}

/// Count types of the histograms: `u32` (a bin wraps past `u32::MAX`: calls over more samples
/// are refused) or `u64`.
pub trait HistogramCount: DeviceRepr + ValidAsZeroBits + Copy + 'static {
    /// The most samples a call may count.
    #[doc(hidden)]
    const MAX_SAMPLES: u64;
    #[doc(hidden)]
    const NAME: &'static str;
}
impl HistogramCount for u32 {
    const MAX_SAMPLES: u64 = u32::MAX as u64;
    const NAME: &'static str = "u32";
}
impl HistogramCount for u64 {
    const MAX_SAMPLES: u64 = u64::MAX;
    const NAME: &'static str = "u64";
}

macro_rules! histogram_sample {
    ($t:ident $ops:tt) => {
        impl HistogramSample for kernels::builtin_elem!($t) {
            fn histogram_kernel() -> HistogramKernel<Self> {
                <Counts as HistogramInstance<Self>>::KERNEL
            }
            fn weighted_kernel() -> Kernel<SimWeightedFn<Self>> {
                <Counts as HistogramInstance<Self>>::WEIGHTED
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

/// The weighted histograms' digit, flag and exponent words, grown on demand and reused by
/// every call of a context (launches on its stream run one after the other).
#[derive(Default)]
struct WeightedWorkspace {
    words: Option<DeviceBuffer<u64>>,
}

/// Blocks per SM of the weighted histograms' grid.
const WEIGHTED_BLOCKS_PER_SM: u64 = 5;

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
        let even = Self::even_args(CALL, lo, hi, bins)?;
        self.launch_histogram(
            &crate::BUILTIN,
            T::histogram_kernel(),
            samples,
            None,
            counts,
            bins,
            even,
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
        Self::check_edges(CALL, edges.len(), bins)?;
        self.launch_histogram(
            &crate::BUILTIN,
            T::histogram_kernel(),
            samples,
            Some(edges),
            counts,
            bins,
            (0, 0, 0.0, 0),
        )
    }

    /// The sum of the `weights` of the `samples` in each of `sums.len()` even bins over `[lo,
    /// hi)` (`np.histogram(x, bins, range, weights=w)`; `bincount(x, weights=w)` of integers
    /// `0..bins` is `histogram_even_weighted(x, w, sums, 0, bins)`): bins as
    /// [`histogram_even`](Self::histogram_even), `weights[i]` the weight of `samples[i]`.
    /// Each bin's sum is its weights' exact sum rounded once (each weight first rounded to a
    /// multiple of `2^-92` times its bin's largest finite `|weight|`'s power of two: exact
    /// within 2^69 of that weight for f32, 2^40 for f64), so the same bits on every run and
    /// GPU, in any order of the samples; a bin with a NaN weight, or both infinities, holds NaN, else
    /// one with an infinity holds it; an empty bin or an exact zero sum holds `+0`. `sums` is
    /// overwritten. At most `u32::MAX` samples a call.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[0u32, 1, 1, 3, 7])?;
    /// let w = ctx.htod(&[1e30f32, 0.5, 0.25, 2.0, 9.0])?;
    /// let mut sums = ctx.alloc_zeros::<f32>(4)?;
    /// ctx.histogram_even_weighted(&x, &w, &mut sums, 0, 4)?;
    /// assert_eq!(ctx.dtoh(&sums)?, [1e30, 0.75, 0.0, 2.0]);
    /// # Ok(()) }
    /// ```
    pub fn histogram_even_weighted<'a, 'w, 'b, T: HistogramSample, W: HistogramWeight>(
        &self,
        samples: impl Into<DeviceView<'a, T>>,
        weights: impl Into<DeviceView<'w, W>>,
        sums: impl Into<DeviceViewMut<'b, W>>,
        lo: T,
        hi: T,
    ) -> Result<()> {
        const CALL: &str = "histogram_even_weighted";
        let (samples, weights, sums) = (samples.into(), weights.into(), sums.into());
        let bins = Self::histogram_bins::<T, u64>(CALL, samples.len(), sums.len())?;
        let even = Self::even_args(CALL, lo, hi, bins)?;
        self.launch_weighted(CALL, samples, weights, None, sums, bins, even)
    }

    /// The sum of the `weights` of the `samples` in each bin between `edges` (as
    /// [`histogram_edges`](Self::histogram_edges)), rounded as
    /// [`histogram_even_weighted`](Self::histogram_even_weighted) says.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[0.5f64, 2.0, 2.5, 9.0])?;
    /// let w = ctx.htod(&[1.0f64, 0.1, 0.2, 5.0])?;
    /// let edges = ctx.htod(&[0.0f64, 1.0, 3.0])?;
    /// let mut sums = ctx.alloc_zeros::<f64>(2)?;
    /// ctx.histogram_edges_weighted(&x, &w, &edges, &mut sums)?;
    /// assert_eq!(ctx.dtoh(&sums)?, [1.0, 0.30000000000000004]);
    /// # Ok(()) }
    /// ```
    pub fn histogram_edges_weighted<'a, 'w, 'e, 'b, T: HistogramSample, W: HistogramWeight>(
        &self,
        samples: impl Into<DeviceView<'a, T>>,
        weights: impl Into<DeviceView<'w, W>>,
        edges: impl Into<DeviceView<'e, T>>,
        sums: impl Into<DeviceViewMut<'b, W>>,
    ) -> Result<()> {
        const CALL: &str = "histogram_edges_weighted";
        let (samples, weights, edges, sums) =
            (samples.into(), weights.into(), edges.into(), sums.into());
        let bins = Self::histogram_bins::<T, u64>(CALL, samples.len(), sums.len())?;
        Self::check_edges(CALL, edges.len(), bins)?;
        self.launch_weighted(
            CALL,
            samples,
            weights,
            Some(edges),
            sums,
            bins,
            (0, 0, 0.0, 0),
        )
    }

    /// Even bins' kernel arguments `(lo, hi, scale, mul)`, or the error of an empty or too
    /// wide range.
    fn even_args<T: HistogramSample>(
        call: &'static str,
        lo: T,
        hi: T,
        bins: u32,
    ) -> Result<(u64, u64, f64, u64)> {
        if !Ordered::lt(lo, hi) {
            return Err(Error::BadBins {
                call,
                reason: format!("the range [{lo:?}, {hi:?}) is empty (lo must be below hi)"),
            });
        }
        let (scale, mul) = T::even_rule(lo, hi, bins);
        if !(scale.is_finite() && scale > 0.0) {
            return Err(Error::BadBins {
                call,
                reason: format!("the range [{lo:?}, {hi:?}) is wider than f64's largest"),
            });
        }
        let word = |v: T| {
            let w = v.to_words();
            w[0] as u64 | (w[1] as u64) << 32
        };
        Ok((word(lo), word(hi), scale, mul))
    }

    /// The error of `len` edges for `bins` bins (one more edge than bins).
    fn check_edges(call: &'static str, len: usize, bins: u32) -> Result<()> {
        if len as u64 != bins as u64 + 1 {
            return Err(Error::LengthMismatch {
                what: format!("{call}: the edges (one more than the {bins} bins)"),
                expected: bins as u64 + 1,
                got: len as u64,
            });
        }
        Ok(())
    }

    /// The three launches of a weighted histogram (`edges`, or even bins' arguments).
    #[allow(clippy::too_many_arguments)] // the kernel's arguments, passed straight through
    fn launch_weighted<T: HistogramSample, W: HistogramWeight>(
        &self,
        call: &'static str,
        samples: DeviceView<'_, T>,
        weights: DeviceView<'_, W>,
        edges: Option<DeviceView<'_, T>>,
        mut sums: DeviceViewMut<'_, W>,
        bins: u32,
        (lo, hi, scale, mul): (u64, u64, f64, u64),
    ) -> Result<()> {
        let n = samples.len() as u64;
        if weights.len() != samples.len() {
            return Err(Error::LengthMismatch {
                what: format!("{call}: the weights (one a sample)"),
                expected: n,
                got: weights.len() as u64,
            });
        }
        if n > u32::MAX as u64 {
            return Err(Error::TooLarge {
                what: format!("{call}: the samples (the digit sums stay below 2^63)"),
                size: n,
                limit: u32::MAX as u64,
            });
        }
        // Digit sums, exponents and flags (zeroed: the kernels add, max and or).
        let words = bins as usize * WORDS_PER_BIN;
        let ws = self.workspace::<WeightedWorkspace>();
        let mut ws = ws.lock().unwrap_or_else(|p| p.into_inner());
        let base = match self.graph_scratch(words * 8)? {
            Some(a) => a,
            None => {
                if ws.words.as_ref().is_none_or(|b| b.len() < words) {
                    ws.words = None; // free the old one first
                    ws.words = Some(self.alloc_zeros::<u64>(words.next_power_of_two())?);
                }
                let Some(b) = ws.words.as_ref() else {
                    unreachable!("allocated just above")
                };
                self.scratch_addr(b)
            }
        };
        self.memset_raw(base, words * 8)?;
        let (op, _o_write) = self.write(&mut sums)?;
        let (sp, _s_read) = self.read(&samples)?;
        let (wp, _w_read) = self.read(&weights)?;
        let (ep, _e_read) = match &edges {
            Some(e) => {
                let (a, r) = self.read(e)?;
                (a, Some(r))
            }
            None => (0, None),
        };
        let lib = &crate::BUILTIN;
        let sms = self.info().multiprocessors as u64;
        let grid =
            |per_sm: u64, items: u64| items.div_ceil(BLOCK as u64).min(sms * per_sm).max(1) as u32;
        let params = |pass: u32| WeightedParams::<T> {
            input: sp as *const T,
            weights: wp as *const u32,
            wide: W::WIDE as u32,
            sums: base as *mut u64,
            pass,
            edges: ep as *const T,
            n,
            bins,
            lo,
            hi,
            scale,
            mul,
        };
        let shape = LaunchShape::linear(
            grid(WEIGHTED_BLOCKS_PER_SM, n),
            BLOCK,
            weighted_shared_bytes(bins),
        );
        let finish = FinishParams {
            sums: base as *const u64,
            bins,
            out: op as *mut u32,
            wide: W::WIDE as u32,
        };
        // SAFETY (the three launches): addresses of this context's memory: `n` samples and
        // weights, `bins` sums, the words above (zeroed in stream order), `bins + 1` edges.
        unsafe {
            self.launch_kernel(lib, &T::weighted_kernel(), shape, params(0))?;
            self.launch_kernel(lib, &T::weighted_kernel(), shape, params(1))?;
            let one = LaunchShape::linear(bins.div_ceil(BLOCK), BLOCK, 0);
            self.launch_kernel(lib, &FINISH_KERNEL, one, finish)
        }
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
        k: HistogramKernel<T>,
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
        let params = HistogramParams::<T> {
            input: sp as *const T,
            counts: cp as *mut u32,
            wide: (size_of::<C>() == 8) as u32,
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
        names.push(T::histogram_kernel().name);
        names.push(T::weighted_kernel().name);
    }
    let mut names = vec![FINISH_KERNEL.name];
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
