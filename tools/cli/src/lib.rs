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

/// `n` and `noun`, the noun in the plural (an added `s`) unless `n` is 1: "1 run", "3 runs".
pub fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn plural_is_singular_for_one_only() {
        assert_eq!(super::plural(1, "run"), "1 run");
        assert_eq!(super::plural(0, "run"), "0 runs");
        assert_eq!(super::plural(20, "timed run"), "20 timed runs");
    }
}
