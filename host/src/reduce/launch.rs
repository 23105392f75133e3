//! The launch path of the one-launch reductions: the scratch workspace, the grid, and the
//! three ways a result comes back (host flag, device buffer, blocking read).

use kernels::reduce::policy::{BLOCK, POLICY};
use kernels::reduce::transform::MeanVar;
use kernels::reduce::{ReduceInstance, ReduceParams};

use super::pending::PendingState;
use super::{ACC_WORDS, DeviceElement, Pending, Reduce2Kernel, ReduceKernel};
use crate::error::{Error, Result};
use crate::runtime::mapped::MappedResult;
use crate::runtime::{
    Backend, Context, DeviceBuffer, DeviceView, DeviceViewMut, KernelLibrary, LaunchShape,
};

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
        // a grid sized for more leaves a ragged, slower second wave; BENCHMARKS.md, Reductions),
        // or the test override. Never changes a bit.
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
    /// back (quicker than `cuStreamSynchronize`, which waits for the driver to see the kernel
    /// end; BENCHMARKS.md, Small inputs and the call path).
    pub(super) fn reduce_pending<'c, T: DeviceElement, A: Copy, R>(
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
        Self::check_pair(&x, &y)?;
        self.reduce_pending(lib, Job::Two(k, x, y), |a| a)?.wait()
    }

    /// The two inputs of a pair reduction (the dot product's `x` and `y`) have the same length.
    fn check_pair<T>(x: &DeviceView<'_, T>, y: &DeviceView<'_, T>) -> Result<()> {
        if x.len() != y.len() {
            return Err(Error::LengthMismatch {
                what: "dot(x, y): x and y have different lengths (y against x)".into(),
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
        Self::check_pair(&x, &y)?;
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
        Self::check_pair(&x, &y)?;
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
}
