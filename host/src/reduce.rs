//! Device-wide reductions, one launch each: sum, product, min, max, bitwise and/or/xor,
//! argmin/argmax, a compensated f32 sum, and user operators compiled into kernels.
//!
//! | call | returns |
//! | --- | --- |
//! | [`Context::reduce`]`(input, op)`, `_into(input, out, op)`, `_async(input, op)` | `T` ([`Reduction`]) |
//! | [`Context::sum`]`(input)`, `_into(input, out)`, `_async(input)` | `T::Sum` (f32 for f16/bf16) |
//! | [`Context::argmin`]`(input)`, [`Context::argmax`], `_into(input, out)`, `_async(input)` | `Option<(u64, T)>`; [`ArgValue`] on the device |
//! | [`Context::sum_compensated`]`(input)`, `_into(input, out)`, `_async(input)` | `f32` (f64 on the device) |
//! | [`Context::reduce_custom`]`::<T, O>(lib, input)`, `_into(lib, input, out)`, `_async(lib, input)` | `O::Acc` |
//!
//! Every value-returning call has the same three forms: blocking, `_into` (the result left in
//! `out[0]` on the device: never blocks, can be captured into a CUDA graph) and `_async` (a
//! [`Pending`] whose [`Pending::wait`] gives the value).
//!
//! Semantics (see `kernels::ops`): integer sums and products wrap; float min/max propagate NaN
//! and order `-0.0 < +0.0`; argmin/argmax give the first occurrence, NaN winning; the empty
//! input gives the operator's identity (`None` for argmin/argmax). Results are deterministic:
//! the same input gives the same bits on every run, GPU and the simulator.

use std::fmt::Debug;

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use kernels::Kernel;
use kernels::ops::{ArgAcc, SumCompensated};
use kernels::reduce::policy::{BLOCK, POLICY};
use kernels::reduce::transform::MeanVar;
use kernels::reduce::{ReduceInstance, ReduceParams, SimReduceFn};

use crate::error::{Error, Result};
use crate::runtime::mapped::MappedResult;
use crate::runtime::{
    Backend, Context, DeviceBuffer, DeviceView, DeviceViewMut, KernelLibrary, LaunchShape,
};

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

    /// The operators of the scans and the by-key families (plain and by-key scans, reduce by
    /// key): sum, min and max. The others are [`Error::Unsupported`] there.
    pub const SCAN: [Reduction; 3] = [Reduction::Sum, Reduction::Min, Reduction::Max];

    /// The operator's identity for `T`, with the device kernels' semantics (`+inf` for min of
    /// floats, `T::MAX` for min of integers, all ones for `And`, ...); `None` where `T` has no
    /// such built-in operator (the bitwise operators on floats, the product of `f16`/`bf16`).
    /// For `f16`/`bf16` the sum's identity is the element type's zero (their sums accumulate
    /// in f32 from 0.0).
    ///
    /// ```
    /// use gpu_reduce::Reduction;
    /// assert_eq!(Reduction::Min.identity::<i32>(), Some(i32::MAX));
    /// assert_eq!(Reduction::Xor.identity::<f32>(), None);
    /// ```
    pub fn identity<T: DeviceElement>(self) -> Option<T> {
        T::op_identity(self)
    }

    /// `a ⊕ b` with the same semantics as the device kernels (integer sums and products wrap,
    /// float min/max propagate NaN and order `-0.0 < +0.0`); `None` where [`Reduction::identity`]
    /// is `None`. (For `f16`/`bf16` the sum here is one rounded 16-bit addition; the device
    /// sums and scans accumulate in f32, see [`Context::sum`] and [`Context::scan`].)
    ///
    /// ```
    /// use gpu_reduce::Reduction;
    /// assert_eq!(Reduction::Sum.combine(i32::MAX, 1), Some(i32::MIN)); // wraps
    /// assert_eq!(Reduction::Max.combine(1.0f32, f32::NAN).map(f32::is_nan), Some(true));
    /// ```
    pub fn combine<T: DeviceElement>(self, a: T, b: T) -> Option<T> {
        T::op_combine(self, a, b)
    }

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

