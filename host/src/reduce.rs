//! Device-wide reductions, one launch each: sum, product, min, max, bitwise and/or/xor,
//! argmin/argmax, a compensated f32 sum, and user operators compiled into the kernels.
//!
//! Semantics (see `kernels::ops`): integer sums and products wrap; float min/max propagate NaN
//! and order `-0.0 < +0.0`; argmin/argmax give the first occurrence, NaN winning; the empty
//! input gives the operator's identity (`None` for argmin/argmax). Results are deterministic:
//! the same input gives the same bits on every run, GPU and the simulator.

use std::fmt::Debug;

use cudarc::driver::{DeviceRepr, PushKernelArg, ValidAsZeroBits};
use kernels::launch::{REDUCE_BLOCK, reduce_grid};
use kernels::ops::ArgAcc;

use crate::context::{Context, DeviceBuffer, DeviceView, LaunchShape};
use crate::error::{Error, Result};

/// The built-in reductions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reduction {
    Sum,
    Product,
    Min,
    Max,
    /// Bitwise and (integers).
    And,
    /// Bitwise or (integers).
    Or,
    /// Bitwise xor (integers).
    Xor,
}

impl Reduction {
    pub const ALL: [Reduction; 7] = [
        Reduction::Sum,
        Reduction::Product,
        Reduction::Min,
        Reduction::Max,
        Reduction::And,
        Reduction::Or,
        Reduction::Xor,
    ];
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

/// The simulator's entry point of a reduction kernel: input, n, tiles, partials, counter,
/// output, done flag (or null), sequence number.
pub type SimReduceFn<T, A> = unsafe fn(*const T, u64, u32, *mut A, *mut u32, *mut A, *mut u32, u32);

/// A reduction kernel: its PTX name and its simulator function.
pub struct ReduceKernel<T, A> {
    pub name: &'static str,
    pub sim: SimReduceFn<T, A>,
}

/// Element types of the device reductions: i32, u32, i64, u64, f32, f64.
pub trait DeviceElement:
    kernels::ops::Num + DeviceRepr + ValidAsZeroBits + Copy + Send + Sync + Debug
{
    const DTYPE: &'static str;
    /// The kernel of `op` for this type; `None` where the operator is not defined (bitwise
    /// operators on floats).
    fn kernel(op: Reduction) -> Option<ReduceKernel<Self, Self>>;
    fn argmin_kernel() -> ReduceKernel<Self, ArgAcc<Self>>;
    fn argmax_kernel() -> ReduceKernel<Self, ArgAcc<Self>>;
}

macro_rules! k {
    ($name:ident) => {
        ReduceKernel {
            name: stringify!($name),
            sim: kernels::reduce::$name,
        }
    };
}

macro_rules! int_element {
    ($t:ty, $s:literal, $sum:ident, $prod:ident, $min:ident, $max:ident, $and:ident, $or:ident, $xor:ident, $amin:ident, $amax:ident) => {
        impl DeviceElement for $t {
            const DTYPE: &'static str = $s;
            fn kernel(op: Reduction) -> Option<ReduceKernel<Self, Self>> {
                Some(match op {
                    Reduction::Sum => k!($sum),
                    Reduction::Product => k!($prod),
                    Reduction::Min => k!($min),
                    Reduction::Max => k!($max),
                    Reduction::And => k!($and),
                    Reduction::Or => k!($or),
                    Reduction::Xor => k!($xor),
                })
            }
            fn argmin_kernel() -> ReduceKernel<Self, ArgAcc<Self>> {
                k!($amin)
            }
            fn argmax_kernel() -> ReduceKernel<Self, ArgAcc<Self>> {
                k!($amax)
            }
        }
    };
}
macro_rules! float_element {
    ($t:ty, $s:literal, $sum:ident, $prod:ident, $min:ident, $max:ident, $amin:ident, $amax:ident) => {
        impl DeviceElement for $t {
            const DTYPE: &'static str = $s;
            fn kernel(op: Reduction) -> Option<ReduceKernel<Self, Self>> {
                match op {
                    Reduction::Sum => Some(k!($sum)),
                    Reduction::Product => Some(k!($prod)),
                    Reduction::Min => Some(k!($min)),
                    Reduction::Max => Some(k!($max)),
                    Reduction::And | Reduction::Or | Reduction::Xor => None,
                }
            }
            fn argmin_kernel() -> ReduceKernel<Self, ArgAcc<Self>> {
                k!($amin)
            }
            fn argmax_kernel() -> ReduceKernel<Self, ArgAcc<Self>> {
                k!($amax)
            }
        }
    };
}
#[rustfmt::skip]
int_element!(i32, "i32", reduce_sum_i32, reduce_product_i32, reduce_min_i32, reduce_max_i32, reduce_and_i32, reduce_or_i32, reduce_xor_i32, reduce_argmin_i32, reduce_argmax_i32);
#[rustfmt::skip]
int_element!(u32, "u32", reduce_sum_u32, reduce_product_u32, reduce_min_u32, reduce_max_u32, reduce_and_u32, reduce_or_u32, reduce_xor_u32, reduce_argmin_u32, reduce_argmax_u32);
#[rustfmt::skip]
int_element!(i64, "i64", reduce_sum_i64, reduce_product_i64, reduce_min_i64, reduce_max_i64, reduce_and_i64, reduce_or_i64, reduce_xor_i64, reduce_argmin_i64, reduce_argmax_i64);
#[rustfmt::skip]
int_element!(u64, "u64", reduce_sum_u64, reduce_product_u64, reduce_min_u64, reduce_max_u64, reduce_and_u64, reduce_or_u64, reduce_xor_u64, reduce_argmin_u64, reduce_argmax_u64);
#[rustfmt::skip]
float_element!(f32, "f32", reduce_sum_f32, reduce_product_f32, reduce_min_f32, reduce_max_f32, reduce_argmin_f32, reduce_argmax_f32);
#[rustfmt::skip]
float_element!(f64, "f64", reduce_sum_f64, reduce_product_f64, reduce_min_f64, reduce_max_f64, reduce_argmin_f64, reduce_argmax_f64);

/// Accumulators are at most 16 bytes: they come back through a 2-word buffer.
const ACC_WORDS: usize = 2;

impl Context {
    /// Most blocks reduction kernel `name` launches: one full wave of the device (as many
    /// blocks per SM as the kernel's registers allow), or the test override. Never changes a
    /// result's bits, only the speed.
    fn reduce_grid_limit(&self, name: &str) -> u32 {
        match self
            .reduce_grid_override
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            0 => match &self.backend {
                crate::context::Backend::Cuda(c) => {
                    self.info().multiprocessors.max(1) * c.reduce_blocks_per_sm(name)
                }
                crate::context::Backend::Sim => u32::MAX,
            },
            g => g,
        }
    }

