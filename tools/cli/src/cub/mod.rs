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

mod compaction;
mod compile;
mod histogram;
mod loader;
mod ops;
mod other_ops;
mod symbols;
mod topk;

pub use compile::{
    build_shim, cccl_cub_version, cccl_include_dirs, find_nvcc, shim_nvcc_args, version_string,
};
pub use histogram::{CubHistogram, CubHistogramFns, HISTOGRAM_TYPES};
pub use loader::Cub;
pub use symbols::*;
pub use topk::CubTopkFns;

use std::ffi::c_void;
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
pub const SHIM_SOURCE: &str = include_str!("../../cub/cub_shim.cu");

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_shims_have_different_names() {
        assert_eq!(library_file_name(false), "libcub_shim.so");
        assert_eq!(library_file_name(true), "libcub_shim_cccl.so");
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
    fn default_path_is_next_to_build_script_or_from_env() {
        // Only checks the fallback shape; the env override is read at call time.
        if std::env::var_os(LIBRARY_ENV).is_none() {
            let p = default_library_path();
            assert!(p.ends_with("cub/libcub_shim.so"), "{}", p.display());
        }
    }
}