/// `k` writing its accumulator as `B`, a `repr(C)` mirror of the kernel's `A` (the same fields
/// in the same order): for the host's result types of the `_into` forms.
pub(crate) fn mirrored<T, A, B>(k: ReduceKernel<T, A>) -> ReduceKernel<T, B> {
    const {
        assert!(std::mem::size_of::<A>() == std::mem::size_of::<B>());
        assert!(std::mem::align_of::<A>() == std::mem::align_of::<B>());
    }
    // SAFETY: the two function types differ only in the pointee types of raw pointers (the
    // same ABI), and `B` has `A`'s layout, so what the kernel writes as `A` is a valid `B`.
    let sim = unsafe { std::mem::transmute::<SimReduceFn<T, A>, SimReduceFn<T, B>>(k.sim) };
    Kernel { name: k.name, sim }
}

/// An argmin or argmax as [`Context::argmin_into`] and [`Context::argmax_into`] leave it on the
/// device: the kernels' accumulator (`kernels::ops::ArgAcc`), field for field.
/// `index == u64::MAX` means empty input (the value is then the operator's identity).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct ArgValue<T> {
    /// The smallest (largest) value.
    pub value: T,
    /// The index of its first occurrence; `u64::MAX` for empty input.
    pub index: u64,
}

// SAFETY: `repr(C)` plain data: a device element and a u64.
unsafe impl<T: DeviceRepr> DeviceRepr for ArgValue<T> {}
// SAFETY: as above; all-zero is value 0 at index 0.
unsafe impl<T: ValidAsZeroBits> ValidAsZeroBits for ArgValue<T> {}

impl<T> ArgValue<T> {
    /// `(index, value)` as [`Context::argmin`] returns it: `None` for empty input.
    pub fn get(self) -> Option<(u64, T)> {
        (self.index != u64::MAX).then_some((self.index, self.value))
    }
}

impl<T> From<ArgAcc<T>> for ArgValue<T> {
    fn from(a: ArgAcc<T>) -> Self {
        ArgValue {
            value: a.value,
            index: a.index,
        }
    }
}

/// A two-input reduction kernel (a map of pairs, e.g. the dot product) as the host calls it.
pub type Reduce2Kernel<T, A> = Kernel<kernels::reduce::dot::SimReduce2Fn<T, A>>;

/// What one reduction launch runs and reads: one input, or two of the same length.
pub(crate) enum Job<'k, 'v, T, A> {
    One(&'k ReduceKernel<T, A>, DeviceView<'v, T>),
    Two(
        &'k Reduce2Kernel<T, A>,
        DeviceView<'v, T>,
        DeviceView<'v, T>,
    ),
}

impl<'v, T, A> Job<'_, 'v, T, A> {
    fn name(&self) -> &'static str {
        match self {
            Job::One(k, _) => k.name,
            Job::Two(k, _, _) => k.name,
        }
    }
    fn first(&self) -> &DeviceView<'v, T> {
        match self {
            Job::One(_, x) | Job::Two(_, x, _) => x,
        }
    }
    fn len(&self) -> usize {
        self.first().len()
    }
    /// Bytes the kernel reads.
    fn bytes(&self) -> usize {
        let inputs = if let Job::Two(..) = self { 2 } else { 1 };
        inputs * self.len() * std::mem::size_of::<T>()
    }
}

/// Element types of the device reductions: i32, u32, i64, u64, f32, f64, and with the `f16`
/// feature the 16-bit floats `half::f16` and `half::bf16` (min, max, argmin, argmax in the type;
/// the sum accumulates in f32 and returns the f32). The kernels come from the `kernels` crate's macro invocations (its
/// `ReduceInstance` impls); nothing here names one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an element type of the device reductions",
    note = "the reductions take i32, u32, i64, u64, f32, f64 (and half::f16, half::bf16 with the `f16` feature)"
)]
pub trait DeviceElement:
    kernels::ops::Num + DeviceRepr + ValidAsZeroBits + Copy + Send + Sync + Debug
{
    /// The type's name in messages (`"f32"`).
    const DTYPE: &'static str;
    /// What [`Context::sum`] returns: the type itself, `f32` for `f16` and `bf16`.
    type Sum: Copy + Send + Debug + 'static;
    /// The sum kernel.
    fn sum_kernel() -> ReduceKernel<Self, Self::Sum>;
    /// The kernel of `op` for this type; `None` where the operator is not defined (bitwise
    /// operators on floats).
    fn kernel(op: Reduction) -> Option<ReduceKernel<Self, Self>>;
    /// The argmin kernel.
    fn argmin_kernel() -> ReduceKernel<Self, ArgAcc<Self>>;
    /// The argmax kernel.
    fn argmax_kernel() -> ReduceKernel<Self, ArgAcc<Self>>;
    /// [`Reduction::identity`] (generated from the kernels' built-in table).
    #[doc(hidden)]
    fn op_identity(op: Reduction) -> Option<Self>;
    /// [`Reduction::combine`] (generated from the kernels' built-in table).
    #[doc(hidden)]
    fn op_combine(op: Reduction, a: Self, b: Self) -> Option<Self>;
}

