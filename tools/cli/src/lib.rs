//! Tools on top of the `gpu_reduce` library: the benchmark sweep against CUB and the memory
//! limit, the CUB shim loader, the seeds' comparison tables (reduction ladder, BIT/BCAO scans),
//! CPU references and statistics. The `host` binary is their command line.
//!
//! Their kernels (`tool-kernels`) are a kernel library of their own, [`TOOL_KERNELS`], loaded
//! through the library's public launch API exactly as a user's kernels would be.

pub mod bench;
pub mod conformance;
pub mod cpu;
pub mod cub;
pub mod ladder;
pub mod multi;
pub mod scan_ladder;
pub mod scan_table;
pub mod stats;

use gpu_reduce::KernelLibrary;

/// The tools' kernels: the seeds' ladder and teaching scans, the streaming kernel, the
/// conformance kernels.
pub static TOOL_KERNELS: KernelLibrary =
    gpu_reduce::include_kernels!("gpu-reduce-tools", "tool_kernels_index.rs");
