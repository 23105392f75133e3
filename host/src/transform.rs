//! Reductions with a map applied on load, never materialised (`kernels::reduce::transform`):
//! sum of squares, the L2 norm without overflow, mean and variance in one pass, min and max
//! together. One launch and one read of the input each; deterministic like every reduction.
//! A map of your own is a `ReduceOp` whose `lift` applies it (see `examples/minmax`), called
//! with [`Context::reduce_custom`].

use kernels::reduce::ReduceInstance;
use kernels::reduce::dot::{Dot, Reduce2Instance};
use kernels::reduce::transform::{MeanVar, MinMax, ScaledSsq, SumSquares};

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use kernels::reduce::transform::MeanVarAcc;

use crate::error::{Error, Result};
use crate::reduce::{DeviceElement, ReduceKernel};
use crate::runtime::{Context, DeviceView, DeviceViewMut};

/// Mean and variance of f32 data ([`Context::mean_var`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Moments {
    /// Elements.
    pub count: u64,
    /// Their mean.
    pub mean: f32,
    /// Population variance: sum of squared deviations / count.
    pub variance: f32,
    /// Sample variance: sum of squared deviations / (count - 1); NaN for one element.
    pub sample_variance: f32,
}

/// Count, mean and `m2` (the sum of squared deviations) as [`Context::mean_var_into`] leaves
/// them on the device: the kernel's accumulator (`kernels::reduce::transform::MeanVarAcc`),
/// field for field, for device buffers.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct MomentsAcc {
    /// Elements (0: empty input).
    pub count: u32,
    /// Their mean.
    pub mean: f32,
    /// Sum of squared deviations from the mean.
    pub m2: f32,
}

// SAFETY: plain `repr(C)` numbers, every bit pattern valid (all-zero: the empty accumulator).
unsafe impl DeviceRepr for MomentsAcc {}
// SAFETY: as above.
unsafe impl ValidAsZeroBits for MomentsAcc {}

const _: () = assert!(std::mem::size_of::<MomentsAcc>() == std::mem::size_of::<MeanVarAcc>());

impl MomentsAcc {
    /// The variances, as [`Context::mean_var`] gives them (`None` when empty).
    pub fn moments(self) -> Option<Moments> {
        (self.count > 0).then(|| Moments {
            count: self.count as u64,
            mean: self.mean,
            variance: (self.m2 as f64 / self.count as f64) as f32,
            sample_variance: if self.count > 1 {
                (self.m2 as f64 / (self.count - 1) as f64) as f32
            } else {
                f32::NAN
            },
        })
    }
}

/// The simulator's mean-and-variance kernel with the host's accumulator type (the same
/// `repr(C)` layout).
///
/// # Safety
/// As the kernel.
#[allow(clippy::too_many_arguments)] // the kernel's parameters
unsafe fn sim_mean_var(
    input: *const f32,
    n: u64,
    tiles: u32,
    partials: *mut MomentsAcc,
    retire: *mut u32,
    out: *mut MomentsAcc,
    done: *mut u32,
    seq: u32,
) {
    let k = <MeanVar as ReduceInstance<f32>>::KERNEL;
    // SAFETY: the caller's arguments; MomentsAcc and MeanVarAcc share their layout.
    unsafe {
        (k.sim)(
            input,
            n,
            tiles,
            partials.cast(),
            retire,
            out.cast(),
            done,
            seq,
        )
    }
}

/// The mean-and-variance kernel as the host calls it, accumulating into [`MomentsAcc`].
fn mean_var_kernel() -> ReduceKernel<f32, MomentsAcc> {
    kernels::Kernel {
        name: <MeanVar as ReduceInstance<f32>>::KERNEL.name,
        sim: sim_mean_var,
    }
}

fn check_mean_var_len(n: usize) -> Result<()> {
    if n as u64 > u32::MAX as u64 {
        return Err(Error::TooLarge {
            what: "the elements of mean_var (a 32-bit count)".into(),
            size: n as u64,
            limit: u32::MAX as u64,
        });
    }
    Ok(())
}

