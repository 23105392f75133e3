//! Device code for the GPU reduction and scan library.
//!
//! Layers, lowest first (CUB's layering):
//! - [`gpu`]: hardware primitives (indices, barriers, shared memory, shuffles, votes, atomics,
//!   fences, vector loads). Only this module touches `core::arch::nvptx` or `asm!`.
//! - [`warp`]: warp-wide collectives built on shuffles.
//! - [`block`]: block-wide collectives built on warps and shared memory.
//! - [`reduce`]: device-wide kernels (one launch, finished on the device).
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
pub mod ladder;
pub mod reduce;
pub mod testing;
pub mod warp;

/// Launch-shape contract shared by the host and the kernels.
pub mod launch {
    /// Threads per block of the reduction kernels. A multiple of 32: the warp collectives
    /// assume full warps.
    pub const REDUCE_BLOCK: u32 = 256;
    /// f32 values each thread loads per grid-stride step (two 16-byte vectors in flight).
    pub const REDUCE_ITEMS_PER_STEP: u32 = 8;
    /// Upper bound on the grid of the one-launch reduction; also the length of the
    /// partials workspace the host allocates. The grid is chosen from `n` alone.
    pub const REDUCE_MAX_GRID: u32 = 2048;

    /// Grid size for a one-launch reduction over `n` elements: depends on `n` only (never on the
    /// device), so the combining order, and thus the bits of a float result, are reproducible.
    pub const fn reduce_grid(n: u64) -> u32 {
        let per_block = (REDUCE_BLOCK * REDUCE_ITEMS_PER_STEP) as u64;
        let blocks = n.div_ceil(per_block);
        if blocks == 0 {
            1
        } else if blocks > REDUCE_MAX_GRID as u64 {
            REDUCE_MAX_GRID
        } else {
            blocks as u32
        }
    }

    /// Names of the PTX entry points, for the host's kernel registry.
    pub const KERNEL_NAMES: &[&str] = &[
        "reduce_sum_f32",
        "test_shfl",
        "test_shfl64",
        "test_vote",
        "test_barrier_rotate",
    ];
}

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // `trap` aborts the kernel; the host sees CUDA_ERROR_LAUNCH_FAILED (or ILLEGAL_INSTRUCTION).
    gpu::trap()
}

#[cfg(test)]
mod tests {
    use super::launch::*;

    #[test]
    fn grid_depends_on_n_only_and_is_bounded() {
        assert_eq!(reduce_grid(0), 1);
        assert_eq!(reduce_grid(1), 1);
        let per_block = (REDUCE_BLOCK * REDUCE_ITEMS_PER_STEP) as u64;
        assert_eq!(reduce_grid(per_block), 1);
        assert_eq!(reduce_grid(per_block + 1), 2);
        assert_eq!(reduce_grid(u64::MAX), REDUCE_MAX_GRID);
        assert_eq!(REDUCE_BLOCK % 32, 0);
    }
}