    /// Cap the physical grid of the reductions (`None`: automatic). For tests that show the
    /// result does not depend on the grid.
    #[doc(hidden)]
    pub fn set_reduce_grid_limit(&self, grid: Option<u32>) {
        let g = grid.map_or(0, |g| g.max(1));
        self.reduce_grid_override
            .store(g, std::sync::atomic::Ordering::Relaxed);
    }

    /// Launch reduction kernel `k` over `input`, writing its accumulator to `out` (an address
    /// of this context's memory with room for one `A`), then `seq` to the flag at `done` when
    /// that is not 0.
    fn launch_reduce<T: DeviceElement, A: Copy>(
        &self,
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
        // A poisoned lock only means another thread panicked mid-call; the workspace itself is
        // still consistent (the kernel resets its counter), so keep going.
        let ws = self.reduce_ws.lock().unwrap_or_else(|p| p.into_inner());
        let partials = self.addr(&ws.partials);
        let counter = self.addr(&ws.retire_count);
        let tiles = reduce_grid(n, std::mem::size_of::<T>() as u64);
        // As few blocks as give every block the same number of tiles within the limit (2048
        // tiles on 1056 block slots: 1024 blocks of 2 tiles, not 1056 blocks with a ragged
        // second round).
        let rounds = tiles.div_ceil(self.reduce_grid_limit(k.name).max(1));
        let grid = tiles.div_ceil(rounds);
        let sim = k.sim;
        self.launch(
            k.name,
            LaunchShape::linear(grid, REDUCE_BLOCK, 0),
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
            // SAFETY: the same arguments, as addresses of this context's (host) memory.
            || unsafe {
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

    /// Run `k` and read its accumulator back. On a GPU the kernel writes straight into mapped
    /// pinned host memory and then raises a flag there; the host polls the flag, so the call is
    /// one launch and no driver synchronisation on the way back (~1-2 µs less than
    /// `cuStreamSynchronize`, which waits for the driver to see the kernel end).
    fn reduce_to_host<T: DeviceElement, A: Copy>(
        &self,
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
            crate::context::Backend::Cuda(c) => {
                let mut r = c.result.lock().unwrap_or_else(|p| p.into_inner());
                let seq = r.next_seq();
                self.launch_reduce(k, input, r.device_addr, r.flag_device_addr(), seq)?;
                r.wait(seq, &c.stream).map_err(as_launch)?
            }
            crate::context::Backend::Sim => {
                let out = self.alloc_zeros::<u64>(ACC_WORDS)?;
                self.launch_reduce(k, input, self.addr(&out), 0, 0)?;
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

    /// Reduce `input` with `op` in one launch and return the result. Empty input gives the
    /// operator's identity.
    pub fn reduce<'a, T: DeviceElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
        op: Reduction,
    ) -> Result<T> {
        self.reduce_to_host(&Self::kernel_for::<T>(op)?, input.into())
    }

    /// Reduce `input` with `op` in one launch, leaving the result on the device in `out[0]`.
    pub fn reduce_into<'a, T: DeviceElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
        op: Reduction,
        out: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        if out.is_empty() {
            return Err(Error::InvalidArgument(
                "the output buffer of a reduction must hold at least 1 element".into(),
            ));
        }
        self.check(&[out.backend()])?;
        self.launch_reduce(
            &Self::kernel_for::<T>(op)?,
            input.into(),
            self.addr(out),
            0,
            0,
        )
    }

    /// Sum (integers wrap).
    pub fn sum<'a, T: DeviceElement>(&self, input: impl Into<DeviceView<'a, T>>) -> Result<T> {
        self.reduce(input, Reduction::Sum)
    }

    /// The smallest value and the index of its first occurrence (a NaN wins); `None` for empty
    /// input.
    pub fn argmin<'a, T: DeviceElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
    ) -> Result<Option<(u64, T)>> {
        let a = self.reduce_to_host(&T::argmin_kernel(), input.into())?;
        Ok((a.index != u64::MAX).then_some((a.index, a.value)))
    }

    /// The largest value and the index of its first occurrence (a NaN wins); `None` for empty
    /// input.
    pub fn argmax<'a, T: DeviceElement>(
        &self,
        input: impl Into<DeviceView<'a, T>>,
    ) -> Result<Option<(u64, T)>> {
        let a = self.reduce_to_host(&T::argmax_kernel(), input.into())?;
        Ok((a.index != u64::MAX).then_some((a.index, a.value)))
    }

