//! Kernels compiled to PTX, one module per kernel, loaded into a device on first use.
//!
//! Why one module per kernel: the driver JIT-compiles a whole PTX module at load, so a module
//! of every kernel costs seconds where one kernel costs a fraction of that (BENCHMARKS.md,
//! Start-up (first call) and binary size). So a first `sum` compiles exactly the kernel it runs. When the library was built with SASS for the
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

/// One kernel of an embedded index: (entry name, index of its module).
pub type EmbeddedEntry = (&'static str, usize);

/// One embedded module as the PTX builder's index lists it: (the function to load from it, the
/// length of its PTX, the PTX deflated, SASS images by architecture, deflated). Entries whose
/// code is the same up to their names (an `i32` and a `u32` sum) share one module.
pub type EmbeddedModule = (
    &'static str,
    usize,
    &'static [u8],
    &'static [(&'static str, &'static [u8])],
);

/// An embedded index (`ptx_builder::write_embed_index`): the kernels sorted by entry name, the
/// modules they refer to, and the dictionary the modules' PTX is deflated against (deflated).
pub type EmbeddedIndex = (
    &'static [EmbeddedEntry],
    &'static [EmbeddedModule],
    &'static [u8],
);

/// A set of kernels compiled to PTX by `ptx-builder` (the library's own, or a tool's, or a
/// user's kernel crate), one module per kernel, kept compressed in the binary and loaded (and
/// inflated) lazily.
#[derive(Debug)]
pub struct KernelLibrary {
    name: &'static str,
    arch: &'static str,
    entries: &'static [EmbeddedEntry],
    modules: &'static [EmbeddedModule],
    dictionary: &'static [u8],
}

impl KernelLibrary {
    /// A library named `name` (unique per process: modules are cached under it) whose PTX
    /// targets `arch` (e.g. `sm_80`), from a `ptx_builder::write_embed_index` index.
    pub const fn new(name: &'static str, arch: &'static str, index: EmbeddedIndex) -> Self {
        Self {
            name,
            arch,
            entries: index.0,
            modules: index.1,
            dictionary: index.2,
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
        self.entries.iter().map(|e| e.0)
    }

    /// Whether it has kernel `entry`.
    pub fn contains(&self, entry: &str) -> bool {
        self.find(entry).is_some()
    }

    /// The PTX module that holds kernel `entry`, inflated. Its kernel is named
    /// [`function`](Self::function)`(entry)`: `entry` itself, or the kernel whose code it shares.
    pub fn ptx(&self, entry: &str) -> Option<String> {
        let m = self.find(entry)?;
        let dict = inflate(self.dictionary, &[], None)?;
        inflate(m.2, &dict, Some(m.1)).and_then(|b| String::from_utf8(b).ok())
    }

    /// The name under which kernel `entry` is found in its module.
    pub fn function(&self, entry: &str) -> Option<&'static str> {
        self.find(entry).map(|m| m.0)
    }

    /// Bytes of PTX text of its modules (inflated).
    pub fn ptx_bytes(&self) -> usize {
        self.modules.iter().map(|m| m.1).sum()
    }

    /// Bytes it adds to a binary: its modules (and SASS images) as embedded, compressed.
    pub fn embedded_bytes(&self) -> usize {
        self.modules
            .iter()
            .map(|m| m.2.len() + m.3.iter().map(|c| c.1.len()).sum::<usize>())
            .sum::<usize>()
            + self.dictionary.len()
    }

    /// Number of distinct modules (kernels that share code share one).
    pub fn module_count(&self) -> usize {
        self.modules.len()
    }

    /// Architectures it has SASS for.
    pub fn sass_archs(&self) -> Vec<&'static str> {
        let mut a: Vec<_> = self
            .modules
            .iter()
            .flat_map(|m| m.3.iter().map(|c| c.0))
            .collect();
        a.sort_unstable();
        a.dedup();
        a
    }

    fn position(&self, entry: &str) -> Option<usize> {
        let i = self.entries.binary_search_by(|e| e.0.cmp(entry)).ok()?;
        Some(self.entries[i].1)
    }

    fn find(&self, entry: &str) -> Option<&'static EmbeddedModule> {
        let modules: &'static [EmbeddedModule] = self.modules;
        self.position(entry).and_then(|i| modules.get(i))
    }
}

