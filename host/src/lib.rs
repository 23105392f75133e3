//! GPU reductions and prefix scans from Rust: kernels written in Rust (`kernels` crate),
//! compiled to PTX by rustc's nvptx64 backend and embedded here, run through `cudarc`.
//!
//! ```no_run
//! let ctx = gpu_reduce::Context::new(0)?;
//! let x = ctx.htod(&[1.0f32, 2.0, 3.0])?;
//! assert_eq!(ctx.sum_f32(&x)?, 6.0);
//! # Ok::<(), gpu_reduce::Error>(())
//! ```

pub mod bench;
pub mod conformance;
pub mod context;
pub mod cpu;
pub mod cub;
pub mod error;
pub mod ladder;
pub mod reduce;
pub mod scan;
pub mod scan_ladder;
pub mod scan_table;
mod simbuf;
pub mod stats;

pub use context::{BackendKind, Context, DeviceBuffer, DeviceInfo, DeviceView, device_count};
pub use error::{Error, Result};
pub use reduce::{DeviceElement, Reduction};
pub use scan::{ScanKind, ScanOperator};

/// The kernels as PTX, built by `build.rs` with the workspace's PTX builder.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
/// The architecture the embedded PTX was generated for (`KERNELS_ARCH`, default sm_80).
pub const PTX_ARCH: &str = env!("KERNELS_PTX_ARCH");

#[cfg(test)]
mod tests {
    #[test]
    fn embedded_ptx_has_every_kernel() {
        let entries = ptx_builder_entries(super::PTX);
        for name in kernels::launch::KERNEL_NAMES {
            assert!(
                entries.contains(&name.to_string()),
                "PTX lacks .entry {name}"
            );
        }
        assert!(super::PTX.contains(&format!(".target {}", super::PTX_ARCH)));
    }

    fn ptx_builder_entries(ptx: &str) -> Vec<String> {
        ptx.lines()
            .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
            .map(|r| r.split('(').next().unwrap_or("").to_string())
            .collect()
    }
}
