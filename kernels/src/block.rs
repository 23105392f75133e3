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
    block_reduce_warp_totals(warp_reduce(value, op), identity, op, scratch)
}

/// The second half of [`block_reduce`], for callers that reduce within each warp their own way:
/// lane 0's `warp_total` of every warp, combined in warp order by warp 0 through `scratch`
/// (at least 32 `T`). The result is valid in thread 0; ends with a barrier.
#[inline(always)]
pub fn block_reduce_warp_totals<T: ShflValue, F: Fn(T, T) -> T + Copy>(
    warp_total: T,
    identity: T,
    op: F,
    scratch: SharedArray<T>,
) -> T {
    let lane = gpu::lane_id();
    let warp = gpu::warp_id();
    let warps = gpu::block_dim_x() / WARP_SIZE;
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

/// Two independent [`block_reduce`]s with the barriers of one: each result is exactly what
/// `block_reduce` gives for that value (the same combining order), valid in thread 0.
/// `scratch` holds at least two `T` per warp.
///
/// Ends with a barrier, so the caller may reuse `scratch` right after.
#[inline(always)]
pub fn block_reduce2<T: ShflValue, F: Fn(T, T) -> T + Copy>(
    a: T,
    b: T,
    identity: T,
    op: F,
    scratch: SharedArray<T>,
) -> (T, T) {
    let lane = gpu::lane_id();
    let warp = gpu::warp_id();
    let warps = gpu::block_dim_x() / WARP_SIZE;
    debug_assert!(2 * warps as usize <= scratch.len());
    let (wa, wb) = (warp_reduce(a, op), warp_reduce(b, op));
    if lane == 0 {
        // SAFETY: warp < warps and 2 * warps <= scratch.len(); one writer per slot.
        unsafe {
            scratch.write(warp as usize, wa);
            scratch.write((warps + warp) as usize, wb);
        }
    }
    gpu::sync_threads();
    let (mut ta, mut tb) = (identity, identity);
    if warp == 0 {
        let (va, vb) = if lane < warps {
            // SAFETY: written before the barrier, in bounds as above.
            unsafe {
                (
                    scratch.read(lane as usize),
                    scratch.read((warps + lane) as usize),
                )
            }
        } else {
            (identity, identity)
        };
        ta = warp_reduce(va, op);
        tb = warp_reduce(vb, op);
    }
    gpu::sync_threads();
    (ta, tb)
}
