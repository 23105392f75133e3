//! Device-wide reductions, one launch each: sum, product, min, max, bitwise and/or/xor,
//! argmin/argmax, a compensated f32 sum, and user operators compiled into kernels.
//!
//! Semantics (see `kernels::ops`): integer sums and products wrap; float min/max propagate NaN
//! and order `-0.0 < +0.0`; argmin/argmax give the first occurrence, NaN winning; the empty
//! input gives the operator's identity (`None` for argmin/argmax). Results are deterministic:
//! the same input gives the same bits on every run, GPU and the simulator.

use std::fmt::Debug;

use cudarc::driver::{DeviceRepr, PushKernelArg, ValidAsZeroBits};
use kernels::Kernel;
use kernels::ops::{
    ArgAcc, ArgMax, ArgMin, BitAnd, BitOr, BitXor, Max, Min, Product, Sum, SumCompensated,
};
use kernels::reduce::policy::{BLOCK, POLICY};
use kernels::reduce::{ReduceInstance, SimReduceFn};

use crate::error::{Error, Result};
use crate::runtime::{Backend, Context, DeviceBuffer, DeviceView, KernelLibrary, LaunchShape};

/// The built-in reductions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// Sum (integers wrap).
    Sum,
    /// Product (integers wrap).
    Product,
    /// Minimum (floats: NaN wins, -0.0 < +0.0).
    Min,
    /// Maximum (floats: NaN wins, -0.0 < +0.0).
    Max,
    /// Bitwise and (integers).
    And,
    /// Bitwise or (integers).
    Or,
    /// Bitwise xor (integers).
    Xor,
}

impl Reduction {
    /// Every built-in reduction.
    pub const ALL: [Reduction; 7] = [
        Reduction::Sum,
        Reduction::Product,
        Reduction::Min,
        Reduction::Max,
        Reduction::And,
        Reduction::Or,
        Reduction::Xor,
    ];

    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Reduction::Sum => "sum",
            Reduction::Product => "product",
            Reduction::Min => "min",
            Reduction::Max => "max",
            Reduction::And => "and",
            Reduction::Or => "or",
            Reduction::Xor => "xor",
        }
    }
}

/// A reduction kernel as the host calls it.
pub type ReduceKernel<T, A> = Kernel<SimReduceFn<T, A>>;

/// Element types of the device reductions: i32, u32, i64, u64, f32, f64. The kernels come from
/// the `kernels` crate's macro invocations (its `ReduceInstance` impls); nothing here names one.
pub trait DeviceElement:
    kernels::ops::Num + DeviceRepr + ValidAsZeroBits + Copy + Send + Sync + Debug
{
    /// The type's name in messages (`"f32"`).
    const DTYPE: &'static str;
    /// The kernel of `op` for this type; `None` where the operator is not defined (bitwise
    /// operators on floats).
    fn kernel(op: Reduction) -> Option<ReduceKernel<Self, Self>>;
    /// The argmin kernel.
    fn argmin_kernel() -> ReduceKernel<Self, ArgAcc<Self>>;
    /// The argmax kernel.
    fn argmax_kernel() -> ReduceKernel<Self, ArgAcc<Self>>;
}

macro_rules! element {
    ($t:ty, int) => {
        element!(
            $t,
            Some(<BitAnd as ReduceInstance<$t>>::KERNEL),
            Some(<BitOr as ReduceInstance<$t>>::KERNEL),
            Some(<BitXor as ReduceInstance<$t>>::KERNEL)
        );
    };
    ($t:ty, float) => {
        element!($t, None, None, None);
    };
    ($t:ty, $and:expr, $or:expr, $xor:expr) => {
        impl DeviceElement for $t {
            const DTYPE: &'static str = stringify!($t);
            fn kernel(op: Reduction) -> Option<ReduceKernel<Self, Self>> {
                match op {
                    Reduction::Sum => Some(<Sum as ReduceInstance<$t>>::KERNEL),
                    Reduction::Product => Some(<Product as ReduceInstance<$t>>::KERNEL),
                    Reduction::Min => Some(<Min as ReduceInstance<$t>>::KERNEL),
                    Reduction::Max => Some(<Max as ReduceInstance<$t>>::KERNEL),
                    Reduction::And => $and,
                    Reduction::Or => $or,
                    Reduction::Xor => $xor,
                }
            }
            fn argmin_kernel() -> ReduceKernel<Self, ArgAcc<Self>> {
                <ArgMin as ReduceInstance<$t>>::KERNEL
            }
            fn argmax_kernel() -> ReduceKernel<Self, ArgAcc<Self>> {
                <ArgMax as ReduceInstance<$t>>::KERNEL
            }
        }
    };
}
element!(i32, int);
element!(u32, int);
element!(i64, int);
element!(u64, int);
element!(f32, float);
element!(f64, float);

