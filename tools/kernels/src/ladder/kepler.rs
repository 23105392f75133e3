//! Seed 002 and NVIDIA's "Faster Parallel Reductions on Kepler": warp sums by shuffles, a
//! block sum through 32 shared slots, and a device sum with one atomic add per block, so one
//! launch does the whole reduction. 64-bit values shuffle as two 32-bit halves (seed 002's
//! `int2` trick for `double`, inside [`gpu::shfl_down_sync`]).

use super::{Elem, Smem, warp_sum_down};
use kernels::gpu::{self, WARP_SIZE};

/// Threads per block (the post's `threads = 512`).
pub const BLOCK: u32 = 512;
/// Most blocks (the post's `blocks = min((N + threads - 1) / threads, 1024)`).
pub const MAX_GRID: u32 = 1024;

/// The post's `blockReduceSum`: every warp sums by shuffles, lane 0 of each warp stores its
/// warp's sum in `shared[warp]`, then warp 0 sums those. The sum is valid in thread 0.
/// Needs a block of whole warps, at most 1024 threads.
#[inline(always)]
fn block_reduce_sum<T: Elem>(mut val: T) -> T {
    let shared = T::warp_shared();
    let lane = gpu::thread_idx_x() % WARP_SIZE;
    let wid = gpu::thread_idx_x() / WARP_SIZE;
    val = warp_sum_down(val);
    if lane == 0 {
        unsafe { shared.set(wid, val) };
    }
    gpu::sync_threads();
    // Read from shared memory only if that warp existed.
    val = if gpu::thread_idx_x() < gpu::block_dim_x() / WARP_SIZE {
        unsafe { shared.at(lane) }
    } else {
        T::ZERO
    };
    if wid == 0 {
        val = warp_sum_down(val);
    }
    val
}

/// The post's `deviceReduceBlockAtomicKernel`: a grid-stride loop sums many elements per
/// thread in a register, [`block_reduce_sum`] makes the block's sum, and thread 0 adds it to
/// `out[0]` with one atomic: no partials, no second launch. `out[0]` must be zero at launch
/// (the host zeroes it outside the timed region). Float sums come out in the order the blocks
/// finish, so their last bits may vary from run to run.
/// # Safety
/// `input` holds `n` elements; `out` is one element, zero at launch.
#[inline(always)]
pub unsafe fn device_reduce_block_atomic<T: Elem>(input: *const T, out: *mut T, n: u32) {
    let mut sum = T::ZERO;
    let mut i = gpu::block_idx_x() * gpu::block_dim_x() + gpu::thread_idx_x();
    let stride = gpu::block_dim_x() * gpu::grid_dim_x();
    while i < n {
        sum = sum.add(unsafe { input.add(i as usize).read() });
        i += stride;
    }
    sum = block_reduce_sum(sum);
    if gpu::thread_idx_x() == 0 {
        unsafe { T::atomic_add(out, sum) };
    }
}
