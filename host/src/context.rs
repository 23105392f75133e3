//! The context handle: a backend (a CUDA device, or the CPU SIMT simulator) with the same API,
//! typed buffers, the kernels loaded once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, LaunchArgs,
    PushKernelArg, ValidAsZeroBits, sys,
};
use cudarc::nvrtc::Ptx;

use crate::error::{Error, Result};
use crate::simbuf::SimBuf;

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
    pub backend: BackendKind,
    pub ordinal: usize,
    pub name: String,
    pub compute_capability: (i32, i32),
    pub multiprocessors: u32,
    pub l2_bytes: usize,
    pub total_memory: usize,
    /// The driver's CUDA version (e.g. 13000); 0 on the simulator.
    pub driver_version: i32,
}

/// A device buffer of `T`, owned; freed when dropped.
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    pub(crate) inner: Buf<T>,
}

#[derive(Debug)]
pub(crate) enum Buf<T> {
    Cuda(CudaSlice<T>),
    Sim(SimBuf<T>),
}

impl<T> DeviceBuffer<T> {
    pub fn len(&self) -> usize {
        match &self.inner {
            Buf::Cuda(s) => s.len(),
            Buf::Sim(s) => s.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes held on the device.
    pub fn num_bytes(&self) -> usize {
        self.len() * std::mem::size_of::<T>()
    }
    pub fn backend(&self) -> BackendKind {
        match &self.inner {
            Buf::Cuda(_) => BackendKind::Cuda,
            Buf::Sim(_) => BackendKind::Sim,
        }
    }
}

/// Scratch the one-launch reduction needs: one partial per block and the retirement counter
/// (kept at zero between launches by the kernel itself).
pub(crate) struct ReduceWorkspace {
    /// REDUCE_MAX_GRID accumulators of up to 16 bytes.
    pub partials: DeviceBuffer<u64>,
    pub retire_count: DeviceBuffer<u32>,
}

/// A borrowed, contiguous part of a [`DeviceBuffer`] (any element offset: the kernels handle
/// starts that are not 16-byte aligned).
#[derive(Debug)]
pub struct DeviceView<'a, T> {
    buf: &'a DeviceBuffer<T>,
    start: usize,
    len: usize,
}

impl<T> Clone for DeviceView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DeviceView<'_, T> {}

impl<'a, T> DeviceView<'a, T> {
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn backend(&self) -> BackendKind {
        self.buf.backend()
    }
}

impl<'a, T> From<&'a DeviceBuffer<T>> for DeviceView<'a, T> {
    fn from(buf: &'a DeviceBuffer<T>) -> Self {
        DeviceView {
            buf,
            start: 0,
            len: buf.len(),
        }
    }
}

impl<'a, T> From<&'a mut DeviceBuffer<T>> for DeviceView<'a, T> {
    fn from(buf: &'a mut DeviceBuffer<T>) -> Self {
        DeviceView::from(&*buf)
    }
}

impl<T> DeviceBuffer<T> {
    /// Elements `range` of the buffer; a range outside it is an error.
    pub fn view(&self, range: impl std::ops::RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        use std::ops::Bound::*;
        let start = match range.start_bound() {
            Included(&s) => s,
            Excluded(&s) => s.saturating_add(1),
            Unbounded => 0,
        };
        let end = match range.end_bound() {
            Included(&e) => e.saturating_add(1),
            Excluded(&e) => e,
            Unbounded => self.len(),
        };
        if start > end || end > self.len() {
            return Err(Error::InvalidArgument(format!(
                "range {start}..{end} is outside a buffer of {} elements",
                self.len()
            )));
        }
        Ok(DeviceView {
            buf: self,
            start,
            len: end - start,
        })
    }
}

pub(crate) struct CudaBackend {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    /// Page-locked, device-mapped host words where reductions write a result the host reads
    /// right after the stream synchronises: no device-to-host copy on the latency path.
    pub result: Mutex<MappedResult>,
    loaded: Arc<Loaded>,
}

