//! Warp-level collectives, built on the hardware layer's shuffles.

use crate::gpu::{FULL_MASK, ShflValue, shfl_xor_sync};

/// Reduce `value` over the 32 lanes of a full warp with `op` (associative). Every lane gets the
/// result. A butterfly (`shfl.sync.bfly` with lane masks 16, 8, 4, 2, 1): five shuffles, and each
/// lane combines in the same order, so the result is the same bits on every lane.
#[inline(always)]
pub fn warp_reduce<T: ShflValue, F: Fn(T, T) -> T>(mut value: T, op: F) -> T {
    let mut offset = 16;
    while offset > 0 {
        let other = shfl_xor_sync(FULL_MASK, value, offset, 32);
        // Lower lane's value on the left keeps a fixed combining order for non-commutative ops.
        value = if crate::gpu::lane_id() & offset == 0 {
            op(value, other)
        } else {
            op(other, value)
        };
        offset >>= 1;
    }
    value
}
