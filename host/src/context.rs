//! The CUDA context handle: device, stream, the embedded PTX loaded once, typed buffers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits, sys,
};
use cudarc::nvrtc::Ptx;

use crate::error::{Error, Result};

/// What the library knows about the device it runs on.
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    pub compute_capability: (i32, i32),
    pub multiprocessors: u32,
    pub l2_bytes: usize,
    pub total_memory: usize,
    pub driver_version: i32,
}

/// A device buffer of `T`, owned; freed when dropped.
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    pub(crate) slice: CudaSlice<T>,
}

impl<T> DeviceBuffer<T> {
    pub fn len(&self) -> usize {
        self.slice.len()
    }
    pub fn is_empty(&self) -> bool {
        self.slice.len() == 0
    }
    /// Bytes held on the device.
    pub fn num_bytes(&self) -> usize {
        self.slice.num_bytes()
    }
}

/// Scratch the one-launch reduction needs: one partial per block and the retirement counter
/// (kept at zero between launches by the kernel itself).
pub(crate) struct ReduceWorkspace {
    pub partials: CudaSlice<f32>,
    pub retire_count: CudaSlice<u32>,
}

/// A CUDA context on one device with one stream, the kernels loaded.
pub struct Context {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    _module: Arc<CudaModule>,
    kernels: HashMap<&'static str, CudaFunction>,
    info: DeviceInfo,
    pub(crate) reduce_ws: Mutex<ReduceWorkspace>,
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

impl Context {
    /// Open device `ordinal`, load the embedded PTX and look up every kernel.
    pub fn new(ordinal: usize) -> Result<Self> {
        let count = device_count()?;
        if count == 0 {
            return Err(Error::NoDevice);
        }
        if ordinal >= count {
            return Err(Error::BadOrdinal { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal).map_err(Error::driver("creating a context", 0))?;
        let stream = ctx.default_stream();

        let module = ctx
            .load_module(Ptx::from_src(crate::PTX))
            .map_err(|source| Error::PtxLoad {
                kernel: format!("<module: {}>", kernels::launch::KERNEL_NAMES.join(", ")),
                source,
            })?;
        let mut kernels_map = HashMap::new();
        for &name in kernels::launch::KERNEL_NAMES {
            let f = module
                .load_function(name)
                .map_err(|source| Error::PtxLoad {
                    kernel: name.to_string(),
                    source,
                })?;
            kernels_map.insert(name, f);
        }

        let attr = |a| {
            ctx.attribute(a)
                .map_err(Error::driver("reading a device attribute", 0))
        };
        let info = DeviceInfo {
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

        let grid = kernels::launch::REDUCE_MAX_GRID as usize;
        let reduce_ws = ReduceWorkspace {
            partials: stream
                .alloc_zeros::<f32>(grid)
                .map_err(Error::driver("allocating workspace", grid * 4))?,
            retire_count: stream
                .alloc_zeros::<u32>(1)
                .map_err(Error::driver("allocating workspace", 4))?,
        };
        Ok(Self {
            ctx,
            stream,
            _module: module,
            kernels: kernels_map,
            info,
            reduce_ws: Mutex::new(reduce_ws),
        })
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub(crate) fn kernel(&self, name: &str) -> Result<&CudaFunction> {
        self.kernels.get(name).ok_or_else(|| Error::PtxLoad {
            kernel: name.to_string(),
            source: cudarc::driver::DriverError(sys::cudaError_enum::CUDA_ERROR_NOT_FOUND),
        })
    }

    /// Copy host data to a new device buffer.
    pub fn htod<T: DeviceRepr>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let bytes = std::mem::size_of_val(data);
        let slice = self
            .stream
            .clone_htod(data)
            .map_err(Error::driver("copying to the device", bytes))?;
        Ok(DeviceBuffer { slice })
    }

    /// A new zero-filled device buffer of `len` elements.
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<DeviceBuffer<T>> {
        let bytes = len.saturating_mul(std::mem::size_of::<T>());
        let slice = self
            .stream
            .alloc_zeros::<T>(len)
            .map_err(Error::driver("allocating", bytes))?;
        Ok(DeviceBuffer { slice })
    }

    /// Copy a device buffer back to the host.
    pub fn dtoh<T: DeviceRepr>(&self, buf: &DeviceBuffer<T>) -> Result<Vec<T>> {
        self.stream
            .clone_dtoh(&buf.slice)
            .map_err(Error::driver("copying to the host", buf.num_bytes()))
    }

    /// Wait for all work queued on the context's stream.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(Error::driver("synchronizing", 0))
    }

    /// Time `work` with device events: `warmup` untimed runs, then `iters` runs each between a
    /// pair of events. Returns every per-run time in milliseconds.
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
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let ev = |what| self.ctx.new_event(flags).map_err(Error::driver(what, 0));
        let (start, end) = (ev("creating an event")?, ev("creating an event")?);
        let mut times = Vec::with_capacity(iters);
        for _ in 0..iters {
            start
                .record(&self.stream)
                .map_err(Error::driver("recording an event", 0))?;
            work()?;
            end.record(&self.stream)
                .map_err(Error::driver("recording an event", 0))?;
            let ms = start
                .elapsed_ms(&end)
                .map_err(Error::driver("reading an event", 0))?;
            times.push(ms as f64);
        }
        Ok(times)
    }
}
