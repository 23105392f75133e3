//! Launching: kernel loading, the two launch calls, timing, and launches under CUDA graph
//! capture (and the scratch they own).

use std::time::Instant;

use cudarc::driver::{LaunchArgs, sys};

use crate::error::{Error, Result};
use crate::runtime::module::{self, KernelLibrary, LoadedKernel};

use super::{Backend, Context};

/// Grid, block and dynamic shared memory of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchShape {
    /// Blocks in x, y, z.
    pub grid: (u32, u32, u32),
    /// Threads per block in x, y, z.
    pub block: (u32, u32, u32),
    /// Bytes of dynamic shared memory per block.
    pub dynamic_shared_bytes: u32,
}

impl LaunchShape {
    /// A one-dimensional grid of `grid` blocks of `block` threads.
    pub fn linear(grid: u32, block: u32, dynamic_shared_bytes: u32) -> Self {
        Self {
            grid: (grid, 1, 1),
            block: (block, 1, 1),
            dynamic_shared_bytes,
        }
    }
}

impl Context {
    /// Time `work`: `warmup` untimed runs, then `iters` runs, each timed with a pair of CUDA
    /// events on the context's stream on a GPU, or with the wall clock on the simulator.
    /// Milliseconds per run.
    pub fn time_ms(
        &self,
        warmup: usize,
        iters: usize,
        mut work: impl FnMut() -> Result<()>,
    ) -> Result<Vec<f64>> {
        for _ in 0..warmup {
            work()?;
        }
        self.synchronize()?;
        let mut times = Vec::with_capacity(iters);
        match &self.backend {
            Backend::Cuda(c) => {
                let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
                let ev = |what| c.ctx.new_event(flags).map_err(Error::driver(what, 0));
                let (start, end) = (ev("creating an event")?, ev("creating an event")?);
                for _ in 0..iters {
                    start
                        .record(&c.stream)
                        .map_err(Error::driver("recording an event", 0))?;
                    work()?;
                    end.record(&c.stream)
                        .map_err(Error::driver("recording an event", 0))?;
                    let ms = start
                        .elapsed_ms(&end)
                        .map_err(Error::driver("reading an event", 0))?;
                    times.push(ms as f64);
                }
            }
            Backend::Sim => {
                for _ in 0..iters {
                    let t = Instant::now();
                    work()?;
                    times.push(t.elapsed().as_secs_f64() * 1e3);
                }
            }
        }
        Ok(times)
    }

