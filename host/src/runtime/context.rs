//! The context handle: one backend (a CUDA device, or the CPU SIMT simulator) behind one API,
//! its stream, memory, kernel launches and per-algorithm scratch. Knows no algorithm.

use std::any::{Any, TypeId};
use std::sync::{Arc, Mutex};

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaStream, sys};

use super::buffer::Owner;
use super::mapped::MappedResult;
use super::module::LoadedKernel;
use crate::error::{Error, Result};
// Named by the docs here.
#[cfg(doc)]
use super::{DeviceView, KernelLibrary};

mod access;
mod copies;
mod launch;

pub(crate) use access::Access;
pub use launch::LaunchShape;

pub use crate::backend::BackendKind;

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
    /// The simulator's stream: its kernels run one at a time, as on a CUDA stream, whichever
    /// threads launch them (two at once would share the context's workspaces).
    sim_stream: Mutex<()>,
}

/// Number of CUDA devices: 0 when the driver finds no GPU, and 0 too when there is no CUDA
/// driver at all (libcuda cannot be loaded), so "how many GPUs" has one answer on every
/// machine. [`Context::new`] tells the two apart ([`Error::NoDriver`], [`Error::NoDevice`]).
/// An error only when a driver is present and fails to start.
pub fn device_count() -> Result<usize> {
    if !driver_present() {
        return Ok(0);
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

/// The process's one cudarc handle of device `ordinal`'s primary context, shared by every
/// [`Context::new`]. cudarc synchronises a handle's whole context when it makes the handle's
/// first stream (and again after its streams are all gone), which fails, and breaks the
/// capture, while another thread captures a CUDA graph on that device; one handle with a
/// stream kept for the process makes that happen once, when the device is first opened.
fn device_context(ordinal: usize) -> Result<Arc<CudaContext>> {
    type Handle = (usize, Arc<CudaContext>, Arc<CudaStream>);
    static HANDLES: Mutex<Vec<Handle>> = Mutex::new(Vec::new());
    let mut h = HANDLES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, c, _)) = h.iter().find(|(o, _, _)| *o == ordinal) {
        return Ok(c.clone());
    }
    let c = CudaContext::new(ordinal).map_err(Error::driver("creating a context", 0))?;
    let keep = c
        .new_stream()
        .map_err(Error::driver("creating a stream", 0))?;
    h.push((ordinal, c.clone(), keep));
    Ok(c)
}

/// Whether the CUDA driver library (libcuda) loads. Checked before any driver call: cudarc
/// panics on a missing libcuda at its first call.
fn driver_present() -> bool {
    // SAFETY: only tries to load the library.
    unsafe { sys::is_culib_present() }
}

/// The driver's CUDA version, e.g. 13000 for 13.0 (`cuDriverGetVersion`).
fn driver_version() -> Result<i32> {
    let mut v = 0;
    // SAFETY: writes one int; the driver is loaded (a context exists).
    unsafe { sys::cuDriverGetVersion(&mut v) }
        .result()
        .map_err(Error::driver("reading the driver version", 0))?;
    Ok(v)
}

impl Context {
    /// Open CUDA device `ordinal` (its primary context, as the runtime API and cudarc use) on a
    /// stream of the library's own. Loads no kernel: each loads on its first use. Without a
    /// CUDA driver, [`Error::NoDriver`]; with one that finds no GPU, [`Error::NoDevice`].
    pub fn new(ordinal: usize) -> Result<Self> {
        if !driver_present() {
            return Err(Error::NoDriver);
        }
        let count = device_count()?;
        if count == 0 {
            return Err(Error::NoDevice);
        }
        if ordinal >= count {
            return Err(Error::BadOrdinal { ordinal, count });
        }
        let ctx = device_context(ordinal)?;
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
        match device_count()? {
            0 => Self::sim(),
            _ => Self::new(ordinal),
        }
    }

    fn with_backend(backend: Backend, info: DeviceInfo) -> Self {
        Self {
            backend,
            info,
            workspaces: Mutex::new(Vec::new()),
            launched: Mutex::new(Vec::new()),
            graph_scratch: Mutex::new(Vec::new()),
            sim_stream: Mutex::new(()),
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
