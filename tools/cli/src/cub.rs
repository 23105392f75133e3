//! CUB as a baseline: the shim in `tools/cli/cub/cub_shim.cu` (built by `tools/cli/cub/build.sh`
//! into `libcub_shim.so`, or by [`build_shim`]) loaded at run time, so benchmarks can time CUB
//! next to our kernels in the same process, on the same buffers and stream.
//!
//! The shim is built either against the CUB that ships with nvcc's CUDA toolkit or, given a
//! CCCL checkout ([`cccl_include_dirs`], `host bench --cccl DIR`, `$GPU_REDUCE_CCCL`), against
//! that checkout's headers (CUB is header-only); [`Cub::version`] says which CUB it holds.
//!
//! Pointers are raw `CUdeviceptr`s (`u64`, from cudarc's `DevicePtr::device_ptr`) and the
//! stream a raw `CUstream` (`CudaStream::cu_stream()`). CUB runs through the CUDA runtime,
//! which uses the context current on the calling thread: call these with the cudarc context
//! bound to the thread (`CudaContext::bind_to_thread`), and with a stream of that context.
//!
//! Each op is two calls: `temp_bytes_*` says how much scratch memory CUB needs for `n`
//! elements (always at least 1 byte), and the op itself runs asynchronously on the stream
//! with a caller-owned scratch buffer of at least that size.
//!
//! Half-precision elements have no Rust type here: [`F16`] (`__half`) and [`Bf16`]
//! (`__nv_bfloat16`) only pick the shim's function; their buffers hold the `u16` bit patterns
//! (e.g. a `DeviceBuffer<u16>`), passed by address like every other buffer.
//!
//! ```no_run
//! # fn main() -> Result<(), gpu_reduce_tools::cub::CubError> {
//! use gpu_reduce_tools::cub::Cub;
//! let cub = Cub::load(&gpu_reduce_tools::cub::default_library_path())?;
//! let bytes = cub.temp_bytes_sum::<f32>(1 << 20)?;
//! # let (temp, input, out, stream) = (0u64, 0u64, 0u64, std::ptr::null_mut());
//! // ... allocate `bytes` of device memory as `temp`, then:
//! unsafe { cub.sum::<f32>(temp, bytes, input, out, 1 << 20, stream)? };
//! # Ok(()) }
//! ```

use std::ffi::{CStr, OsString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};

/// The environment variable that overrides [`default_library_path`].
pub const LIBRARY_ENV: &str = "GPU_REDUCE_CUB_LIB";

/// The environment variable naming a CCCL checkout to build the shim against (`host bench
/// --cccl`, `tools/cli/cub/build.sh`, the bundle's `run.sh`).
pub const CCCL_ENV: &str = "GPU_REDUCE_CCCL";

/// The shim's file name: `libcub_shim.so` against the toolkit's CUB, `libcub_shim_cccl.so`
/// against a CCCL checkout, so the two can sit side by side.
pub fn library_file_name(cccl: bool) -> &'static str {
    if cccl {
        "libcub_shim_cccl.so"
    } else {
        "libcub_shim.so"
    }
}

/// Where the shim is looked for by default: `$GPU_REDUCE_CUB_LIB` if set, else
/// `tools/cli/cub/libcub_shim.so` (where `tools/cli/cub/build.sh` puts it without arguments).
pub fn default_library_path() -> PathBuf {
    match std::env::var_os(LIBRARY_ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("cub")
            .join(library_file_name(false)),
    }
}

/// The shim's source, embedded so a binary away from the repository (the bundle) can build it.
pub const SHIM_SOURCE: &str = include_str!("../cub/cub_shim.cu");

/// `nvcc` on `PATH`, else `$CUDA_HOME/bin/nvcc` (default `/usr/local/cuda`), if it exists.
pub fn find_nvcc() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("nvcc"))
            .find(|f| f.is_file())
    });
    on_path.or_else(|| {
        let home = std::env::var_os("CUDA_HOME").unwrap_or_else(|| "/usr/local/cuda".into());
        let f = Path::new(&home).join("bin/nvcc");
        f.is_file().then_some(f)
    })
}

/// The layouts of CCCL's headers [`cccl_include_dirs`] accepts: each is its include
/// directories (relative to the given root), with the headers each must hold.
type Layout = &'static [(&'static str, &'static [&'static str])];
const CCCL_LAYOUTS: &[Layout] = &[
    // A GitHub checkout of NVIDIA/cccl, or the bundle's copy of its three header trees. The
    // order is CCCL's README's (`nvcc -Icccl/thrust -Icccl/libcudacxx/include -Icccl/cub`).
    &[
        ("thrust", &["thrust/version.h"]),
        ("libcudacxx/include", &["cuda/std/version"]),
        ("cub", &["cub/version.cuh"]),
    ],
    // An installed CCCL (`cmake --install`, conda's `cccl`): all of it under include/.
    &[(
        "include",
        &["thrust/version.h", "cuda/std/version", "cub/version.cuh"],
    )],
    // An include directory holding cub/, thrust/ and cuda/ itself (as the toolkit's
    // include/cccl).
    &[(
        ".",
        &["thrust/version.h", "cuda/std/version", "cub/version.cuh"],
    )],
];

/// The `-I` directories (absolute) that put the CCCL headers under `root` ahead of the
/// toolkit's own: `root` is a CCCL checkout (`cub/cub/`, `thrust/thrust/`,
/// `libcudacxx/include/`), an installed CCCL (`include/`) or an include directory itself.
pub fn cccl_include_dirs(root: &Path) -> Result<Vec<PathBuf>, CubError> {
    let fail = |message: String| CubError::Build { message };
    let root = root
        .canonicalize()
        .map_err(|e| fail(format!("CCCL checkout {}: {e}", root.display())))?;
    let dir = |d: &str| {
        if d == "." { root.clone() } else { root.join(d) }
    };
    for layout in CCCL_LAYOUTS {
        if layout
            .iter()
            .all(|(d, headers)| headers.iter().all(|h| dir(d).join(h).is_file()))
        {
            return Ok(layout.iter().map(|(d, _)| dir(d)).collect());
        }
    }
    Err(fail(format!(
        "{} is not a CCCL checkout: expected cub/cub/version.cuh, thrust/thrust/version.h and \
         libcudacxx/include/cuda/std/version in it (or the same under include/, as an \
         installed CCCL has them)",
        root.display()
    )))
}

/// `CUB_VERSION` as `cub/version.cuh` under the include directories defines it (what a shim
/// built with them must report), if it can be read.
pub fn cccl_cub_version(include_dirs: &[PathBuf]) -> Option<i32> {
    include_dirs.iter().find_map(|d| {
        let text = std::fs::read_to_string(d.join("cub/version.cuh")).ok()?;
        text.lines().find_map(|l| {
            let rest = l.trim_start().strip_prefix("#")?.trim_start();
            let rest = rest.strip_prefix("define")?.trim_start();
            let value = rest.strip_prefix("CUB_VERSION")?;
            // `CUB_VERSION_...` is another macro: a value must follow after white space.
            if !value.starts_with([' ', '\t']) {
                return None;
            }
            value.split_whitespace().next()?.parse().ok()
        })
    })
}

/// `CUB_VERSION` (major * 100000 + minor * 100 + patch) as `major.minor.patch`.
pub fn version_string(v: i32) -> String {
    format!("{}.{}.{}", v / 100_000, v / 100 % 1000, v % 100)
}

/// nvcc's arguments for the shim (those of `tools/cli/cub/build.sh`): `includes` (a CCCL
/// checkout's, [`cccl_include_dirs`]) come before the toolkit's own include directories, which
/// nvcc searches after every `-I` of the command line, so the checkout's headers win; with
/// `expect_version` (the checkout's `CUB_VERSION`) the shim fails to compile if they did not.
pub fn shim_nvcc_args(
    arch: &str,
    includes: &[PathBuf],
    expect_version: Option<i32>,
    src: &Path,
    lib: &Path,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["-O3", "-std=c++17", &format!("-arch={arch}")]
        .iter()
        .map(OsString::from)
        .collect();
    args.extend(["-Xcompiler", "-fPIC", "-shared"].map(OsString::from));
    if let Some(v) = expect_version {
        args.push(format!("-DCUB_SHIM_EXPECT_VERSION={v}").into());
    }
    for dir in includes {
        let mut a = OsString::from("-I");
        a.push(dir);
        args.push(a);
    }
    args.extend([OsString::from("-o"), lib.into(), src.into()]);
    args
}