/// The embedded PTX loaded into a device's primary context, and its kernels.
struct Loaded {
    _module: Arc<CudaModule>,
    kernels: HashMap<&'static str, CudaFunction>,
    /// Blocks of `REDUCE_BLOCK` threads each reduction kernel keeps resident per SM (from its
    /// register and shared-memory use, `cuOccupancyMaxActiveBlocksPerMultiprocessor`).
    reduce_blocks_per_sm: HashMap<&'static str, u32>,
}

/// Modules already loaded, by device ordinal. The driver JIT-compiles the PTX (13 MB, 280
/// kernels) at load; every `Context` of a device shares the one primary context, so later
/// contexts (other threads, other streams) reuse the module instead of compiling it again.
/// The lock is held while loading: threads opening the same device at once wait for one load.
static LOADED: Mutex<Vec<(usize, Arc<Loaded>)>> = Mutex::new(Vec::new());

fn loaded_kernels(ctx: &Arc<CudaContext>, ordinal: usize) -> Result<Arc<Loaded>> {
    // A thread that panicked while holding the lock left the list as it was: still usable.
    let mut cache = LOADED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, l)) = cache.iter().find(|(o, _)| *o == ordinal) {
        return Ok(l.clone());
    }
    let module = ctx
        .load_module(Ptx::from_src(crate::PTX))
        .map_err(|source| Error::PtxLoad {
            kernel: format!("<module: {}>", kernels::launch::KERNEL_NAMES.join(", ")),
            source,
        })?;
    let mut kernels_map = HashMap::new();
    let mut reduce_blocks = HashMap::new();
    let names = kernels::launch::KERNEL_NAMES
        .iter()
        .chain(kernels::ladder::KERNEL_NAMES)
        .chain(kernels::scan::KERNEL_NAMES)
        .chain(kernels::scan_ladder::KERNEL_NAMES)
        .chain(kernels::stream::KERNEL_NAMES);
    for &name in names {
        let f = module
            .load_function(name)
            .map_err(|source| Error::PtxLoad {
                kernel: name.to_string(),
                source,
            })?;
        if name.starts_with("reduce_") {
            // An f64 sum needs 39 registers: 6 blocks of 256 per SM, not 8. Sizing the grid
            // for 8 would leave a second, ragged wave (measured 5-7% slower on an H200).
            let blocks = f
                .occupancy_max_active_blocks_per_multiprocessor(
                    kernels::launch::REDUCE_BLOCK,
                    0,
                    None,
                )
                .map_err(Error::driver("reading a kernel's occupancy", 0))?;
            reduce_blocks.insert(name, blocks.max(1));
        }
        kernels_map.insert(name, f);
    }
    let loaded = Arc::new(Loaded {
        _module: module,
        kernels: kernels_map,
        reduce_blocks_per_sm: reduce_blocks,
    });
    cache.push((ordinal, loaded.clone()));
    Ok(loaded)
}

impl CudaBackend {
    /// Resident blocks per SM of reduction kernel `name` (8, the most 256-thread blocks an SM
    /// holds, for a kernel not measured at load).
    pub fn reduce_blocks_per_sm(&self, name: &str) -> u32 {
        self.loaded
            .reduce_blocks_per_sm
            .get(name)
            .copied()
            .unwrap_or(8)
    }
}

/// A device-mapped pinned host buffer: two result words, then a completion flag, and their
/// device address.
pub(crate) struct MappedResult {
    pub host: cudarc::driver::PinnedHostSlice<u64>,
    pub device_addr: u64,
    seq: u32,
}

/// Polls of the flag between two `cuStreamQuery` calls (which report a faulted kernel, whose
/// flag would never come).
const POLLS_PER_QUERY: u32 = 512;

