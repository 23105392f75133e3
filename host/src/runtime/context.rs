//! The context handle: one backend (a CUDA device, or the CPU SIMT simulator) behind one API,
//! its stream, memory, kernel launches and per-algorithm scratch. Knows no algorithm.

use std::any::{Any, TypeId};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaStream, DeviceRepr, LaunchArgs, ValidAsZeroBits, sys};

use super::buffer::{Buf, DeviceBuffer, DeviceView};
use super::mapped::MappedResult;
use super::module::{self, KernelLibrary, LoadedKernel};
use super::simbuf::SimBuf;
use crate::error::{Error, Result};

/// Which backend runs the kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// A CUDA GPU through the driver.
    Cuda,
    /// The CPU SIMT simulator running the same kernel source.
    Sim,
}

/// What the library knows about the device it runs on.
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    /// The backend.
    pub backend: BackendKind,
    /// CUDA device ordinal (0 on the simulator).
    pub ordinal: usize,
    /// The device's name.
    pub name: String,
    /// Compute capability (major, minor); (0, 0) on the simulator.
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors (worker threads on the simulator).
    pub multiprocessors: u32,
    /// L2 cache bytes (0 on the simulator).
    pub l2_bytes: usize,
    /// Device memory bytes (0 on the simulator).
    pub total_memory: usize,
    /// The driver's CUDA version (e.g. 13000); 0 on the simulator.
    pub driver_version: i32,
}

pub(crate) struct CudaBackend {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    /// Where reductions write a result the host reads without a copy (see `mapped`).
    pub result: Mutex<MappedResult>,
}

pub(crate) enum Backend {
    Cuda(CudaBackend),
    Sim,
}

