//! Device code for the GPU reduction and scan library.
//!
//! Layers, lowest first (CUB's layering):
//! - [`gpu`]: hardware primitives (indices, barriers, shared memory, shuffles, votes, atomics,
//!   fences, vector loads). Only this module touches `core::arch::nvptx` or `asm!`.
//! - [`warp`]: warp-wide collectives built on shuffles.
//! - [`block`]: block-wide collectives built on warps and shared memory; [`load`]: how a
//!   kernel reads an array (the head/vector/tail cut that fixes a result's bits).
//! - [`reduce`], [`scan`]: device-wide algorithms (one launch each), each with its tuning in
//!   one `policy` module.
//!
//! The library's own instances of the kernels are behind the `builtin` feature (on by
//! default); a user's kernel crate depends on this crate with `default-features = false` and
//! instantiates its own operators with the same macros.
//!
//! Built for `nvptx64-nvidia-cuda` by the `ptx-builder` crate, where each [`kernel!`] is a PTX
//! entry point; built for the host, the same source runs on the CPU SIMT simulator
//! ([`gpu::sim`]), where each kernel is a plain `unsafe fn` that `gpu::sim::launch` runs.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, link_llvm_intrinsics)
)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod gpu;

pub mod block;
pub mod half;
pub mod histogram;
pub mod load;
pub mod ops;
pub mod reduce;
pub mod scan;
pub mod select;
pub mod table;
pub mod topk;
pub mod warp;

/// A kernel as the host sees it: its PTX entry name and, on the host, the same function for
/// the simulator. The kernel macros ([`reduce_kernels!`], [`scan_kernels!`],
/// [`scan_by_key_kernels!`]) make one per instance and hand it to the host through the
/// `*Instance` traits, so a kernel's name is written once, in its macro invocation.
#[derive(Clone, Copy, Debug)]
pub struct Kernel<F> {
    /// The PTX entry point.
    pub name: &'static str,
    /// The simulator's entry point (a plain function on the host).
    pub sim: F,
}

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // `trap` aborts the kernel; the host sees CUDA_ERROR_LAUNCH_FAILED (or ILLEGAL_INSTRUCTION).
    gpu::trap()
}