impl MappedResult {
    fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        // SAFETY: initialised right below, before any kernel can see it.
        let mut host = unsafe { ctx.alloc_pinned_with_flags::<u64>(3, flags) }
            .map_err(Error::driver("allocating pinned memory", 24))?;
        let p = host
            .as_mut_ptr()
            .map_err(Error::driver("allocating pinned memory", 24))?;
        // SAFETY: three words of a live allocation.
        unsafe { std::ptr::write_bytes(p, 0, 3) };
        let mut device_addr = 0;
        // SAFETY: `p` is a live DEVICEMAP allocation of this context.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device_addr, p as *mut _, 0) }
            .result()
            .map_err(Error::driver("mapping pinned memory", 24))?;
        Ok(Self {
            host,
            device_addr,
            seq: 0,
        })
    }

    /// Device address of the completion flag (a u32 in the third word).
    pub fn flag_device_addr(&self) -> u64 {
        self.device_addr + 16
    }

    /// A sequence number the flag does not hold yet (never 0, the initial value).
    pub fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1).max(1);
        self.seq
    }

    /// Wait until the kernel launched with `seq` has raised the flag, then read the two result
    /// words. A kernel that faults never raises it: the stream query in the loop reports the
    /// error instead of spinning forever.
    pub fn wait(&mut self, seq: u32, stream: &CudaStream) -> Result<[u64; 2]> {
        let p = self
            .host
            .as_mut_ptr()
            .map_err(Error::driver("reading pinned memory", 24))?;
        // SAFETY: three live words; volatile because the device writes them behind our back.
        let flag = unsafe { p.add(2) } as *const u32;
        let raised = || unsafe { flag.read_volatile() } == seq;
        let words = || {
            // The device stored the words before the flag (st.release.sys); x86 and PCIe keep
            // that order, and the fence keeps the compiler and CPU from reading them early.
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            // SAFETY: as above.
            unsafe { [p.read_volatile(), p.add(1).read_volatile()] }
        };
        loop {
            for _ in 0..POLLS_PER_QUERY {
                if raised() {
                    return Ok(words());
                }
                std::hint::spin_loop();
            }
            // SAFETY: a live stream of this context.
            match unsafe { sys::cuStreamQuery(stream.cu_stream()) } {
                sys::cudaError_enum::CUDA_ERROR_NOT_READY => {}
                sys::cudaError_enum::CUDA_SUCCESS => {
                    return if raised() {
                        Ok(words())
                    } else {
                        Err(Error::InvalidArgument(
                            "internal: the reduction kernel ended without raising its flag".into(),
                        ))
                    };
                }
                e => {
                    return Err(Error::Driver {
                        op: "waiting for a reduction",
                        source: cudarc::driver::DriverError(e),
                    });
                }
            }
        }
    }
}

pub(crate) enum Backend {
    Cuda(CudaBackend),
    Sim,
}

