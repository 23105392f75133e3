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
pub mod ops;
pub mod reduce;
pub mod scan;
pub mod scan_ladder;
pub mod stream;
pub mod testing;
pub mod warp;

/// Launch-shape contract shared by the host and the kernels.
pub mod launch {
    /// Threads per block of the reduction kernels. A multiple of 32: the warp collectives
    /// assume full warps.
    pub const REDUCE_BLOCK: u32 = 256;
    /// Bytes each thread loads per grid-stride step (two 16-byte vectors in flight).
    pub const REDUCE_BYTES_PER_STEP: u64 = 32;
    /// Upper bound on the tiles of the one-launch reduction; also the length of the partials
    /// workspace the host allocates.
    pub const REDUCE_MAX_GRID: u32 = 2048;

    /// Threads per block of the single-pass scan. Build-time tunable for experiments
    /// (`GPU_REDUCE_SCAN_BLOCK`, a multiple of 32 up to 1024).
    pub const SCAN_BLOCK: u32 = env_u32(option_env!("GPU_REDUCE_SCAN_BLOCK"), 256);
    /// 16-byte vectors each thread scans per tile (`GPU_REDUCE_SCAN_ROWS` at build time): 16,
    /// i.e. 64 KiB tiles. A tile's block waits at a barrier while one warp looks back, so big
    /// tiles pay that wait over more bytes; measured on an H200 at 1e9 i32 (BENCHMARKS.md):
    /// 4 rows 0.75x CUB, 8 rows 0.93x, 16 rows 0.97x.
    pub const SCAN_ROWS: u32 = env_u32(option_env!("GPU_REDUCE_SCAN_ROWS"), 16);
    const _: () = assert!(SCAN_BLOCK.is_multiple_of(32) && SCAN_BLOCK <= 1024 && SCAN_ROWS >= 1);

    /// A decimal build-time setting, or `default` when unset.
    pub(crate) const fn env_u32(v: Option<&str>, default: u32) -> u32 {
        let Some(s) = v else { return default };
        let b = s.as_bytes();
        let mut i = 0;
        let mut x = 0u32;
        while i < b.len() {
            assert!(
                b[i].is_ascii_digit(),
                "build-time setting must be a decimal number"
            );
            x = x * 10 + (b[i] - b'0') as u32;
            i += 1;
        }
        x
    }

    /// Elements per tile of the single-pass scan for elements of `elem_bytes` bytes.
    pub const fn scan_tile_elems(elem_bytes: u64) -> u64 {
        SCAN_BLOCK as u64 * SCAN_ROWS as u64 * 16 / elem_bytes
    }

    /// Tiles (= blocks) of a single-pass scan over `n` elements.
    pub const fn scan_tiles(n: u64, elem_bytes: u64) -> u64 {
        n.div_ceil(scan_tile_elems(elem_bytes))
    }

    /// Tiles (virtual blocks) of a one-launch reduction over `n` elements of `elem_bytes` bytes:
    /// depends on those alone (never on the device), so the combining order, and thus the bits
    /// of a float result, are reproducible everywhere. The physical grid may be smaller.
    pub const fn reduce_grid(n: u64, elem_bytes: u64) -> u32 {
        let per_block = REDUCE_BLOCK as u64 * REDUCE_BYTES_PER_STEP / elem_bytes;
        let blocks = n.div_ceil(per_block);
        if blocks == 0 {
            1
        } else if blocks > REDUCE_MAX_GRID as u64 {
            REDUCE_MAX_GRID
        } else {
            blocks as u32
        }
    }

    /// Elements one thread of the reduction visits in sequence at most (for error bounds).
    pub const fn reduce_per_thread_steps(n: u64, elem_bytes: u64) -> u64 {
        let grid = reduce_grid(n, elem_bytes) as u64;
        let per_step = REDUCE_BYTES_PER_STEP / elem_bytes;
        n.div_ceil(grid * REDUCE_BLOCK as u64 * per_step)
    }

    /// Names of the PTX entry points, for the host's kernel registry.
    pub const KERNEL_NAMES: &[&str] = &[
        "reduce_sum_i32",
        "reduce_sum_u32",
        "reduce_sum_i64",
        "reduce_sum_u64",
        "reduce_sum_f32",
        "reduce_sum_f64",
        "reduce_product_i32",
        "reduce_product_u32",
        "reduce_product_i64",
        "reduce_product_u64",
        "reduce_product_f32",
        "reduce_product_f64",
        "reduce_min_i32",
        "reduce_min_u32",
        "reduce_min_i64",
        "reduce_min_u64",
        "reduce_min_f32",
        "reduce_min_f64",
        "reduce_max_i32",
        "reduce_max_u32",
        "reduce_max_i64",
        "reduce_max_u64",
        "reduce_max_f32",
        "reduce_max_f64",
        "reduce_and_i32",
        "reduce_and_u32",
        "reduce_and_i64",
        "reduce_and_u64",
        "reduce_or_i32",
        "reduce_or_u32",
        "reduce_or_i64",
        "reduce_or_u64",
        "reduce_xor_i32",
        "reduce_xor_u32",
        "reduce_xor_i64",
        "reduce_xor_u64",
        "reduce_argmin_i32",
        "reduce_argmin_u32",
        "reduce_argmin_i64",
        "reduce_argmin_u64",
        "reduce_argmin_f32",
        "reduce_argmin_f64",
        "reduce_argmax_i32",
        "reduce_argmax_u32",
        "reduce_argmax_i64",
        "reduce_argmax_u64",
        "reduce_argmax_f32",
        "reduce_argmax_f64",
        "reduce_sum_compensated_f32",
        "test_shfl",
        "test_shfl64",
        "test_vote",
        "test_lookback",
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
        assert_eq!(reduce_grid(0, 4), 1);
        assert_eq!(reduce_grid(1, 8), 1);
        let per_block = REDUCE_BLOCK as u64 * 8;
        assert_eq!(reduce_grid(per_block, 4), 1);
        assert_eq!(reduce_grid(per_block + 1, 4), 2);
        assert_eq!(reduce_grid(per_block + 1, 8), 3);
        assert_eq!(reduce_grid(u64::MAX, 4), REDUCE_MAX_GRID);
        assert_eq!(reduce_per_thread_steps(1 << 30, 4), 256);
        assert_eq!(REDUCE_BLOCK % 32, 0);
    }
}