/// Compile the shim with `nvcc` for `arch` (e.g. `sm_90`) into `dir`, against the CUB of
/// nvcc's toolkit (`dir/libcub_shim.so`) or, given `cccl`, against that CCCL checkout's
/// headers (`dir/libcub_shim_cccl.so`); returns the library's path.
pub fn build_shim(
    nvcc: &Path,
    dir: &Path,
    arch: &str,
    cccl: Option<&Path>,
) -> Result<PathBuf, CubError> {
    let fail = |message: String| CubError::Build { message };
    let includes = match cccl {
        Some(root) => cccl_include_dirs(root)?,
        None => Vec::new(),
    };
    std::fs::create_dir_all(dir).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
    let src = dir.join("cub_shim.cu");
    let lib = dir.join(library_file_name(cccl.is_some()));
    std::fs::write(&src, SHIM_SOURCE).map_err(|e| fail(format!("{}: {e}", src.display())))?;
    let expect = cccl_cub_version(&includes);
    let out = std::process::Command::new(nvcc)
        .args(shim_nvcc_args(arch, &includes, expect, &src, &lib))
        .output()
        .map_err(|e| fail(format!("running {}: {e}", nvcc.display())))?;
    if !out.status.success() {
        return Err(fail(format!(
            "{} failed: {}",
            nvcc.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(lib)
}

/// What can go wrong loading or calling the shim.
#[derive(Debug, thiserror::Error)]
pub enum CubError {
    #[error("the CUB shim library {} could not be loaded: {message}", path.display())]
    NotLoadable { path: PathBuf, message: String },
    #[error("building the CUB shim: {message}")]
    Build { message: String },
    #[error("the CUB shim library lacks the symbol `{name}`: {message}")]
    MissingSymbol { name: String, message: String },
    #[error("{function} failed with CUDA error {code}: {message}")]
    Cuda {
        function: String,
        code: i32,
        message: String,
    },
}

impl From<CubError> for gpu_reduce::Error {
    fn from(e: CubError) -> Self {
        gpu_reduce::Error::external(format!("CUB: {e}"))
    }
}

/// The stream of `ctx` as the shim takes it, with `ctx`'s CUDA context bound to this thread
/// (the shim's runtime-API calls run in the thread's current context); an error on the
/// simulator.
pub fn stream_of(ctx: &gpu_reduce::Context) -> gpu_reduce::Result<*mut c_void> {
    let Some((cuda_ctx, cuda_stream)) = ctx.cuda() else {
        return Err(gpu_reduce::Error::external("CUB needs the CUDA backend"));
    };
    cuda_ctx
        .bind_to_thread()
        .map_err(|e| gpu_reduce::Error::external(format!("binding the context: {e}")))?;
    Ok(cuda_stream.cu_stream() as *mut c_void)
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for i32 {}
    impl Sealed for super::F16 {}
    impl Sealed for super::Bf16 {}
}

/// IEEE binary16 elements (CUDA's `__half`), for the type parameter of [`Cub::sum`],
/// [`Cub::sum_to_f32`] and [`Cub::inclusive_sum`]: 2 bytes each, held on the Rust side as
/// their `u16` bit patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct F16;

/// bfloat16 elements (CUDA's `__nv_bfloat16`, the upper half of an f32), for the type parameter
/// of [`Cub::sum`], [`Cub::sum_to_f32`] and [`Cub::inclusive_sum`]: 2 bytes each, held on the
/// Rust side as their `u16` bit patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bf16;

/// Element types with a CUB sum reduction (`cub::DeviceReduce::Sum`) in the shim.
/// The constants are the NUL-terminated symbol names of the run and the temp-size query.
pub trait CubSum: Copy + sealed::Sealed {
    const SUM: &'static [u8];
    const SUM_TEMP: &'static [u8];
}

/// Element types with CUB min/max reductions (`cub::DeviceReduce::Min` / `Max`).
pub trait CubMinMax: Copy + sealed::Sealed {
    const MIN: &'static [u8];
    const MIN_TEMP: &'static [u8];
    const MAX: &'static [u8];
    const MAX_TEMP: &'static [u8];
}

/// Element types with a CUB inclusive sum scan (`cub::DeviceScan::InclusiveSum`).
pub trait CubInclusiveSum: Copy + sealed::Sealed {
    const INCLUSIVE_SUM: &'static [u8];
    const INCLUSIVE_SUM_TEMP: &'static [u8];
}

/// Element types with a CUB exclusive sum scan (`cub::DeviceScan::ExclusiveSum`).
pub trait CubExclusiveSum: Copy + sealed::Sealed {
    const EXCLUSIVE_SUM: &'static [u8];
    const EXCLUSIVE_SUM_TEMP: &'static [u8];
}

/// Half-precision element types with a CUB sum accumulated in f32 into one f32
/// (`cub::DeviceReduce::Reduce`, init 0.0f).
pub trait CubSumToF32: Copy + sealed::Sealed {
    const SUM_TO_F32: &'static [u8];
    const SUM_TO_F32_TEMP: &'static [u8];
}

impl CubSum for f32 {
    const SUM: &'static [u8] = b"cub_sum_f32\0";
    const SUM_TEMP: &'static [u8] = b"cub_temp_bytes_sum_f32\0";
}
impl CubSum for f64 {
    const SUM: &'static [u8] = b"cub_sum_f64\0";
    const SUM_TEMP: &'static [u8] = b"cub_temp_bytes_sum_f64\0";
}
impl CubSum for i32 {
    const SUM: &'static [u8] = b"cub_sum_i32\0";
    const SUM_TEMP: &'static [u8] = b"cub_temp_bytes_sum_i32\0";
}
impl CubMinMax for f32 {
    const MIN: &'static [u8] = b"cub_min_f32\0";
    const MIN_TEMP: &'static [u8] = b"cub_temp_bytes_min_f32\0";
    const MAX: &'static [u8] = b"cub_max_f32\0";
    const MAX_TEMP: &'static [u8] = b"cub_temp_bytes_max_f32\0";
}
impl CubInclusiveSum for i32 {
    const INCLUSIVE_SUM: &'static [u8] = b"cub_inclusive_sum_i32\0";
    const INCLUSIVE_SUM_TEMP: &'static [u8] = b"cub_temp_bytes_inclusive_sum_i32\0";
}
impl CubInclusiveSum for f32 {
    const INCLUSIVE_SUM: &'static [u8] = b"cub_inclusive_sum_f32\0";
    const INCLUSIVE_SUM_TEMP: &'static [u8] = b"cub_temp_bytes_inclusive_sum_f32\0";
}
/// One of [`OPTIONAL_OPS`]: see [`Cub::has_inclusive_sum`].
impl CubInclusiveSum for f64 {
    const INCLUSIVE_SUM: &'static [u8] = b"cub_inclusive_sum_f64\0";
    const INCLUSIVE_SUM_TEMP: &'static [u8] = b"cub_temp_bytes_inclusive_sum_f64\0";
}
impl CubExclusiveSum for i32 {
    const EXCLUSIVE_SUM: &'static [u8] = b"cub_exclusive_sum_i32\0";
    const EXCLUSIVE_SUM_TEMP: &'static [u8] = b"cub_temp_bytes_exclusive_sum_i32\0";
}
impl CubSum for F16 {
    const SUM: &'static [u8] = b"cub_sum_f16\0";
    const SUM_TEMP: &'static [u8] = b"cub_temp_bytes_sum_f16\0";
}
impl CubSum for Bf16 {
    const SUM: &'static [u8] = b"cub_sum_bf16\0";
    const SUM_TEMP: &'static [u8] = b"cub_temp_bytes_sum_bf16\0";
}
impl CubSumToF32 for F16 {
    const SUM_TO_F32: &'static [u8] = b"cub_sum_f16_to_f32\0";
    const SUM_TO_F32_TEMP: &'static [u8] = b"cub_temp_bytes_sum_f16_to_f32\0";
}
impl CubSumToF32 for Bf16 {
    const SUM_TO_F32: &'static [u8] = b"cub_sum_bf16_to_f32\0";
    const SUM_TO_F32_TEMP: &'static [u8] = b"cub_temp_bytes_sum_bf16_to_f32\0";
}
impl CubInclusiveSum for F16 {
    const INCLUSIVE_SUM: &'static [u8] = b"cub_inclusive_sum_f16\0";
    const INCLUSIVE_SUM_TEMP: &'static [u8] = b"cub_temp_bytes_inclusive_sum_f16\0";
}
impl CubInclusiveSum for Bf16 {
    const INCLUSIVE_SUM: &'static [u8] = b"cub_inclusive_sum_bf16\0";
    const INCLUSIVE_SUM_TEMP: &'static [u8] = b"cub_temp_bytes_inclusive_sum_bf16\0";
}

/// Every op of the shim as (run symbol, temp-size symbol), [`OPTIONAL_OPS`] aside; all are
/// resolved by [`Cub::load`], which fails without one.
pub const OPS: &[(&[u8], &[u8])] = &[
    (<f32 as CubSum>::SUM, <f32 as CubSum>::SUM_TEMP),
    (<f64 as CubSum>::SUM, <f64 as CubSum>::SUM_TEMP),
    (<i32 as CubSum>::SUM, <i32 as CubSum>::SUM_TEMP),
    (<f32 as CubMinMax>::MIN, <f32 as CubMinMax>::MIN_TEMP),
    (<f32 as CubMinMax>::MAX, <f32 as CubMinMax>::MAX_TEMP),
    (
        <i32 as CubInclusiveSum>::INCLUSIVE_SUM,
        <i32 as CubInclusiveSum>::INCLUSIVE_SUM_TEMP,
    ),
    (
        <f32 as CubInclusiveSum>::INCLUSIVE_SUM,
        <f32 as CubInclusiveSum>::INCLUSIVE_SUM_TEMP,
    ),
    (
        <i32 as CubExclusiveSum>::EXCLUSIVE_SUM,
        <i32 as CubExclusiveSum>::EXCLUSIVE_SUM_TEMP,
    ),
    (<F16 as CubSum>::SUM, <F16 as CubSum>::SUM_TEMP),
    (<Bf16 as CubSum>::SUM, <Bf16 as CubSum>::SUM_TEMP),
    (
        <F16 as CubSumToF32>::SUM_TO_F32,
        <F16 as CubSumToF32>::SUM_TO_F32_TEMP,
    ),
    (
        <Bf16 as CubSumToF32>::SUM_TO_F32,
        <Bf16 as CubSumToF32>::SUM_TO_F32_TEMP,
    ),
    (
        <F16 as CubInclusiveSum>::INCLUSIVE_SUM,
        <F16 as CubInclusiveSum>::INCLUSIVE_SUM_TEMP,
    ),
    (
        <Bf16 as CubInclusiveSum>::INCLUSIVE_SUM,
        <Bf16 as CubInclusiveSum>::INCLUSIVE_SUM_TEMP,
    ),
];

/// Ops of [`OPS`]' shape that shims built before them lack, as (run symbol, temp-size symbol):
/// [`Cub::load`] resolves each that is there and leaves the others out (calls to them then fail
/// with [`CubError::MissingSymbol`]; [`Cub::has_inclusive_sum`] says beforehand).
pub const OPTIONAL_OPS: &[(&[u8], &[u8])] = &[(
    <f64 as CubInclusiveSum>::INCLUSIVE_SUM,
    <f64 as CubInclusiveSum>::INCLUSIVE_SUM_TEMP,
)];

/// `int cub_segmented_sum_f32(void* temp, size_t temp_bytes, const float* in, float* out,
/// int64_t num_segments, const unsigned long long* begin_offsets, const unsigned long long*
/// end_offsets, void* stream)`
pub const SEGMENTED_SUM_SYMBOL: &[u8] = b"cub_segmented_sum_f32\0";
/// `int cub_temp_bytes_segmented_sum_f32(int64_t num_segments, size_t* bytes)`
pub const SEGMENTED_SUM_TEMP_SYMBOL: &[u8] = b"cub_temp_bytes_segmented_sum_f32\0";
/// `int cub_segmented_sum_fixed_f32(void* temp, size_t temp_bytes, const float* in, float* out,
/// int64_t num_rows, int64_t row_len, void* stream)`
pub const SEGMENTED_SUM_FIXED_SYMBOL: &[u8] = b"cub_segmented_sum_fixed_f32\0";
/// `int cub_temp_bytes_segmented_sum_fixed_f32(int64_t num_rows, int64_t row_len, size_t* bytes)`
pub const SEGMENTED_SUM_FIXED_TEMP_SYMBOL: &[u8] = b"cub_temp_bytes_segmented_sum_fixed_f32\0";
/// `int cub_segmented_sum_fixed_native(void)`
pub const SEGMENTED_SUM_FIXED_NATIVE_SYMBOL: &[u8] = b"cub_segmented_sum_fixed_native\0";
/// `int cub_reduce_by_key_sum_u32_f32(void* temp, size_t temp_bytes, const unsigned int* keys_in,
/// unsigned int* unique_out, const float* values_in, float* aggregates_out, unsigned long long*
/// num_runs_out, unsigned long long n, void* stream)`
pub const REDUCE_BY_KEY_SYMBOL: &[u8] = b"cub_reduce_by_key_sum_u32_f32\0";
/// `int cub_temp_bytes_reduce_by_key_sum_u32_f32(unsigned long long n, size_t* bytes)`
pub const REDUCE_BY_KEY_TEMP_SYMBOL: &[u8] = b"cub_temp_bytes_reduce_by_key_sum_u32_f32\0";

/// `int cub_scan_by_key_sum_u32_f32(void* temp, size_t temp_bytes, const unsigned int* keys_in,
/// const float* values_in, float* values_out, unsigned long long n, void* stream)`
pub const SCAN_BY_KEY_SYMBOL: &[u8] = b"cub_scan_by_key_sum_u32_f32\0";
/// `int cub_temp_bytes_scan_by_key_sum_u32_f32(unsigned long long n, size_t* bytes)`
pub const SCAN_BY_KEY_TEMP_SYMBOL: &[u8] = b"cub_temp_bytes_scan_by_key_sum_u32_f32\0";

/// The shim's ops with arguments of their own (not [`OPS`]' shape), as (run symbol, temp-size
/// symbol); all are resolved by [`Cub::load`] too.
pub const OTHER_OPS: &[(&[u8], &[u8])] = &[
    (SEGMENTED_SUM_SYMBOL, SEGMENTED_SUM_TEMP_SYMBOL),
    (SEGMENTED_SUM_FIXED_SYMBOL, SEGMENTED_SUM_FIXED_TEMP_SYMBOL),
    (REDUCE_BY_KEY_SYMBOL, REDUCE_BY_KEY_TEMP_SYMBOL),
];

/// Ops of [`OTHER_OPS`]' kind (arguments of their own) that shims built before them lack:
/// [`Cub::load`] resolves each that is there, as for [`OPTIONAL_OPS`]
/// ([`Cub::has_scan_by_key_sum_u32_f32`] says whether it was).
pub const OPTIONAL_OTHER_OPS: &[(&[u8], &[u8])] = &[(SCAN_BY_KEY_SYMBOL, SCAN_BY_KEY_TEMP_SYMBOL)];

/// `int cub_version(void)`
pub const VERSION_SYMBOL: &[u8] = b"cub_version\0";
/// `int cub_wide_num_items(void)`
pub const WIDE_SYMBOL: &[u8] = b"cub_wide_num_items\0";
/// `const char* cub_error_string(int)`
pub const ERROR_STRING_SYMBOL: &[u8] = b"cub_error_string\0";

/// `int cub_temp_bytes_NAME(unsigned long long n, size_t* bytes)`
type TempFn = unsafe extern "C" fn(u64, *mut usize) -> c_int;
/// `int cub_NAME(void* temp, size_t temp_bytes, const T* in, T* out, unsigned long long n,
/// void* stream)`
type RunFn =
    unsafe extern "C" fn(*mut c_void, usize, *const c_void, *mut c_void, u64, *mut c_void) -> c_int;
type IntFn = unsafe extern "C" fn() -> c_int;
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;
/// `int cub_temp_bytes_segmented_sum_f32(int64_t num_segments, size_t* bytes)`
type SegmentedTempFn = unsafe extern "C" fn(i64, *mut usize) -> c_int;
/// `int cub_segmented_sum_f32(void* temp, size_t temp_bytes, const float* in, float* out,
/// int64_t num_segments, const unsigned long long* begin_offsets, const unsigned long long*
/// end_offsets, void* stream)`
type SegmentedFn = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *mut c_void,
    i64,
    *const c_void,
    *const c_void,
    *mut c_void,
) -> c_int;
/// `int cub_temp_bytes_segmented_sum_fixed_f32(int64_t num_rows, int64_t row_len, size_t* bytes)`
type FixedTempFn = unsafe extern "C" fn(i64, i64, *mut usize) -> c_int;
/// `int cub_segmented_sum_fixed_f32(void* temp, size_t temp_bytes, const float* in, float* out,
/// int64_t num_rows, int64_t row_len, void* stream)`
type FixedFn = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *mut c_void,
    i64,
    i64,
    *mut c_void,
) -> c_int;
/// `int cub_reduce_by_key_sum_u32_f32(void* temp, size_t temp_bytes, const unsigned int*
/// keys_in, unsigned int* unique_out, const float* values_in, float* aggregates_out, unsigned
/// long long* num_runs_out, unsigned long long n, void* stream)` (its query is a [`TempFn`])
type ReduceByKeyFn = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *mut c_void,
    *const c_void,
    *mut c_void,
    *mut c_void,
    u64,
    *mut c_void,
) -> c_int;
/// `int cub_scan_by_key_sum_u32_f32(void* temp, size_t temp_bytes, const unsigned int* keys_in,
/// const float* values_in, float* values_out, unsigned long long n, void* stream)` (its query
/// is a [`TempFn`])
type ScanByKeyFn = unsafe extern "C" fn(
    *mut c_void,
    usize,
    *const c_void,
    *const c_void,
    *mut c_void,
    u64,
    *mut c_void,
) -> c_int;

struct Op {
    run_name: &'static [u8],
    run: RunFn,
    temp: TempFn,
}

/// The functions of [`OTHER_OPS`] and [`OPTIONAL_OTHER_OPS`], each with its own signature.
struct OtherOps {
    segmented: SegmentedFn,
    segmented_temp: SegmentedTempFn,
    fixed: FixedFn,
    fixed_temp: FixedTempFn,
    fixed_native: bool,
    reduce_by_key: ReduceByKeyFn,
    reduce_by_key_temp: TempFn,
    /// `None` in a shim built before it.
    scan_by_key: Option<(ScanByKeyFn, TempFn)>,
}

/// The loaded shim. Function pointers are resolved once, at load, and stay valid as long as
/// `lib` (held here) is loaded.
pub struct Cub {
    ops: Vec<Op>,
    other: OtherOps,
    version: i32,
    wide: bool,
    error_string: ErrorStringFn,
    path: PathBuf,
    #[allow(dead_code)] // held so that the function pointers above stay valid
    lib: libloading::Library,
}

impl std::fmt::Debug for Cub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cub")
            .field("path", &self.path)
            .field("version", &self.version)
            .field("wide_num_items", &self.wide)
            .field("segmented_fixed_native", &self.other.fixed_native)
            .finish_non_exhaustive()
    }
}