/// `if $op is the `Reduction` of the table's operator token { return Some($e) }`: what a
/// family's per-type dispatch writes once per operator of the kernels' built-in table
/// (`kernels::builtin_table!`). Tokens that are no `Reduction` (argmin, argmax, the 16-bit
/// floats' f32 sum) expand to nothing.
macro_rules! reduction_arm {
    ($v:ident, sum, $e:expr) => {
        if $v == Reduction::Sum {
            return Some($e);
        }
    };
    ($v:ident, product, $e:expr) => {
        if $v == Reduction::Product {
            return Some($e);
        }
    };
    ($v:ident, min, $e:expr) => {
        if $v == Reduction::Min {
            return Some($e);
        }
    };
    ($v:ident, max, $e:expr) => {
        if $v == Reduction::Max {
            return Some($e);
        }
    };
    ($v:ident, and, $e:expr) => {
        if $v == Reduction::And {
            return Some($e);
        }
    };
    ($v:ident, or, $e:expr) => {
        if $v == Reduction::Or {
            return Some($e);
        }
    };
    ($v:ident, xor, $e:expr) => {
        if $v == Reduction::Xor {
            return Some($e);
        }
    };
    ($v:ident, $other:ident, $e:expr) => {};
}
pub(crate) use reduction_arm;

/// [`DeviceElement`] of one element type of the kernels' built-in table, from its operators.
macro_rules! device_element {
    ($t:ident { $([$op:ident $Op:path])* }) => {
        impl DeviceElement for kernels::builtin_elem!($t) {
            const DTYPE: &'static str = stringify!($t);
            $( device_element!(@item $op $Op); )*
            fn kernel(op: Reduction) -> Option<ReduceKernel<Self, Self>> {
                $( reduction_arm!(op, $op, <$Op as ReduceInstance<Self>>::KERNEL); )*
                None
            }
            fn op_identity(op: Reduction) -> Option<Self> {
                $( device_element!(@semantics op $op $Op, identity()); )*
                None
            }
            fn op_combine(op: Reduction, a: Self, b: Self) -> Option<Self> {
                $( device_element!(@semantics op $op $Op, combine(a, b)); )*
                None
            }
        }
    };
    // The 16-bit floats' `sum_f32` (an f32 accumulator): the element type's own sum.
    (@semantics $v:ident sum_f32 $Op:path, $f:ident $args:tt) => {
        device_element!(@semantics $v sum kernels::ops::Sum, $f $args);
    };
    (@semantics $v:ident $op:ident $Op:path, $f:ident ($($a:expr),*)) => {
        reduction_arm!($v, $op, <$Op as kernels::ops::ReduceOp<Self>>::$f($($a),*));
    };
    (@item sum $Op:path) => {
        type Sum = Self;
        fn sum_kernel() -> ReduceKernel<Self, Self> {
            <$Op as ReduceInstance<Self>>::KERNEL
        }
    };
    (@item sum_f32 $Op:path) => {
        type Sum = f32;
        fn sum_kernel() -> ReduceKernel<Self, f32> {
            <$Op as ReduceInstance<Self>>::KERNEL
        }
    };
    (@item argmin $Op:path) => {
        fn argmin_kernel() -> ReduceKernel<Self, ArgAcc<Self>> {
            <$Op as ReduceInstance<Self>>::KERNEL
        }
    };
    (@item argmax $Op:path) => {
        fn argmax_kernel() -> ReduceKernel<Self, ArgAcc<Self>> {
            <$Op as ReduceInstance<Self>>::KERNEL
        }
    };
    (@item $op:ident $Op:path) => {};
}
kernels::builtin_table!(types device_element! {} int float);
#[cfg(feature = "f16")]
kernels::builtin_table!(types device_element! {} half);

/// Accumulators are at most 16 bytes: they come back through a 2-word buffer.
pub(crate) const ACC_WORDS: usize = 2;

