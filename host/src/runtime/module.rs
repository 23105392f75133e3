//! Kernels compiled to PTX, one module per kernel, loaded into a device on first use.
//!
//! Why one module per kernel: the driver JIT-compiles a whole PTX module at load, so a module
//! of every kernel costs seconds where one kernel costs a fraction of that (BENCHMARKS.md,
//! Start-up (first call)). So a first `sum` compiles exactly the kernel it runs. When the library was built with SASS for the
//! device's architecture (`GPU_REDUCE_SASS=sm_90`), the driver loads that and compiles nothing.
//!
//! Modules are cached per device and shared by every [`Context`](crate::Context) of it (they
//! share the device's primary context); a kernel is loaded once per process and device.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;

use crate::error::{Error, Result};

/// One embedded module as the PTX builder's index lists it: (entry name, PTX module text, SASS
/// images by architecture).
pub type EmbeddedModule = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static [u8])],
);

/// Embedded modules, sorted by entry name.
pub type EmbeddedModules = &'static [EmbeddedModule];

/// A set of kernels compiled to PTX by `ptx-builder` (the library's own, or a tool's, or a
/// user's kernel crate), one module per kernel, loaded lazily.
#[derive(Debug)]
pub struct KernelLibrary {
    name: &'static str,
    arch: &'static str,
    modules: EmbeddedModules,
}

impl KernelLibrary {
    /// A library named `name` (unique per process: modules are cached under it) whose PTX
    /// targets `arch` (e.g. `sm_80`), from a `ptx_builder::write_embed_index` index.
    pub const fn new(name: &'static str, arch: &'static str, modules: EmbeddedModules) -> Self {
        Self {
            name,
            arch,
            modules,
        }
    }

    /// The library's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The architecture its PTX targets.
    pub fn arch(&self) -> &'static str {
        self.arch
    }

    /// Names of its kernels, sorted.
    pub fn entries(&self) -> impl Iterator<Item = &'static str> {
        self.modules.iter().map(|m| m.0)
    }

    /// The PTX module of kernel `entry`.
    pub fn ptx(&self, entry: &str) -> Option<&'static str> {
        self.find(entry).map(|m| m.1)
    }

    /// Total bytes of PTX text.
    pub fn ptx_bytes(&self) -> usize {
        self.modules.iter().map(|m| m.1.len()).sum()
    }

    /// Architectures it has SASS for.
    pub fn sass_archs(&self) -> Vec<&'static str> {
        let mut a: Vec<_> = self
            .modules
            .iter()
            .flat_map(|m| m.2.iter().map(|c| c.0))
            .collect();
        a.sort_unstable();
        a.dedup();
        a
    }

    fn find(&self, entry: &str) -> Option<&'static EmbeddedModule> {
        let modules: EmbeddedModules = self.modules;
        modules
            .binary_search_by(|m| m.0.cmp(entry))
            .ok()
            .map(|i| &modules[i])
    }
}

/// A kernel loaded into a device.
#[derive(Debug)]
pub(crate) struct LoadedKernel {
    pub function: CudaFunction,
    _module: Arc<CudaModule>,
    /// Resident blocks per SM by block size, as the occupancy calculator reported them.
    occupancy: Mutex<Vec<(u32, u32)>>,
}

impl LoadedKernel {
    /// Blocks of `block` threads (no dynamic shared memory) one SM keeps resident.
    pub fn blocks_per_sm(&self, block: u32) -> Result<u32> {
        let mut o = self.occupancy.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&(_, b)) = o.iter().find(|(k, _)| *k == block) {
            return Ok(b);
        }
        let b = self
            .function
            .occupancy_max_active_blocks_per_multiprocessor(block, 0, None)
            .map_err(Error::driver("reading a kernel's occupancy", 0))?
            .max(1);
        o.push((block, b));
        Ok(b)
    }
}

/// What loading kernels has cost this process so far (all devices).
#[derive(Debug, Clone, Default)]
pub struct LoadStats {
    /// Modules loaded.
    pub modules: u32,
    /// Of those, loaded from embedded SASS (no JIT).
    pub from_sass: u32,
    /// Bytes of PTX handed to the driver's JIT compiler.
    pub ptx_bytes: usize,
    /// Seconds spent in module loads (JIT included).
    pub seconds: f64,
    /// Each load: (library, kernel, seconds, from SASS).
    pub loads: Vec<(String, String, f64, bool)>,
}

static STATS: Mutex<Option<LoadStats>> = Mutex::new(None);

/// What loading kernels has cost this process so far.
pub fn load_stats() -> LoadStats {
    STATS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .unwrap_or_default()
}

type CacheKey = (usize, &'static str, &'static str);

/// Loaded kernels by (device ordinal, library, kernel). The lock is held while loading: threads
/// that need the same kernel at once wait for one load.
/// A loaded kernel stays loaded for the rest of the process (as the CUDA runtime API keeps its
/// modules): a `&'static` handle costs no reference count on the launch path.
static CACHE: Mutex<Option<HashMap<CacheKey, &'static LoadedKernel>>> = Mutex::new(None);

/// Kernel `entry` of `lib`, loaded into device `ordinal` (whose primary context is `ctx`, of
/// compute capability `cc`) on first use.
pub(crate) fn load(
    ctx: &Arc<CudaContext>,
    ordinal: usize,
    cc: (i32, i32),
    lib: &'static KernelLibrary,
    entry: &'static str,
) -> Result<&'static LoadedKernel> {
    let key = (ordinal, lib.name, entry);
    // A thread that panicked while holding the lock left the map as it was: still usable.
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&k) = cache.as_ref().and_then(|c| c.get(&key)) {
        return Ok(k);
    }
    let ptx_load = |source| Error::PtxLoad {
        kernel: entry.to_string(),
        source,
    };
    let (_, ptx, sass) = lib.find(entry).ok_or_else(|| Error::PtxLoad {
        kernel: format!("{entry} (not in kernel library `{}`)", lib.name),
        source: cudarc::driver::DriverError(
            cudarc::driver::sys::cudaError_enum::CUDA_ERROR_NOT_FOUND,
        ),
    })?;
    let arch = format!("sm_{}{}", cc.0, cc.1);
    let image = sass.iter().find(|(a, _)| *a == arch).map(|(_, b)| *b);
    let t = Instant::now();
    let module = match image {
        Some(bytes) => ctx.load_module(Ptx::from_binary(bytes.to_vec())),
        None => ctx.load_module(Ptx::from_src(*ptx)),
    }
    .map_err(ptx_load)?;
    let function = module.load_function(entry).map_err(ptx_load)?;
    let seconds = t.elapsed().as_secs_f64();
    let k: &'static LoadedKernel = Box::leak(Box::new(LoadedKernel {
        function,
        _module: module,
        occupancy: Mutex::new(Vec::new()),
    }));
    cache.get_or_insert_with(HashMap::new).insert(key, k);
    let mut s = STATS.lock().unwrap_or_else(|p| p.into_inner());
    let s = s.get_or_insert_with(LoadStats::default);
    s.modules += 1;
    s.from_sass += image.is_some() as u32;
    s.ptx_bytes += if image.is_some() { 0 } else { ptx.len() };
    s.seconds += seconds;
    s.loads.push((
        lib.name.to_string(),
        entry.to_string(),
        seconds,
        image.is_some(),
    ));
    Ok(k)
}