/// The symbol's name without its trailing NUL, for messages.
fn symbol_name(sym: &[u8]) -> String {
    String::from_utf8_lossy(sym.strip_suffix(b"\0").unwrap_or(sym)).into_owned()
}

/// Resolve `name` to a value of type `T` (a function pointer type).
///
/// # Safety
/// `T` must be the type of the symbol in the library.
unsafe fn resolve<T: Copy>(lib: &libloading::Library, name: &[u8]) -> Result<T, CubError> {
    // SAFETY: the caller promises T matches the symbol; the value is copied out and used only
    // while `lib` is loaded (Cub keeps both together).
    unsafe { lib.get::<T>(name) }
        .map(|sym| *sym)
        .map_err(|e| CubError::MissingSymbol {
            name: symbol_name(name),
            message: e.to_string(),
        })
}

impl Cub {
    /// Load the shim from `path` and resolve all of its functions ([`OPTIONAL_OPS`] and
    /// [`OPTIONAL_OTHER_OPS`] those it has).
    pub fn load(path: &Path) -> Result<Cub, CubError> {
        // SAFETY: loading runs the library's initializers; the shim's are the CUDA runtime's
        // and CUB's static constructors, which do not touch the device.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| CubError::NotLoadable {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        // SAFETY: the types below are those of cub_shim.cu's exports.
        unsafe {
            let version = resolve::<IntFn>(&lib, VERSION_SYMBOL)?;
            let wide = resolve::<IntFn>(&lib, WIDE_SYMBOL)?;
            let error_string = resolve::<ErrorStringFn>(&lib, ERROR_STRING_SYMBOL)?;
            let mut ops = Vec::with_capacity(OPS.len());
            for &(run_name, temp_name) in OPS {
                ops.push(Op {
                    run_name,
                    run: resolve::<RunFn>(&lib, run_name)?,
                    temp: resolve::<TempFn>(&lib, temp_name)?,
                });
            }
            for &(run_name, temp_name) in OPTIONAL_OPS {
                if let (Ok(run), Ok(temp)) = (
                    resolve::<RunFn>(&lib, run_name),
                    resolve::<TempFn>(&lib, temp_name),
                ) {
                    ops.push(Op {
                        run_name,
                        run,
                        temp,
                    });
                }
            }
            let fixed_native = resolve::<IntFn>(&lib, SEGMENTED_SUM_FIXED_NATIVE_SYMBOL)?;
            let other = OtherOps {
                segmented: resolve::<SegmentedFn>(&lib, SEGMENTED_SUM_SYMBOL)?,
                segmented_temp: resolve::<SegmentedTempFn>(&lib, SEGMENTED_SUM_TEMP_SYMBOL)?,
                fixed: resolve::<FixedFn>(&lib, SEGMENTED_SUM_FIXED_SYMBOL)?,
                fixed_temp: resolve::<FixedTempFn>(&lib, SEGMENTED_SUM_FIXED_TEMP_SYMBOL)?,
                fixed_native: fixed_native() != 0,
                reduce_by_key: resolve::<ReduceByKeyFn>(&lib, REDUCE_BY_KEY_SYMBOL)?,
                reduce_by_key_temp: resolve::<TempFn>(&lib, REDUCE_BY_KEY_TEMP_SYMBOL)?,
                scan_by_key: resolve::<ScanByKeyFn>(&lib, SCAN_BY_KEY_SYMBOL)
                    .ok()
                    .zip(resolve::<TempFn>(&lib, SCAN_BY_KEY_TEMP_SYMBOL).ok()),
            };
            Ok(Cub {
                ops,
                other,
                version: version(),
                wide: wide() != 0,
                error_string,
                path: path.to_path_buf(),
                lib,
            })
        }
    }