/// A context on one device (or the simulator): its stream, memory and kernels. Kernels are
/// loaded on first use, one module per kernel (see [`KernelLibrary`]).
pub struct Context {
    pub(crate) backend: Backend,
    info: DeviceInfo,
    /// Scratch of the algorithms, one slot per type (each algorithm owns its type).
    workspaces: Mutex<Vec<(TypeId, Arc<dyn Any + Send + Sync>)>>,
    /// Kernels this context has launched, by (library, name) address: the launch path finds
    /// them with two pointer compares instead of the process-wide cache's hashed lookup.
    launched: Mutex<Vec<(usize, usize, &'static LoadedKernel)>>,
}

/// Number of CUDA devices, with the absence of a driver as an error rather than a panic.
pub fn device_count() -> Result<usize> {
    // cudarc panics on a missing libcuda at the first call; check first.
    if !unsafe { sys::is_culib_present() } {
        return Err(Error::NoDriver);
    }
    match CudaContext::device_count() {
        Ok(n) => Ok(n.max(0) as usize),
        Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_NO_DEVICE => Ok(0),
        Err(source) => Err(Error::Driver {
            op: "initialising the driver",
            source,
        }),
    }
}

/// The driver's CUDA version, e.g. 13000 for 13.0 (`cuDriverGetVersion`).
fn driver_version() -> Result<i32> {
    let mut v = 0;
    // SAFETY: writes one int; the driver is loaded (checked by `device_count`).
    unsafe { sys::cuDriverGetVersion(&mut v) }
        .result()
        .map_err(Error::driver("reading the driver version", 0))?;
    Ok(v)
}

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
    /// Open CUDA device `ordinal`. Loads no kernel: each loads on its first use.
    pub fn new(ordinal: usize) -> Result<Self> {
        let count = device_count()?;
        if count == 0 {
            return Err(Error::NoDevice);
        }
        if ordinal >= count {
            return Err(Error::BadOrdinal { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal).map_err(Error::driver("creating a context", 0))?;
        // A stream of its own (not the legacy default stream, which would serialize every
        // context of the process): contexts on several host threads run concurrently.
        let stream = ctx
            .new_stream()
            .map_err(Error::driver("creating a stream", 0))?;
        let attr = |a| {
            ctx.attribute(a)
                .map_err(Error::driver("reading a device attribute", 0))
        };
        let info = DeviceInfo {
            backend: BackendKind::Cuda,
            ordinal,
            name: ctx
                .name()
                .map_err(Error::driver("reading the device name", 0))?,
            compute_capability: (
                attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            multiprocessors: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as usize,
            total_memory: ctx
                .total_mem()
                .map_err(Error::driver("reading memory size", 0))?,
            driver_version: driver_version()?,
        };
        let result = Mutex::new(MappedResult::new(&ctx)?);
        Ok(Self::with_backend(
            Backend::Cuda(CudaBackend {
                ctx,
                stream,
                result,
            }),
            info,
        ))
    }

    /// The CPU SIMT simulator: the same kernels and API, on the host.
    pub fn sim() -> Result<Self> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let info = DeviceInfo {
            backend: BackendKind::Sim,
            ordinal: 0,
            name: format!("CPU SIMT simulator ({cores} worker threads)"),
            compute_capability: (0, 0),
            multiprocessors: cores as u32,
            l2_bytes: 0,
            total_memory: 0,
            driver_version: 0,
        };
        Ok(Self::with_backend(Backend::Sim, info))
    }

    /// CUDA device `ordinal` when a driver and a device are present, the simulator otherwise.
    /// A bad ordinal on a machine that has GPUs is an error, not a silent fallback.
    pub fn auto(ordinal: usize) -> Result<Self> {
        match device_count() {
            Ok(n) if n > 0 => Self::new(ordinal),
            Ok(_) | Err(Error::NoDriver) => Self::sim(),
            Err(e) => Err(e),
        }
    }

    fn with_backend(backend: Backend, info: DeviceInfo) -> Self {
        Self {
            backend,
            info,
            workspaces: Mutex::new(Vec::new()),
            launched: Mutex::new(Vec::new()),
        }
    }

    /// The device.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The backend.
    pub fn backend_kind(&self) -> BackendKind {
        self.info.backend
    }

    /// The cudarc context and stream this context runs on (`None` on the simulator), for
    /// ordering your own work with ours.
    pub fn cuda(&self) -> Option<(&Arc<CudaContext>, &Arc<CudaStream>)> {
        match &self.backend {
            Backend::Cuda(c) => Some((&c.ctx, &c.stream)),
            Backend::Sim => None,
        }
    }

    /// Free device memory in bytes (the simulator reports none).
    pub fn free_memory(&self) -> Result<usize> {
        match &self.backend {
            Backend::Cuda(c) => c
                .ctx
                .mem_get_info()
                .map(|(free, _)| free)
                .map_err(Error::driver("reading free memory", 0)),
            Backend::Sim => Ok(0),
        }
    }

    /// The algorithms' scratch of type `W`, made on first use; one per context.
    pub(crate) fn workspace<W: Default + Send + 'static>(&self) -> Arc<Mutex<W>> {
        let mut ws = self.workspaces.lock().unwrap_or_else(|p| p.into_inner());
        let id = TypeId::of::<W>();
        if let Some((_, w)) = ws.iter().find(|(t, _)| *t == id)
            && let Ok(w) = w.clone().downcast::<Mutex<W>>()
        {
            return w;
        }
        let w = Arc::new(Mutex::new(W::default()));
        ws.push((id, w.clone()));
        w
    }

    /// Copy host data to a new device buffer.
    pub fn htod<T: DeviceRepr + Copy>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let bytes = std::mem::size_of_val(data);
        let inner = match &self.backend {
            Backend::Cuda(c) => Buf::Cuda(
                c.stream
                    .clone_htod(data)
                    .map_err(Error::driver("copying to the device", bytes))?,
            ),
            Backend::Sim => Buf::Sim(SimBuf::from_slice(data)?),
        };
        Ok(DeviceBuffer { inner })
    }

    /// A new zero-filled device buffer of `len` elements.
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<DeviceBuffer<T>> {
        let bytes = len.saturating_mul(std::mem::size_of::<T>());
        let inner = match &self.backend {
            Backend::Cuda(c) => Buf::Cuda(
                c.stream
                    .alloc_zeros::<T>(len)
                    .map_err(Error::driver("allocating", bytes))?,
            ),
            Backend::Sim => Buf::Sim(SimBuf::zeroed(len)?),
        };
        Ok(DeviceBuffer { inner })
    }

    /// Copy a device buffer back to the host.
    pub fn dtoh<T: DeviceRepr + Copy>(&self, buf: &DeviceBuffer<T>) -> Result<Vec<T>> {
        match (&self.backend, &buf.inner) {
            (Backend::Cuda(c), Buf::Cuda(s)) => c
                .stream
                .clone_dtoh(s)
                .map_err(Error::driver("copying to the host", buf.num_bytes())),
            (Backend::Sim, Buf::Sim(s)) => Ok(s.to_vec()),
            _ => Err(Error::wrong_backend()),
        }
    }

