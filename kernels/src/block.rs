//! Block-level collectives: warps reduce by shuffles, then warp 0 reduces the per-warp results
//! through shared memory.

use crate::gpu::{self, SharedArray, ShflValue, WARP_SIZE};
use crate::warp::warp_reduce;

/// Reduce over a 1-D block whose size is a multiple of 32 (at most 1024). The result is valid
/// in thread 0. `scratch` is shared memory for at least 32 `T`.
///
/// Ends with a barrier, so the caller may reuse `scratch` right after.
#[inline(always)]
pub fn block_reduce<T: ShflValue, F: Fn(T, T) -> T + Copy>(
    value: T,
    identity: T,
    op: F,
    scratch: SharedArray<T>,
) -> T {
    let lane = gpu::lane_id();
    let warp = gpu::warp_id();
    let warps = gpu::block_dim_x() / WARP_SIZE;
    let warp_total = warp_reduce(value, op);
    if lane == 0 {
        // SAFETY: warp < 32 <= scratch.len(); one writer per slot.
        unsafe { scratch.write(warp as usize, warp_total) };
    }
    gpu::sync_threads();
    let mut total = identity;
    if warp == 0 {
        let v = if lane < warps {
            // SAFETY: lane < warps <= 32; written before the barrier.
            unsafe { scratch.read(lane as usize) }
        } else {
            identity
        };
        total = warp_reduce(v, op);
    }
    gpu::sync_threads();
    total
}