/// A context on one device (or the simulator), the kernels loaded.
pub struct Context {
    pub(crate) backend: Backend,
    info: DeviceInfo,
    pub(crate) reduce_ws: Mutex<ReduceWorkspace>,
    pub(crate) scan_ws: Mutex<crate::scan::ScanWorkspace>,
    pub(crate) reduce_grid_override: std::sync::atomic::AtomicU32,
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

fn alloc_zeros_on<T: DeviceRepr + ValidAsZeroBits>(
    backend: &Backend,
    len: usize,
) -> Result<DeviceBuffer<T>> {
    let bytes = len.saturating_mul(std::mem::size_of::<T>());
    let inner = match backend {
        Backend::Cuda(c) => Buf::Cuda(
            c.stream
                .alloc_zeros::<T>(len)
                .map_err(Error::driver("allocating", bytes))?,
        ),
        Backend::Sim => Buf::Sim(SimBuf::zeroed(len)?),
    };
    Ok(DeviceBuffer { inner })
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

impl Context {
    /// Open CUDA device `ordinal`, load the embedded PTX and look up every kernel.
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

        let loaded = loaded_kernels(&ctx, ordinal)?;

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
        let backend = Backend::Cuda(CudaBackend {
            ctx,
            stream,
            result,
            loaded,
        });
        Self::with_backend(backend, info)
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
        Self::with_backend(Backend::Sim, info)
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

    fn with_backend(backend: Backend, info: DeviceInfo) -> Result<Self> {
        let grid = kernels::launch::REDUCE_MAX_GRID as usize;
        let reduce_ws = Mutex::new(ReduceWorkspace {
            partials: alloc_zeros_on::<u64>(&backend, 2 * grid)?,
            retire_count: alloc_zeros_on::<u32>(&backend, 1)?,
        });
        Ok(Self {
            backend,
            info,
            reduce_ws,
            scan_ws: Mutex::new(Default::default()),
            reduce_grid_override: std::sync::atomic::AtomicU32::new(0),
        })
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub fn backend_kind(&self) -> BackendKind {
        self.info.backend
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
        alloc_zeros_on(&self.backend, len)
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
        let bytes = buf.len() * std::mem::size_of::<T>();
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
    /// events on the GPU, or with the wall clock on the simulator. Milliseconds per run.
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

    /// Launch `name` with `cfg` on whichever backend this context has. `push` adds the CUDA
    /// arguments; `sim` is the kernel call the simulator runs on every thread.
    pub(crate) fn launch<'a>(
        &'a self,
        name: &'static str,
        cfg: LaunchShape,
        push: impl FnOnce(&mut LaunchArgs<'a>),
        sim: impl Fn() + Sync,
    ) -> Result<()> {
        match &self.backend {
            Backend::Cuda(c) => {
                let f = c.loaded.kernels.get(name).ok_or_else(|| Error::PtxLoad {
                    kernel: name.to_string(),
                    source: cudarc::driver::DriverError(sys::cudaError_enum::CUDA_ERROR_NOT_FOUND),
                })?;
                let mut b = c.stream.launch_builder(f);
                push(&mut b);
                let lc = cudarc::driver::LaunchConfig {
                    grid_dim: cfg.grid,
                    block_dim: cfg.block,
                    shared_mem_bytes: cfg.dynamic_shared_bytes,
                };
                // SAFETY: each caller passes the kernel's arguments in its declared order and
                // types (checked against `kernels` by the tests on both backends).
                unsafe { b.launch(lc) }.map_err(Error::launch(name))?;
                Ok(())
            }
            Backend::Sim => {
                let lc = kernels::gpu::sim::LaunchConfig {
                    grid: cfg.grid,
                    block: cfg.block,
                    dynamic_shared_bytes: cfg.dynamic_shared_bytes,
                };
                kernels::gpu::sim::launch(name, &lc, sim).map_err(Error::Sim)
            }
        }
    }
}

/// Grid, block and dynamic shared memory of a launch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaunchShape {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub dynamic_shared_bytes: u32,
}

impl LaunchShape {
    pub fn linear(grid: u32, block: u32, dynamic_shared_bytes: u32) -> Self {
        Self {
            grid: (grid, 1, 1),
            block: (block, 1, 1),
            dynamic_shared_bytes,
        }
    }
}

/// A raw device address for kernel arguments, shareable with the simulator's threads.
#[derive(Clone, Copy)]
pub(crate) struct DevPtr<T>(pub *mut T);
// SAFETY: a device address; the kernels synchronise their own accesses.
unsafe impl<T> Send for DevPtr<T> {}
unsafe impl<T> Sync for DevPtr<T> {}

impl<T> DevPtr<T> {
    /// The address (a method, so closures capture the Sync wrapper, not the raw field).
    pub fn get(self) -> *mut T {
        self.0
    }
}

impl<T> DeviceBuffer<T> {
    /// The buffer's address for a simulator launch (null for a CUDA buffer, which the simulator
    /// never receives: `Context::check` rejects mixed backends first).
    pub(crate) fn sim_ptr(&self) -> DevPtr<T> {
        match &self.inner {
            Buf::Sim(s) => DevPtr(s.ptr()),
            Buf::Cuda(_) => DevPtr(std::ptr::null_mut()),
        }
    }

    /// Push this buffer as a CUDA kernel argument.
    pub(crate) fn push<'a>(&'a self, b: &mut LaunchArgs<'a>) {
        if let Buf::Cuda(s) = &self.inner {
            b.arg(s);
        }
    }
}

impl Context {
    /// The device address of `buf` (a host address on the simulator), for kernel arguments.
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

    /// The device address of a view's first element.
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