/// Element types with a sum of squares and a norm: f32 (accumulated in f64, exact squares)
/// and f64 (the norm through a scaled sum of squares).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no built-in sum of squares or norm",
    note = "sum_of_squares and norm2 take f32 or f64"
)]
pub trait NormElement: DeviceElement {
    /// Sum of squares, as [`Context::sum_of_squares`] returns it.
    fn sum_of_squares(ctx: &Context, x: DeviceView<'_, Self>) -> Result<f64>;
    /// The L2 norm, as [`Context::norm2`] returns it.
    fn norm2(ctx: &Context, x: DeviceView<'_, Self>) -> Result<Self>;
}

impl NormElement for f32 {
    fn sum_of_squares(ctx: &Context, x: DeviceView<'_, f32>) -> Result<f64> {
        let k = <SumSquares as ReduceInstance<f32>>::KERNEL;
        ctx.reduce_to_host(&crate::BUILTIN, &k, x)
    }
    fn norm2(ctx: &Context, x: DeviceView<'_, f32>) -> Result<f32> {
        // The f64 sum of f32 squares cannot overflow; one rounding of its root to f32.
        Ok(Self::sum_of_squares(ctx, x)?.sqrt() as f32)
    }
}

impl NormElement for f64 {
    fn sum_of_squares(ctx: &Context, x: DeviceView<'_, f64>) -> Result<f64> {
        let k = <SumSquares as ReduceInstance<f64>>::KERNEL;
        ctx.reduce_to_host(&crate::BUILTIN, &k, x)
    }
    fn norm2(ctx: &Context, x: DeviceView<'_, f64>) -> Result<f64> {
        let k = <ScaledSsq as ReduceInstance<f64>>::KERNEL;
        let a = ctx.reduce_to_host(&crate::BUILTIN, &k, x)?;
        Ok(if a.ssq == 0.0 {
            0.0
        } else {
            a.scale * a.ssq.sqrt()
        })
    }
}

impl Context {
    /// Sum of squares in one pass. f32 data is squared and summed in f64 (each square exact,
    /// no overflow); f64 data in f64 (squares past ~1e154 overflow to `inf`; the norm does not,
    /// see [`Context::norm2`]).
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[3.0f32, 4.0])?;
    /// assert_eq!(ctx.sum_of_squares(&x)?, 25.0);
    /// assert_eq!(ctx.norm2(&x)?, 5.0);
    /// # Ok(()) }
    /// ```
    pub fn sum_of_squares<'a, T: NormElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
    ) -> Result<f64> {
        T::sum_of_squares(self, x.into())
    }

    /// The Euclidean (L2) norm in one pass, without overflow or underflow of the squares: f32
    /// through an f64 sum of squares (then one rounding), f64 through a scaled sum of squares
    /// (LAPACK's representation: the largest |x| and the sum of (|x|/largest)²). Empty input
    /// gives 0; a NaN gives NaN; an infinity gives infinity.
    pub fn norm2<'a, T: NormElement>(&self, x: impl Into<DeviceView<'a, T>>) -> Result<T> {
        T::norm2(self, x.into())
    }

    /// Count, mean and variance of f32 data in one pass (f64 sums of deviations from the
    /// input's first element in a fixed tree, one division at the end; see
    /// `kernels::reduce::moments` for the error: `|variance error| <= 4·log2(n)·2^-24·(1 +
    /// mean²/variance)·variance + 2^-46·(variance + (x[0] - mean)²)`). The same bits on any
    /// GPU and grid. `None` for empty input; at most 2^32 - 1 elements.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[2.0f32, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])?;
    /// let m = ctx.mean_var(&x)?.unwrap();
    /// assert_eq!((m.count, m.mean, m.variance), (8, 5.0, 4.0));
    /// # Ok(()) }
    /// ```
    pub fn mean_var<'a>(&self, x: impl Into<DeviceView<'a, f32>>) -> Result<Option<Moments>> {
        let x = x.into();
        check_mean_var_len(x.len())?;
        Ok(self
            .reduce_to_host(&crate::BUILTIN, &mean_var_kernel(), x)?
            .moments())
    }

    /// [`Context::mean_var`] left on the device: `out[0]` gets the count, mean and `m2`
    /// (variance = m2 / count; count 0 for empty input), for work that goes on on the GPU
    /// (normalising by them) with no round trip. Queued on the context's stream; never
    /// blocks the host; can be captured into a CUDA graph.
    pub fn mean_var_into<'a, 'b>(
        &self,
        x: impl Into<DeviceView<'a, f32>>,
        out: impl Into<DeviceViewMut<'b, MomentsAcc>>,
    ) -> Result<()> {
        let x = x.into();
        check_mean_var_len(x.len())?;
        self.reduce_into_buf(&crate::BUILTIN, &mean_var_kernel(), x, out.into())
    }

    /// The smallest and the largest element in one pass (`Min`'s and `Max`'s semantics: a NaN
    /// wins both, `-0.0 < +0.0`); `None` for empty input.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[3i64, -7, 5])?;
    /// assert_eq!(ctx.min_max(&x)?, Some((-7, 5)));
    /// # Ok(()) }
    /// ```
    pub fn min_max<'a, T: DeviceElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
    ) -> Result<Option<(T, T)>>
    where
        MinMax: ReduceInstance<T>,
        MinMax: kernels::ops::ReduceOp<T, Acc = kernels::reduce::transform::MinMaxAcc<T>>,
    {
        let x = x.into();
        if x.is_empty() {
            return Ok(None);
        }
        let k = <MinMax as ReduceInstance<T>>::KERNEL;
        let a = self.reduce_to_host(&crate::BUILTIN, &k, x)?;
        Ok(Some((a.min, a.max)))
    }
}