/// Scratch of the one-launch reduction: one partial per tile and the retirement counter (kept
/// at zero between launches by the kernel itself); allocated at the first reduction.
#[derive(Default)]
struct ReduceWorkspace {
    /// `POLICY.max_tiles` accumulators of up to 16 bytes, and the counter.
    bufs: Option<(DeviceBuffer<u64>, DeviceBuffer<u32>)>,
    /// Test override of the physical grid (0: automatic).
    grid_override: u32,
}

/// Bytes of reduction scratch: `POLICY.max_tiles` partials of up to 16 bytes, then the counter.
const SCRATCH_BYTES: usize = 16 * POLICY.max_tiles as usize + 16;

/// A value-returning reduction in flight ([`Context::reduce_async`] and friends): the kernel
/// is queued; [`Pending::wait`] returns its value. Dropping it without waiting is fine.
#[must_use = "a pending reduction does nothing until waited on"]
pub struct Pending<'c, R> {
    ctx: &'c Context,
    state: PendingState,
    kernel: &'static str,
    finish: Box<dyn FnOnce([u64; ACC_WORDS]) -> Result<R> + Send + 'c>,
}

enum PendingState {
    /// On a GPU: the mapped slot the kernel writes, and the flag value it raises.
    Cuda(Option<MappedResult>, u32),
    /// The simulator ran the kernel synchronously.
    Done([u64; ACC_WORDS]),
    /// Queued on the stream with its result in this device buffer, read back at the wait; on
    /// a GPU an event recorded after the kernel says whether it has run.
    Device(DeviceBuffer<u64>, Option<cudarc::driver::CudaEvent>),
}

impl<R> std::fmt::Debug for Pending<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pending({})", self.kernel)
    }
}

impl<R> Pending<'_, R> {
    /// Whether the result has arrived (never blocks).
    pub fn is_ready(&self) -> bool {
        match &self.state {
            PendingState::Cuda(Some(slot), seq) => slot.raised(*seq),
            PendingState::Device(_, Some(event)) => event.is_complete(),
            _ => true,
        }
    }

    /// Wait for the result: spins briefly, then sleeps (in the driver for large inputs), so a
    /// long wait does not keep a CPU core busy. A kernel fault is reported here.
    pub fn wait(mut self) -> Result<R> {
        let kernel = self.kernel;
        // An asynchronous kernel fault surfaces at the next synchronising call.
        let launch_error = |e| match e {
            Error::Driver { source, .. } => Error::Launch {
                kernel: kernel.into(),
                source,
            },
            e => e,
        };
        let words = match &mut self.state {
            PendingState::Done(w) => *w,
            PendingState::Device(buf, _) => {
                let v = self.ctx.dtoh(&*buf).map_err(launch_error)?;
                [v[0], v[1]]
            }
            PendingState::Cuda(slot, seq) => {
                let Backend::Cuda(c) = &self.ctx.backend else {
                    unreachable!("a CUDA pending value belongs to a CUDA context")
                };
                let r = slot
                    .as_mut()
                    .expect("taken only by wait and drop")
                    .wait(*seq, &c.stream);
                r.map_err(launch_error)?
            }
        };
        let finish = std::mem::replace(&mut self.finish, Box::new(|_| unreachable!()));
        finish(words)
    }
}

impl<R> Drop for Pending<'_, R> {
    fn drop(&mut self) {
        // The slot goes back to the pool: a later reduction on the same stream runs after this
        // one, and waits for a new flag value, so the late write cannot be mistaken for its own.
        if let (PendingState::Cuda(slot, _), Backend::Cuda(c)) =
            (&mut self.state, &self.ctx.backend)
            && let Some(slot) = slot.take()
        {
            c.results
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(slot);
        }
    }
}

impl Context {
    /// Cap the physical grid of the reductions (`None`: automatic). For tests that show the
    /// result does not depend on the grid.
    #[cfg(feature = "tuning")]
    pub fn set_reduce_grid_limit(&self, grid: Option<u32>) {
        let ws = self.workspace::<ReduceWorkspace>();
        ws.lock().unwrap_or_else(|p| p.into_inner()).grid_override = grid.map_or(0, |g| g.max(1));
    }