    /// `CUB_VERSION` the shim was compiled against: major * 100000 + minor * 100 + patch.
    pub fn version(&self) -> i32 {
        self.version
    }

    /// Whether the shim accepts more than `i32::MAX` elements (CUB >= 2.7); if not, such
    /// calls fail with cudaErrorInvalidValue (1).
    pub fn wide_num_items(&self) -> bool {
        self.wide
    }

    /// Whether [`Cub::segmented_sum_fixed_f32`] runs CUB's fixed-segment-size
    /// `DeviceSegmentedReduce::Sum` (CUB >= 3.1) rather than the offset one over offsets
    /// computed from a counting iterator (older CUBs).
    pub fn segmented_fixed_native(&self) -> bool {
        self.other.fixed_native
    }

    /// The path the shim was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The CUDA runtime's message for an error code.
    pub fn error_string(&self, code: i32) -> String {
        // SAFETY: cudaGetErrorString accepts any code and returns a static C string.
        let p = unsafe { (self.error_string)(code) };
        if p.is_null() {
            return format!("CUDA error {code}");
        }
        // SAFETY: non-null, NUL-terminated, static.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    fn op(&self, run_name: &'static [u8]) -> Result<&Op, CubError> {
        self.ops
            .iter()
            .find(|o| o.run_name == run_name)
            .ok_or_else(|| CubError::MissingSymbol {
                name: symbol_name(run_name),
                message: "not in this shim (built before the op was added?)".into(),
            })
    }

