//! Reductions with a map applied on load, never materialised (`kernels::reduce::transform`):
//! sum of squares, the L2 norm without overflow, mean and variance in one pass, min and max
//! together. One launch and one read of the input each; deterministic like every reduction.
//! A map of your own is a `ReduceOp` whose `lift` applies it (see `examples/minmax`), called
//! with [`Context::reduce_custom`].
//!
//! | call | returns | `_into` leaves on the device |
//! | --- | --- | --- |
//! | [`Context::sum_of_squares`]`(x)`, `_into(x, out)`, `_async(x)` | `f64` | `f64` |
//! | [`Context::norm2`]`(x)`, `_into(x, out)`, `_async(x)` | `T` | `T::NormAcc` (f64 for f32, [`ScaledSumSquares`] for f64) |
//! | [`Context::mean_var`]`(x)`, `_into(x, out)`, `_async(x)` | `Option<`[`Moments`]`>` | [`MomentsAcc`] |
//! | [`Context::min_max`]`(x)`, `_into(x, out)`, `_async(x)` | `Option<(T, T)>` | [`MinMaxPair`] |
//! | [`Context::dot`]`(x, y)`, `_into(x, y, out)`, `_async(x, y)` | `T` | `f64` |

use kernels::gpu::ShflValue as _;
use kernels::reduce::dot::{Dot, Reduce2Instance};
use kernels::reduce::transform::{MeanVar, MinMax, ScaledSsq, SumSquares};
use kernels::reduce::{ReduceInstance, ReduceParams};

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use kernels::reduce::transform::MeanVarAcc;

use crate::error::{Error, Result};
use crate::reduce::{DeviceElement, Pending, Reduce2Kernel, ReduceKernel, mirrored};
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
            variance: ((self.m2 as f64 / self.count as f64) as f32).canonical(),
            sample_variance: if self.count > 1 {
                ((self.m2 as f64 / (self.count - 1) as f64) as f32).canonical()
            } else {
                f32::NAN.canonical()
            },
        })
    }
}

/// The simulator's mean-and-variance kernel with the host's accumulator type (the same
/// `repr(C)` layout).
///
/// # Safety
/// As the kernel.
unsafe fn sim_mean_var(p: ReduceParams<f32, MomentsAcc>) {
    let k = <MeanVar as ReduceInstance<f32>>::KERNEL;
    let p = ReduceParams {
        partials: p.partials.cast(),
        out: p.out.cast(),
        input: p.input,
        input2: p.input2,
        n: p.n,
        retire_count: p.retire_count,
        done: p.done,
        tiles: p.tiles,
        seq: p.seq,
    };
    // SAFETY: the caller's struct; MomentsAcc and MeanVarAcc share their layout.
    unsafe { (k.sim)(p) }
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
    /// What [`Context::norm2_into`] leaves on the device: the f64 sum of squares for f32 (the
    /// norm is its square root, rounded to f32), a [`ScaledSumSquares`] for f64.
    type NormAcc: DeviceRepr + ValidAsZeroBits + Copy + Send + std::fmt::Debug + 'static;
    /// The sum-of-squares kernel (f64 accumulator).
    fn sum_of_squares_kernel() -> ReduceKernel<Self, f64>;
    /// The norm's kernel.
    fn norm2_kernel() -> ReduceKernel<Self, Self::NormAcc>;
    /// The norm from the norm kernel's accumulator, as [`Context::norm2`] returns it.
    fn norm_of(acc: Self::NormAcc) -> Self;
}

/// The f64 norm's accumulator as [`Context::norm2_into`] leaves it on the device (LAPACK's
/// representation; the kernel's `kernels::reduce::transform::ScaledSsq`, field for field): the
/// norm is `scale * sqrt(ssq)` ([`ScaledSumSquares::norm`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct ScaledSumSquares {
    /// The largest magnitude.
    pub scale: f64,
    /// Sum of (|x| / scale)².
    pub ssq: f64,
}

// SAFETY: plain `repr(C)` numbers, every bit pattern valid.
unsafe impl DeviceRepr for ScaledSumSquares {}
// SAFETY: as above (all-zero: the empty accumulator).
unsafe impl ValidAsZeroBits for ScaledSumSquares {}

impl ScaledSumSquares {
    /// The norm, as [`Context::norm2`] returns it (0 for empty input).
    pub fn norm(self) -> f64 {
        if self.ssq == 0.0 {
            0.0
        } else {
            (self.scale * self.ssq.sqrt()).canonical()
        }
    }
}

impl NormElement for f32 {
    type NormAcc = f64;
    fn sum_of_squares_kernel() -> ReduceKernel<f32, f64> {
        <SumSquares as ReduceInstance<f32>>::KERNEL
    }
    fn norm2_kernel() -> ReduceKernel<f32, f64> {
        // The f64 sum of f32 squares cannot overflow; one rounding of its root to f32.
        <SumSquares as ReduceInstance<f32>>::KERNEL
    }
    fn norm_of(acc: f64) -> f32 {
        // Host arithmetic on a result: the one NaN again (Rust leaves a NaN's bits open).
        (acc.sqrt() as f32).canonical()
    }
}

