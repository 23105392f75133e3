//! The context handle: one backend (a CUDA device, or the CPU SIMT simulator) behind one API,
//! its stream, memory, kernel launches and per-algorithm scratch. Knows no algorithm.

use std::any::{Any, TypeId};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaStream, DeviceRepr, LaunchArgs, ValidAsZeroBits, sys};

use super::buffer::{Buf, DeviceBuffer, DeviceView, DeviceViewMut, Mem, MemMut, Owner};
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
    /// The context's identity, to check the memory handed in.
    pub owner: Owner,
    /// Free slots where reductions write a result the host reads without a copy (see
    /// `mapped`): one is taken per value-returning reduction in flight.
    pub results: Mutex<Vec<MappedResult>>,
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
    /// Scratch of launches captured into CUDA graphs (device addresses), freed with the
    /// context: a graph may be replayed at any time while the context lives.
    graph_scratch: Mutex<Vec<u64>>,
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
    /// Open CUDA device `ordinal` (its primary context, as the runtime API and cudarc use) on a
    /// stream of the library's own. Loads no kernel: each loads on its first use.
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
        Self::from_stream(stream)
    }

    /// A context that queues all its work on `stream`, a cudarc stream of the caller (on the
    /// caller's `CudaContext`): the library's calls are then ordered with the caller's own
    /// work on that stream, with no device-wide synchronisation. Buffers it makes live on that
    /// stream; cudarc memory of the same context is used directly (see [`DeviceView`]).
    ///
    /// ```no_run
    /// # fn main() -> gpu_reduce::Result<()> {
    /// use gpu_reduce::cudarc::driver::CudaContext;
    /// let cuda = CudaContext::new(0).unwrap();
    /// let stream = cuda.default_stream();
    /// let x = stream.clone_htod(&[1.0f32, 2.0, 3.0]).unwrap(); // the program's own memory
    /// let ctx = gpu_reduce::Context::from_stream(stream.clone())?;
    /// assert_eq!(ctx.sum(&x)?, 6.0); // no copy, ordered after the upload
    /// # Ok(()) }
    /// ```
    pub fn from_stream(stream: Arc<CudaStream>) -> Result<Self> {
        let ctx = stream.context().clone();
        let ordinal = ctx.ordinal();
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
        let results = Mutex::new(vec![MappedResult::new(&ctx)?]);
        Ok(Self::with_backend(
            Backend::Cuda(CudaBackend {
                owner: Owner::of_stream(&stream),
                ctx,
                stream,
                results,
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
            graph_scratch: Mutex::new(Vec::new()),
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

    /// Copy host data to a new device buffer (queued on the context's stream; returns once the
    /// data has been staged, so `data` may be reused at once).
    pub fn htod<T: DeviceRepr + Copy>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let bytes = std::mem::size_of_val(data);
        Ok(match &self.backend {
            Backend::Cuda(c) => DeviceBuffer::from_slice(
                c.stream
                    .clone_htod(data)
                    .map_err(Error::driver("copying to the device", bytes))?,
            ),
            Backend::Sim => DeviceBuffer {
                inner: Buf::Sim(SimBuf::from_slice(data)?),
            },
        })
    }

    /// A new zero-filled device buffer of `len` elements (queued on the context's stream).
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<DeviceBuffer<T>> {
        let bytes = len.saturating_mul(std::mem::size_of::<T>());
        Ok(match &self.backend {
            Backend::Cuda(c) => DeviceBuffer::from_slice(
                c.stream
                    .alloc_zeros::<T>(len)
                    .map_err(Error::driver("allocating", bytes))?,
            ),
            Backend::Sim => DeviceBuffer {
                inner: Buf::Sim(SimBuf::zeroed(len)?),
            },
        })
    }

    /// Copy device memory (a buffer, a view, cudarc memory) back to the host. Blocks until the
    /// copy, and everything queued before it on the context's stream, is done.
    pub fn dtoh<'a, T: DeviceRepr + Copy + 'a>(
        &self,
        src: impl Into<DeviceView<'a, T>>,
    ) -> Result<Vec<T>> {
        let src = src.into();
        let n = src.len();
        let bytes = n * std::mem::size_of::<T>();
        let mut out = Vec::<T>::with_capacity(n);
        let (addr, access) = self.read(&src)?;
        match &self.backend {
            Backend::Cuda(c) => {
                // SAFETY: `addr` holds `n` elements (checked views); `out` has room for as many.
                unsafe {
                    sys::cuMemcpyDtoHAsync_v2(out.as_mut_ptr() as *mut _, addr, bytes, c.cu()?)
                }
                .result()
                .map_err(Error::driver("copying to the host", bytes))?;
                drop(access);
                self.synchronize()?;
            }
            Backend::Sim => {
                // SAFETY: as above, host memory of the simulator.
                unsafe { std::ptr::copy_nonoverlapping(addr as *const T, out.as_mut_ptr(), n) };
            }
        }
        // SAFETY: all `n` elements were written above (the stream was synchronised).
        unsafe { out.set_len(n) };
        Ok(out)
    }

    /// Copy `data` into device memory `dst` (as many elements as `data` holds; an error if
    /// `dst` is shorter). Queued on the context's stream; returns once `data` is staged.
    pub fn htod_into<'a, T: DeviceRepr + Copy + 'a>(
        &self,
        data: &[T],
        dst: impl Into<DeviceViewMut<'a, T>>,
    ) -> Result<()> {
        let mut dst = dst.into();
        if dst.len() < data.len() {
            return Err(Error::OutputTooSmall {
                what: format!(
                    "copying {} elements: the device memory copied into",
                    data.len()
                ),
                needed: data.len() as u64,
                got: dst.len() as u64,
            });
        }
        let bytes = std::mem::size_of_val(data);
        let (addr, _access) = self.write(&mut dst)?;
        match &self.backend {
            // SAFETY: room for `data.len()` elements at `addr` (checked above).
            Backend::Cuda(c) => {
                unsafe { cudarc::driver::result::memcpy_htod_async(addr, data, c.cu()?) }
                    .map_err(Error::driver("copying to the device", bytes))
            }
            Backend::Sim => {
                // SAFETY: as above, host memory of the simulator.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), addr as *mut T, data.len()) };
                Ok(())
            }
        }
    }

    /// Set every byte of `dst` to zero (`cuMemsetD8Async` on a GPU, queued on the stream).
    pub fn memset_zeros<'a, T: ValidAsZeroBits + 'a>(
        &self,
        dst: impl Into<DeviceViewMut<'a, T>>,
    ) -> Result<()> {
        let mut dst = dst.into();
        let bytes = dst.len() * std::mem::size_of::<T>();
        let (addr, _access) = self.write(&mut dst)?;
        // All-zero is a valid T; `bytes` bytes of the view.
        self.memset_raw(addr, bytes)
    }

    /// Copy all of `src` into `dst` starting at element `at` (device to device, queued).
    pub fn copy_into<'a, 'b, T: DeviceRepr + Copy + 'a + 'b>(
        &self,
        src: impl Into<DeviceView<'a, T>>,
        dst: impl Into<DeviceViewMut<'b, T>>,
        at: usize,
    ) -> Result<()> {
        let (src, dst) = (src.into(), dst.into());
        let end = at
            .checked_add(src.len())
            .filter(|&e| e <= dst.len())
            .ok_or_else(|| Error::OutOfRange {
                what: format!("copying {} elements at {at}", src.len()),
                start: at as u64,
                end: (at as u64).saturating_add(src.len() as u64),
                len: dst.len() as u64,
            })?;
        let mut dst = dst.slice(at..end)?;
        let bytes = src.len() * std::mem::size_of::<T>();
        let (s, _read) = self.read(&src)?;
        let (d, _write) = self.write(&mut dst)?;
        match &self.backend {
            // SAFETY: both views hold `src.len()` elements.
            Backend::Cuda(c) => {
                unsafe { cudarc::driver::result::memcpy_dtod_async(d, s, bytes, c.cu()?) }
                    .map_err(Error::driver("copying on the device", bytes))
            }
            Backend::Sim => {
                // SAFETY: as above (`copy`: the two may overlap).
                unsafe { std::ptr::copy(s as *const T, d as *mut T, src.len()) };
                Ok(())
            }
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
                kernels::gpu::sim::launch(name, &lc, sim).map_err(Error::Sim)
            }
        }
    }

    /// Launch `kernel` of `lib` with `shape`, passing `params` (the kernel's one parameter: a
    /// `#[repr(C)]` struct of the kernels crate, such as `kernels::reduce::ReduceParams`) by
    /// value: on a GPU on the context's stream, on the simulator by calling `kernel.sim` with
    /// the same struct on every simulated thread. The one launch path of the built-in families.
    ///
    /// # Safety
    /// `params` must be what `kernel` takes, its pointers valid for what the kernel does with
    /// them (addresses of this context's memory, from [`Context::device_addr`]).
    pub unsafe fn launch_kernel<P: Copy>(
        &self,
        lib: &'static KernelLibrary,
        kernel: &kernels::Kernel<unsafe fn(P)>,
        shape: LaunchShape,
        params: P,
    ) -> Result<()> {
        /// The struct as one kernel parameter: its bytes, as the PTX entry's by-value `.param`.
        #[repr(transparent)]
        struct ByValue<P>(P);
        // SAFETY: a plain `#[repr(C)]` struct of integers and pointers, the entry's layout.
        unsafe impl<P: Copy> cudarc::driver::DeviceRepr for ByValue<P> {}
        /// The simulated threads share the struct, as the GPU's threads share the parameter.
        struct Shared<P>(P);
        // SAFETY: only copied out; what its pointers reach is the kernel's business.
        unsafe impl<P> Sync for Shared<P> {}
        use cudarc::driver::PushKernelArg;
        let (by_value, shared, sim) = (ByValue(params), Shared(params), kernel.sim);
        // SAFETY: the caller's contract; the simulator calls the same kernel with the same struct.
        unsafe {
            self.launch(
                lib,
                kernel.name,
                shape,
                |b| {
                    b.arg(&by_value);
                },
                || {
                    let s = &shared;
                    sim(s.0)
                },
            )
        }
    }

    /// The device address of a view's first element (a host address on the simulator), for
    /// the kernel arguments of [`Context::launch`]. An error when the memory belongs to another
    /// backend or device. For cudarc memory used on another stream, prefer passing views to
    /// the library's calls, which hold cudarc's ordering guards across the launch.
    pub fn device_addr<'a, T>(&self, view: impl Into<DeviceView<'a, T>>) -> Result<u64>
    where
        T: 'a,
    {
        let v = view.into();
        let (addr, access) = self.read(&v)?;
        drop(access);
        Ok(addr)
    }

    /// The device address of one of the context's own buffers (the algorithms' scratch): no
    /// check and no ordering work, as the buffer is only ever used on this context's stream.
    pub(crate) fn scratch_addr<T>(&self, buf: &DeviceBuffer<T>) -> u64 {
        buf.base_addr()
    }

    fn owner(&self) -> Owner {
        match &self.backend {
            Backend::Cuda(c) => c.owner,
            Backend::Sim => Owner::Sim,
        }
    }

    /// Memory of `owner` may be used by this context, or an error that names both.
    pub(crate) fn check_owner(&self, owner: Owner) -> Result<()> {
        if owner.usable_by(self.owner()) {
            return Ok(());
        }
        if owner.backend() != self.info.backend {
            return Err(Error::WrongBackend);
        }
        Err(Error::WrongDevice {
            memory: format!(
                "memory of {} (or of another CUDA context)",
                owner.describe()
            ),
            context: self.owner().describe(),
        })
    }

    /// The address to read a view at, and what keeps it ordered until dropped (drop it after
    /// the kernel that reads it is queued).
    pub(crate) fn read<'v, T>(&'v self, v: &'v DeviceView<'_, T>) -> Result<(u64, Access<'v>)> {
        self.check_owner(v.owner())?;
        let off = (v.start * std::mem::size_of::<T>()) as u64;
        let (base, access) = match (v.mem, &self.backend) {
            (Mem::Ours(b), _) => (b.base_addr(), self.order_with(b.home())?),
            (Mem::Cuda(d), Backend::Cuda(c)) => {
                let (p, g) = d.device_ptr(&c.stream);
                (p, Access::Cuda(g))
            }
            (Mem::Raw { addr, .. }, _) => (addr, Access::Free),
            (Mem::Cuda(_), Backend::Sim) => return Err(Error::WrongBackend),
        };
        Ok((base + off, access))
    }

    /// The address to write a view at, and what keeps it ordered until dropped.
    pub(crate) fn write<'v, T>(
        &'v self,
        v: &'v mut DeviceViewMut<'_, T>,
    ) -> Result<(u64, Access<'v>)> {
        self.check_owner(v.owner())?;
        let off = (v.start * std::mem::size_of::<T>()) as u64;
        let (base, access) = match (&mut v.mem, &self.backend) {
            (MemMut::Ours(b), _) => (b.base_addr(), self.order_with(b.home())?),
            (MemMut::Cuda(d), Backend::Cuda(c)) => {
                let (p, g) = d.device_ptr_mut(&c.stream);
                (p, Access::Cuda(g))
            }
            (MemMut::Raw { addr, .. }, _) => (*addr, Access::Free),
            (MemMut::Cuda(_), Backend::Sim) => return Err(Error::WrongBackend),
        };
        Ok((base + off, access))
    }

    /// Ordering for a library buffer whose stream is `home`: nothing on its own stream;
    /// on another, our stream waits for `home` now and `home` for us when the access drops.
    fn order_with<'v>(&'v self, home: Option<&'v Arc<CudaStream>>) -> Result<Access<'v>> {
        match (home, &self.backend) {
            (Some(home), Backend::Cuda(c)) if !Arc::ptr_eq(home, &c.stream) => {
                c.stream
                    .join(home)
                    .map_err(Error::driver("ordering with another stream", 0))?;
                Ok(Access::Joined {
                    home,
                    ours: &c.stream,
                })
            }
            _ => Ok(Access::Free),
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

    /// Zero `bytes` at device address `addr`, queued on the stream (a memset node when
    /// captured into a graph); on the simulator at once.
    pub(crate) fn memset_raw(&self, addr: u64, bytes: usize) -> Result<()> {
        match &self.backend {
            // SAFETY: the caller's scratch of at least `bytes`.
            Backend::Cuda(c) => {
                unsafe { cudarc::driver::result::memset_d8_async(addr, 0, bytes, c.cu()?) }
                    .map_err(Error::driver("clearing device memory", bytes))
            }
            Backend::Sim => {
                // SAFETY: as above, host memory.
                unsafe { std::ptr::write_bytes(addr as *mut u8, 0, bytes) };
                Ok(())
            }
        }
    }

    /// Set `count` elements of 4 or 8 bytes at device address `addr` to `bits` (the low
    /// `8 * size` bits), queued on the stream: `cuMemsetD32Async`, and for 8-byte elements two
    /// strided `cuMemsetD2D32Async` (low and high words). On the simulator at once.
    pub(crate) fn fill_raw(&self, addr: u64, bits: u64, size: usize, count: usize) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        match (&self.backend, size) {
            (Backend::Cuda(c), 4) => {
                let s = c.cu()?;
                // SAFETY: the caller's memory of `count` 4-byte elements.
                let r = unsafe { sys::cuMemsetD32Async(addr, bits as u32, count, s) };
                r.result()
                    .map_err(Error::driver("filling device memory", 0))
            }
            (Backend::Cuda(c), 8) => {
                let s = c.cu()?;
                for (off, word) in [(0, bits as u32), (4, (bits >> 32) as u32)] {
                    // SAFETY: as above, `count` 8-byte elements: one 4-byte word per row of 8.
                    let r = unsafe { sys::cuMemsetD2D32Async(addr + off, 8, word, 1, count, s) };
                    r.result()
                        .map_err(Error::driver("filling device memory", 0))?;
                }
                Ok(())
            }
            (Backend::Sim, 4 | 8) => {
                for i in 0..count {
                    // SAFETY: as above, host memory.
                    unsafe {
                        if size == 4 {
                            (addr as *mut u32).add(i).write(bits as u32);
                        } else {
                            (addr as *mut u64).add(i).write(bits);
                        }
                    }
                }
                Ok(())
            }
            _ => Err(Error::Internal(format!(
                "a device fill of {size}-byte elements (4 or 8 only)"
            ))),
        }
    }

    /// Check a raw pointer handed in for `len` elements of `T`.
    pub(crate) fn check_raw<T>(&self, addr: u64, len: usize) -> Result<Owner> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::TooLarge {
                what: format!(
                    "the elements of a raw view ({}-byte elements overflow the address space)",
                    std::mem::size_of::<T>()
                ),
                size: len as u64,
                limit: (usize::MAX / std::mem::size_of::<T>().max(1)) as u64,
            })?;
        if len == 0 {
            return Ok(self.owner());
        }
        if addr == 0 {
            return Err(Error::BadPointer {
                addr,
                reason: format!("a null pointer was given for a non-empty view of {len} elements"),
            });
        }
        if !addr.is_multiple_of(std::mem::align_of::<T>() as u64) {
            return Err(Error::BadPointer {
                addr,
                reason: format!("not aligned to {} bytes", std::mem::align_of::<T>()),
            });
        }
        let Backend::Cuda(c) = &self.backend else {
            return Ok(Owner::Sim);
        };
        c.ctx
            .bind_to_thread()
            .map_err(Error::driver("binding the context", 0))?;
        let attr = |a: sys::CUpointer_attribute| -> Result<u64> {
            let mut v = 0u64;
            // SAFETY: every attribute asked below writes at most 8 bytes.
            unsafe { sys::cuPointerGetAttribute(&mut v as *mut u64 as *mut _, a, addr) }
                .result()
                .map_err(|_| Error::BadPointer {
                    addr,
                    reason: "not device memory known to the CUDA driver".into(),
                })?;
            Ok(v)
        };
        use sys::CUpointer_attribute as P;
        // DEVICE_ORDINAL is an int: read it into a zeroed u64 and keep the low half.
        let ordinal = attr(P::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)? as u32 as usize;
        if ordinal != self.info.ordinal {
            return Err(Error::WrongDevice {
                memory: format!("address {addr:#x}, memory of CUDA device {ordinal},"),
                context: format!("CUDA device {}", self.info.ordinal),
            });
        }
        let start = attr(P::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)?;
        let size = attr(P::CU_POINTER_ATTRIBUTE_RANGE_SIZE)?;
        if addr + bytes as u64 > start + size {
            return Err(Error::BadPointer {
                addr,
                reason: format!(
                    "{len} elements run past the end of its allocation ({size} bytes at \
                     {start:#x})"
                ),
            });
        }
        Ok(Owner::Cuda { ordinal, ctx: None })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if let Backend::Cuda(c) = &self.backend {
            let scratch = std::mem::take(
                self.graph_scratch
                    .get_mut()
                    .unwrap_or_else(|p| p.into_inner()),
            );
            if !scratch.is_empty() && c.ctx.bind_to_thread().is_ok() {
                for addr in scratch {
                    // SAFETY: allocated by `graph_scratch`, freed once; a synchronous free
                    // waits for work still using it.
                    let _ = unsafe { cudarc::driver::result::free_sync(addr) };
                }
            }
        }
    }
}

/// What keeps one use of device memory ordered with other streams; dropped after the launch
/// that uses the memory has been queued.
pub(crate) enum Access<'a> {
    /// Nothing to do: the memory is ordered on this stream, or the caller orders it.
    Free,
    /// cudarc's guard: records the slice's read/write event on our stream when dropped.
    #[allow(dead_code)] // held for its Drop
    Cuda(cudarc::driver::SyncOnDrop<'a>),
    /// A library buffer of another stream: that stream waits for ours when this drops.
    Joined {
        home: &'a Arc<CudaStream>,
        ours: &'a Arc<CudaStream>,
    },
}

impl Drop for Access<'_> {
    fn drop(&mut self) {
        if let Access::Joined { home, ours } = self {
            // Only fails on a broken context, which the next call reports; nothing to do here.
            let _ = home.join(ours);
        }
    }
}

impl CudaBackend {
    /// The raw stream handle, with the context bound to the calling thread (the driver's
    /// raw calls act on the thread's current context).
    pub(crate) fn cu(&self) -> Result<sys::CUstream> {
        self.ctx
            .bind_to_thread()
            .map_err(Error::driver("binding the context", 0))?;
        Ok(self.stream.cu_stream())
    }
}