    /// Kernel `name` of `lib`, loaded into this context's device on first use (CUDA only).
    pub(crate) fn kernel(
        &self,
        lib: &'static KernelLibrary,
        name: &'static str,
    ) -> Result<&'static LoadedKernel> {
        let key = (lib as *const KernelLibrary as usize, name.as_ptr() as usize);
        match &self.backend {
            Backend::Cuda(c) => {
                let mut seen = self.launched.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(&(_, _, k)) = seen.iter().find(|(l, n, _)| (*l, *n) == key) {
                    return Ok(k);
                }
                let k = module::load(
                    &c.ctx,
                    self.info.ordinal,
                    self.info.compute_capability,
                    lib,
                    name,
                )?;
                seen.push((key.0, key.1, k));
                Ok(k)
            }
            Backend::Sim => Err(Error::Internal("the simulator loads no PTX".into())),
        }
    }

    /// Load kernel `name` of `lib` now rather than at its first launch (a no-op on the
    /// simulator); for programs that want the JIT cost up front.
    pub fn preload(&self, lib: &'static KernelLibrary, name: &'static str) -> Result<()> {
        match &self.backend {
            Backend::Cuda(_) => self.kernel(lib, name).map(|_| ()),
            Backend::Sim => Ok(()),
        }
    }

    /// Launch kernel `name` of `lib` with `shape` on whichever backend this context has:
    /// on a GPU on the context's stream, with the arguments `push` adds; on the simulator by
    /// running `sim` (the same kernel function, called with the same arguments) on every
    /// simulated thread.
    ///
    /// # Safety
    /// `push` must add exactly the kernel's parameters, in order and with their types, and
    /// `sim` must call the same kernel with the same values; pointers must be valid for what
    /// the kernel does with them (addresses from [`Context::device_addr`] of this context).
    pub unsafe fn launch<'a>(
        &'a self,
        lib: &'static KernelLibrary,
        name: &'static str,
        shape: LaunchShape,
        push: impl FnOnce(&mut LaunchArgs<'a>),
        sim: impl Fn() + Sync,
    ) -> Result<()> {
        match &self.backend {
            Backend::Cuda(c) => {
                let k = self.kernel(lib, name)?;
                let mut b = c.stream.launch_builder(&k.function);
                push(&mut b);
                let lc = cudarc::driver::LaunchConfig {
                    grid_dim: shape.grid,
                    block_dim: shape.block,
                    shared_mem_bytes: shape.dynamic_shared_bytes,
                };
                // SAFETY: the caller's contract.
                unsafe { b.launch(lc) }.map_err(Error::launch(name))?;
                Ok(())
            }
            Backend::Sim => {
                let lc = kernels::gpu::sim::LaunchConfig {
                    grid: shape.grid,
                    block: shape.block,
                    dynamic_shared_bytes: shape.dynamic_shared_bytes,
                };
                let _stream = self.sim_stream.lock().unwrap_or_else(|p| p.into_inner());
                kernels::gpu::sim::launch(name, &lc, sim).map_err(|e| {
                    // A kernel stopped halfway leaves its scratch (tile counters, tickets,
                    // statuses) mid-update: the next call starts from new scratch.
                    self.workspaces
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .clear();
                    Error::Sim(e)
                })
            }
        }
    }

    /// Launch `kernel` of `lib` with `shape` and its parameters `params` (a struct of the
    /// kernels crate, such as `kernels::reduce::ReduceParams`, declared with the kernel's
    /// parameter list): on a GPU on the context's stream, each field one kernel parameter; on
    /// the simulator by calling `kernel.sim` with the struct on every simulated thread. The one
    /// launch path of the built-in families.
    ///
    /// # Safety
    /// `params` must be what `kernel` takes, its pointers valid for what the kernel does with
    /// them (addresses of this context's memory, from [`Context::device_addr`]).
    pub unsafe fn launch_kernel<P: kernels::gpu::KernelArgs + Copy>(
        &self,
        lib: &'static KernelLibrary,
        kernel: &kernels::Kernel<unsafe fn(P)>,
        shape: LaunchShape,
        params: P,
    ) -> Result<()> {
        use cudarc::driver::PushKernelArg;
        /// The simulated threads share the struct, as the GPU's threads share the parameters.
        struct Shared<P>(P);
        // SAFETY: only copied out; what its pointers reach is the kernel's business.
        unsafe impl<P> Sync for Shared<P> {}
        let mut fields = Vec::new();
        params.each_arg(&mut |addr, bytes| fields.push((addr, bytes)));
        let (shared, sim) = (Shared(params), kernel.sim);
        // SAFETY: the caller's contract. Each field is a pointer, u64 or u32 of `params`, which
        // outlives the launch; the simulator calls the same kernel with the same struct.
        unsafe {
            self.launch(
                lib,
                kernel.name,
                shape,
                |b| {
                    for &(addr, bytes) in &fields {
                        match bytes {
                            8 => b.arg(&*(addr as *const u64)),
                            4 => b.arg(&*(addr as *const u32)),
                            _ => unreachable!("kernel parameters are 4 or 8 bytes"),
                        };
                    }
                },
                || {
                    let s = &shared;
                    sim(s.0)
                },
            )
        }
    }

    /// Whether the context's stream is being captured into a CUDA graph (never on the
    /// simulator).
    pub(crate) fn capturing(&self) -> Result<bool> {
        let Backend::Cuda(c) = &self.backend else {
            return Ok(false);
        };
        let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: a live stream; writes one enum.
        unsafe { sys::cuStreamIsCapturing(c.cu()?, &mut status) }
            .result()
            .map_err(Error::driver("asking whether the stream is capturing", 0))?;
        Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    /// When the stream is being captured into a graph: `bytes` of device memory for the
    /// captured launch alone, kept until the context drops (`None` when not capturing). The
    /// allocation is not a stream operation (it must not become part of the graph): the
    /// thread's capture mode is relaxed around it, as CUB and PyTorch do.
    pub(crate) fn graph_scratch(&self, bytes: usize) -> Result<Option<u64>> {
        if !self.capturing()? {
            return Ok(None);
        }
        let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        // SAFETY: exchanges the thread's mode; restored right after.
        unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) }
            .result()
            .map_err(Error::driver("relaxing the capture mode", 0))?;
        // SAFETY: a plain allocation; freed in `Drop`.
        let addr = unsafe { cudarc::driver::result::malloc_sync(bytes.max(1)) };
        // SAFETY: puts the caller's mode back.
        unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) }
            .result()
            .map_err(Error::driver("restoring the capture mode", 0))?;
        let addr = addr.map_err(Error::driver("allocating graph scratch", bytes))?;
        self.graph_scratch
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(addr);
        Ok(Some(addr))
    }
}