    /// Launch reduction kernel `k` of `lib` over `input`, writing its accumulator to `out` (an
    /// address of this context's memory with room for one `A`), then `seq` to the flag at
    /// `done` when that is not 0. The caller holds `out`'s ordering guard across this call.
    fn launch_reduce<T: DeviceElement, A: Copy>(
        &self,
        lib: &'static KernelLibrary,
        job: &Job<'_, '_, T, A>,
        out: u64,
        done: u64,
        seq: u32,
    ) -> Result<()> {
        const { assert!(std::mem::size_of::<A>() <= 16) };
        let n = job.len() as u64;
        let name = job.name();
        let (input_addr, _input_access) = self.read(job.first())?;
        let (y_addr, _y_access) = match job {
            Job::Two(_, _, y) => self.read(y)?,
            Job::One(..) => (0, crate::runtime::Access::Free),
        };
        // The mean-and-variance kernel has a tile count of its own (fewer: one or two tiles
        // per resident block, see `policy::MEAN_VAR`); scratch for the reduction's covers it.
        let policy = if name == <MeanVar as ReduceInstance<f32>>::KERNEL.name {
            kernels::reduce::policy::MEAN_VAR
        } else {
            POLICY
        };
        let tiles = policy.tiles(n, std::mem::size_of::<T>() as u64);
        let ws = self.workspace::<ReduceWorkspace>();
        // A poisoned lock only means another thread panicked mid-call; the workspace itself is
        // still consistent (the kernel resets its counter), so keep going.
        let mut ws = ws.lock().unwrap_or_else(|p| p.into_inner());
        let (partials, counter) = if let Some(scratch) = self.graph_scratch(SCRATCH_BYTES)? {
            // Captured into a CUDA graph: scratch of this launch's own (a replay may run any
            // time, beside this context's other work), its counter cleared in the graph.
            let counter = scratch + SCRATCH_BYTES as u64 - 16;
            self.memset_raw(counter, 4)?;
            (scratch, counter)
        } else {
            if ws.bufs.is_none() {
                let partials = self.alloc_zeros::<u64>(2 * POLICY.max_tiles as usize)?;
                ws.bufs = Some((partials, self.alloc_zeros::<u32>(1)?));
            }
            let Some((partials, counter)) = &ws.bufs else {
                unreachable!("allocated just above")
            };
            (self.scratch_addr(partials), self.scratch_addr(counter))
        };
        // One full wave of the device (as many blocks per SM as the kernel's registers allow:
        // an f64 sum keeps 6 blocks of 256 per SM, not 8, and a grid sized for 8 left a ragged
        // second wave, 5-7% slower on an H200), or the test override. Never changes a bit.
        // Inputs of no more tiles than SMs need no occupancy query.
        let sms = self.info().multiprocessors.max(1);
        let limit = match (ws.grid_override, &self.backend) {
            (0, _) if tiles <= POLICY.single_block_tiles => 1,
            (0, Backend::Cuda(_)) if tiles <= sms => sms,
            (0, Backend::Cuda(_)) => sms * self.kernel(lib, name)?.blocks_per_sm(BLOCK)?,
            (0, Backend::Sim) => u32::MAX,
            (g, _) => g,
        };
        drop(ws);
        // As few blocks as give every block the same number of tiles within the limit (2048
        // tiles on 1056 block slots: 1024 blocks of 2 tiles, not 1056 blocks with a ragged
        // second round).
        let rounds = tiles.div_ceil(limit.max(1));
        let grid = tiles.div_ceil(rounds);
        let kernel = match job {
            Job::One(k, _) | Job::Two(k, _, _) => *k,
        };
        let params = ReduceParams {
            input: input_addr as *const T,
            input2: y_addr as *const T,
            n,
            partials: partials as *mut A,
            retire_count: counter as *mut u32,
            out: out as *mut A,
            done: done as *mut u32,
            tiles,
            seq,
        };
        // SAFETY: addresses of this context's memory: the input(s) of `n` elements, scratch for
        // `tiles` accumulators and the counter, room for one `A` at `out`.
        unsafe { self.launch_kernel(lib, kernel, LaunchShape::linear(grid, BLOCK, 0), params) }
    }

