//! The public one-value calls of [`Context`]: `reduce`, `sum`, `argmin`/`argmax`,
//! `sum_compensated`, `reduce_custom`, each blocking, `_into` and `_async`.

use kernels::gpu::ShflValue as _;
use kernels::ops::SumCompensated;
use kernels::reduce::ReduceInstance;

use super::{ArgValue, DeviceElement, Job, Pending, ReduceKernel, Reduction, mirrored};
use crate::error::{Error, Result};
use crate::runtime::{Context, DeviceView, DeviceViewMut, KernelLibrary};

impl Context {
    /// The built-in kernel of `op` for `T`, or why the library has none.
    fn kernel_for<T: DeviceElement>(op: Reduction) -> Result<ReduceKernel<T, T>> {
        T::kernel(op).ok_or_else(|| Error::Unsupported {
            op: format!("the {} reduction", op.name()),
            dtype: T::DTYPE,
            reason: match op {
                Reduction::Sum => "it accumulates in f32: call Context::sum, which returns the f32",
                Reduction::Product => "the library has no product of this type",
                _ => "the reduction is defined for integers",
            },
        })
    }

    /// Reduce `input` with `op` in one launch and return the result. Empty input gives the
    /// operator's identity. Blocks until the value is on the host (see
    /// [`Context::reduce_async`] for a form that does not).
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, Reduction};
    /// let ctx = Context::sim()?;
    /// let x = ctx.htod(&[3i32, -7, 5])?;
    /// assert_eq!(ctx.reduce(&x, Reduction::Min)?, -7);
    /// assert_eq!(ctx.reduce(x.view(1..)?, Reduction::Max)?, 5);
    /// # Ok(()) }
    /// ```
    pub fn reduce<'a, T: DeviceElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
        op: Reduction,
    ) -> Result<T> {
        self.reduce_to_host(&crate::BUILTIN, &Self::kernel_for::<T>(op)?, input.into())
    }

    /// Reduce `input` with `op` in one launch, leaving the result on the device in `out[0]`.
    /// Queued on the context's stream; never blocks the host. Can be captured into a CUDA
    /// graph.
    pub fn reduce_into<'a, 'b, T: DeviceElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, T>>,
        op: Reduction,
    ) -> Result<()> {
        let k = Self::kernel_for::<T>(op)?;
        self.reduce_into_buf(&crate::BUILTIN, &k, input.into(), out.into())
    }

    /// [`Context::reduce`] without blocking: the kernel is queued, the handle's
    /// [`Pending::wait`] returns the value.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{Context, Reduction};
    /// let ctx = Context::sim()?;
    /// let x = ctx.htod(&[3i64, 4, 5])?;
    /// let pending = ctx.reduce_async(&x, Reduction::Sum)?;
    /// // ... other host work ...
    /// assert_eq!(pending.wait()?, 12);
    /// # Ok(()) }
    /// ```
    pub fn reduce_async<'a, T: DeviceElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
        op: Reduction,
    ) -> Result<Pending<'_, T>> {
        let k = Self::kernel_for::<T>(op)?;
        self.reduce_pending(&crate::BUILTIN, Job::One(&k, input.into()), |a| a)
    }

    /// Sum (integers wrap). `f16` and `bf16` (the `f16` feature) sum in f32 and return the f32
    /// (`T::Sum`): every element converts exactly, every addition is an f32 addition; NaN
    /// propagates, `+inf + -inf` is NaN, and a sum beyond the 16-bit range (65504 for f16) is the
    /// finite f32, not inf.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[1.0f32, 2.0, 3.0])?;
    /// assert_eq!(ctx.sum(&x)?, 6.0);
    /// # #[cfg(feature = "f16")] {
    /// let h = ctx.htod(&[half::f16::from_f32(60000.0); 2])?;
    /// assert_eq!(ctx.sum(&h)?, 120000.0f32); // f32, past f16's range
    /// # }
    /// # Ok(()) }
    /// ```
    pub fn sum<'a, T: DeviceElement>(&self, input: impl Into<DeviceView<'a, T>>) -> Result<T::Sum> {
        self.reduce_to_host(&crate::BUILTIN, &T::sum_kernel(), input.into())
    }

    /// [`Context::sum`] left on the device in `out[0]` (never blocks; can be captured into a
    /// CUDA graph).
    pub fn sum_into<'a, 'b, T: DeviceElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, T::Sum>>,
    ) -> Result<()> {
        self.reduce_into_buf(&crate::BUILTIN, &T::sum_kernel(), input.into(), out.into())
    }

    /// [`Context::sum`] without blocking.
    pub fn sum_async<'a, T: DeviceElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
    ) -> Result<Pending<'_, T::Sum>> {
        self.reduce_to_pending(&crate::BUILTIN, &T::sum_kernel(), input.into(), |a| a)
    }

    /// The smallest value and the index of its first occurrence (a NaN wins); `None` for empty
    /// input.
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[4u32, 1, 9, 1])?;
    /// assert_eq!(ctx.argmin(&x)?, Some((1, 1)));
    /// # Ok(()) }
    /// ```
    pub fn argmin<'a, T: DeviceElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
    ) -> Result<Option<(u64, T)>> {
        let a = self.reduce_to_host(&crate::BUILTIN, &T::argmin_kernel(), input.into())?;
        Ok((a.index != u64::MAX).then_some((a.index, a.value)))
    }

    /// The largest value and the index of its first occurrence (a NaN wins); `None` for empty
    /// input.
    pub fn argmax<'a, T: DeviceElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
    ) -> Result<Option<(u64, T)>> {
        let a = self.reduce_to_host(&crate::BUILTIN, &T::argmax_kernel(), input.into())?;
        Ok((a.index != u64::MAX).then_some((a.index, a.value)))
    }

    /// [`Context::argmin`] left on the device in `out[0]` (index `u64::MAX` for empty input;
    /// never blocks; can be captured into a CUDA graph).
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::{ArgValue, Context};
    /// let ctx = Context::sim()?;
    /// let x = ctx.htod(&[4u32, 1, 9, 1])?;
    /// let mut out = ctx.alloc_zeros::<ArgValue<u32>>(1)?;
    /// ctx.argmin_into(&x, &mut out)?;
    /// assert_eq!(ctx.dtoh(&out)?[0].get(), Some((1, 1)));
    /// # Ok(()) }
    /// ```
    pub fn argmin_into<'a, 'b, T: DeviceElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, ArgValue<T>>>,
    ) -> Result<()> {
        let k = mirrored(T::argmin_kernel());
        self.reduce_into_buf(&crate::BUILTIN, &k, input.into(), out.into())
    }

    /// [`Context::argmax`] left on the device in `out[0]`, as [`Context::argmin_into`].
    pub fn argmax_into<'a, 'b, T: DeviceElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, ArgValue<T>>>,
    ) -> Result<()> {
        let k = mirrored(T::argmax_kernel());
        self.reduce_into_buf(&crate::BUILTIN, &k, input.into(), out.into())
    }

    /// [`Context::argmin`] without blocking.
    pub fn argmin_async<'a, T: DeviceElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
    ) -> Result<Pending<'_, Option<(u64, T)>>> {
        let k = T::argmin_kernel();
        self.reduce_to_pending(&crate::BUILTIN, &k, input.into(), |a| {
            ArgValue::from(a).get()
        })
    }

    /// [`Context::argmax`] without blocking.
    pub fn argmax_async<'a, T: DeviceElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
    ) -> Result<Pending<'_, Option<(u64, T)>>> {
        let k = T::argmax_kernel();
        self.reduce_to_pending(&crate::BUILTIN, &k, input.into(), |a| {
            ArgValue::from(a).get()
        })
    }

    /// Accurate f32 sum (f64 accumulation throughout, one rounding at the end; see
    /// `kernels::ops::SumCompensated`): |result - exact| <= u32*|exact| + depth*u64*sum|x|.
    pub fn sum_compensated<'a>(&self, input: impl Into<DeviceView<'a, f32>>) -> Result<f32> {
        let k = <SumCompensated as ReduceInstance<f32>>::KERNEL;
        Ok((self.reduce_to_host(&crate::BUILTIN, &k, input.into())? as f32).canonical())
    }

    /// [`Context::sum_compensated`] without blocking.
    pub fn sum_compensated_async<'a>(
        &self,
        input: impl Into<DeviceView<'a, f32>>,
    ) -> Result<Pending<'_, f32>> {
        let k = <SumCompensated as ReduceInstance<f32>>::KERNEL;
        self.reduce_to_pending(&crate::BUILTIN, &k, input.into(), |a| {
            (a as f32).canonical()
        })
    }

    /// The accurate sum left on the device, as the f64 before its final rounding.
    pub fn sum_compensated_into<'a, 'b>(
        &self,
        input: impl Into<DeviceView<'a, f32>>,
        out: impl Into<DeviceViewMut<'b, f64>>,
    ) -> Result<()> {
        let k = <SumCompensated as ReduceInstance<f32>>::KERNEL;
        self.reduce_into_buf(&crate::BUILTIN, &k, input.into(), out.into())
    }

    /// A user operator's reduction: `O`'s kernel over `T`, exported by `kernels::reduce_kernels!`
    /// in a kernel crate whose PTX `lib` embeds. Returns the operator's accumulator.
    pub fn reduce_custom<'a, T: DeviceElement, O: ReduceInstance<T>>(
        &self,
        lib: &'static KernelLibrary,
        input: impl Into<DeviceView<'a, T>>,
    ) -> Result<O::Acc> {
        self.reduce_to_host(lib, &O::KERNEL, input.into())
    }

    /// [`Context::reduce_custom`] without blocking.
    pub fn reduce_custom_async<'a, T: DeviceElement, O: ReduceInstance<T>>(
        &self,
        lib: &'static KernelLibrary,
        input: impl Into<DeviceView<'a, T>>,
    ) -> Result<Pending<'_, O::Acc>> {
        self.reduce_pending(lib, Job::One(&O::KERNEL, input.into()), |a| a)
    }

    /// A user operator's reduction left on the device in `out[0]` (never blocks; can be
    /// captured into a CUDA graph).
    pub fn reduce_custom_into<'a, 'b, T: DeviceElement, O: ReduceInstance<T>>(
        &self,
        lib: &'static KernelLibrary,
        input: impl Into<DeviceView<'a, T>>,
        out: impl Into<DeviceViewMut<'b, O::Acc>>,
    ) -> Result<()>
    where
        O::Acc: 'b,
    {
        self.reduce_into_buf(lib, &O::KERNEL, input.into(), out.into())
    }
}
