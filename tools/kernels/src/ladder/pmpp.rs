//! Seed 001: PMPP's block sums (ch. 5, "Warps and SIMD hardware"). The book's fragments load
//! `partialSum[threadIdx.x]` without a bounds check and stop at the block's sum; here loads
//! past `n` read zero and thread 0 writes the block's sum to `out[blockIdx.x]` (the host runs
//! the kernel again on the partials). `partialSum` is a static shared array of `SIZE =`
//! [`BLOCK`] elements, the block size (the book's example: 512 elements, 512 threads).

use super::{Elem, Smem, load};
use kernels::gpu;

/// Threads per block, and the length of `partialSum`.
pub const BLOCK: u32 = 512;

/// PMPP's first kernel, the divergent sum: at stride `1, 2, 4, ...` the threads with
/// `t % (2 * stride) == 0` add their right neighbour at `stride`. Every step leaves warps with
/// both active and idle threads (every warp, in the first five steps): control divergence in
/// all 9 steps of a 512-thread block.
/// # Safety
/// `input` holds `n` elements, `out` one per block; `blockDim.x == BLOCK`.
#[allow(clippy::manual_is_multiple_of)] // the seed's `%`, on purpose
#[inline(always)]
pub unsafe fn divergent<T: Elem>(input: *const T, out: *mut T, n: u32) {
    let partial_sum = T::pmpp_shared();
    let t = gpu::thread_idx_x();
    unsafe {
        partial_sum.set(
            t,
            load(input, gpu::block_idx_x() * gpu::block_dim_x() + t, n),
        )
    };
    let mut stride = 1;
    while stride < gpu::block_dim_x() {
        gpu::sync_threads();
        if t % (2 * stride) == 0 {
            unsafe { partial_sum.set(t, partial_sum.at(t).add(partial_sum.at(t + stride))) };
        }
        stride *= 2;
    }
    // Thread 0 made the last write to partialSum[0] itself: no barrier needed.
    if t == 0 {
        unsafe {
            out.add(gpu::block_idx_x() as usize)
                .write(partial_sum.at(0))
        };
    }
}

/// PMPP's convergent sum: changed from [`divergent`], the stride starts at half the block and
/// halves, and the threads `t < stride` add `partialSum[t + stride]`. The active threads are
/// the lowest ones, so whole warps are active or idle: divergence only in the last 5 steps,
/// when fewer than 32 threads remain.
/// # Safety
/// As [`divergent`].
#[inline(always)]
pub unsafe fn convergent<T: Elem>(input: *const T, out: *mut T, n: u32) {
    let partial_sum = T::pmpp_shared();
    let t = gpu::thread_idx_x();
    unsafe {
        partial_sum.set(
            t,
            load(input, gpu::block_idx_x() * gpu::block_dim_x() + t, n),
        )
    };
    let mut stride = gpu::block_dim_x() / 2;
    while stride >= 1 {
        gpu::sync_threads();
        if t < stride {
            unsafe { partial_sum.set(t, partial_sum.at(t).add(partial_sum.at(t + stride))) };
        }
        stride >>= 1;
    }
    if t == 0 {
        unsafe {
            out.add(gpu::block_idx_x() as usize)
                .write(partial_sum.at(0))
        };
    }
}