    /// Queue `k` and return a handle on its accumulator, converted by `finish`. On a GPU the
    /// kernel writes straight into mapped pinned host memory and then raises a flag there; the
    /// host polls the flag, so the call is one launch and no driver synchronisation on the way
    /// back (~1-2 µs less than `cuStreamSynchronize`, which waits for the driver to see the
    /// kernel end).
    fn reduce_pending<'c, T: DeviceElement, A: Copy, R>(
        &'c self,
        lib: &'static KernelLibrary,
        job: Job<'_, '_, T, A>,
        finish: impl FnOnce(A) -> R + Send + 'c,
    ) -> Result<Pending<'c, R>> {
        let state = match &self.backend {
            Backend::Cuda(c) => {
                if self.capturing()? {
                    return Err(Error::NotCapturable {
                        call: "a reduction that returns its value to the host",
                        hint: "capture `reduce_into` (result on the device)",
                    });
                }
                let slot = c.results.lock().unwrap_or_else(|p| p.into_inner()).pop();
                let mut slot = match slot {
                    Some(s) => s,
                    None => MappedResult::new(&c.ctx)?,
                };
                let seq = slot.next_seq();
                let launched =
                    self.launch_reduce(lib, &job, slot.device_addr, slot.flag_device_addr(), seq);
                if let Err(e) = launched {
                    c.results
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(slot);
                    return Err(e);
                }
                // Long kernels get an event the waiting thread can sleep on.
                slot.mark_launched(&c.stream, job.bytes())?;
                PendingState::Cuda(Some(slot), seq)
            }
            Backend::Sim => {
                let mut out = self.alloc_zeros::<u64>(ACC_WORDS)?;
                let addr = self.scratch_addr(&out);
                self.launch_reduce(lib, &job, addr, 0, 0)?;
                let v = self.dtoh(&mut out)?;
                PendingState::Done([v[0], v[1]])
            }
        };
        Ok(Pending {
            ctx: self,
            state,
            kernel: job.name(),
            // SAFETY: the kernel wrote one A (<= 16 bytes, plain data) at the start of the words.
            finish: Box::new(move |w: [u64; ACC_WORDS]| {
                Ok(finish(unsafe {
                    std::ptr::read_unaligned(w.as_ptr() as *const A)
                }))
            }),
        })
    }

    /// A pending value whose kernel (`kernel`, already queued on this context's stream) writes
    /// its result to `buf` (at least [`ACC_WORDS`] words), converted by `finish` at the wait.
    /// For the families whose kernels raise no host flag (reduce by key's run count).
    pub(crate) fn pending_on_device<'c, R>(
        &'c self,
        buf: DeviceBuffer<u64>,
        kernel: &'static str,
        finish: impl FnOnce([u64; ACC_WORDS]) -> Result<R> + Send + 'c,
    ) -> Result<Pending<'c, R>> {
        let event = match &self.backend {
            Backend::Cuda(c) => {
                let e = c
                    .ctx
                    .new_event(None)
                    .map_err(Error::driver("creating an event", 0))?;
                e.record(&c.stream)
                    .map_err(Error::driver("recording an event", 0))?;
                Some(e)
            }
            Backend::Sim => None,
        };
        Ok(Pending {
            ctx: self,
            state: PendingState::Device(buf, event),
            kernel,
            finish: Box::new(finish),
        })
    }

    /// A pending value known without a launch (an empty input's).
    pub(crate) fn pending_ready<'c, R>(
        &'c self,
        kernel: &'static str,
        value: Result<R>,
    ) -> Pending<'c, R>
    where
        R: Send + 'c,
    {
        Pending {
            ctx: self,
            state: PendingState::Done([0; ACC_WORDS]),
            kernel,
            finish: Box::new(move |_| value),
        }
    }

    /// Run `k` and read its accumulator back (blocks until it is there).
    pub(crate) fn reduce_to_host<T: DeviceElement, A: Copy>(
        &self,
        lib: &'static KernelLibrary,
        k: &ReduceKernel<T, A>,
        input: DeviceView<'_, T>,
    ) -> Result<A> {
        self.reduce_pending(lib, Job::One(k, input), |a| a)?.wait()
    }

    /// Run the pair-map kernel `k` over `x` and `y` (the same length, checked) and read its
    /// accumulator back.
    pub(crate) fn reduce2_to_host<T: DeviceElement, A: Copy>(
        &self,
        lib: &'static KernelLibrary,
        k: &Reduce2Kernel<T, A>,
        x: DeviceView<'_, T>,
        y: DeviceView<'_, T>,
    ) -> Result<A> {
        Self::check_pair(k, &x, &y)?;
        self.reduce_pending(lib, Job::Two(k, x, y), |a| a)?.wait()
    }

    /// The two inputs of a pair-map reduction have the same length.
    fn check_pair<T, A>(
        k: &Reduce2Kernel<T, A>,
        x: &DeviceView<'_, T>,
        y: &DeviceView<'_, T>,
    ) -> Result<()> {
        if x.len() != y.len() {
            return Err(Error::LengthMismatch {
                what: format!(
                    "the two inputs of {} have different lengths (the second against the first)",
                    k.name
                ),
                expected: x.len() as u64,
                got: y.len() as u64,
            });
        }
        Ok(())
    }

    /// [`Context::reduce2_to_host`] without blocking: the value converted by `finish`.
    pub(crate) fn reduce2_pending<'c, T: DeviceElement, A: Copy, R>(
        &'c self,
        lib: &'static KernelLibrary,
        k: &Reduce2Kernel<T, A>,
        x: DeviceView<'_, T>,
        y: DeviceView<'_, T>,
        finish: impl FnOnce(A) -> R + Send + 'c,
    ) -> Result<Pending<'c, R>> {
        Self::check_pair(k, &x, &y)?;
        self.reduce_pending(lib, Job::Two(k, x, y), finish)
    }

    /// The pair-map kernel `k`'s result left on the device in `out[0]`.
    pub(crate) fn reduce2_into_buf<T: DeviceElement, A: Copy>(
        &self,
        lib: &'static KernelLibrary,
        k: &Reduce2Kernel<T, A>,
        x: DeviceView<'_, T>,
        y: DeviceView<'_, T>,
        mut out: DeviceViewMut<'_, A>,
    ) -> Result<()> {
        Self::check_pair(k, &x, &y)?;
        Self::check_result_room(&out)?;
        let (out_addr, _out_access) = self.write(&mut out)?;
        self.launch_reduce(lib, &Job::Two(k, x, y), out_addr, 0, 0)
    }

    /// Room for one result in `out`.
    fn check_result_room<A>(out: &DeviceViewMut<'_, A>) -> Result<()> {
        if out.is_empty() {
            return Err(Error::OutputTooSmall {
                what: "the output buffer of a reduction".into(),
                needed: 1,
                got: 0,
            });
        }
        Ok(())
    }

    /// Run `k` without blocking: its accumulator converted by `finish` at the wait.
    pub(crate) fn reduce_to_pending<'c, T: DeviceElement, A: Copy, R>(
        &'c self,
        lib: &'static KernelLibrary,
        k: &ReduceKernel<T, A>,
        input: DeviceView<'_, T>,
        finish: impl FnOnce(A) -> R + Send + 'c,
    ) -> Result<Pending<'c, R>> {
        self.reduce_pending(lib, Job::One(k, input), finish)
    }

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

    /// Leave `k`'s result on the device in `out[0]`.
    pub(crate) fn reduce_into_buf<T: DeviceElement, A: Copy>(
        &self,
        lib: &'static KernelLibrary,
        k: &ReduceKernel<T, A>,
        input: DeviceView<'_, T>,
        mut out: DeviceViewMut<'_, A>,
    ) -> Result<()> {
        Self::check_result_room(&out)?;
        let (out_addr, _out_access) = self.write(&mut out)?;
        self.launch_reduce(lib, &Job::One(k, input), out_addr, 0, 0)
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
        Ok(self.reduce_to_host(&crate::BUILTIN, &k, input.into())? as f32)
    }

    /// [`Context::sum_compensated`] without blocking.
    pub fn sum_compensated_async<'a>(
        &self,
        input: impl Into<DeviceView<'a, f32>>,
    ) -> Result<Pending<'_, f32>> {
        let k = <SumCompensated as ReduceInstance<f32>>::KERNEL;
        self.reduce_to_pending(&crate::BUILTIN, &k, input.into(), |a| a as f32)
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

/// The one-launch reductions the host can ask for, per type of the kernels' built-in table
/// (for the library's index test; with the `f16` feature the 16-bit floats' too).
#[cfg(test)]
pub(crate) fn kernel_names() -> Vec<&'static str> {
    fn of<T: DeviceElement>(names: &mut Vec<&'static str>) {
        names.extend([
            T::sum_kernel().name,
            T::argmin_kernel().name,
            T::argmax_kernel().name,
        ]);
        // The sum is `sum_kernel` (also `kernel(Sum)` where the sum is in the type).
        let ops = Reduction::ALL.iter().filter(|&&op| op != Reduction::Sum);
        names.extend(ops.filter_map(|&op| T::kernel(op)).map(|k| k.name));
    }
    let mut names = vec![<SumCompensated as ReduceInstance<f32>>::KERNEL.name];
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