    /// Accurate f32 sum (f64 accumulation throughout, one rounding at the end; see
    /// `kernels::ops::SumCompensated`): |result - exact| <= u32*|exact| + depth*u64*sum|x|.
    pub fn sum_compensated<'a>(&self, input: impl Into<DeviceView<'a, f32>>) -> Result<f32> {
        let k: ReduceKernel<f32, f64> = k!(reduce_sum_compensated_f32);
        Ok(self.reduce_to_host(&k, input.into())? as f32)
    }

    /// The accurate sum left on the device, as the f64 before its final rounding.
    pub fn sum_compensated_into<'a>(
        &self,
        input: impl Into<DeviceView<'a, f32>>,
        out: &mut DeviceBuffer<f64>,
    ) -> Result<()> {
        if out.is_empty() {
            return Err(Error::InvalidArgument(
                "the output buffer of a reduction must hold at least 1 element".into(),
            ));
        }
        let k: ReduceKernel<f32, f64> = k!(reduce_sum_compensated_f32);
        self.check(&[out.backend()])?;
        self.launch_reduce(&k, input.into(), self.addr(out), 0, 0)
    }

    /// A user operator's reduction: `kernel` is a kernel exported with
    /// `kernels::reduce_kernels!` (and listed in `kernels::launch::KERNEL_NAMES`, so the PTX
    /// registry loads it), `sim` the same function for the simulator.
    ///
    /// # Safety
    /// `kernel` and `sim` must be the same `reduce_device::<T, O>` instance with `A = O::Acc`.
    pub unsafe fn reduce_custom<'a, T: DeviceElement, A: Copy>(
        &self,
        kernel: &'static str,
        sim: SimReduceFn<T, A>,
        input: impl Into<DeviceView<'a, T>>,
    ) -> Result<A> {
        self.reduce_to_host(&ReduceKernel { name: kernel, sim }, input.into())
    }

    /// f32 sum read back to the host (kept for the first API's users).
    pub fn sum_f32(&self, input: &DeviceBuffer<f32>) -> Result<f32> {
        self.reduce(input, Reduction::Sum)
    }

    /// f32 sum left on the device in `out[0]`.
    pub fn sum_f32_into(
        &self,
        input: &DeviceBuffer<f32>,
        out: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        self.reduce_into(input, Reduction::Sum, out)
    }
}