    /// Whether the shim has [`Cub::inclusive_sum`] for `T`: always, except for an op of
    /// [`OPTIONAL_OPS`] (f64) in a shim built before it.
    pub fn has_inclusive_sum<T: CubInclusiveSum>(&self) -> bool {
        self.op(T::INCLUSIVE_SUM).is_ok()
    }

    fn check(&self, function: &[u8], code: c_int) -> Result<(), CubError> {
        if code == 0 {
            Ok(())
        } else {
            Err(CubError::Cuda {
                function: symbol_name(function),
                code,
                message: self.error_string(code),
            })
        }
    }

    fn temp_bytes(
        &self,
        run_name: &'static [u8],
        temp_name: &[u8],
        n: u64,
    ) -> Result<usize, CubError> {
        let op = self.op(run_name)?;
        let mut bytes = 0usize;
        // SAFETY: the query only writes `bytes`; no device memory is touched.
        let code = unsafe { (op.temp)(n, &mut bytes) };
        self.check(temp_name, code)?;
        Ok(bytes)
    }

    /// # Safety
    /// See the public op methods.
    #[allow(clippy::too_many_arguments)]
    unsafe fn run(
        &self,
        run_name: &'static [u8],
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        let op = self.op(run_name)?;
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            (op.run)(
                temp as usize as *mut c_void,
                temp_bytes,
                input as usize as *const c_void,
                out as usize as *mut c_void,
                n,
                stream,
            )
        };
        self.check(run_name, code)
    }

    /// Scratch bytes [`Cub::sum`] needs for `n` elements.
    pub fn temp_bytes_sum<T: CubSum>(&self, n: u64) -> Result<usize, CubError> {
        self.temp_bytes(T::SUM, T::SUM_TEMP, n)
    }

    /// `out[0] = in[0] + ... + in[n-1]` (0 for n = 0) with `cub::DeviceReduce::Sum`,
    /// enqueued on `stream`.
    ///
    /// # Safety
    /// `temp` (at least `temp_bytes` >= [`Cub::temp_bytes_sum`]`(n)` bytes), `input` (`n`
    /// elements of `T`) and `out` (one `T`) are device allocations of the context current on
    /// this thread, `stream` is a stream of that context (or null), and none of them is
    /// freed or reused before the stream has finished the work.
    pub unsafe fn sum<T: CubSum>(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.run(T::SUM, temp, temp_bytes, input, out, n, stream) }
    }

    /// Scratch bytes [`Cub::min`] needs for `n` elements.
    pub fn temp_bytes_min<T: CubMinMax>(&self, n: u64) -> Result<usize, CubError> {
        self.temp_bytes(T::MIN, T::MIN_TEMP, n)
    }

    /// Minimum with `cub::DeviceReduce::Min` (`T::MAX` for n = 0, e.g. `f32::MAX`).
    ///
    /// # Safety
    /// As for [`Cub::sum`], with [`Cub::temp_bytes_min`].
    pub unsafe fn min<T: CubMinMax>(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.run(T::MIN, temp, temp_bytes, input, out, n, stream) }
    }

    /// Scratch bytes [`Cub::max`] needs for `n` elements.
    pub fn temp_bytes_max<T: CubMinMax>(&self, n: u64) -> Result<usize, CubError> {
        self.temp_bytes(T::MAX, T::MAX_TEMP, n)
    }

    /// Maximum with `cub::DeviceReduce::Max` (the type's lowest value for n = 0).
    ///
    /// # Safety
    /// As for [`Cub::sum`], with [`Cub::temp_bytes_max`].
    pub unsafe fn max<T: CubMinMax>(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.run(T::MAX, temp, temp_bytes, input, out, n, stream) }
    }

    /// Scratch bytes [`Cub::inclusive_sum`] needs for `n` elements.
    pub fn temp_bytes_inclusive_sum<T: CubInclusiveSum>(&self, n: u64) -> Result<usize, CubError> {
        self.temp_bytes(T::INCLUSIVE_SUM, T::INCLUSIVE_SUM_TEMP, n)
    }

    /// `out[i] = in[0] + ... + in[i]` with `cub::DeviceScan::InclusiveSum`.
    ///
    /// # Safety
    /// As for [`Cub::sum`], with [`Cub::temp_bytes_inclusive_sum`], and `out` holding `n`
    /// elements; `out` may equal `input` (in place) but must not overlap it otherwise.
    pub unsafe fn inclusive_sum<T: CubInclusiveSum>(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.run(T::INCLUSIVE_SUM, temp, temp_bytes, input, out, n, stream) }
    }

    /// Scratch bytes [`Cub::exclusive_sum`] needs for `n` elements.
    pub fn temp_bytes_exclusive_sum<T: CubExclusiveSum>(&self, n: u64) -> Result<usize, CubError> {
        self.temp_bytes(T::EXCLUSIVE_SUM, T::EXCLUSIVE_SUM_TEMP, n)
    }

    /// `out[0] = 0`, `out[i] = in[0] + ... + in[i-1]` with `cub::DeviceScan::ExclusiveSum`.
    ///
    /// # Safety
    /// As for [`Cub::inclusive_sum`], with [`Cub::temp_bytes_exclusive_sum`].
    pub unsafe fn exclusive_sum<T: CubExclusiveSum>(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.run(T::EXCLUSIVE_SUM, temp, temp_bytes, input, out, n, stream) }
    }

    /// Scratch bytes [`Cub::sum_to_f32`] needs for `n` elements.
    pub fn temp_bytes_sum_to_f32<T: CubSumToF32>(&self, n: u64) -> Result<usize, CubError> {
        self.temp_bytes(T::SUM_TO_F32, T::SUM_TO_F32_TEMP, n)
    }

    /// `out[0] = in[0] + ... + in[n-1]` (0 for n = 0) of half-precision inputs, accumulated in
    /// f32 into one f32, with `cub::DeviceReduce::Reduce` (init 0.0f).
    ///
    /// # Safety
    /// As for [`Cub::sum`], with [`Cub::temp_bytes_sum_to_f32`], `input` holding `n` 2-byte
    /// elements and `out` one f32.
    pub unsafe fn sum_to_f32<T: CubSumToF32>(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.run(T::SUM_TO_F32, temp, temp_bytes, input, out, n, stream) }
    }

    /// Scratch bytes [`Cub::segmented_sum_f32`] needs for `num_segments` segments (CUB asks
    /// nothing of the offsets for it).
    pub fn temp_bytes_segmented_sum_f32(&self, num_segments: i64) -> Result<usize, CubError> {
        let mut bytes = 0usize;
        // SAFETY: the query only writes `bytes`; no device memory is touched.
        let code = unsafe { (self.other.segmented_temp)(num_segments, &mut bytes) };
        self.check(SEGMENTED_SUM_TEMP_SYMBOL, code)?;
        Ok(bytes)
    }

    /// `out[i] = in[begin[i]] + ... + in[end[i] - 1]` (0 for an empty segment) for each of
    /// `num_segments` segments, with `cub::DeviceSegmentedReduce::Sum` (f32), enqueued on
    /// `stream`. CSR offsets (`num_segments + 1` of them, at `offsets`) are `begin = offsets`,
    /// `end = offsets + 8` (one u64 further).
    ///
    /// # Safety
    /// `temp` (at least `temp_bytes` >= [`Cub::temp_bytes_segmented_sum_f32`] bytes), `input`
    /// (f32, every element a segment names), `out` (`num_segments` f32), `begin` and `end`
    /// (`num_segments` u64 each) are device allocations of the context current on this thread,
    /// `stream` is a stream of that context (or null), and none of them is freed or reused
    /// before the stream has finished the work.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn segmented_sum_f32(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        num_segments: i64,
        begin: u64,
        end: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            (self.other.segmented)(
                temp as usize as *mut c_void,
                temp_bytes,
                input as usize as *const c_void,
                out as usize as *mut c_void,
                num_segments,
                begin as usize as *const c_void,
                end as usize as *const c_void,
                stream,
            )
        };
        self.check(SEGMENTED_SUM_SYMBOL, code)
    }

    /// Scratch bytes [`Cub::segmented_sum_fixed_f32`] needs for a `rows` x `row_len` matrix.
    pub fn temp_bytes_segmented_sum_fixed_f32(
        &self,
        rows: i64,
        row_len: i64,
    ) -> Result<usize, CubError> {
        let mut bytes = 0usize;
        // SAFETY: the query only writes `bytes`; no device memory is touched.
        let code = unsafe { (self.other.fixed_temp)(rows, row_len, &mut bytes) };
        self.check(SEGMENTED_SUM_FIXED_TEMP_SYMBOL, code)?;
        Ok(bytes)
    }

    /// The f32 sum of each row of the row-major `rows` x `row_len` matrix at `input` into
    /// `out[row]`, with `cub::DeviceSegmentedReduce::Sum` (see
    /// [`Cub::segmented_fixed_native`] for which overload), enqueued on `stream`. With CUB's
    /// fixed-size overload `row_len` must fit in an `int` (else CUDA error 1).
    ///
    /// # Safety
    /// As for [`Cub::segmented_sum_f32`], with [`Cub::temp_bytes_segmented_sum_fixed_f32`],
    /// `input` holding `rows * row_len` f32 and `out` `rows` f32.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn segmented_sum_fixed_f32(
        &self,
        temp: u64,
        temp_bytes: usize,
        input: u64,
        out: u64,
        rows: i64,
        row_len: i64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            (self.other.fixed)(
                temp as usize as *mut c_void,
                temp_bytes,
                input as usize as *const c_void,
                out as usize as *mut c_void,
                rows,
                row_len,
                stream,
            )
        };
        self.check(SEGMENTED_SUM_FIXED_SYMBOL, code)
    }

    /// Scratch bytes [`Cub::reduce_by_key_sum_u32_f32`] needs for `n` elements.
    pub fn temp_bytes_reduce_by_key_sum_u32_f32(&self, n: u64) -> Result<usize, CubError> {
        let mut bytes = 0usize;
        // SAFETY: the query only writes `bytes`; no device memory is touched.
        let code = unsafe { (self.other.reduce_by_key_temp)(n, &mut bytes) };
        self.check(REDUCE_BY_KEY_TEMP_SYMBOL, code)?;
        Ok(bytes)
    }

    /// The f32 sum of each run of equal consecutive u32 keys, with
    /// `cub::DeviceReduce::ReduceByKey` (`cuda::std::plus<>`), enqueued on `stream`: run `j`'s
    /// key goes to `unique_out[j]`, its sum to `aggregates_out[j]`, and the number of runs to
    /// `num_runs_out` as one u64.
    ///
    /// # Safety
    /// `temp` (at least `temp_bytes` >= [`Cub::temp_bytes_reduce_by_key_sum_u32_f32`] bytes),
    /// `keys` (`n` u32), `values` (`n` f32), `unique_out` (room for `n` u32), `aggregates_out`
    /// (room for `n` f32) and `num_runs_out` (one u64) are device allocations of the context
    /// current on this thread, the outputs overlapping nothing, `stream` is a stream of that
    /// context (or null), and none of them is freed or reused before the stream has finished
    /// the work.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn reduce_by_key_sum_u32_f32(
        &self,
        temp: u64,
        temp_bytes: usize,
        keys: u64,
        unique_out: u64,
        values: u64,
        aggregates_out: u64,
        num_runs_out: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            (self.other.reduce_by_key)(
                temp as usize as *mut c_void,
                temp_bytes,
                keys as usize as *const c_void,
                unique_out as usize as *mut c_void,
                values as usize as *const c_void,
                aggregates_out as usize as *mut c_void,
                num_runs_out as usize as *mut c_void,
                n,
                stream,
            )
        };
        self.check(REDUCE_BY_KEY_SYMBOL, code)
    }

    /// Whether the shim has [`Cub::scan_by_key_sum_u32_f32`] (one of [`OPTIONAL_OTHER_OPS`]:
    /// not in a shim built before it).
    pub fn has_scan_by_key_sum_u32_f32(&self) -> bool {
        self.other.scan_by_key.is_some()
    }

    fn scan_by_key_fns(&self) -> Result<(ScanByKeyFn, TempFn), CubError> {
        self.other
            .scan_by_key
            .ok_or_else(|| CubError::MissingSymbol {
                name: symbol_name(SCAN_BY_KEY_SYMBOL),
                message: "not in this shim (built before the op was added?)".into(),
            })
    }

    /// Scratch bytes [`Cub::scan_by_key_sum_u32_f32`] needs for `n` elements.
    pub fn temp_bytes_scan_by_key_sum_u32_f32(&self, n: u64) -> Result<usize, CubError> {
        let (_, temp) = self.scan_by_key_fns()?;
        let mut bytes = 0usize;
        // SAFETY: the query only writes `bytes`; no device memory is touched.
        let code = unsafe { temp(n, &mut bytes) };
        self.check(SCAN_BY_KEY_TEMP_SYMBOL, code)?;
        Ok(bytes)
    }

    /// The inclusive f32 sum of each run of equal consecutive u32 keys, with
    /// `cub::DeviceScan::InclusiveSumByKey` (`cuda::std::equal_to<>`), enqueued on `stream`:
    /// `values_out[i]` is the sum of `values` over `i`'s run up to and including `i`.
    ///
    /// # Safety
    /// `temp` (at least `temp_bytes` >= [`Cub::temp_bytes_scan_by_key_sum_u32_f32`] bytes),
    /// `keys` (`n` u32), `values` (`n` f32) and `values_out` (room for `n` f32) are device
    /// allocations of the context current on this thread, the output overlapping neither input,
    /// `stream` is a stream of that context (or null), and none of them is freed or reused
    /// before the stream has finished the work.
    #[allow(clippy::too_many_arguments)] // the C function's arguments
    pub unsafe fn scan_by_key_sum_u32_f32(
        &self,
        temp: u64,
        temp_bytes: usize,
        keys: u64,
        values: u64,
        values_out: u64,
        n: u64,
        stream: *mut c_void,
    ) -> Result<(), CubError> {
        let (run, _) = self.scan_by_key_fns()?;
        // SAFETY: forwarded from the caller.
        let code = unsafe {
            run(
                temp as usize as *mut c_void,
                temp_bytes,
                keys as usize as *const c_void,
                values as usize as *const c_void,
                values_out as usize as *mut c_void,
                n,
                stream,
            )
        };
        self.check(SCAN_BY_KEY_SYMBOL, code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shim_build_failure_is_an_error_naming_the_compiler() {
        assert!(SHIM_SOURCE.contains("DeviceReduce") && SHIM_SOURCE.contains("DeviceScan"));
        let dir = std::env::temp_dir().join(format!("cub-build-test-{}", std::process::id()));
        let e = build_shim(Path::new("/nonexistent/nvcc"), &dir, "sm_90", None).unwrap_err();
        assert!(matches!(e, CubError::Build { .. }), "{e}");
        assert!(e.to_string().contains("/nonexistent/nvcc"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A fake CCCL tree under a fresh temp directory: `files` (relative paths) created, each
    /// `version.cuh` defining CUB_VERSION 300600.
    fn fake_tree(tag: &str, files: &[impl AsRef<str>]) -> PathBuf {
        let root = std::env::temp_dir().join(format!("cccl-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for f in files.iter().map(|f| f.as_ref()) {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            let text = if f.ends_with("version.cuh") {
                "#pragma once\n#define CUB_VERSION 300600 // one value\n\
                 #define CUB_VERSION_MAJOR (CUB_VERSION / 100000)\n"
            } else {
                "// header\n"
            };
            std::fs::write(p, text).unwrap();
        }
        root
    }

    #[test]
    fn a_cccl_checkout_gives_its_three_include_dirs_in_readme_order() {
        let root = fake_tree(
            "checkout",
            &[
                "cub/cub/version.cuh",
                "thrust/thrust/version.h",
                "libcudacxx/include/cuda/std/version",
            ],
        );
        let dirs = cccl_include_dirs(&root).unwrap();
        let canon = root.canonicalize().unwrap();
        assert_eq!(
            dirs,
            vec![
                canon.join("thrust"),
                canon.join("libcudacxx/include"),
                canon.join("cub")
            ]
        );
        assert_eq!(cccl_cub_version(&dirs), Some(300600));
        assert_eq!(version_string(300600), "3.6.0");
        assert_eq!(version_string(300001), "3.0.1");
        assert_eq!(version_string(200800), "2.8.0");

        // The -I flags come after the compile flags and before the output and the source, in
        // the order given; without a checkout there is none.
        let (src, lib) = (
            Path::new("/b/cub_shim.cu"),
            Path::new("/b/libcub_shim_cccl.so"),
        );
        let args: Vec<String> = shim_nvcc_args("sm_90", &dirs, Some(300600), src, lib)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        let inc: Vec<String> = dirs.iter().map(|d| format!("-I{}", d.display())).collect();
        let mut want: Vec<String> = [
            "-O3",
            "-std=c++17",
            "-arch=sm_90",
            "-Xcompiler",
            "-fPIC",
            "-shared",
            "-DCUB_SHIM_EXPECT_VERSION=300600",
        ]
        .map(String::from)
        .to_vec();
        want.extend(inc);
        want.extend(["-o", "/b/libcub_shim_cccl.so", "/b/cub_shim.cu"].map(String::from));
        assert_eq!(args, want);
        assert!(
            !shim_nvcc_args("sm_90", &[], None, src, lib)
                .iter()
                .any(|a| a.to_string_lossy().starts_with("-I")
                    || a.to_string_lossy().starts_with("-D"))
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn installed_and_bare_cccl_layouts_and_non_checkouts() {
        let headers = ["cub/version.cuh", "thrust/version.h", "cuda/std/version"];
        let installed = fake_tree("installed", &headers.map(|h| format!("include/{h}")));
        let dirs = cccl_include_dirs(&installed).unwrap();
        assert_eq!(
            dirs,
            vec![installed.canonicalize().unwrap().join("include")]
        );
        assert_eq!(cccl_cub_version(&dirs), Some(300600));
        let bare = fake_tree("bare", &headers);
        assert_eq!(
            cccl_include_dirs(&bare).unwrap(),
            vec![bare.canonicalize().unwrap()]
        );
        // cub alone is not enough: it includes thrust and libcu++.
        let partial = fake_tree("partial", &["cub/cub/version.cuh"]);
        let e = cccl_include_dirs(&partial).unwrap_err();
        assert!(e.to_string().contains("not a CCCL checkout"), "{e}");
        let e = cccl_include_dirs(Path::new("/nonexistent/cccl")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/cccl"), "{e}");
        // A missing checkout fails before nvcc runs.
        let dir = std::env::temp_dir().join(format!("cub-build-cccl-{}", std::process::id()));
        let e = build_shim(
            Path::new("/nonexistent/nvcc"),
            &dir,
            "sm_90",
            Some(&partial),
        )
        .unwrap_err();
        assert!(e.to_string().contains("not a CCCL checkout"), "{e}");
        for d in [installed, bare, partial, dir] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    /// build_shim end to end with a stand-in nvcc that records its arguments: both shims get
    /// their own file, and the CCCL build passes the checkout's -I paths and CUB_VERSION.
    #[cfg(unix)]
    #[test]
    fn build_shim_runs_nvcc_with_the_checkouts_headers() {
        use std::os::unix::fs::PermissionsExt;
        let root = fake_tree(
            "build",
            &[
                "cccl/cub/cub/version.cuh",
                "cccl/thrust/thrust/version.h",
                "cccl/libcudacxx/include/cuda/std/version",
            ],
        );
        let nvcc = root.join("nvcc");
        let log = root.join("args.txt");
        std::fs::write(
            &nvcc,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nwhile [ \"$1\" != -o ]; do shift; done\n: > \"$2\"\n",
                log.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = root.join("out");
        // A test thread forking while the script was open for writing can make exec fail
        // with ETXTBSY for a moment: retry then.
        let build = |cccl: Option<&Path>| {
            for _ in 0..50 {
                match build_shim(&nvcc, &out, "sm_90", cccl) {
                    Err(e) if e.to_string().contains("Text file busy") => {
                        std::thread::sleep(std::time::Duration::from_millis(20))
                    }
                    r => return r,
                }
            }
            build_shim(&nvcc, &out, "sm_90", cccl)
        };
        let lib = build(None).unwrap();
        assert_eq!(lib, out.join("libcub_shim.so"));
        let args = std::fs::read_to_string(&log).unwrap();
        assert!(!args.contains("-I") && !args.contains("-D"), "{args}");
        let lib = build(Some(&root.join("cccl"))).unwrap();
        assert_eq!(lib, out.join("libcub_shim_cccl.so"));
        assert!(lib.is_file() && out.join("libcub_shim.so").is_file());
        let args = std::fs::read_to_string(&log).unwrap();
        let cccl = root.canonicalize().unwrap().join("cccl");
        let want = format!(
            "-DCUB_SHIM_EXPECT_VERSION=300600\n-I{0}/thrust\n-I{0}/libcudacxx/include\n-I{0}/cub\n-o\n",
            cccl.display()
        );
        assert!(args.contains(&want), "{args}");
        assert_eq!(
            std::fs::read_to_string(out.join("cub_shim.cu")).unwrap(),
            SHIM_SOURCE
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    /// With `$GPU_REDUCE_CCCL` set, the checkout it names is one `host bench` can use.
    #[test]
    fn the_cccl_checkout_in_the_environment_is_usable() {
        let Some(root) = std::env::var_os(CCCL_ENV).filter(|r| !r.is_empty()) else {
            return;
        };
        let dirs = cccl_include_dirs(Path::new(&root)).unwrap();
        let v = cccl_cub_version(&dirs).expect("CUB_VERSION in cub/version.cuh");
        assert!(v >= 200000, "CUB {}", version_string(v));
    }

    #[test]
    fn the_two_shims_have_different_names() {
        assert_eq!(library_file_name(false), "libcub_shim.so");
        assert_eq!(library_file_name(true), "libcub_shim_cccl.so");
    }

    fn all_symbols() -> Vec<&'static [u8]> {
        let mut v: Vec<&'static [u8]> = OPS
            .iter()
            .chain(OPTIONAL_OPS)
            .chain(OTHER_OPS)
            .chain(OPTIONAL_OTHER_OPS)
            .flat_map(|&(r, t)| [r, t])
            .collect();
        v.extend([
            VERSION_SYMBOL,
            WIDE_SYMBOL,
            ERROR_STRING_SYMBOL,
            SEGMENTED_SUM_FIXED_NATIVE_SYMBOL,
        ]);
        v
    }

    #[test]
    fn loading_a_missing_library_names_the_path() {
        let path = Path::new("/nonexistent/dir/libcub_shim_missing.so");
        let err = Cub::load(path).unwrap_err();
        match &err {
            CubError::NotLoadable { path: p, message } => {
                assert_eq!(p, path);
                assert!(!message.is_empty());
            }
            other => panic!("expected NotLoadable, got {other:?}"),
        }
        let text = err.to_string();
        assert!(
            text.contains("/nonexistent/dir/libcub_shim_missing.so"),
            "{text}"
        );
        assert!(text.contains("could not be loaded"), "{text}");
    }

    #[test]
    fn symbol_names_are_nul_terminated_and_distinct() {
        let syms = all_symbols();
        assert_eq!(syms.len(), 2 * (14 + 1 + 3 + 1) + 4);
        for s in &syms {
            assert_eq!(s.last(), Some(&0u8), "{s:?} lacks its NUL");
            assert_eq!(
                s.iter().filter(|&&b| b == 0).count(),
                1,
                "{s:?} has an inner NUL"
            );
            let name = std::str::from_utf8(&s[..s.len() - 1]).expect("ASCII name");
            assert!(name.starts_with("cub_"), "{name}");
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            );
        }
        let mut sorted = syms.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), syms.len(), "duplicate symbol names");
    }

    #[test]
    fn temp_symbols_follow_the_shim_macro() {
        // CUB_SHIM_OP(NAME, ...) exports cub_NAME and cub_temp_bytes_NAME; the other ops are
        // named the same way.
        let ops = OPS.iter().chain(OPTIONAL_OPS).chain(OTHER_OPS);
        for &(run, temp) in ops.chain(OPTIONAL_OTHER_OPS) {
            let run = symbol_name(run);
            let op = run.strip_prefix("cub_").unwrap();
            assert_eq!(symbol_name(temp), format!("cub_temp_bytes_{op}"));
        }
    }

    /// Every symbol the loader resolves is defined in the shim's source: by CUB_SHIM_OP /
    /// CUB_SHIM_OP_IO (its op's run and query), or written out as an `extern "C"` function.
    #[test]
    fn every_symbol_is_in_the_shim_source() {
        let macro_op = |op: &str| {
            SHIM_SOURCE.lines().any(|l| {
                l.starts_with(&format!("CUB_SHIM_OP({op},"))
                    || l.starts_with(&format!("CUB_SHIM_OP_IO({op},"))
            })
        };
        for sym in all_symbols() {
            let name = symbol_name(sym);
            let written = SHIM_SOURCE
                .lines()
                .any(|l| l.starts_with("extern \"C\"") && l.contains(&format!(" {name}(")));
            let op = name
                .strip_prefix("cub_temp_bytes_")
                .or_else(|| name.strip_prefix("cub_"))
                .unwrap();
            assert!(
                written || macro_op(op),
                "{name} is not defined in cub_shim.cu"
            );
        }
        // The macro ops are exactly OPS and OPTIONAL_OPS.
        let macro_ops = SHIM_SOURCE
            .lines()
            .filter(|l| l.starts_with("CUB_SHIM_OP(") || l.starts_with("CUB_SHIM_OP_IO("))
            .count();
        assert_eq!(macro_ops, OPS.len() + OPTIONAL_OPS.len());
    }

    #[test]
    fn error_messages_name_function_and_code() {
        let e = CubError::Cuda {
            function: "cub_sum_f32".into(),
            code: 2,
            message: "out of memory".into(),
        };
        let t = e.to_string();
        assert!(
            t.contains("cub_sum_f32") && t.contains("CUDA error 2") && t.contains("out of memory")
        );
        let m = CubError::MissingSymbol {
            name: "cub_min_f32".into(),
            message: "undefined symbol".into(),
        };
        assert!(m.to_string().contains("`cub_min_f32`"));
    }

    #[test]
    fn symbol_name_strips_the_nul() {
        assert_eq!(symbol_name(b"cub_sum_f32\0"), "cub_sum_f32");
        assert_eq!(symbol_name(b"plain"), "plain");
    }

    #[test]
    fn default_path_is_next_to_build_script_or_from_env() {
        // Only checks the fallback shape; the env override is read at call time.
        if std::env::var_os(LIBRARY_ENV).is_none() {
            let p = default_library_path();
            assert!(p.ends_with("cub/libcub_shim.so"), "{}", p.display());
        }
    }

    /// A stand-in shim compiled with `cc` (`None` without one): every symbol the loader needs,
    /// [`OPTIONAL_OPS`]' and [`OPTIONAL_OTHER_OPS`]' only when `optional`; each query `int q(unsigned long long n, size_t*
    /// bytes)` says `n` bytes (only those of [`OPS`]' shape may be called), the rest return
    /// constants.
    #[cfg(unix)]
    fn stand_in_shim(tag: &str, optional: bool) -> Option<PathBuf> {
        let dir = std::env::temp_dir().join(format!("cub-stand-in-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = String::from(
            "#include <stddef.h>\n\
             const char* cub_error_string(int c) { (void)c; return \"stand-in\"; }\n\
             int cub_version(void) { return 300001; }\n",
        );
        let mut ops: Vec<_> = OPS.iter().chain(OTHER_OPS).collect();
        if optional {
            ops.extend(OPTIONAL_OPS.iter().chain(OPTIONAL_OTHER_OPS));
        }
        for &&(run, temp) in &ops {
            c.push_str(&format!(
                "int {}(unsigned long long n, size_t* b) {{ *b = n; return 0; }}\n",
                symbol_name(temp)
            ));
            c.push_str(&format!("int {}(void) {{ return 0; }}\n", symbol_name(run)));
        }
        for sym in [WIDE_SYMBOL, SEGMENTED_SUM_FIXED_NATIVE_SYMBOL] {
            c.push_str(&format!("int {}(void) {{ return 1; }}\n", symbol_name(sym)));
        }
        let (src, lib) = (dir.join("stand_in.c"), dir.join("libstand_in.so"));
        std::fs::write(&src, c).unwrap();
        let built = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .args([&lib, &src])
            .status();
        match built {
            Ok(s) if s.success() => Some(lib),
            Ok(s) => panic!("cc failed ({s}) on {}", src.display()),
            Err(_) => None, // no cc here
        }
    }

    /// A shim built before the ops of [`OPTIONAL_OPS`] and [`OPTIONAL_OTHER_OPS`] existed still
    /// loads, without them; one with them has them.
    #[cfg(unix)]
    #[test]
    fn a_shim_without_the_optional_ops_loads_without_them() {
        let (Some(old), Some(new)) = (stand_in_shim("old", false), stand_in_shim("new", true))
        else {
            return;
        };
        let cub = Cub::load(&old).unwrap();
        assert_eq!(cub.version(), 300001);
        assert!(cub.has_inclusive_sum::<f32>() && cub.has_inclusive_sum::<i32>());
        assert!(!cub.has_inclusive_sum::<f64>());
        assert_eq!(cub.temp_bytes_inclusive_sum::<f32>(12).unwrap(), 12);
        match cub.temp_bytes_inclusive_sum::<f64>(12) {
            Err(CubError::MissingSymbol { name, .. }) => {
                assert_eq!(name, "cub_inclusive_sum_f64")
            }
            other => panic!("expected MissingSymbol, got {other:?}"),
        }
        assert!(!cub.has_scan_by_key_sum_u32_f32());
        match cub.temp_bytes_scan_by_key_sum_u32_f32(12) {
            Err(CubError::MissingSymbol { name, .. }) => {
                assert_eq!(name, "cub_scan_by_key_sum_u32_f32")
            }
            other => panic!("expected MissingSymbol, got {other:?}"),
        }
        let cub = Cub::load(&new).unwrap();
        assert!(cub.has_inclusive_sum::<f64>());
        assert_eq!(cub.temp_bytes_inclusive_sum::<f64>(12).unwrap(), 12);
        assert!(cub.has_scan_by_key_sum_u32_f32());
        assert_eq!(cub.temp_bytes_scan_by_key_sum_u32_f32(12).unwrap(), 12);
        for lib in [old, new] {
            let _ = std::fs::remove_dir_all(lib.parent().unwrap());
        }
    }

    /// A real library without the shim's symbols (glibc) gives MissingSymbol, not a crash.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn a_library_without_the_symbols_is_rejected() {
        match Cub::load(Path::new("libc.so.6")) {
            Err(CubError::MissingSymbol { name, .. }) => assert_eq!(name, "cub_version"),
            other => panic!("expected MissingSymbol, got {other:?}"),
        }
    }
}