/// Accumulators are at most 16 bytes: they come back through a 2-word buffer.
const ACC_WORDS: usize = 2;

/// Scratch of the one-launch reduction: one partial per tile and the retirement counter (kept
/// at zero between launches by the kernel itself); allocated at the first reduction.
#[derive(Default)]
struct ReduceWorkspace {
    /// `POLICY.max_tiles` accumulators of up to 16 bytes, and the counter.
    bufs: Option<(DeviceBuffer<u64>, DeviceBuffer<u32>)>,
    /// Test override of the physical grid (0: automatic).
    grid_override: u32,
}

impl Context {
    /// Cap the physical grid of the reductions (`None`: automatic). For tests that show the
    /// result does not depend on the grid.
    #[doc(hidden)]
    pub fn set_reduce_grid_limit(&self, grid: Option<u32>) {
        let ws = self.workspace::<ReduceWorkspace>();
        ws.lock().unwrap_or_else(|p| p.into_inner()).grid_override = grid.map_or(0, |g| g.max(1));
    }

    /// Launch reduction kernel `k` of `lib` over `input`, writing its accumulator to `out` (an
    /// address of this context's memory with room for one `A`), then `seq` to the flag at
    /// `done` when that is not 0.
    fn launch_reduce<T: DeviceElement, A: Copy>(
        &self,
        lib: &'static KernelLibrary,
        k: &ReduceKernel<T, A>,
        input: DeviceView<'_, T>,
        out: u64,
        done: u64,
        seq: u32,
    ) -> Result<()> {
        const { assert!(std::mem::size_of::<A>() <= 16) };
        self.check(&[input.backend()])?;
        let n = input.len() as u64;
        let input_addr = self.view_addr(&input);
        let ws = self.workspace::<ReduceWorkspace>();
        // A poisoned lock only means another thread panicked mid-call; the workspace itself is
        // still consistent (the kernel resets its counter), so keep going.
        let mut ws = ws.lock().unwrap_or_else(|p| p.into_inner());
        if ws.bufs.is_none() {
            let partials = self.alloc_zeros::<u64>(2 * POLICY.max_tiles as usize)?;
            ws.bufs = Some((partials, self.alloc_zeros::<u32>(1)?));
        }
        let Some((partials, counter)) = &ws.bufs else {
            unreachable!("allocated just above")
        };
        let (partials, counter) = (self.addr(partials), self.addr(counter));
        let tiles = POLICY.tiles(n, std::mem::size_of::<T>() as u64);
        // One full wave of the device (as many blocks per SM as the kernel's registers allow:
        // an f64 sum keeps 6 blocks of 256 per SM, not 8, and a grid sized for 8 left a ragged
        // second wave, 5-7% slower on an H200), or the test override. Never changes a bit.
        let limit = match (ws.grid_override, &self.backend) {
            (0, Backend::Cuda(_)) => {
                self.info().multiprocessors.max(1)
                    * self.kernel(lib, k.name)?.blocks_per_sm(BLOCK)?
            }
            (0, Backend::Sim) => u32::MAX,
            (g, _) => g,
        };
        // As few blocks as give every block the same number of tiles within the limit (2048
        // tiles on 1056 block slots: 1024 blocks of 2 tiles, not 1056 blocks with a ragged
        // second round).
        let rounds = tiles.div_ceil(limit.max(1));
        let grid = tiles.div_ceil(rounds);
        let sim = k.sim;
        // SAFETY: the arguments of `reduce_device` in order; the same values for the simulator,
        // as addresses of this context's (host) memory.
        unsafe {
            self.launch(
                lib,
                k.name,
                LaunchShape::linear(grid, BLOCK, 0),
                |b| {
                    b.arg(&input_addr)
                        .arg(&n)
                        .arg(&tiles)
                        .arg(&partials)
                        .arg(&counter)
                        .arg(&out)
                        .arg(&done)
                        .arg(&seq);
                },
                || {
                    sim(
                        input_addr as *const T,
                        n,
                        tiles,
                        partials as *mut A,
                        counter as *mut u32,
                        out as *mut A,
                        done as *mut u32,
                        seq,
                    )
                },
            )
        }
    }