impl NormElement for f64 {
    type NormAcc = ScaledSumSquares;
    fn sum_of_squares_kernel() -> ReduceKernel<f64, f64> {
        <SumSquares as ReduceInstance<f64>>::KERNEL
    }
    fn norm2_kernel() -> ReduceKernel<f64, ScaledSumSquares> {
        mirrored(<ScaledSsq as ReduceInstance<f64>>::KERNEL)
    }
    fn norm_of(acc: ScaledSumSquares) -> f64 {
        acc.norm()
    }
}

/// Element types with [`Context::min_max`]: i32, u32, i64, u64, f32, f64 (one impl per type
/// of the kernels' built-in table).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no built-in min_max",
    note = "min_max takes i32, u32, i64, u64, f32 or f64"
)]
pub trait MinMaxElement: DeviceElement {
    /// The min-and-max kernel.
    fn min_max_kernel() -> ReduceKernel<Self, MinMaxPair<Self>>;
}

/// The smallest and the largest element as [`Context::min_max_into`] leaves them on the device
/// (the kernel's `kernels::reduce::transform::MinMaxAcc`, field for field). Empty input gives
/// the identities, `min > max` (`+inf`/`-inf`, or `MAX`/`MIN`).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct MinMaxPair<T> {
    /// The minimum (`Min`'s semantics: NaN wins, `-0.0 < +0.0`).
    pub min: T,
    /// The maximum (`Max`'s semantics).
    pub max: T,
}

// SAFETY: `repr(C)` pair of device elements.
unsafe impl<T: DeviceRepr> DeviceRepr for MinMaxPair<T> {}
// SAFETY: as above.
unsafe impl<T: ValidAsZeroBits> ValidAsZeroBits for MinMaxPair<T> {}

impl<T: PartialOrd> MinMaxPair<T> {
    /// `(min, max)` as [`Context::min_max`] returns it: `None` for empty input (the
    /// identities, `min > max`; a NaN makes both NaN, which is no empty input).
    pub fn get(self) -> Option<(T, T)> {
        let empty = self.min.partial_cmp(&self.max) == Some(std::cmp::Ordering::Greater);
        (!empty).then_some((self.min, self.max))
    }
}

