//! Device code of the tools built on the library, kept out of the library's own kernels so a
//! library user's program never embeds or loads them:
//!
//! - [`ladder`]: the seeds' reduction ladder (CUDA samples reduce0..6, PMPP, seed 004, Kepler
//!   shuffles), the teaching and benchmark variants that `host reduce --ladder` compares;
//! - [`scan_ladder`]: seed 003's teaching scans (Fenwick tree, BCAO reduce-then-scan);
//! - [`stream`]: the read-only streaming kernel that measures the memory limit for `host bench`;
//! - [`testing`]: conformance kernels for the hardware layer (shuffles, votes, barriers, the
//!   look-back), run on both backends by the integration tests.
//!
//! Built to PTX by the same builder as the library's kernels (`ptx-builder`), from the CLI
//! crate's build script; on the host the same source runs on the simulator.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod ladder;
pub mod scan_ladder;
pub mod stream;
pub mod testing;
