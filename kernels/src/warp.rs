//! Warp-level collectives, built on the hardware layer's shuffles.

use crate::gpu::{FULL_MASK, ShflValue, shfl_up_sync, shfl_xor_sync};

/// Reduce `value` over the 32 lanes of a full warp with `op` (associative). Every lane gets the
/// result. A butterfly (`shfl.sync.bfly` with lane masks 16, 8, 4, 2, 1): five shuffles, and each
/// lane combines in the same order, so the result is the same bits on every lane.
#[inline(always)]
pub fn warp_reduce<T: ShflValue, F: Fn(T, T) -> T>(mut value: T, op: F) -> T {
    let mut offset = 16;
    while offset > 0 {
        let other = shfl_xor_sync(FULL_MASK, value, offset, 32);
        // Lower lane's value on the left keeps a fixed combining order for non-commutative ops.
        // The operands chosen first, then one `op`: two calls would inline it twice.
        let (l, r) = if crate::gpu::lane_id() & offset == 0 {
            (value, other)
        } else {
            (other, value)
        };
        value = op(l, r);
        offset >>= 1;
    }
    value
}

/// Reduce over the 32 lanes in reverse lane order: every lane gets `v[31] ⊕ … ⊕ v[1] ⊕ v[0]`
/// (higher lane on the left). The look-back reads predecessor tiles with lane 0 the nearest,
/// so this keeps tile order for non-commutative operators. The butterfly runs with lane masks
/// 1, 2, 4, 8, 16 (`shfl.sync.bfly`): each step joins two adjacent runs of lanes, so every
/// partial is a contiguous range and the order holds (masks 16 … 1 would interleave).
#[inline(always)]
pub fn warp_reduce_rev<T: ShflValue, F: Fn(T, T) -> T>(mut value: T, op: F) -> T {
    let mut offset = 1;
    while offset < 32 {
        let other = shfl_xor_sync(FULL_MASK, value, offset, 32);
        let (l, r) = if crate::gpu::lane_id() & offset == 0 {
            (other, value)
        } else {
            (value, other)
        };
        value = op(l, r);
        offset <<= 1;
    }
    value
}

/// Reduce over the 32 lanes in lane order: every lane gets `v[0] ⊕ v[1] ⊕ … ⊕ v[31]` as a
/// balanced tree (`(v0 ⊕ v1) ⊕ (v2 ⊕ v3)`, …), the same bits on every lane and every run, and
/// right for non-commutative operators: the butterfly runs with lane masks 1, 2, 4, 8, 16
/// (`shfl.sync.bfly`), each step joining two adjacent runs of lanes, lower lanes on the left.
#[inline(always)]
pub fn warp_reduce_in_order<T: ShflValue, F: Fn(T, T) -> T>(mut value: T, op: F) -> T {
    let mut offset = 1;
    while offset < 32 {
        let other = shfl_xor_sync(FULL_MASK, value, offset, 32);
        // The operands chosen first, then one `op`: two calls would inline it twice.
        let (l, r) = if crate::gpu::lane_id() & offset == 0 {
            (value, other)
        } else {
            (other, value)
        };
        value = op(l, r);
        offset <<= 1;
    }
    value
}

/// Inclusive scan over the 32 lanes in lane order: lane `i` gets `v[0] ⊕ … ⊕ v[i]`.
/// Kogge-Stone with `shfl.sync.up.b32` (deltas 1, 2, 4, 8, 16): five shuffles per 32-bit word.
#[inline(always)]
pub fn warp_inclusive_scan<T: ShflValue, F: Fn(T, T) -> T>(mut value: T, op: F) -> T {
    let lane = crate::gpu::lane_id();
    let mut delta = 1;
    while delta < 32 {
        let other = shfl_up_sync(FULL_MASK, value, delta, 32);
        if lane >= delta {
            value = op(other, value);
        }
        delta <<= 1;
    }
    value
}