/// The transform kernels the host can ask for (for the embedded-index test).
#[cfg(test)]
pub(crate) fn kernel_names() -> Vec<&'static str> {
    let mut names = vec![
        <SumSquares as ReduceInstance<f32>>::KERNEL.name,
        <SumSquares as ReduceInstance<f64>>::KERNEL.name,
        <ScaledSsq as ReduceInstance<f64>>::KERNEL.name,
        <MeanVar as ReduceInstance<f32>>::KERNEL.name,
        <Dot as Reduce2Instance<f32>>::KERNEL.name,
        <Dot as Reduce2Instance<f64>>::KERNEL.name,
    ];
    macro_rules! each {
        ($t:ident $ops:tt) => {
            names.push(<MinMax as ReduceInstance<$t>>::KERNEL.name)
        };
    }
    kernels::builtin_table!(types each! {} int float);
    names
}

/// Element types with a dot product: f32 (products and sum in f64, one rounding) and f64.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no built-in dot product",
    note = "dot takes f32 or f64"
)]
pub trait DotElement: DeviceElement {
    /// The dot product, as [`Context::dot`] returns it.
    fn dot(ctx: &Context, x: DeviceView<'_, Self>, y: DeviceView<'_, Self>) -> Result<Self>;
}

impl DotElement for f32 {
    fn dot(ctx: &Context, x: DeviceView<'_, f32>, y: DeviceView<'_, f32>) -> Result<f32> {
        let k = <Dot as Reduce2Instance<f32>>::KERNEL;
        Ok(ctx.reduce2_to_host(&crate::BUILTIN, &k, x, y)? as f32)
    }
}

impl DotElement for f64 {
    fn dot(ctx: &Context, x: DeviceView<'_, f64>, y: DeviceView<'_, f64>) -> Result<f64> {
        let k = <Dot as Reduce2Instance<f64>>::KERNEL;
        ctx.reduce2_to_host(&crate::BUILTIN, &k, x, y)
    }
}

impl Context {
    /// The dot product `sum x[i]·y[i]` in one launch, reading each input once (the products
    /// are never stored). f32 products are exact in f64 and summed in f64, then rounded once.
    /// `x` and `y` must have the same length. Inputs at the same offset from a 16-byte
    /// boundary (e.g. two whole buffers) are read with vector loads; others pair by pair.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[1.0f32, 2.0, 3.0])?;
    /// let y = ctx.htod(&[4.0f32, -5.0, 6.0])?;
    /// assert_eq!(ctx.dot(&x, &y)?, 12.0);
    /// # Ok(()) }
    /// ```
    pub fn dot<'a, 'b, T: DotElement + 'a + 'b>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        y: impl Into<DeviceView<'b, T>>,
    ) -> Result<T> {
        T::dot(self, x.into(), y.into())
    }
}