    /// Set every byte of `buf` to zero (`cuMemsetD8Async` on a GPU).
    pub fn memset_zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        buf: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let bytes = buf.num_bytes();
        match (&self.backend, &mut buf.inner) {
            (Backend::Cuda(c), Buf::Cuda(d)) => c
                .stream
                .memset_zeros(d)
                .map_err(Error::driver("clearing device memory", bytes)),
            (Backend::Sim, Buf::Sim(d)) => {
                // SAFETY: `bytes` bytes of a live allocation; all-zero is a valid T.
                unsafe { std::ptr::write_bytes(d.ptr() as *mut u8, 0, bytes) };
                Ok(())
            }
            _ => Err(Error::wrong_backend()),
        }
    }

    /// Copy all of `src` into `dst` starting at element `at` (device to device).
    pub fn copy_into<T: DeviceRepr + Copy>(
        &self,
        src: &DeviceBuffer<T>,
        dst: &mut DeviceBuffer<T>,
        at: usize,
    ) -> Result<()> {
        let end = at
            .checked_add(src.len())
            .filter(|&e| e <= dst.len())
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "copying {} elements at {at} overflows a buffer of {}",
                    src.len(),
                    dst.len()
                ))
            })?;
        match (&self.backend, &src.inner, &mut dst.inner) {
            (Backend::Cuda(c), Buf::Cuda(s), Buf::Cuda(d)) => {
                let mut view = d.slice_mut(at..end);
                c.stream
                    .memcpy_dtod(s, &mut view)
                    .map_err(Error::driver("copying on the device", src.num_bytes()))
            }
            (Backend::Sim, Buf::Sim(s), Buf::Sim(d)) => {
                // SAFETY: both in bounds (checked above); distinct allocations.
                unsafe { std::ptr::copy_nonoverlapping(s.ptr(), d.ptr().add(at), s.len()) };
                Ok(())
            }
            _ => Err(Error::wrong_backend()),
        }
    }

    /// Wait for all work queued on the context's stream (the simulator is synchronous).
    pub fn synchronize(&self) -> Result<()> {
        match &self.backend {
            Backend::Cuda(c) => c
                .stream
                .synchronize()
                .map_err(Error::driver("synchronizing", 0)),
            Backend::Sim => Ok(()),
        }
    }

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
            Backend::Sim => Err(Error::InvalidArgument(
                "internal: the simulator loads no PTX".into(),
            )),
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
                kernels::gpu::sim::launch(name, &lc, sim).map_err(Error::Sim)
            }
        }
    }

    /// The device address of a view's first element (a host address on the simulator), for
    /// kernel arguments. An error when the buffer belongs to the other backend.
    pub fn device_addr<'a, T>(&self, view: impl Into<DeviceView<'a, T>>) -> Result<u64>
    where
        T: 'a,
    {
        let v = view.into();
        self.check(&[v.backend()])?;
        Ok(self.addr(v.buf) + (v.start * std::mem::size_of::<T>()) as u64)
    }

    /// The device address of `buf` (a host address on the simulator); the caller checked the
    /// backend.
    pub(crate) fn addr<T>(&self, buf: &DeviceBuffer<T>) -> u64 {
        match (&buf.inner, &self.backend) {
            (Buf::Sim(s), _) => s.ptr() as u64,
            (Buf::Cuda(s), Backend::Cuda(c)) => {
                use cudarc::driver::DevicePtr;
                let (p, _sync) = s.device_ptr(&c.stream);
                p
            }
            // Rejected by `check` before any launch.
            (Buf::Cuda(_), Backend::Sim) => 0,
        }
    }

    /// The device address of a view's first element; the caller checked the backend.
    pub(crate) fn view_addr<T>(&self, v: &DeviceView<'_, T>) -> u64 {
        self.addr(v.buf) + (v.start * std::mem::size_of::<T>()) as u64
    }

    /// Buffers passed to a kernel must come from this context's backend.
    pub(crate) fn check(&self, backends: &[BackendKind]) -> Result<()> {
        if backends.iter().all(|&b| b == self.info.backend) {
            Ok(())
        } else {
            Err(Error::wrong_backend())
        }
    }
}