    /// Run `k` and read its accumulator back. On a GPU the kernel writes straight into mapped
    /// pinned host memory and then raises a flag there; the host polls the flag, so the call is
    /// one launch and no driver synchronisation on the way back (~1-2 µs less than
    /// `cuStreamSynchronize`, which waits for the driver to see the kernel end).
    fn reduce_to_host<T: DeviceElement, A: Copy>(
        &self,
        lib: &'static KernelLibrary,
        k: &ReduceKernel<T, A>,
        input: DeviceView<'_, T>,
    ) -> Result<A> {
        let as_launch = |e| match e {
            // An asynchronous kernel fault surfaces at the next synchronising call.
            Error::Driver { source, .. } => Error::Launch {
                kernel: k.name.into(),
                source,
            },
            e => e,
        };
        let words: [u64; ACC_WORDS] = match &self.backend {
            Backend::Cuda(c) => {
                let mut r = c.result.lock().unwrap_or_else(|p| p.into_inner());
                let seq = r.next_seq();
                self.launch_reduce(lib, k, input, r.device_addr, r.flag_device_addr(), seq)?;
                r.wait(seq, &c.stream).map_err(as_launch)?
            }
            Backend::Sim => {
                let out = self.alloc_zeros::<u64>(ACC_WORDS)?;
                self.launch_reduce(lib, k, input, self.addr(&out), 0, 0)?;
                let v = self.dtoh(&out)?;
                [v[0], v[1]]
            }
        };
        // SAFETY: the kernel wrote one A (<= 16 bytes, plain data) at the start of the words.
        Ok(unsafe { std::ptr::read_unaligned(words.as_ptr() as *const A) })
    }

    fn kernel_for<T: DeviceElement>(op: Reduction) -> Result<ReduceKernel<T, T>> {
        T::kernel(op).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "the {} reduction is defined for integers, not {}",
                op.name(),
                T::DTYPE
            ))
        })
    }

    /// Leave `k`'s result on the device in `out[0]`.
    fn reduce_into_buf<T: DeviceElement, A: Copy>(
        &self,
        lib: &'static KernelLibrary,
        k: &ReduceKernel<T, A>,
        input: DeviceView<'_, T>,
        out: &mut DeviceBuffer<A>,
    ) -> Result<()> {
        if out.is_empty() {
            return Err(Error::InvalidArgument(
                "the output buffer of a reduction must hold at least 1 element".into(),
            ));
        }
        self.check(&[out.backend()])?;
        self.launch_reduce(lib, k, input, self.addr(out), 0, 0)
    }

    /// Reduce `input` with `op` in one launch and return the result. Empty input gives the
    /// operator's identity.
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
    pub fn reduce_into<'a, T: DeviceElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
        op: Reduction,
        out: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let k = Self::kernel_for::<T>(op)?;
        self.reduce_into_buf(&crate::BUILTIN, &k, input.into(), out)
    }

    /// Sum (integers wrap).
    ///
    /// ```
    /// # fn main() -> gpu_reduce::Result<()> {
    /// let ctx = gpu_reduce::Context::sim()?;
    /// let x = ctx.htod(&[1.0f32, 2.0, 3.0])?;
    /// assert_eq!(ctx.sum(&x)?, 6.0);
    /// # Ok(()) }
    /// ```
    pub fn sum<'a, T: DeviceElement>(&self, input: impl Into<DeviceView<'a, T>>) -> Result<T> {
        self.reduce(input, Reduction::Sum)
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

    /// Accurate f32 sum (f64 accumulation throughout, one rounding at the end; see
    /// `kernels::ops::SumCompensated`): |result - exact| <= u32*|exact| + depth*u64*sum|x|.
    pub fn sum_compensated<'a>(&self, input: impl Into<DeviceView<'a, f32>>) -> Result<f32> {
        let k = <SumCompensated as ReduceInstance<f32>>::KERNEL;
        Ok(self.reduce_to_host(&crate::BUILTIN, &k, input.into())? as f32)
    }

    /// The accurate sum left on the device, as the f64 before its final rounding.
    pub fn sum_compensated_into<'a>(
        &self,
        input: impl Into<DeviceView<'a, f32>>,
        out: &mut DeviceBuffer<f64>,
    ) -> Result<()> {
        let k = <SumCompensated as ReduceInstance<f32>>::KERNEL;
        self.reduce_into_buf(&crate::BUILTIN, &k, input.into(), out)
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
}