/// Raw deflate, inflated: the continuation of `dict` (the compressor read it first, so matches
/// reach back into it); `len` (when known) is the output's length.
fn inflate(data: &[u8], dict: &[u8], len: Option<usize>) -> Option<Vec<u8>> {
    use miniz_oxide::inflate::TINFLStatus;
    use miniz_oxide::inflate::core::{DecompressorOxide, decompress, inflate_flags};
    let Some(len) = len else {
        return miniz_oxide::inflate::decompress_to_vec(data).ok();
    };
    let mut out = Vec::with_capacity(dict.len() + len);
    out.extend_from_slice(dict);
    out.resize(dict.len() + len, 0);
    let mut r = DecompressorOxide::new();
    let flags = inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
    let (status, _, n) = decompress(&mut r, data, &mut out, dict.len(), flags);
    (status == TINFLStatus::Done && n == len).then(|| out.split_off(dict.len()))
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

/// Loaded kernels by (device ordinal, library, kernel), and loaded modules by (device ordinal,
/// library, module index): kernels that share a module load it once. The lock is held while
/// loading: threads that need the same kernel at once wait for one load.
/// A loaded kernel stays loaded for the rest of the process (as the CUDA runtime API keeps its
/// modules): a `&'static` handle costs no reference count on the launch path.
#[allow(clippy::type_complexity)]
static CACHE: Mutex<
    Option<(
        HashMap<CacheKey, &'static LoadedKernel>,
        HashMap<(usize, &'static str, usize), Arc<CudaModule>>,
    )>,
> = Mutex::new(None);

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
    // A thread that panicked while holding the lock left the maps as they were: still usable.
    let mut guard = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let (kernels, modules) = guard.get_or_insert_with(Default::default);
    if let Some(&k) = kernels.get(&key) {
        return Ok(k);
    }
    let ptx_load = |source: cudarc::driver::DriverError| {
        if crate::error::is_kernel_fault(source.0) {
            // An earlier kernel's fault, reported at this load.
            Error::KernelFault {
                during: format!("loading kernel `{entry}`"),
                source,
            }
        } else {
            Error::PtxLoad {
                kernel: entry.to_string(),
                source,
            }
        }
    };
    let not_found = |what: &str| Error::PtxLoad {
        kernel: format!("{entry} ({what} in kernel library `{}`)", lib.name),
        source: cudarc::driver::DriverError(
            cudarc::driver::sys::cudaError_enum::CUDA_ERROR_NOT_FOUND,
        ),
    };
    let index = lib.position(entry).ok_or_else(|| not_found("not"))?;
    let &(function, ptx_len, ptx, sass) = lib
        .modules
        .get(index)
        .ok_or_else(|| not_found("a bad index"))?;
    let arch = format!("sm_{}{}", cc.0, cc.1);
    let image = sass.iter().find(|(a, _)| *a == arch).map(|(_, b)| *b);
    let t = Instant::now();
    let mut loaded_now = false;
    let module = match modules.get(&(ordinal, lib.name, index)) {
        Some(m) => m.clone(),
        None => {
            let corrupt = || not_found("a module that does not inflate");
            let module = match image {
                Some(z) => {
                    ctx.load_module(Ptx::from_binary(inflate(z, &[], None).ok_or_else(corrupt)?))
                }
                None => {
                    let dict = inflate(lib.dictionary, &[], None).ok_or_else(corrupt)?;
                    let text = inflate(ptx, &dict, Some(ptx_len))
                        .and_then(|b| String::from_utf8(b).ok())
                        .ok_or_else(corrupt)?;
                    ctx.load_module(Ptx::from_src(text))
                }
            }
            .map_err(ptx_load)?;
            modules.insert((ordinal, lib.name, index), module.clone());
            loaded_now = true;
            module
        }
    };
    let function = module.load_function(function).map_err(ptx_load)?;
    let seconds = t.elapsed().as_secs_f64();
    let k: &'static LoadedKernel = Box::leak(Box::new(LoadedKernel {
        function,
        _module: module,
        occupancy: Mutex::new(Vec::new()),
    }));
    kernels.insert(key, k);
    let mut s = STATS.lock().unwrap_or_else(|p| p.into_inner());
    let s = s.get_or_insert_with(LoadStats::default);
    s.modules += loaded_now as u32;
    s.from_sass += (loaded_now && image.is_some()) as u32;
    s.ptx_bytes += if loaded_now && image.is_none() {
        ptx_len
    } else {
        0
    };
    s.seconds += seconds;
    s.loads.push((
        lib.name.to_string(),
        entry.to_string(),
        seconds,
        image.is_some(),
    ));
    Ok(k)
}