macro_rules! min_max_element {
    ($t:ident $ops:tt) => {
        impl MinMaxElement for $t {
            fn min_max_kernel() -> ReduceKernel<$t, MinMaxPair<$t>> {
                mirrored(<MinMax as ReduceInstance<$t>>::KERNEL)
            }
        }
    };
}
kernels::builtin_table!(types min_max_element! {} int float);

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
        self.reduce_to_host(&crate::BUILTIN, &T::sum_of_squares_kernel(), x.into())
    }

    /// [`Context::sum_of_squares`] left on the device in `out[0]` (never blocks; can be
    /// captured into a CUDA graph).
    pub fn sum_of_squares_into<'a, 'b, T: NormElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, f64>>,
    ) -> Result<()> {
        let k = T::sum_of_squares_kernel();
        self.reduce_into_buf(&crate::BUILTIN, &k, x.into(), out.into())
    }

    /// [`Context::sum_of_squares`] without blocking.
    pub fn sum_of_squares_async<'a, T: NormElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
    ) -> Result<Pending<'_, f64>> {
        let k = T::sum_of_squares_kernel();
        self.reduce_to_pending(&crate::BUILTIN, &k, x.into(), |a| a)
    }

    /// The Euclidean (L2) norm in one pass, without overflow or underflow of the squares: f32
    /// through an f64 sum of squares (then one rounding), f64 through a scaled sum of squares
    /// (LAPACK's representation: the largest |x| and the sum of (|x|/largest)²). Empty input
    /// gives 0; a NaN gives NaN; an infinity gives infinity.
    pub fn norm2<'a, T: NormElement>(&self, x: impl Into<DeviceView<'a, T>>) -> Result<T> {
        let acc = self.reduce_to_host(&crate::BUILTIN, &T::norm2_kernel(), x.into())?;
        Ok(T::norm_of(acc))
    }

    /// [`Context::norm2`]'s accumulator left on the device in `out[0]` (`T::NormAcc`: for
    /// f32 the f64 sum of squares, whose root is the norm; for f64 a [`ScaledSumSquares`]).
    /// Never blocks; can be captured into a CUDA graph.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, ScaledSumSquares};
    /// let ctx = Context::sim()?;
    /// let x = ctx.htod(&[3.0f64, -4.0])?;
    /// let mut out = ctx.alloc_zeros::<ScaledSumSquares>(1)?;
    /// ctx.norm2_into(&x, &mut out)?;
    /// assert_eq!(ctx.dtoh(&out)?[0].norm(), 5.0);
    /// # Ok(()) }
    /// ```
    pub fn norm2_into<'a, 'b, T: NormElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, T::NormAcc>>,
    ) -> Result<()> {
        let k = T::norm2_kernel();
        self.reduce_into_buf(&crate::BUILTIN, &k, x.into(), out.into())
    }

    /// [`Context::norm2`] without blocking.
    pub fn norm2_async<'a, T: NormElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
    ) -> Result<Pending<'_, T>> {
        let k = T::norm2_kernel();
        self.reduce_to_pending(&crate::BUILTIN, &k, x.into(), T::norm_of)
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

    /// [`Context::mean_var`] without blocking.
    pub fn mean_var_async<'a>(
        &self,
        x: impl Into<DeviceView<'a, f32>>,
    ) -> Result<Pending<'_, Option<Moments>>> {
        let x = x.into();
        check_mean_var_len(x.len())?;
        self.reduce_to_pending(&crate::BUILTIN, &mean_var_kernel(), x, MomentsAcc::moments)
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
    pub fn min_max<'a, T: MinMaxElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
    ) -> Result<Option<(T, T)>> {
        let x = x.into();
        if x.is_empty() {
            return Ok(None);
        }
        let a = self.reduce_to_host(&crate::BUILTIN, &T::min_max_kernel(), x)?;
        Ok(Some((a.min, a.max)))
    }

    /// [`Context::min_max`] left on the device in `out[0]` (empty input: the identities,
    /// `min > max`; see [`MinMaxPair::get`]). Never blocks; can be captured into a CUDA graph.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, MinMaxPair};
    /// let ctx = Context::sim()?;
    /// let x = ctx.htod(&[3i64, -7, 5])?;
    /// let mut out = ctx.alloc_zeros::<MinMaxPair<i64>>(1)?;
    /// ctx.min_max_into(&x, &mut out)?;
    /// assert_eq!(ctx.dtoh(&out)?[0].get(), Some((-7, 5)));
    /// # Ok(()) }
    /// ```
    pub fn min_max_into<'a, 'b, T: MinMaxElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, MinMaxPair<T>>>,
    ) -> Result<()> {
        let k = T::min_max_kernel();
        self.reduce_into_buf(&crate::BUILTIN, &k, x.into(), out.into())
    }

    /// [`Context::min_max`] without blocking.
    pub fn min_max_async<'a, T: MinMaxElement>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
    ) -> Result<Pending<'_, Option<(T, T)>>> {
        let x = x.into();
        let empty = x.is_empty();
        let k = T::min_max_kernel();
        if empty {
            return Ok(self.pending_ready(k.name, Ok(None)));
        }
        self.reduce_to_pending(&crate::BUILTIN, &k, x, |a| Some((a.min, a.max)))
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
    /// The dot-product kernel (f64 accumulator).
    fn dot_kernel() -> Reduce2Kernel<Self, f64>;
    /// The dot product from the accumulator, as [`Context::dot`] returns it.
    fn dot_of(acc: f64) -> Self;
}

impl DotElement for f32 {
    fn dot_kernel() -> Reduce2Kernel<f32, f64> {
        <Dot as Reduce2Instance<f32>>::KERNEL
    }
    fn dot_of(acc: f64) -> f32 {
        (acc as f32).canonical()
    }
}

impl DotElement for f64 {
    fn dot_kernel() -> Reduce2Kernel<f64, f64> {
        <Dot as Reduce2Instance<f64>>::KERNEL
    }
    fn dot_of(acc: f64) -> f64 {
        acc
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
        let acc = self.reduce2_to_host(&crate::BUILTIN, &T::dot_kernel(), x.into(), y.into())?;
        Ok(T::dot_of(acc))
    }

    /// [`Context::dot`] left on the device in `out[0]`, as the f64 accumulator (for f32 the
    /// value before its one rounding). Never blocks; can be captured into a CUDA graph.
    pub fn dot_into<'a, 'b, 'c, T: DotElement + 'a + 'b>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        y: impl Into<DeviceView<'b, T>>,
        out: impl Into<DeviceViewMut<'c, f64>>,
    ) -> Result<()> {
        let k = T::dot_kernel();
        self.reduce2_into_buf(&crate::BUILTIN, &k, x.into(), y.into(), out.into())
    }

    /// [`Context::dot`] without blocking.
    pub fn dot_async<'a, 'b, T: DotElement + 'a + 'b>(
        &self,
        x: impl Into<DeviceView<'a, T>>,
        y: impl Into<DeviceView<'b, T>>,
    ) -> Result<Pending<'_, T>> {
        let k = T::dot_kernel();
        self.reduce2_pending(&crate::BUILTIN, &k, x.into(), y.into(), T::dot_of)
    }
}
